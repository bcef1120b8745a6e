"""Agents for tests/integrations/test_temporal.py, importable by its worker subprocesses too.

``python tests/support/temporal_agents.py ADDRESS TASK_QUEUE`` runs a worker with :data:`AGENTS`
until killed. Every tool call appends a line to the file named by $RILLET_TEMPORAL_SIDE (the
count of executions). With $RILLET_TEMPORAL_HOLD_AT=n the model, once n tool results are in,
writes "held" to stdout and never answers (so a test can kill the worker there).
"""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta
from typing import Any

from rillet import ChatModelAgent, Message, ToolCall, requires_approval, stream_from_list
from rillet.run.agent import Agent
from rillet.temporal import ActivityOptions, activity_model, activity_tool
from rillet.tools import ToolInfo

STEPS = 6  # tool calls of one run


class CountingModel:
    """Asks for ``add(n, 1)`` until the conversation holds ``steps`` tool results, then
    answers with the last one: its reply depends on the messages alone, so a retried or
    repeated call gives the same reply."""

    def __init__(self, steps: int, tool: str = "add") -> None:
        self.steps, self.tool = steps, tool

    async def generate(self, messages: list[Message], *, tools: list[ToolInfo] | None = None, **_: Any) -> Message:
        results = [m for m in messages if m.role == "tool"]
        if os.environ.get("RILLET_TEMPORAL_HOLD_AT") == str(len(results)):
            print("held", flush=True)
            await asyncio.Event().wait()
        if len(results) >= self.steps:
            return Message.assistant(f"total {results[-1].content if results else 0}")
        n = int(results[-1].content) if results and results[-1].content.isdigit() else 0
        call = ToolCall(id=f"call-{len(results)}", function={"name": self.tool, "arguments": f'{{"a": {n}, "b": 1}}'})
        return Message.assistant("", [call])

    async def stream(self, messages: list[Message], **kw: Any) -> Any:
        return stream_from_list([await self.generate(messages, **kw)])


class BadArgumentsModel:
    """Calls ``add`` with an ``a`` that is not an integer, then answers with what the tool
    said back."""

    async def generate(self, messages: list[Message], **_: Any) -> Message:
        results = [m for m in messages if m.role == "tool"]
        if results:
            return Message.assistant(f"told: {results[-1].content}")
        return Message.assistant("", [ToolCall(id="bad", function={"name": "add", "arguments": '{"a": "x", "b": 1}'})])

    async def stream(self, messages: list[Message], **kw: Any) -> Any:
        return stream_from_list([await self.generate(messages, **kw)])


def add(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    side = os.environ.get("RILLET_TEMPORAL_SIDE")
    if side:
        with open(side, "a") as f:
            f.write(f"add {a} {b}\n")
    return a + b


_QUICK = ActivityOptions(start_to_close_timeout=timedelta(seconds=3))


def adder() -> Agent:
    """Six tool rounds, then the answer "total 6"."""
    return ChatModelAgent(
        name="adder",
        description="adds",
        model=activity_model(CountingModel(STEPS), options=_QUICK),
        tools=[activity_tool(add)],
    )


def approver() -> Agent:
    """One add call, which needs approval (the interrupt waits in the workflow)."""
    return ChatModelAgent(
        name="approver",
        description="adds once approved",
        model=activity_model(CountingModel(1), options=_QUICK),
        tools=[requires_approval(activity_tool(add))],
    )


def mistaken() -> Agent:
    """One add call with bad arguments: the model is told, the call is not retried."""
    return ChatModelAgent(
        name="mistaken",
        description="adds badly",
        model=activity_model(BadArgumentsModel(), options=_QUICK),
        tools=[activity_tool(add)],
    )


AGENTS = {"adder": adder, "approver": approver, "mistaken": mistaken}


async def _serve(address: str, task_queue: str) -> None:
    from rillet.temporal import rillet_worker
    from temporalio.client import Client

    client = await Client.connect(address)
    worker = rillet_worker(client, task_queue, AGENTS, sticky_queue_schedule_to_start_timeout=timedelta(seconds=1))
    print("ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1], sys.argv[2]))
