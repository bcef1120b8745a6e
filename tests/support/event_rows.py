"""Events as short rows, for tests that assert a run's exact event sequence: (author, run
path, what the event holds, its action)."""

from __future__ import annotations

import json
from typing import Any

from rillet import AgentEvent, FunctionCall, Message, ToolCall


def calls(name: str, arguments: Any, id: str = "c1") -> Message:
    """An assistant message calling one tool; ``arguments`` as JSON text, or any value to dump."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Message.assistant("", [ToolCall(index=0, id=id, function=FunctionCall(name, text))])


def action_of(ev: AgentEvent) -> str:
    a = ev.action
    if a is None:
        return ""
    if a.transfer_to_agent:
        return f"transfer:{a.transfer_to_agent.dest_agent_name}"
    if a.exit:
        return "exit"
    if a.interrupted:
        return "interrupted"
    if a.break_loop is not None:
        b = a.break_loop
        return f"break_loop:{b.from_agent}:{b.current_iterations}:{b.done}"
    return ""


def row(ev: AgentEvent) -> tuple[str, str, str, str]:
    mv = ev.message_output
    what = ""
    if mv is not None:
        msg = mv.get_message()
        what = f"{mv.role}:" + (msg.content or ",".join(c.function.name for c in msg.tool_calls))
    if ev.error is not None:
        what = f"error:{ev.error}"
    return ev.agent_name, "/".join(s.agent_name for s in ev.run_path), what, action_of(ev)
