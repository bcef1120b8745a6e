"""Builders shared by the multi-agent tests of tests/compose: scripted agents, tool calls,
transfers, run paths and a one-line summary of each event."""

from __future__ import annotations

import json
from typing import Any

from rillet import AgentEvent, ChatModelAgent, FunctionCall, Message, RunStep, ScriptedModel, ToolCall


def call(name: str, args: dict[str, Any], id: str = "c1", i: int = 0) -> ToolCall:
    return ToolCall(index=i, id=id, function=FunctionCall(name, json.dumps(args)))


def transfer(to: str, id: str = "t1") -> Message:
    return Message.assistant("", [call("transfer_to_agent", {"agent_name": to}, id)])


def path(*names: str) -> tuple[RunStep, ...]:
    return tuple(RunStep(n) for n in names)


def summary(events: list[AgentEvent]) -> list[tuple[str, str, str]]:
    out = []
    for ev in events:
        mv = ev.message_output
        if ev.error is not None:
            what = f"error:{ev.error}"
        elif mv is not None:
            what = f"{mv.role}:{mv.get_message().content}"
        else:
            what = "action"
        out.append((ev.agent_name, "/".join(s.agent_name for s in ev.run_path), what))
    return out


def agent(name: str, replies: list[Any], description: str = "", instruction: str = "", **kw: Any) -> ChatModelAgent:
    return ChatModelAgent(
        name,
        description=description or f"the {name} agent",
        instruction=instruction,
        model=ScriptedModel(replies),
        **kw,
    )
