"""Events as JSON records for the browser: what the dev UI's server-sent events carry.

One rillet event becomes one ``event`` record; a streamed message becomes an ``event`` record
(``open`` true, no text yet), a ``delta`` record per chunk and an ``event_end`` record with the
whole message, so tokens show as they arrive.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from rillet._native import Message, MessageAccumulator
from rillet.data.events import AgentAction, AgentEvent
from rillet.web.calls import error_kind

__all__ = ["action_record", "event_records", "jsonable", "message_record"]


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data: messages as their dicts, dataclasses as dicts, anything else
    the browser cannot show as its ``repr``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 20:
        return repr(value)
    if isinstance(value, Message):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if not f.name.startswith("_")}
        return {"type": type(value).__name__, **{k: jsonable(v, depth + 1) for k, v in fields.items()}}
    return repr(value)


def message_record(msg: Message) -> dict[str, Any]:
    """What the UI shows of a message: its text and its tool calls with their arguments."""
    return {
        "content": msg.content,
        "tool_call_id": msg.tool_call_id,
        "tool_calls": [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in msg.tool_calls
        ],
    }


def action_record(action: AgentAction) -> dict[str, Any]:
    """An action: its kind and what the UI needs of it (interrupts with ids, addresses, info)."""
    if action.interrupted is not None:
        contexts = action.interrupted.interrupt_contexts
        return {
            "kind": "interrupt",
            "data": jsonable(action.interrupted.data),
            "interrupts": [{"id": c.id, "address": list(c.address), "info": jsonable(c.info)} for c in contexts],
        }
    if action.transfer_to_agent is not None:
        return {"kind": "transfer", "to": action.transfer_to_agent.dest_agent_name}
    if action.break_loop is not None:
        return {"kind": "break_loop", "from": action.break_loop.from_agent}
    if action.exit:
        return {"kind": "exit"}
    if action.customized_action is None and action.state_delta is not None:
        return {"kind": "state_delta", "delta": jsonable(action.state_delta)}
    return {"kind": "custom", "value": jsonable(action.customized_action)}


def event_records(ev: AgentEvent, seq: int) -> Iterator[dict[str, Any]]:
    """The records of event number ``seq``; a stream is read here, chunk by chunk, as it
    arrives (the caller is the thread that consumes the run)."""
    head: dict[str, Any] = {"type": "event", "seq": seq, "agent": ev.agent_name}
    head["path"] = [s.agent_name for s in ev.run_path] or [ev.agent_name]
    if ev.action is not None:
        head["action"] = action_record(ev.action)
        if ev.action.state_delta is not None:
            head["state_delta"] = jsonable(ev.action.state_delta)
    if ev.branch is not None:
        head["branch"] = ev.branch
    if ev.error is not None:
        head["error"] = {"type": type(ev.error).__name__, "message": str(ev.error), "kind": error_kind(ev.error)}
    if ev.output is not None and ev.output.customized_output is not None:
        head["custom"] = jsonable(ev.output.customized_output)
    mv = ev.message_output
    if mv is None:
        yield head
        return
    head.update(role=mv.role, tool_name=mv.tool_name, streaming=mv.is_streaming)
    stream = mv.message_stream if mv.message is None else None
    if stream is None:
        yield {**head, **message_record(mv.get_message())}
        return
    yield {**head, "open": True, "content": "", "tool_calls": []}
    acc = MessageAccumulator()
    try:
        for chunk in stream:
            acc.push(chunk)
            if chunk.content:
                yield {"type": "delta", "seq": seq, "text": chunk.content}
    except Exception as e:  # noqa: BLE001  (a failed stream ends this message, not the UI's run)
        yield {"type": "event_end", "seq": seq, "content": "", "tool_calls": [], "error": str(e)}
        return
    mv.message_stream, mv.message = None, acc.finish() if len(acc) else Message.assistant("")
    yield {"type": "event_end", "seq": seq, **message_record(mv.message)}
