"""What a checkpoint holds and how it is written with :mod:`rillet.codec`.

The payload is plain data: the root input, the streaming mode, the session values, every
recorded event (streams concatenated; errors as ``{type, message}`` so any exception can be
saved), and the interrupt tree flattened to ``id -> address`` and ``id -> state``. Session
values and interrupt info and state must be encodable: if one is not, saving fails with the
codec's message naming the value and the fix.
"""

from __future__ import annotations

from typing import Any

from rillet import codec
from rillet._native import Message, RilletError
from rillet.agent import AgentInput, StateDelta
from rillet.context import Session
from rillet.events import (
    AgentAction,
    AgentEvent,
    AgentOutput,
    BreakLoopAction,
    MessageVariant,
    RunStep,
    TransferToAgentAction,
)
from rillet.interrupt import InterruptSignal

__all__ = ["PAYLOAD_VERSION", "CheckpointError", "CheckpointNotFoundError", "Loaded", "dump", "load"]

PAYLOAD_VERSION = 1
_KIND = "rillet.checkpoint"


class CheckpointError(RilletError):
    """A checkpoint could not be saved or loaded."""


class CheckpointNotFoundError(CheckpointError, LookupError):
    """The store has no checkpoint under that id."""


class RecordedError(RilletError):
    """An error event restored from a checkpoint: the original's type name and message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


async def _event_record(ev: AgentEvent) -> dict[str, Any]:
    rec: dict[str, Any] = {"agent_name": ev.agent_name, "run_path": [s.agent_name for s in ev.run_path]}
    out = ev.output
    if out is not None:
        mv = out.message_output
        if mv is not None:
            rec["message"] = await mv.aget_message()
            rec["role"] = mv.role
            rec["tool_name"] = mv.tool_name
            rec["is_streaming"] = mv.is_streaming
        if out.customized_output is not None:
            rec["customized_output"] = out.customized_output
    a = ev.action
    if a is not None:
        act: dict[str, Any] = {}
        if a.exit:
            act["exit"] = True
        if a.transfer_to_agent is not None:
            act["transfer_to"] = a.transfer_to_agent.dest_agent_name
        if a.break_loop is not None:
            b = a.break_loop
            act["break_loop"] = [b.from_agent, b.done, b.current_iterations]
        if isinstance(a.customized_action, StateDelta):
            act["state_delta"] = dict(a.customized_action)
        elif a.customized_action is not None:
            act["customized"] = a.customized_action
        rec["action"] = act
    if ev.error is not None:
        e = ev.error
        rec["error"] = {"type": getattr(e, "type_name", type(e).__name__), "message": getattr(e, "message", str(e))}
    return rec


def _event(rec: dict[str, Any]) -> AgentEvent:
    from rillet._native import stream_from_list

    ev = AgentEvent(rec["agent_name"], tuple(RunStep(n) for n in rec["run_path"]))
    msg: Message | None = rec.get("message")
    custom = rec.get("customized_output")
    if msg is not None or custom is not None:
        mv = None
        if msg is not None:
            streaming = bool(rec.get("is_streaming"))
            mv = MessageVariant(
                streaming,
                None if streaming else msg,
                stream_from_list([msg]) if streaming else None,  # a one-chunk stream, as Eino
                rec.get("role", "assistant"),
                rec.get("tool_name", ""),
            )
        ev.output = AgentOutput(mv, custom)
    act = rec.get("action")
    if act is not None:
        brk = act.get("break_loop")
        ev.action = AgentAction(
            exit=bool(act.get("exit")),
            transfer_to_agent=TransferToAgentAction(act["transfer_to"]) if "transfer_to" in act else None,
            break_loop=BreakLoopAction(brk[0], bool(brk[1]), int(brk[2])) if brk is not None else None,
            customized_action=StateDelta(act["state_delta"]) if "state_delta" in act else act.get("customized"),
        )
    err = rec.get("error")
    if err is not None:
        ev.error = RecordedError(err["type"], err["message"])
    return ev


async def events_to_records(events: list[AgentEvent]) -> list[dict[str, Any]]:
    return [await _event_record(ev) for ev in events]


def records_to_events(records: list[dict[str, Any]]) -> list[AgentEvent]:
    return [_event(r) for r in records]


async def dump(
    root_input: AgentInput, session: Session, signal: InterruptSignal, data: Any = None
) -> bytes:
    """The checkpoint bytes of a run that ``signal`` interrupted."""
    events = session.snapshot()
    with session.lock:
        values = dict(session.values)
    payload = {
        "kind": _KIND,
        "version": PAYLOAD_VERSION,
        "root_input": {"messages": list(root_input.messages), "enable_streaming": root_input.enable_streaming},
        "session_values": values,
        "events": await events_to_records(events),
        "interrupts": {s.id: {"address": list(s.address), "state": s.state} for s in signal.walk()},
        "info": data,
    }
    return codec.encode(payload)


class Loaded:
    """A decoded checkpoint."""

    def __init__(self, payload: dict[str, Any]) -> None:
        root = payload["root_input"]
        self.root_input = AgentInput(list(root["messages"]), bool(root["enable_streaming"]))
        self.session = Session(dict(payload["session_values"]))
        for ev in records_to_events(payload["events"]):
            self.session.record(ev)
        self.addresses = {i: tuple(v["address"]) for i, v in payload["interrupts"].items()}
        self.states = {i: v["state"] for i, v in payload["interrupts"].items()}
        self.info = payload.get("info")


def load(data: bytes, checkpoint_id: str) -> Loaded:
    """Decodes checkpoint bytes; raises DecodeError for bytes that are not a checkpoint."""
    payload = codec.decode(data)
    if not isinstance(payload, dict) or payload.get("kind") != _KIND:
        raise codec.DecodeError(f"checkpoint[{checkpoint_id}] is not a rillet run checkpoint")
    version = payload.get("version")
    if version != PAYLOAD_VERSION:
        raise codec.DecodeError(
            f"checkpoint[{checkpoint_id}] has payload version {version!r}; this rillet reads version {PAYLOAD_VERSION}"
        )
    return Loaded(payload)
