"""Scripted model turns for agent tests: a tool call, an assistant message asking for calls, a
transfer, and a run's events as (agent, text or first tool call) pairs."""

from __future__ import annotations

import json
from typing import Any

from rillet import FunctionCall, Message, ToolCall


def tool_call(name: str, args: dict[str, Any] | None = None, id: str = "c1", i: int = 0) -> ToolCall:
    """A call of tool ``name`` with ``args`` (JSON-encoded), as a model sends it."""
    return ToolCall(index=i, id=id, function=FunctionCall(name, json.dumps(args or {})))


def asks(*calls: ToolCall) -> Message:
    """An assistant message with no text that asks for ``calls``."""
    return Message.assistant("", list(calls))


def transfer(to: str, id: str = "t1") -> Message:
    """An assistant message that transfers to agent ``to``."""
    return asks(tool_call("transfer_to_agent", {"agent_name": to}, id))


def texts(events: list[Any]) -> list[tuple[str, str]]:
    """Each event's (agent, text or first tool call's name); fails on an error event."""
    out = []
    for ev in events:
        assert ev.error is None, ev.error
        m = ev.message_output.get_message()
        out.append((ev.agent_name, m.content or m.tool_calls[0].function.name))
    return out
