"""Interrupt and resume: addresses, checkpoints, targets, implicit resume, stores, processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentTool,
    ChatModelAgent,
    DecodeError,
    FunctionCall,
    Message,
    Runner,
    ScriptedModel,
    ToolCall,
    interrupt,
    tool,
)
from rillet.checkpoint import CheckpointError, CheckpointNotFoundError, InMemoryCheckpointStore, SqliteCheckpointStore
from rillet.run.interrupts import get_interrupt_state, get_resume_context, stateful_interrupt
from support.calls import asks, tool_call


def call(name: str, args: dict[str, Any], id: str, i: int = 0) -> ToolCall:
    return ToolCall(index=i, id=id, function=FunctionCall(name, json.dumps(args)))


runs: dict[str, int] = {}


@tool
def pay(amount: int) -> str:
    """Pays after a person approves."""
    runs["pay"] = runs.get("pay", 0) + 1
    was, has_state, state = get_interrupt_state()
    if not was:
        raise stateful_interrupt({"question": f"pay {amount}?"}, {"amount": amount})
    is_target, has_data, data = get_resume_context()
    if not is_target:
        raise stateful_interrupt({"question": f"pay {state['amount']}?"}, state)  # still waiting
    return f"paid {state['amount']}" if data == "approve" else f"not paid: {data}"


@tool
def lookup(item: str) -> str:
    """Runs once per call; counts."""
    runs["lookup"] = runs.get("lookup", 0) + 1
    return f"{item}: 3 left"


def interrupts(events: list[AgentEvent]) -> list[AgentEvent]:
    return [e for e in events if e.action is not None and e.action.interrupted is not None]


def bank(replies: list[Any]) -> ChatModelAgent:
    return ChatModelAgent("bank", description="pays", model=ScriptedModel(replies), tools=[pay, lookup])


@pytest.fixture(autouse=True)
def _reset() -> None:
    runs.clear()


def test_a_tool_interrupts_the_run_is_saved_first_and_resumes_by_id() -> None:
    store = InMemoryCheckpointStore()
    agent = bank([Message.assistant("", [call("pay", {"amount": 5}, "c1")]), "done"])
    runner = Runner(agent, checkpoint_store=store)
    it = runner.query("pay 5", checkpoint_id="run-1")
    events = []
    for ev in it:
        events.append(ev)
        if ev.action is not None and ev.action.interrupted is not None:
            assert store.get("run-1") is not None  # saved before the event reached us
    (intr,) = interrupts(events)
    (ctx,) = intr.action.interrupted.interrupt_contexts
    assert ctx.address == ("agent:bank", "tool:pay:c1") and ctx.is_root_cause
    assert ctx.info == {"question": "pay 5?"}
    assert ctx.parent is not None and ctx.parent.address == ("agent:bank",) and not ctx.parent.is_root_cause
    assert intr.agent_name == "bank"

    resumed = list(runner.resume("run-1", targets={ctx.id: "approve"}))
    assert [e.message_output.get_message().content for e in resumed] == ["paid 5", "done"]
    assert agent.model.calls[1].messages[-1].content == "paid 5"  # type: ignore[attr-defined]


def test_deep_interrupt_through_an_agent_tool_has_the_full_address_and_resumes() -> None:
    store = InMemoryCheckpointStore()
    inner = ChatModelAgent(
        "Inner",
        description="pays things",
        model=ScriptedModel([Message.assistant("", [call("pay", {"amount": 9}, "ic")]), "inner done"]),
        tools=[pay],
    )
    outer = ChatModelAgent(
        "Outer",
        model=ScriptedModel([Message.assistant("", [call("Inner", {"request": "pay 9"}, "oc")]), "all done"]),
        tools=[AgentTool(inner)],
    )
    runner = Runner(outer, checkpoint_store=store)
    (intr,) = interrupts(list(runner.query("go", checkpoint_id="deep")))
    (ctx,) = intr.action.interrupted.interrupt_contexts
    assert ctx.address == ("agent:Outer", "tool:Inner:oc", "agent:Inner", "tool:pay:ic")
    events = list(runner.resume("deep", targets={ctx.id: "approve"}))
    texts = [e.message_output.get_message().content for e in events]
    assert texts == ["inner done", "all done"]
    assert runs["pay"] == 2  # first call interrupted, resumed call paid


def test_two_interrupts_in_one_round_resume_one_at_a_time_without_rerunning_completed_calls() -> None:
    store = InMemoryCheckpointStore()
    round_ = Message.assistant(
        "",
        [
            call("pay", {"amount": 1}, "a", 0),
            call("lookup", {"item": "tea"}, "b", 1),
            call("pay", {"amount": 2}, "c", 2),
        ],
    )
    agent = bank([round_, "finished"])
    runner = Runner(agent, checkpoint_store=store)
    first = list(runner.query("go", checkpoint_id="two"))
    (intr,) = interrupts(first)
    ctxs = {c.address[-1]: c for c in intr.action.interrupted.interrupt_contexts}
    assert set(ctxs) == {"tool:pay:a", "tool:pay:c"}
    assert runs == {"pay": 2, "lookup": 1}

    second = list(runner.resume("two", targets={ctxs["tool:pay:a"].id: "approve"}))
    (again,) = interrupts(second)
    (left,) = again.action.interrupted.interrupt_contexts
    assert left.address[-1] == "tool:pay:c" and left.info == {"question": "pay 2?"}  # re-interrupted with its state
    assert runs == {"pay": 4, "lookup": 1}  # lookup was not recomputed

    third = list(runner.resume("two", targets={left.id: "approve"}))
    assert [e.message_output.get_message().content for e in third][-1] == "finished"
    tool_results = [m.content for m in agent.model.calls[1].messages if m.role == "tool"]  # type: ignore[attr-defined]
    assert tool_results == ["paid 1", "tea: 3 left", "paid 2"]  # call order
    assert runs == {"pay": 5, "lookup": 1}


def test_implicit_resume_reenters_and_the_untargeted_leaf_interrupts_again() -> None:
    store = InMemoryCheckpointStore()
    runner = Runner(bank([Message.assistant("", [call("pay", {"amount": 3}, "c1")]), "done"]), checkpoint_store=store)
    (first,) = interrupts(list(runner.query("x", checkpoint_id="imp")))
    before = store.get("imp")
    (second,) = interrupts(list(runner.resume("imp")))
    assert second.action.interrupted.interrupt_contexts[0].info == {"question": "pay 3?"}
    assert store.get("imp") != before  # the re-interrupt overwrote the same id
    new_id = second.action.interrupted.interrupt_contexts[0].id
    done = list(runner.resume("imp", targets={new_id: "no thanks"}))
    assert done[0].message_output.get_message().content == "not paid: no thanks"


def test_load_failures_raise_synchronously_with_clear_messages() -> None:
    with pytest.raises(CheckpointError, match="no checkpoint_store"):
        Runner(bank([])).resume("x")
    runner = Runner(bank([]), checkpoint_store=InMemoryCheckpointStore())
    with pytest.raises(CheckpointNotFoundError, match=r"checkpoint\[missing\] not exist"):
        runner.resume("missing")
    runner.checkpoint_store.set("junk", b"\x00not a checkpoint")
    with pytest.raises(DecodeError):
        runner.resume("junk")
    with pytest.raises(ValueError, match="no checkpoint_store"):
        Runner(bank([])).query("x", checkpoint_id="c")


def test_unknown_resume_target_is_refused() -> None:
    store = InMemoryCheckpointStore()
    runner = Runner(bank([Message.assistant("", [call("pay", {"amount": 3}, "c1")])]), checkpoint_store=store)
    list(runner.query("x", checkpoint_id="t"))
    with pytest.raises(CheckpointError, match="not interrupts of"):
        runner.resume("t", targets={"nope": 1})


class Unregistered:
    pass


def test_an_unencodable_session_value_fails_the_save_with_an_error_event_first() -> None:
    store = InMemoryCheckpointStore()
    runner = Runner(bank([Message.assistant("", [call("pay", {"amount": 3}, "c1")])]), checkpoint_store=store)
    events = list(runner.query("x", checkpoint_id="bad", session_values={"cart": Unregistered()}))
    err, intr = events[-2], events[-1]
    assert intr.action is not None and intr.action.interrupted is not None
    assert err.error is not None and "failed to save checkpoint[bad]" in str(err.error)
    assert "Unregistered" in str(err.error) and "register_type" in str(err.error)
    assert store.get("bad") is None


def test_resume_takes_the_streaming_mode_from_the_checkpoint() -> None:
    store = InMemoryCheckpointStore()
    agent = bank([Message.assistant("", [call("pay", {"amount": 4}, "c1")]), "streamed answer"])
    (intr,) = interrupts(list(Runner(agent, streaming=True, checkpoint_store=store).query("x", checkpoint_id="s")))
    events = list(
        Runner(agent, streaming=False, checkpoint_store=store).resume(
            "s", targets={intr.action.interrupted.interrupt_contexts[0].id: "approve"}
        )
    )
    assert events[-1].message_output.is_streaming
    assert events[-1].message_output.get_message().content == "streamed answer"


def test_session_values_and_history_survive_the_checkpoint() -> None:
    store = InMemoryCheckpointStore()
    agent = bank([Message.assistant("", [call("pay", {"amount": 4}, "c1")]), "ok"])
    runner = Runner(agent, checkpoint_store=store)
    (intr,) = interrupts(list(runner.query("x", checkpoint_id="v", session_values={"user": "ann"})))
    list(runner.resume("v", targets={intr.action.interrupted.interrupt_contexts[0].id: "approve"}))
    # the instruction-less agent saw the whole conversation again after the resume
    assert [m.role for m in agent.model.calls[1].messages] == ["user", "assistant", "tool"]  # type: ignore[attr-defined]


# --- stores -------------------------------------------------------------------------------


def test_sqlite_store_round_trips_upserts_and_refuses_foreign_files(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "ckpt.db")
    assert store.get("a") is None
    store.set("a", b"one")
    store.set("a", b"two")
    store.set("b", b"three")
    assert store.get("a") == b"two" and set(store.ids()) == {"a", "b"}
    store.delete("b")
    assert store.get("b") is None
    assert SqliteCheckpointStore(tmp_path / "ckpt.db").get("a") == b"two"  # reopens

    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(CheckpointError, match="not a SQLite database"):
        SqliteCheckpointStore(junk)
    import sqlite3

    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(CheckpointError, match="another application"):
        SqliteCheckpointStore(other)


_CHILD = textwrap.dedent(
    """
    import json, sys
    from rillet import ChatModelAgent, FunctionCall, Message, Runner, ScriptedModel, ToolCall, tool
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

    ask = Message.assistant("", [ToolCall(index=0, id="c1", function=FunctionCall("approve", '{"what": "deploy"}'))])
    # each process scripts only the model calls it makes: the first asks, the second answers
    model = ScriptedModel([ask] if sys.argv[2] == "run" else ["deployed"])
    runner = Runner(ChatModelAgent("ops", model=model, tools=[approve]), checkpoint_store=SqliteCheckpointStore(sys.argv[1]))
    if sys.argv[2] == "run":
        for ev in runner.query("deploy?", checkpoint_id="job"):
            if ev.action and ev.action.interrupted:
                print(ev.action.interrupted.interrupt_contexts[0].id)
    else:
        for ev in runner.resume("job", targets={sys.argv[3]: "yes"}):
            mv = ev.message_output
            print(mv.get_message().content if mv else ev)
    """
)


def test_a_run_interrupted_in_one_process_resumes_in_another(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    db = str(tmp_path / "runs.db")
    first = subprocess.run([sys.executable, str(script), db, "run"], capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    interrupt_id = first.stdout.strip()
    second = subprocess.run(
        [sys.executable, str(script), db, "resume", interrupt_id], capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == ["deploy: yes", "deployed"]


_WRITER = textwrap.dedent(
    """
    import sys
    from rillet import codec
    from rillet.checkpoint import SqliteCheckpointStore
    store = SqliteCheckpointStore(sys.argv[1])
    i = 0
    while True:
        i += 1
        store.set("loop", codec.encode({"n": i, "blob": "x" * 50_000, "tail": i}))
        print(i, flush=True)
    """
)


@pytest.mark.slow
def test_sigkill_while_writing_leaves_the_last_committed_checkpoint_intact(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    db = str(tmp_path / "loop.db")
    from rillet import codec

    for attempt in range(20):
        proc = subprocess.Popen([sys.executable, script, db], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.stdout.readline()  # at least one commit happened
        time.sleep(0.01 * (attempt % 5))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
        state = codec.decode(SqliteCheckpointStore(db).get("loop"))  # type: ignore[arg-type]
        assert state["n"] == state["tail"] and len(state["blob"]) == 50_000


# --- interrupts inside multi-agent structures ---------------------------------------------


def asker(name: str, after: str = "approved") -> ChatModelAgent:
    """An agent whose first model call asks `pay`, then answers ``after``."""
    return ChatModelAgent(
        name,
        description=f"{name} agent",
        model=ScriptedModel([Message.assistant("", [call("pay", {"amount": 1}, f"{name}-c")]), after]),
        tools=[pay],
    )


def plain(name: str, text: str) -> ChatModelAgent:
    return ChatModelAgent(name, description=f"{name} agent", model=ScriptedModel([text]))


def resume_all(runner: Runner, checkpoint_id: str, events: list[AgentEvent], data: Any = "approve") -> list[AgentEvent]:
    (intr,) = interrupts(events)
    targets = {c.id: data for c in intr.action.interrupted.interrupt_contexts}
    return list(runner.resume(checkpoint_id, targets=targets))


def texts(events: list[AgentEvent]) -> list[str]:
    return [e.message_output.get_message().content for e in events if e.message_output is not None]


def test_sequential_resumes_at_the_interrupted_child_and_runs_the_rest() -> None:
    from rillet import SequentialAgent

    a, c = plain("a", "A"), plain("c", "C")
    seq = SequentialAgent("seq", sub_agents=[a, asker("b"), c])
    runner = Runner(seq, checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("go", checkpoint_id="seq"))
    (intr,) = interrupts(first)
    assert intr.agent_name == "b" and [s.agent_name for s in intr.run_path] == ["seq", "a", "b"]
    assert intr.action.interrupted.interrupt_contexts[0].address == ("agent:seq", "agent:b", "tool:pay:b-c")
    second = resume_all(runner, "seq", first)
    assert texts(second) == ["paid 1", "approved", "C"]
    assert a.model.call_count == 1  # type: ignore[attr-defined]  # not rerun
    assert [s.agent_name for s in second[-1].run_path] == ["seq", "a", "b", "c"]


def test_loop_resumes_in_the_same_round() -> None:
    from rillet import LoopAgent

    w = ChatModelAgent("w", model=ScriptedModel(["draft 1", "draft 2"]))
    r = ChatModelAgent(
        "r",
        model=ScriptedModel([Message.assistant("", [call("pay", {"amount": 1}, "r-c")]), "approved", "ok"]),
        tools=[pay],
    )
    loop = LoopAgent("loop", sub_agents=[w, r], max_iterations=2)
    runner = Runner(loop, checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("go", checkpoint_id="loop"))
    assert texts(first) == ["draft 1", ""]
    second = resume_all(runner, "loop", first)
    # round 1 finishes where it stopped (r answers), then round 2 runs both again
    assert texts(second) == ["paid 1", "approved", "draft 2", "ok"]
    assert [s.agent_name for s in second[-1].run_path] == ["loop", "w", "r", "w", "r"]


def test_parallel_resumes_only_the_interrupted_child_and_joins_every_lane() -> None:
    from rillet import ParallelAgent, SequentialAgent

    x = plain("x", "from x")
    after = plain("after", "merged")
    seq = SequentialAgent("seq", sub_agents=[ParallelAgent("par", sub_agents=[x, asker("y")]), after])
    runner = Runner(seq, checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("go", checkpoint_id="par"))
    (intr,) = interrupts(first)
    assert intr.agent_name == "par"
    second = resume_all(runner, "par", first)
    assert texts(second) == ["paid 1", "approved", "merged"]
    assert x.model.call_count == 1  # type: ignore[attr-defined]  # the finished child is not rerun
    seen = [m.content for m in after.model.calls[0].messages]  # type: ignore[attr-defined]
    assert "For context: [x] said: from x." in seen and "For context: [y] said: approved." in seen


def test_an_interrupt_after_a_transfer_resumes_in_the_transferred_to_agent() -> None:
    from rillet import set_sub_agents

    router = ChatModelAgent(
        "router",
        description="routes",
        model=ScriptedModel([Message.assistant("", [call("transfer_to_agent", {"agent_name": "cashier"}, "t")])]),
    )
    cashier = asker("cashier", after="paid and done")
    runner = Runner(set_sub_agents(router, [cashier]), checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("pay", checkpoint_id="tr"))
    (intr,) = interrupts(first)
    assert intr.action.interrupted.interrupt_contexts[0].address == (
        "agent:router",
        "agent:cashier",
        "tool:pay:cashier-c",
    )
    second = resume_all(runner, "tr", first)
    assert texts(second) == ["paid 1", "paid and done"]
    assert router.model.call_count == 1  # type: ignore[attr-defined]
    assert [s.agent_name for s in second[-1].run_path] == ["router", "cashier"]


def test_an_interrupt_after_a_transfer_back_to_the_parent_resumes_in_the_parent() -> None:
    """router -> helper -> router, and the router's second turn interrupts: the resume passes
    through the helper (a leaf, whose way down is its parent) instead of running it again."""
    from rillet import set_sub_agents

    def to(name: str, id: str) -> Message:
        return Message.assistant("", [call("transfer_to_agent", {"agent_name": name}, id)])

    router = ChatModelAgent(
        "router",
        description="routes",
        model=ScriptedModel([to("helper", "t1"), Message.assistant("", [call("pay", {"amount": 3}, "p")]), "done"]),
        tools=[pay],
    )
    helper = ChatModelAgent("helper", description="helps", model=ScriptedModel([to("router", "t2")]))
    runner = Runner(set_sub_agents(router, [helper]), checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("go", checkpoint_id="back"))
    (intr,) = interrupts(first)
    assert intr.action.interrupted.interrupt_contexts[0].address[:3] == ("agent:router", "agent:helper", "agent:router")
    resumed = resume_all(runner, "back", first)
    assert texts(resumed) == ["paid 3", "done"]  # was: the helper ran again (its script exhausted)
    assert helper.model.call_count == 1  # type: ignore[attr-defined]
    assert [s.agent_name for s in resumed[-1].run_path] == ["router", "helper", "router"]


def test_an_interrupt_600_transfers_deep_has_the_nested_address_and_resumes_there() -> None:
    """Past the depth where nested transfers hit Python's recursion limit (489): the address
    nests along the chain as in Eino, and the resume passes down it to the agent that asked."""
    from rillet import RunConfig, set_sub_agents

    made = [0]

    def turn(other: str) -> Any:
        def reply(messages: list[Message], tools: Any) -> Message | str:
            if messages[-1].role == "tool" and messages[-1].content.startswith("paid"):
                return "done"
            made[0] += 1
            if made[0] <= 600:
                return Message.assistant("", [call("transfer_to_agent", {"agent_name": other}, f"t{made[0]}")])
            return Message.assistant("", [call("pay", {"amount": 7}, "p")])

        return reply

    a = ChatModelAgent("a", description="A", model=ScriptedModel(turn("b"), record=False), tools=[pay])
    b = ChatModelAgent("b", description="B", model=ScriptedModel(turn("a"), record=False), tools=[pay])
    runner = Runner(set_sub_agents(a, [b]), checkpoint_store=InMemoryCheckpointStore())
    config = RunConfig(max_transfers=600, max_llm_calls=0)
    (intr,) = interrupts(list(runner.query("go", checkpoint_id="deep", run_config=config)))
    ctx = intr.action.interrupted.interrupt_contexts[0]
    assert ctx.address == (*["agent:a", "agent:b"] * 300, "agent:a", "tool:pay:p")
    resumed = list(runner.resume("deep", targets={ctx.id: "approve"}))
    assert [e.error for e in resumed if e.error is not None] == []
    assert texts(resumed) == ["paid 7", "done"] and len(resumed[-1].run_path) == 601


def test_a_resumed_run_keeps_the_limits_it_was_saved_with_unless_given_others() -> None:
    """Each resume counts from zero (ADK counts per invocation), against the limits the run
    was saved with; a resume that went past them can be resumed again with higher ones."""
    from rillet import RunConfig, RunLimitExceededError, set_sub_agents

    store = InMemoryCheckpointStore()

    def team(router: list[Any], cashier: list[Any]) -> Runner:
        lead = ChatModelAgent("router", description="routes", model=ScriptedModel(router))
        pays = ChatModelAgent("cashier", description="pays", model=ScriptedModel(cashier), tools=[pay])
        return Runner(set_sub_agents(lead, [pays]), checkpoint_store=store)

    def to(name: str) -> Message:
        return Message.assistant("", [call("transfer_to_agent", {"agent_name": name}, "t")])

    asks = Message.assistant("", [call("pay", {"amount": 1}, "p")])
    first = list(team([to("cashier")], [asks]).query("pay", checkpoint_id="lim", run_config=RunConfig(max_transfers=1)))
    (intr,) = interrupts(first)
    targets = {c.id: "approve" for c in intr.action.interrupted.interrupt_contexts}
    with pytest.raises(ValueError, match="a RunConfig of limits only"):
        team([], []).resume("lim", targets=targets, run_config=RunConfig(streaming_mode="sse"))
    # resumed in the cashier, which hands back; the router hands over again: 2 transfers, over 1
    again = list(team([to("cashier")], [to("router"), "done"]).resume("lim", targets=targets))
    err = again[-1].error
    assert isinstance(err, RunLimitExceededError), repr(err)
    assert (err.limit, err.maximum, err.count, err.loop) == ("max_transfers", 1, 2, "cashier -> router -> cashier")
    raised = RunConfig(max_transfers=5)
    done = list(team([to("cashier")], [to("router"), "done"]).resume("lim", targets=targets, run_config=raised))
    assert [e.error for e in done if e.error is not None] == [] and texts(done)[-1] == "done"
    assert store.get("lim") is None  # finished: deleted


# --- requires_approval ----------------------------------------------------------------------


def test_requires_approval_approve_reject_and_edit() -> None:
    from rillet.tools.approval import approve, edit, reject, requires_approval

    sent: list[int] = []

    @tool
    def send(amount: int) -> str:
        """Sends money."""
        sent.append(amount)
        return f"sent {amount}"

    def run(decision: Any) -> tuple[list[AgentEvent], ScriptedModel]:
        before = len(sent)
        model = ScriptedModel([Message.assistant("", [call("send", {"amount": 10}, "s1")]), "ok"])
        runner = Runner(
            ChatModelAgent("a", model=model, tools=[requires_approval(send)]),
            checkpoint_store=InMemoryCheckpointStore(),
        )
        (intr,) = interrupts(list(runner.query("x", checkpoint_id="ap")))
        (ctx,) = intr.action.interrupted.interrupt_contexts
        assert ctx.info == {"tool": "send", "arguments": {"amount": 10}}
        assert len(sent) == before  # nothing ran before the decision
        return list(runner.resume("ap", targets={ctx.id: decision})), model

    events, model = run(approve())
    assert sent == [10] and texts(events)[0] == "sent 10"
    events, model = run(reject("too much"))
    assert sent == [10]
    told = [m.content for m in model.calls[1].messages if m.role == "tool"][0]
    assert "rejected" in told and "too much" in told
    events, model = run(edit({"amount": 3}))
    assert sent == [10, 3] and texts(events)[0] == "sent 3"
    events, model = run({"decision": "maybe"})  # a bad decision settles nothing: asked again, saying why
    (again,) = interrupts(events)
    assert (
        "approve(), reject(reason) or edit(arguments)" in again.action.interrupted.interrupt_contexts[0].info["error"]
    )
    assert sent == [10, 3] and len(model.calls) == 1


# --- a finished resume --------------------------------------------------------------------------


def test_a_finished_resumed_run_deletes_its_checkpoint() -> None:
    @tool
    def ask() -> str:
        """Interrupts once."""
        was, _, _ = get_interrupt_state()
        if not was:
            raise interrupt("ok?")
        return "yes"

    store = InMemoryCheckpointStore()
    runner = Runner(
        ChatModelAgent("a", model=ScriptedModel([asks(tool_call("ask", {})), "done"]), tools=[ask]),
        checkpoint_store=store,
    )
    ctx = list(runner.query("x", checkpoint_id="k"))[-1].action.interrupted.interrupt_contexts[0]
    list(runner.resume("k", targets={ctx.id: 1}))
    assert store.get("k") is None
    with pytest.raises(CheckpointNotFoundError):
        runner.resume("k", targets={ctx.id: 1})
