"""A live run's events as rows for exact-sequence assertions (tests/test_live*.py)."""

from __future__ import annotations

from typing import Any

from rillet import AgentEvent
from rillet.live import live_status


def row(ev: AgentEvent) -> tuple[Any, ...]:
    """An event as (agent, run path, kind, ...): what a live UI acts on."""
    if ev.error is not None:
        return (ev.agent_name, "error", type(ev.error).__name__)
    path = "/".join(s.agent_name for s in ev.run_path)
    st = live_status(ev)
    mv = ev.message_output
    msg = mv.message if mv is not None else None
    if st is not None and st.partial:
        return (ev.agent_name, path, "partial", msg.content if msg else None)
    if st is not None and st.interrupted:
        return (ev.agent_name, path, "interrupted", msg.content if msg else None)
    if st is not None and st.turn_complete:
        return (ev.agent_name, path, "turn_complete")
    assert mv is not None and msg is not None
    if mv.role == "tool":
        return (ev.agent_name, path, "tool", mv.tool_name, msg.content)
    if msg.tool_calls:
        return (ev.agent_name, path, "calls", [c.function.name for c in msg.tool_calls])
    return (ev.agent_name, path, "message", msg.content)
