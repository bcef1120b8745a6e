"""Delegation modes of ChatModelAgent sub-agents (chat / single_turn / task, as ADK-Go's
installTaskTools) and find_agent / find_sub_agent on every agent kind."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pydantic
import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    AgentTool,
    BaseAgent,
    ChatModelAgent,
    FlowAgent,
    FunctionCall,
    InMemoryCheckpointStore,
    Message,
    Runner,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    new_transfer_to_agent_action,
    set_sub_agents,
    with_deterministic_transfer_to,
)
from rillet.errors import TransferError
from rillet.prebuilt import DeepAgent, Supervisor
from support.event_rows import calls, row


def agent(name: str, replies: list[Any], **kw: Any) -> ChatModelAgent:
    kw.setdefault("description", f"the {name} agent")
    return ChatModelAgent(name, model=ScriptedModel(replies), **kw)


def rows(events: list[AgentEvent]) -> list[tuple[str, str, str, str]]:
    return [row(e) for e in events]


def tool_names(model: Any, i: int = 0) -> list[str]:
    return [t.name for t in model.calls[i].tools]


# --- the three modes ----------------------------------------------------------------------


def test_chat_mode_is_the_default_and_is_reached_by_transfer() -> None:
    helper = agent("helper", ["hi from helper"])
    boss = agent("boss", [calls("transfer_to_agent", {"agent_name": "helper"})])
    assert helper.mode == "chat"
    events = list(Runner(set_sub_agents(boss, [helper])).query("go"))
    assert rows(events) == [
        ("boss", "boss", "assistant:transfer_to_agent", ""),
        ("boss", "boss", "tool:successfully transferred to agent [helper]", "transfer:helper"),
        ("helper", "boss/helper", "assistant:hi from helper", ""),
    ]
    assert tool_names(boss.model) == ["transfer_to_agent"]


def test_single_turn_is_a_tool_that_runs_the_sub_agent_once_on_its_own_branch() -> None:
    helper = agent("helper", ["42"], mode="single_turn")
    boss = agent("boss", [calls("helper", {"request": "what is 6*7?"}, "p1"), "It is 42."])
    events = list(Runner(set_sub_agents(boss, [helper])).query("ask the helper"))
    assert rows(events) == [
        ("boss", "boss", "assistant:helper", ""),
        ("boss", "boss", "tool:42", ""),
        ("boss", "boss", "assistant:It is 42.", ""),
    ]
    assert tool_names(boss.model) == ["helper"]  # a tool, not a transfer target
    assert tool_names(helper.model) == []  # and it cannot transfer back to its parent
    # its own branch: the request only, not the parent's conversation
    assert [(m.role, m.content) for m in helper.model.calls[0].messages] == [("user", "what is 6*7?")]  # type: ignore[attr-defined]


def test_task_mode_ends_with_finish_task_and_its_arguments_are_the_result() -> None:
    worker = agent(
        "worker",
        [calls("lookup", {"q": "tea"}, "w1"), calls("finish_task", {"result": "tea costs 3"}, "w2")],
        mode="task",
        tools=[lookup],
    )
    boss = agent("boss", [calls("worker", {"request": "price of tea"}, "p1"), "Tea costs 3."])
    events = list(Runner(set_sub_agents(boss, [worker])).query("how much is tea?"))
    assert rows(events) == [
        ("boss", "boss", "assistant:worker", ""),
        ("boss", "boss", 'tool:Task completed.\n{"result": "tea costs 3"}', ""),
        ("boss", "boss", "assistant:Tea costs 3.", ""),
    ]
    assert tool_names(boss.model) == ["worker"]
    assert tool_names(worker.model) == ["lookup", "finish_task"]
    sent = worker.model.calls[0].messages  # type: ignore[attr-defined]
    assert sent[0].role == "system" and "`finish_task`" in sent[0].content
    assert len(worker.model.calls) == 2  # type: ignore[attr-defined]  # finish_task ended the run


def test_the_task_agents_own_events_end_with_task_completed_carrying_the_result() -> None:
    worker = agent("worker", [calls("finish_task", {"result": "done"}, "w1")], mode="task")
    events = list(Runner(worker).query("do it"))  # run on its own, a task agent still ends there
    assert rows(events) == [
        ("worker", "worker", "assistant:finish_task", ""),
        ("worker", "worker", "tool:Task completed.", ""),
    ]
    assert events[-1].action is not None and events[-1].action.customized_action == {"finish_task": {"result": "done"}}


def test_finish_task_in_a_round_with_other_calls_ends_the_task_after_the_round() -> None:
    both = Message.assistant(
        "",
        [
            ToolCall(index=0, id="w1", function=FunctionCall("lookup", '{"q": "tea"}')),
            ToolCall(index=1, id="w2", function=FunctionCall("finish_task", '{"result": "tea: 3"}')),
        ],
    )
    worker = agent("worker", [both], mode="task", tools=[lookup])
    events = list(Runner(worker).query("price tea"))
    assert sorted(rows(events)[1:]) == [
        ("worker", "worker", "tool:Task completed.", ""),
        ("worker", "worker", "tool:tea: 3", ""),
    ]
    assert len(worker.model.calls) == 1  # type: ignore[attr-defined]


def test_a_streaming_run_gives_the_same_task_result() -> None:
    worker = agent("worker", [calls("finish_task", {"result": "done"}, "w1")], mode="task")
    boss = agent("boss", [calls("worker", {"request": "x"}, "p1"), "ok"])
    events = list(Runner(set_sub_agents(boss, [worker]), streaming=True).query("go"))
    assert rows(events) == [
        ("boss", "boss", "assistant:worker", ""),
        ("boss", "boss", 'tool:Task completed.\n{"result": "done"}', ""),
        ("boss", "boss", "assistant:ok", ""),
    ]


def test_a_finish_task_that_fails_validation_goes_back_to_the_sub_agents_model_once() -> None:
    worker = agent(
        "worker",
        [calls("finish_task", {"summary": "done"}, "w1"), calls("finish_task", {"result": "done"}, "w2")],
        mode="task",
    )
    boss = agent("boss", [calls("worker", {"request": "do it"}, "p1"), "ok"])
    events = list(Runner(set_sub_agents(boss, [worker])).query("go"))
    assert rows(events) == [
        ("boss", "boss", "assistant:worker", ""),
        ("boss", "boss", 'tool:Task completed.\n{"result": "done"}', ""),
        ("boss", "boss", "assistant:ok", ""),
    ]
    second = worker.model.calls[1].messages  # type: ignore[attr-defined]
    assert (second[-1].role, second[-1].tool_call_id, second[-1].content) == (
        "tool",
        "w1",
        "finish_task was not accepted: argument 'result': a string is required; unknown arguments ['summary']; "
        "the tool takes: result. The task is not finished: call finish_task again with every required argument, "
        "of the right type.",
    )
    assert len(boss.model.calls) == 2  # type: ignore[attr-defined]  # the failure stayed inside the task


def test_a_task_that_ends_without_finish_task_reports_task_failed() -> None:
    worker = agent("worker", ["I could not find it."], mode="task")
    boss = agent("boss", [calls("worker", {"request": "find it"}, "p1"), "sorry"])
    events = list(Runner(set_sub_agents(boss, [worker])).query("go"))
    assert rows(events)[1] == (
        "boss",
        "boss",
        "tool:Task failed.\n'worker' ended without calling finish_task; its last message: I could not find it.",
        "",
    )


class Price(pydantic.BaseModel):
    item: str
    cents: int


def test_a_task_agents_output_type_is_the_finish_task_schema() -> None:
    worker = agent(
        "worker",
        [
            calls("finish_task", {"item": "tea", "cents": "a lot"}, "w1"),
            calls("finish_task", {"item": "tea", "cents": 300}, "w2"),
        ],
        mode="task",
        output_type=Price,
    )
    boss = agent("boss", [calls("worker", {"request": "price tea"}, "p1"), "ok"])
    events = list(Runner(set_sub_agents(boss, [worker])).query("go"))
    assert rows(events)[1][2] == 'tool:Task completed.\n{"item": "tea", "cents": 300}'
    (finish,) = [t for t in worker.model.calls[0].tools if t.name == "finish_task"]  # type: ignore[attr-defined]
    assert finish.parameters["required"] == ["item", "cents"]
    problem = worker.model.calls[1].messages[-1].content  # type: ignore[attr-defined]
    assert problem.startswith("finish_task was not accepted: argument 'cents': Input should be a valid integer")


# --- an interrupt inside a task, resumed through the task tool in another process -----------

_CHILD = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[4])
    from support.event_rows import calls, row
    from rillet import ChatModelAgent, Runner, ScriptedModel, set_sub_agents, tool
    from rillet.checkpoint import SqliteCheckpointStore
    from rillet.run.interrupts import get_interrupt_state, get_resume_context, interrupt

    @tool
    def approve(what: str) -> str:
        \"\"\"Asks a person.\"\"\"
        was, _, _ = get_interrupt_state()
        if not was:
            raise interrupt({"approve": what})
        _, _, data = get_resume_context()
        return f"{what}: {data}"

    first = sys.argv[2] == "run"
    # each process scripts only the model calls it makes
    worker = ChatModelAgent(
        "worker",
        description="deploys",
        mode="task",
        tools=[approve],
        model=ScriptedModel(
            [calls("approve", {"what": "deploy"}, "w1")] if first else [calls("finish_task", {"result": "deployed"}, "w2")]
        ),
    )
    boss_model = ScriptedModel([calls("worker", {"request": "deploy"}, "p1")] if first else ["All deployed."])
    boss = ChatModelAgent("boss", model=boss_model)
    runner = Runner(set_sub_agents(boss, [worker]), checkpoint_store=SqliteCheckpointStore(sys.argv[1]))
    if first:
        for ev in runner.query("deploy it", checkpoint_id="job"):
            print(json.dumps(row(ev)))
            if ev.action and ev.action.interrupted:
                (ctx,) = ev.action.interrupted.interrupt_contexts
                print(json.dumps([ctx.id, list(ctx.address), ctx.info]))
    else:
        for ev in runner.resume("job", targets={sys.argv[3]: "yes"}):
            print(json.dumps(row(ev)))
        print(json.dumps([m.content for m in boss_model.calls[0].messages]))
    """
)


