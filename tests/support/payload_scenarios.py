"""Runs whose checkpoints tests/support/golden/payload_v*/ keep, shared by the writer
(tests/support/golden/make_payload_golden.py) and tests/checkpoint/test_checkpoint_payload.py.

* ``events``: a hand-built session holding one event of every kind a checkpoint keeps
  (whole and streamed messages, tool results, errors, every action, customized output, run
  paths), saved with ``payload.dump``.
* ``parallel``: a ParallelAgent interrupted in one lane (the other lane's events are kept in
  the interrupt state as records).
* ``agent_tool``: an interrupt deep inside an AgentTool (the inner run's events are kept in
  the interrupt state as records).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rillet import (
    AgentEvent,
    AgentInput,
    AgentTool,
    ChatModelAgent,
    FunctionCall,
    Message,
    ParallelAgent,
    Runner,
    RunStep,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    event_from_message,
    tool,
)
from rillet._native import stream_from_list
from rillet.checkpoint import InMemoryCheckpointStore
from rillet.checkpoint.payload import RecordedError, dump
from rillet.data.events import AgentAction, AgentOutput, BreakLoopAction, TransferToAgentAction
from rillet.run.agent import StateDelta
from rillet.run.context import Session
from rillet.run.interrupts import InterruptSignal, get_interrupt_state, get_resume_context, stateful_interrupt

ROOT = AgentInput([Message.user("plan the trip")], True)
VALUES = {"user": "ann", "budget": 1200, "tags": ["a", "b"]}
INFO = {"reason": "approve"}


def path(*names: str) -> tuple[RunStep, ...]:
    return tuple(RunStep(n) for n in names)


def call(name: str, args: dict[str, Any], id: str, i: int = 0) -> ToolCall:
    return ToolCall(index=i, id=id, function=FunctionCall(name, json.dumps(args)))


def kinds_of_events() -> list[AgentEvent]:
    """One event of every kind, fresh each call (streams are read by saving)."""
    top = path("trip")
    inner = path("trip", "par", "hotels")
    streamed = event_from_message(None, stream_from_list([Message.assistant("Lis"), Message.assistant("bon")]))
    read = event_from_message(None, stream_from_list([Message.assistant("read "), Message.assistant("before")]))
    read.output.message_output.get_message()  # type: ignore[union-attr]
    evs = [
        event_from_message(Message.assistant("", [call("search", {"q": "Lisbon"}, "c1")])),
        event_from_message(Message.tool_message("3 flights", "c1", "search"), role="tool", tool_name="search"),
        streamed,
        read,
        AgentEvent(error=ValueError("model failed")),
        AgentEvent(error=RecordedError("TimeoutError", "slow model")),
        AgentEvent(action=AgentAction(exit=True, transfer_to_agent=TransferToAgentAction("hotels"))),
        AgentEvent(action=AgentAction(break_loop=BreakLoopAction("critic", True, 3))),
        AgentEvent(action=AgentAction(state_delta=StateDelta({"budget": 900}))),
        AgentEvent(output=AgentOutput(None, {"score": 0.5}), action=AgentAction(customized_action={"kind": "note"})),
        event_from_message(Message.assistant("with extra")),
        event_from_message(Message.assistant("inner")),
        AgentEvent(),
    ]
    evs[10].output.customized_output = [1, "two"]  # type: ignore[union-attr]
    for i, ev in enumerate(evs):
        if i < 11:
            ev.agent_name, ev.run_path = "trip", top
    evs[11].agent_name, evs[11].run_path = "hotels", inner
    return evs


def signal() -> InterruptSignal:
    child = InterruptSignal("child-1", ("agent:trip", "tool:pay:c9"), info={"q": "pay?"}, state={"amount": 9})
    return InterruptSignal("root-1", ("agent:trip",), subs=[child])


def events_session() -> Session:
    session = Session(dict(VALUES))
    for ev in kinds_of_events():
        session.record(ev)
    return session


def events_checkpoint() -> bytes:
    return asyncio.run(dump(ROOT, events_session(), signal(), INFO))


# --- runs -----------------------------------------------------------------------------------

paid: list[int] = []


@tool
def pay(amount: int) -> str:
    """Pays after a person approves."""
    was, _, state = get_interrupt_state()
    if not was:
        raise stateful_interrupt({"question": f"pay {amount}?"}, {"amount": amount})
    is_target, _, data = get_resume_context()
    if not is_target:
        raise stateful_interrupt({"question": f"pay {state['amount']}?"}, state)
    paid.append(state["amount"])
    return f"paid {state['amount']}" if data == "approve" else f"not paid: {data}"


def parallel_runner(resumed: bool) -> tuple[Runner, ChatModelAgent]:
    """A sequence: (x || y), then ``after``; y asks to pay. Resumed, the models hold only the
    replies left after the checkpoint; returns the runner and ``after``."""
    x = ChatModelAgent("x", description="x agent", model=ScriptedModel([] if resumed else ["from x"]))
    y_replies: list[Any] = (
        ["approved"] if resumed else [Message.assistant("", [call("pay", {"amount": 1}, "y-c")]), "approved"]
    )
    y = ChatModelAgent("y", description="y agent", model=ScriptedModel(y_replies), tools=[pay])
    after = ChatModelAgent("after", description="after agent", model=ScriptedModel(["merged"]))
    seq = SequentialAgent("seq", sub_agents=[ParallelAgent("par", sub_agents=[x, y]), after])
    return Runner(seq, checkpoint_store=InMemoryCheckpointStore()), after


def agent_tool_runner(resumed: bool) -> Runner:
    """Outer calls the AgentTool Inner, whose agent asks to pay 9."""
    inner_replies: list[Any] = (
        ["inner done"] if resumed else [Message.assistant("", [call("pay", {"amount": 9}, "ic")]), "inner done"]
    )
    inner = ChatModelAgent("Inner", description="pays things", model=ScriptedModel(inner_replies), tools=[pay])
    outer_replies: list[Any] = (
        ["all done"] if resumed else [Message.assistant("", [call("Inner", {"request": "pay 9"}, "oc")]), "all done"]
    )
    outer = ChatModelAgent("Outer", model=ScriptedModel(outer_replies), tools=[AgentTool(inner)])
    return Runner(outer, checkpoint_store=InMemoryCheckpointStore())


def run_checkpoint(runner: Runner, query: str) -> bytes:
    """Runs ``query`` until it interrupts; the checkpoint's bytes."""
    list(runner.query(query, checkpoint_id="golden"))
    data = runner.checkpoint_store.get("golden")
    assert isinstance(data, bytes)
    return data


def parallel_checkpoint() -> bytes:
    return run_checkpoint(parallel_runner(False)[0], "go")


def agent_tool_checkpoint() -> bytes:
    return run_checkpoint(agent_tool_runner(False), "go")


CHECKPOINTS = {"events": events_checkpoint, "parallel": parallel_checkpoint, "agent_tool": agent_tool_checkpoint}
