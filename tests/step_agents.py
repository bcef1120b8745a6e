"""A ReAct agent for the step-durability tests, importable by their subprocesses: a model that
asks for ``steps`` rounds of ``width`` calls of a ``square`` tool and then answers with the
sum of the results. It decides from the conversation alone (a new process continues it), and
the model calls and tool calls are written to a side file (``model k`` / ``tool k.i``), so a
test counts how often each ran across processes. ``die_at`` SIGKILLs the process at that step
(2k: model call k, 2k+1: the tool round after it), before the call does anything."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from typing import Any

from rillet import ChatModelAgent, FunctionCall, Message, ScriptedModel, ToolCall, tool


def _note(side: str | None, line: str) -> None:
    if side is not None:
        with open(side, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())


def _die(at: int | None, step: int) -> None:
    if at is not None and at == step:
        os.kill(os.getpid(), signal.SIGKILL)


def counting_agent(
    steps: int,
    side: str | None = None,
    *,
    width: int = 1,
    die_at: int | None = None,
    fail_at: int | None = None,
    hang_at: int | None = None,
    name: str = "counter",
) -> ChatModelAgent:
    """``fail_at``: model call ``fail_at`` raises (the run fails, in this process); ``hang_at``:
    the tool call of round ``hang_at`` waits a minute before it does anything."""
    failed: list[int] = []

    def reply(messages: list[Message], tools: Any) -> Message | str:
        results = [m for m in messages if m.role == "tool"]
        k = len(results) // width
        _die(die_at, 2 * k)
        _note(side, f"model {k}")
        if fail_at == k and not failed:
            failed.append(k)
            raise RuntimeError(f"the model failed at call {k}")
        if k >= steps:
            return f"sum {sum(int(m.content) for m in results)} after {k} rounds"
        calls: list[ToolCall | dict[str, Any]] = [
            ToolCall(index=i, id=f"c{k}.{i}", function=FunctionCall("square", json.dumps({"k": k, "i": i})))
            for i in range(width)
        ]
        return Message.assistant(tool_calls=calls)

    @tool
    async def square(k: int, i: int) -> str:
        """The square of k, plus i."""
        if i == 0:
            _die(die_at, 2 * k + 1)
        if k == hang_at:
            await asyncio.sleep(60)
        _note(side, f"tool {k}.{i}")
        return str(k * k + i)

    return ChatModelAgent(
        name, description="counts", model=ScriptedModel(reply), tools=[square], max_iterations=steps + 5
    )