def _child(script: Path, *args: str) -> list[Any]:
    import json

    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_an_interrupt_inside_a_task_resumes_through_the_task_tool_in_another_process(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    db = str(tmp_path / "runs.db")
    here = str(Path(__file__).resolve().parents[1])  # tests/, which holds support/
    first = _child(script, db, "run", "-", here)
    assert first[:-1] == [["boss", "boss", "assistant:worker", ""], ["boss", "boss", "", "interrupted"]]
    interrupt_id, address, info = first[-1]
    assert address == ["agent:boss", "tool:worker:p1", "agent:worker", "tool:approve:w1"]
    assert info == {"approve": "deploy"}
    second = _child(script, db, "resume", interrupt_id, here)
    assert second == [
        ["boss", "boss", 'tool:Task completed.\n{"result": "deployed"}', ""],
        ["boss", "boss", "assistant:All deployed.", ""],
        # the parent's conversation: the task tool's call and its result, once
        ["deploy it", "", 'Task completed.\n{"result": "deployed"}'],
    ]


def test_an_interrupt_inside_a_task_resumes_in_process_too() -> None:
    from rillet.run.interrupts import get_interrupt_state, interrupt
    from rillet.tools import tool

    @tool
    def ask(q: str) -> str:
        """Asks a person."""
        if not get_interrupt_state()[0]:
            raise interrupt(q)
        return "answered"

    worker = agent(
        "worker",
        [calls("ask", {"q": "ok?"}, "w1"), calls("finish_task", {"result": "asked"}, "w2")],
        mode="task",
        tools=[ask],
    )
    boss = agent("boss", [calls("worker", {"request": "ask"}, "p1"), "done"])
    runner = Runner(set_sub_agents(boss, [worker]), checkpoint_store=InMemoryCheckpointStore())
    (last,) = [e for e in runner.query("go", checkpoint_id="c") if e.action and e.action.interrupted]
    assert last.action is not None and last.action.interrupted is not None
    (ctx,) = last.action.interrupted.interrupt_contexts
    resumed = list(runner.resume("c", targets={ctx.id: None}))
    assert [r[2] for r in rows(resumed)] == ['tool:Task completed.\n{"result": "asked"}', "assistant:done"]


# --- configuration errors ------------------------------------------------------------------


def test_an_unknown_mode_is_refused_with_the_three_modes() -> None:
    with pytest.raises(ValueError, match=r"mode must be one of 'chat' .*'single_turn' .*'task' .*got 'tasks'"):
        agent("x", [], mode="tasks")


class Custom(BaseAgent):
    mode = "task"

    async def _run(self, input: AgentInput, **options: Any) -> Any:  # pragma: no cover - never run
        yield AgentEvent()


def test_a_task_mode_sub_agent_without_a_model_is_refused() -> None:
    boss = agent("boss", [])
    with pytest.raises(ValueError, match="'custom' is in task mode but is a Custom: .*only a ChatModelAgent"):
        set_sub_agents(boss, [Custom("custom", "does things")])


def test_a_delegated_sub_agent_needs_a_description_and_a_free_tool_name() -> None:
    with pytest.raises(ValueError, match="needs a description"):
        set_sub_agents(agent("boss", []), [ChatModelAgent("quiet", model=ScriptedModel([]), mode="task")])
    boss = agent("boss", [], tools=[lookup])
    with pytest.raises(ValueError, match=r"sub-agents \['lookup'\] are called as tools .* already has tools"):
        set_sub_agents(boss, [agent("lookup", [], mode="single_turn")])


def test_only_an_agent_with_tools_can_have_delegated_sub_agents() -> None:
    seq_parent = Custom("plain", "a custom agent")
    seq_parent.mode = "chat"  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"\['helper'\] are in single_turn or task mode .* 'plain' is a Custom"):
        set_sub_agents(seq_parent, [agent("helper", [], mode="single_turn")])


