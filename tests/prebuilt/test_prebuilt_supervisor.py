"""Supervisor (Eino's adk/prebuilt/supervisor): the supervisor transfers to a worker, the worker
transfers back without a model call, and the events come in Eino's order."""

from __future__ import annotations

import pytest
from rillet import (
    ChatModelAgent,
    ExitTool,
    InMemoryCheckpointStore,
    Message,
    Runner,
    ScriptedModel,
    approve,
    requires_approval,
    tool,
)
from rillet.prebuilt import Supervisor
from support.event_rows import calls, row


def transfer(to: str, id: str) -> Message:
    return calls("transfer_to_agent", f'{{"agent_name": "{to}"}}', id)


def team() -> tuple[Supervisor, ChatModelAgent, ChatModelAgent, ChatModelAgent]:
    boss = ChatModelAgent(
        "boss",
        description="routes work",
        model=ScriptedModel([transfer("adder", "t1"), transfer("writer", "t2"), "Done: 4, in words four."]),
    )
    adder = ChatModelAgent("adder", description="adds numbers", model=ScriptedModel(["2 + 2 = 4"]))
    writer = ChatModelAgent("writer", description="writes numbers as words", model=ScriptedModel(["four"]))
    return Supervisor(boss, [adder, writer]), boss, adder, writer


def test_a_round_trip_has_eino_s_event_sequence() -> None:
    sup, boss, adder, writer = team()
    assert sup.name == "boss" and sup.supervisor is boss
    events = list(Runner(sup).query("What is 2 + 2, in words?"))
    assert [row(e) for e in events] == [
        ("boss", "boss", "assistant:transfer_to_agent", ""),
        ("boss", "boss", "tool:successfully transferred to agent [adder]", "transfer:adder"),
        ("adder", "boss/adder", "assistant:2 + 2 = 4", ""),
        ("adder", "boss/adder", "assistant:transfer_to_agent", ""),
        ("adder", "boss/adder", "tool:successfully transferred to agent [boss]", "transfer:boss"),
        ("boss", "boss/adder/boss", "assistant:transfer_to_agent", ""),
        ("boss", "boss/adder/boss", "tool:successfully transferred to agent [writer]", "transfer:writer"),
        ("writer", "boss/adder/boss/writer", "assistant:four", ""),
        ("writer", "boss/adder/boss/writer", "assistant:transfer_to_agent", ""),
        ("writer", "boss/adder/boss/writer", "tool:successfully transferred to agent [boss]", "transfer:boss"),
        ("boss", "boss/adder/boss/writer/boss", "assistant:Done: 4, in words four.", ""),
    ]
    # the way back is not the worker's decision: it was never offered the transfer tool
    assert adder.model.calls[0].tools == () and writer.model.calls[0].tools == ()  # type: ignore[attr-defined]
    assert adder.model.call_count == 1  # type: ignore[attr-defined]
    # the synthetic transfer back is made like the transfer tool's: the arguments are the bare name
    back = events[3].message_output.get_message().tool_calls[0]  # type: ignore[union-attr]
    assert back.function.arguments == "boss"


def test_the_supervisor_sees_the_workers_turn_as_context() -> None:
    sup, boss, _, _ = team()
    list(Runner(sup).query("What is 2 + 2, in words?"))
    second = [(m.role, m.content) for m in boss.model.calls[1].messages[1:]]  # type: ignore[attr-defined]
    assert second == [
        ("user", "What is 2 + 2, in words?"),
        ("assistant", ""),
        ("tool", "successfully transferred to agent [adder]"),
        ("user", "For context: [adder] said: 2 + 2 = 4."),
        ("user", "For context: [adder] called tool: `transfer_to_agent` with arguments: boss."),
        (
            "user",
            "For context: [adder] `transfer_to_agent` tool returned result: successfully transferred to agent [boss].",
        ),
    ]


def test_running_the_bare_supervisor_agent_runs_the_container() -> None:
    sup, boss, _, _ = team()
    events = list(Runner(boss).query("What is 2 + 2, in words?"))
    assert len(events) == 11 and events[-1].run_path[-1].agent_name == "boss"


def test_an_exit_in_a_worker_ends_the_run_without_the_way_back() -> None:
    boss = ChatModelAgent("boss", description="routes", model=ScriptedModel([transfer("quitter", "t1"), "never"]))
    quitter = ChatModelAgent(
        "quitter",
        description="stops",
        model=ScriptedModel([calls("exit", '{"final_result": "bye"}', "e1")]),
        exit_tool=ExitTool(),
    )
    events = list(Runner(Supervisor(boss, [quitter])).query("stop"))
    assert [row(e)[3] for e in events] == ["", "transfer:quitter", "", "exit"]
    assert boss.model.call_count == 1  # type: ignore[attr-defined]


def test_an_interrupt_in_a_worker_resumes_there_and_control_returns() -> None:
    ran: list[str] = []

    @tool
    def pay(amount: int) -> str:
        """Pays.

        Args:
            amount: how much.
        """
        ran.append(f"pay {amount}")
        return "paid"

    boss = ChatModelAgent("boss", description="routes", model=ScriptedModel([transfer("cashier", "t1"), "All paid."]))
    cashier = ChatModelAgent(
        "cashier",
        description="pays",
        model=ScriptedModel([calls("pay", '{"amount": 5}', "p1"), "Paid 5."]),
        tools=[requires_approval(pay)],
    )
    runner = Runner(Supervisor(boss, [cashier]), checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("pay 5", checkpoint_id="cp"))
    assert [row(e) for e in first][-1] == ("cashier", "boss/cashier", "", "interrupted")
    ctx = first[-1].action.interrupted.interrupt_contexts[0]  # type: ignore[union-attr]
    assert ctx.address == ("agent:boss", "agent:cashier", "tool:pay:p1")
    rest = list(runner.resume("cp", targets={ctx.id: approve()}))
    assert [row(e) for e in rest] == [
        ("cashier", "boss/cashier", "tool:paid", ""),
        ("cashier", "boss/cashier", "assistant:Paid 5.", ""),
        ("cashier", "boss/cashier", "assistant:transfer_to_agent", ""),
        ("cashier", "boss/cashier", "tool:successfully transferred to agent [boss]", "transfer:boss"),
        ("boss", "boss/cashier/boss", "assistant:All paid.", ""),
    ]
    assert ran == ["pay 5"]


def test_malformed_supervisors_are_refused_with_the_fix() -> None:
    boss = ChatModelAgent("boss", description="routes", model=ScriptedModel(["x"]))
    with pytest.raises(ValueError, match="needs at least one sub-agent"):
        Supervisor(boss, [])
    worker = ChatModelAgent("boss", description="same name", model=ScriptedModel(["x"]))
    with pytest.raises(ValueError, match="unique"):
        Supervisor(ChatModelAgent("boss", description="r", model=ScriptedModel(["x"])), [worker])
    sup = Supervisor(boss, [ChatModelAgent("w", description="works", model=ScriptedModel(["x"]))])
    with pytest.raises(TypeError, match="pass the agent itself"):
        Supervisor(sup, [])  # type: ignore[arg-type]
