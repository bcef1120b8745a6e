"""Events, messages and checkpoints as JSON objects (``--json``; docs/cli.md shows the shapes)."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rillet._native import Message
    from rillet.data.events import AgentAction, AgentEvent


def dumps(obj: Any) -> str:
    """One line of JSON; values JSON has no type for (interrupt info, session values, outputs)
    as their data (pydantic models, dataclasses) or as text."""
    try:
        return json.dumps(obj, ensure_ascii=False, default=_data)
    except (TypeError, ValueError):  # keys that are not text, or a value that contains itself
        return json.dumps(_plain(obj), ensure_ascii=False, default=_data)


def _data(value: Any) -> Any:
    if hasattr(value, "model_dump") and not isinstance(value, type):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` with mappings' keys as text, cut to text at a depth only a cycle reaches."""
    if depth > 32:
        return repr(value)
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    return value


def message_json(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in m.tool_calls
        ]
    if m.tool_name:
        out["tool_name"] = m.tool_name
    if m.tool_call_id:
        out["tool_call_id"] = m.tool_call_id
    return out


def action_json(a: AgentAction) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if a.exit:
        out["exit"] = True
    if a.transfer_to_agent is not None:
        out["transfer_to"] = a.transfer_to_agent.dest_agent_name
    if a.break_loop is not None:
        b = a.break_loop
        out["break_loop"] = {"from_agent": b.from_agent, "done": b.done, "iterations": b.current_iterations}
    if a.interrupted is not None:
        out["interrupted"] = [
            {"id": c.id, "address": list(c.address), "info": c.info} for c in a.interrupted.interrupt_contexts
        ]
    if a.customized_action is not None:
        out["customized"] = a.customized_action
    if a.state_delta is not None:
        out["state_delta"] = dict(a.state_delta)
    return out


def event_json(ev: AgentEvent) -> dict[str, Any]:
    """``{agent, run_path, message?, streamed?, customized_output?, action?, error?, branch?}``; a
    streamed message is read to its end and given whole."""
    out: dict[str, Any] = {"agent": ev.agent_name, "run_path": [s.agent_name for s in ev.run_path]}
    mv = ev.message_output
    if mv is not None:
        out["message"] = message_json(mv.get_message())
        if not out["message"].get("tool_name") and mv.tool_name:
            out["message"]["tool_name"] = mv.tool_name
        out["streamed"] = mv.is_streaming
    if ev.output is not None and ev.output.customized_output is not None:
        out["customized_output"] = ev.output.customized_output
    if ev.action is not None:
        out["action"] = action_json(ev.action)
    if ev.error is not None:
        err = ev.error
        out["error"] = {"type": getattr(err, "type_name", type(err).__name__), "message": str(err)}
    if ev.branch is not None:
        out["branch"] = ev.branch
    return out