def test_a_transfer_to_a_task_mode_sub_agent_is_refused_and_names_the_reachable_ones() -> None:
    worker = agent("worker", [], mode="task")
    chat = agent("chat", [])
    boss = agent("boss", [calls("transfer_to_agent", {"agent_name": "worker"})])
    events = list(Runner(set_sub_agents(boss, [worker, chat])).query("go"))
    err = events[-1].error
    assert isinstance(err, TransferError)
    assert "agent 'worker' not found" in str(err) and "it can transfer to: chat" in str(err)
    system = boss.model.calls[0].messages[0]  # the instruction the model got names the reachable agents only
    assert system.role == "system" and "worker" not in system.content and "chat" in system.content

    events = list(Runner(set_sub_agents(Transferrer("alone"), [agent("helper", [], mode="single_turn")])).query("go"))
    assert str(events[-1].error).endswith(
        "the sub-agents of 'alone' are called as tools (single_turn or task mode), not transferred to"
    )


class Transferrer(BaseAgent):
    """Transfers to ``helper``, whatever its mode (a ChatModelAgent would offer no transfer
    tool); it takes sub-agents as a ChatModelAgent does, doing nothing with them."""

    def on_set_sub_agents(self, sub_agents: list[Any]) -> None: ...

    def on_set_as_sub_agent(self, parent: Any) -> None: ...

    def on_disallow_transfer_to_parent(self) -> None: ...

    async def _run(self, input: AgentInput, **options: Any) -> Any:
        yield AgentEvent(action=new_transfer_to_agent_action("helper"))


