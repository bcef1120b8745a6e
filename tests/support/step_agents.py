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


# --- reused call ids -------------------------------------------------------------------------
#
# Some models and adapters number tool calls per round, so the same call id comes back in every
# round (or twice in one round). These agents ask for two requests, "A" then "B", always under
# the call id "c1", and answer with the results joined by " | ". Every model and tool call first
# passes a named point (``outer model 0``, ``inner B model 0``, ``lookup A``, ...): the point
# ``stop`` is where a crash test kills the process (see :func:`point`), at ``fail`` the call
# raises; any other point is written to the side file, so a test counts how often each call
# ran across processes.

REQUESTS = ("A", "B")


def point(name: str, side: str | None, stop: str | None, fail: str | None = None) -> None:
    """Passes the point ``name``. At ``stop`` the process says so on stdout (``at NAME``) and
    waits for ever on stdin: the parent kills it there (SIGKILL), where the call has begun and
    done nothing yet. At ``fail`` the call raises. Elsewhere the point is noted in ``side``."""
    if name == fail:
        raise RuntimeError(f"failed at {name}")
    if name == stop:
        import sys

        sys.stdout.write(f"at {name}\n")
        sys.stdout.flush()
        sys.stdin.read()  # the parent never writes: it kills this process
        raise SystemExit(f"point {name!r}: the parent closed stdin instead of killing this process")
    _note(side, name)


def _outer_model(
    side: str | None, stop: str | None, tool_name: str, one_round: bool, fail: str | None
) -> ScriptedModel:
    def reply(messages: list[Message], tools: Any) -> Message | str:
        results = [m.content for m in messages if m.role == "tool"]
        k = sum(1 for m in messages if m.role == "assistant")
        point(f"outer model {k}", side, stop, fail)
        todo = REQUESTS[len(results) :] if not one_round or not results else ()
        if not todo:
            return " | ".join(results)
        asks = todo if one_round else todo[:1]
        calls: list[ToolCall | dict[str, Any]] = [
            ToolCall(index=i, id="c1", function=FunctionCall(tool_name, json.dumps({"request": r})))
            for i, r in enumerate(asks)
        ]
        return Message.assistant(tool_calls=calls)

    return ScriptedModel(reply)


def _inner_agent(side: str | None, stop: str | None, looks_up: bool) -> ChatModelAgent:
    """Answers ``answer to X`` (with ``lookup``: after calling a ``lookup`` tool, under the
    reused id too, and with what it returned)."""

    def reply(messages: list[Message], tools: Any) -> Message | str:
        request = next(m.content for m in messages if m.role == "user")
        found = [m.content for m in messages if m.role == "tool"]
        point(f"inner {request} model {len(found)}", side, stop)
        if looks_up and not found:
            ask = ToolCall(index=0, id="c1", function=FunctionCall("lookup", json.dumps({"request": request})))
            return Message.assistant(tool_calls=[ask])
        return f"answer to {request}" + "".join(f" ({f})" for f in found)

    @tool
    def lookup(request: str) -> str:
        """Looks the request up."""
        point(f"lookup {request}", side, stop)
        return f"{request.lower()} found"

    return ChatModelAgent(
        "inner", description="answers a request", model=ScriptedModel(reply), tools=[lookup] if looks_up else []
    )


def reused_id_agent(
    kind: str, side: str | None = None, stop: str | None = None, *, lookup: bool = False, fail: str | None = None
) -> ChatModelAgent:
    """The outer agent: ``kind`` is ``agent-tool`` (an AgentTool called in two rounds),
    ``plain`` (a plain tool in two rounds), ``one-round`` / ``one-round-sequential`` (the
    AgentTool called twice in one round, concurrently or one call after the other). The
    outer model fails at the point ``fail`` (e.g. ``outer model 2``), ending the run."""
    from rillet import AgentTool

    @tool
    def fetch(request: str) -> str:
        """Fetches the request."""
        point(f"fetch {request}", side, stop)
        return f"fetched {request}"

    one_round = kind.startswith("one-round")
    tools: list[Any] = [fetch] if kind == "plain" else [AgentTool(_inner_agent(side, stop, lookup))]
    return ChatModelAgent(
        "outer",
        description="asks twice",
        model=_outer_model(side, stop, "fetch" if kind == "plain" else "inner", one_round, fail),
        tools=tools,
        execute_tools_sequentially=kind == "one-round-sequential",
    )
