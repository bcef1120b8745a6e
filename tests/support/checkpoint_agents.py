"""Agents for the checkpoint guarantee tests: an approval-gated tool with a visible side
effect (a line appended to a file), importable by the test processes too."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rillet import ChatModelAgent, FunctionCall, Message, ScriptedModel, ToolCall, tool
from rillet.tools.approval import requires_approval


def ask(text: str) -> Message:
    call = ToolCall(index=0, id="c1", function=FunctionCall("append", json.dumps({"text": text})))
    return Message.assistant(tool_calls=[call])


def build(
    log: str,
    text: str = "paid",
    *,
    first: bool = True,
    name: str = "banker",
    extra_tool: bool = False,
    replies: list[Any] | None = None,
) -> ChatModelAgent:
    """``name`` with an approval-gated ``append`` tool that appends ``text`` lines to ``log``
    (and an ``audit`` tool that sleeps, with ``extra_tool``). ``first``: the model asks for the
    call then answers; else it only answers (a resume); ``replies`` replace the answer."""

    @tool
    def append(text: str) -> str:
        """Appends a line to the log."""
        with open(log, "a") as f:
            f.write(text + "\n")
        return "appended"

    @tool
    async def audit(seconds: float) -> str:
        """Takes its time."""
        await asyncio.sleep(seconds)
        return "noted"

    tools: list[Any] = [requires_approval(append)] + ([audit] if extra_tool else [])
    answer = replies if replies is not None else ["Done."]
    return ChatModelAgent(
        name, description="moves money", model=ScriptedModel([ask(text), *answer] if first else answer), tools=tools
    )


def demo_like() -> ChatModelAgent:
    """A zero-argument factory for `rillet resume --agent`: logs to the file named in the
    environment variable RILLET_TEST_LOG."""
    import os

    return build(os.environ["RILLET_TEST_LOG"], first=False)