# --- find_agent / find_sub_agent -------------------------------------------------------------


def test_find_agent_is_self_first_then_depth_first_in_order() -> None:
    a, deep_x = agent("a", []), agent("x", [])
    b = agent("b", [])
    set_sub_agents(b, [deep_x])
    seq = SequentialAgent("seq", sub_agents=[a, b])
    later_x = agent("x", [])
    y = agent("y", [])
    set_sub_agents(y, [later_x])
    task = agent("t", [], mode="task")
    root = agent("root", [])
    flow = set_sub_agents(root, [seq, y, task])
    for top in (root, flow):
        assert top.find_agent("root") is top
        assert top.find_sub_agent("root") is None
        assert top.find_agent("x") is deep_x  # seq's branch comes before y's
        assert top.find_sub_agent("seq") is seq and top.find_agent("a") is a
        assert top.find_agent("t") is task and top.find_agent("nobody") is None
    assert y.find_sub_agent("x") is later_x and seq.find_agent("b") is b and a.find_sub_agent("a") is None


def test_find_agent_sees_through_supervisors_deep_agents_and_agent_wrappers() -> None:
    worker, sup = agent("worker", []), agent("sup", [])
    container = Supervisor(sup, [worker])
    assert container.find_agent("sup") is container and container.find_sub_agent("worker") is worker
    assert sup.find_sub_agent("worker") is worker
    helper = agent("helper", [])
    deep = DeepAgent(ScriptedModel([]), name="deep", sub_agents=[helper], general_agent=False)
    assert deep.find_agent("helper") is helper
    wrapped = with_deterministic_transfer_to(agent("w", []), ["x"])
    assert FlowAgent(wrapped).find_agent("w") is not None
    tool_agent = agent("inner", [])
    AgentTool(tool_agent)  # an agent tool is a tool, not a sub-agent: not in the tree
    assert agent("holder", [], tools=[AgentTool(tool_agent)]).find_sub_agent("inner") is None


def lookup(q: str) -> str:
    """Looks a price up."""
    return f"{q}: 3"
