"""Pydantic AI's side of ``benches/peers/run.py``: the fixed workloads with its own test model.

Runs in its own virtual environment (requirements: ``pydantic_ai.txt``). The offline model is
Pydantic AI's ``FunctionModel`` with an ``async def`` for plain requests (a ``def`` would be run
in a worker thread by the model itself) and an async generator for streamed ones. Streaming
variants consume ``Agent.run_stream_events``, which runs the tools and hands the caller every
model chunk (``PartStartEvent`` / ``PartDeltaEvent``) and tool event of the whole run;
``Agent.run_stream`` would stop at the first final answer and ``Agent.iter`` needs each node
streamed by hand for the same result.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from _common import (
    APPROVAL_TOOL,
    COMPLETION_TOKENS,
    INPUT,
    PARALLEL_AGENTS,
    PIPELINE_AGENTS,
    PROMPT_TOKENS,
    STEPS,
    SYSTEM,
    TALLY,
    Options,
    call_id,
    concurrent_workload,
    construction_workload,
    gathered,
    import_workload,
    lookup,
    main,
    make_tools,
    report,
    skip,
    step_call,
    time_async,
    time_sync,
    us,
)
from pydantic_ai import (
    Agent,
    AgentRunResultEvent,
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    Tool,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.messages import ModelMessage, ModelRequest
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

USAGE = RequestUsage(input_tokens=PROMPT_TOKENS, output_tokens=COMPLETION_TOKENS)
# Pydantic AI stops a run at 50 model requests by default; the ReAct run makes STEPS + 1.
NO_LIMIT = UsageLimits(request_limit=None)

Stream = AsyncIterator[str | DeltaToolCalls]


def react_step(messages: list[ModelMessage]) -> int:
    """The ReAct step this request is: the history alternates request, response, request..."""
    return len(messages) // 2


def text(answer: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(answer)], usage=USAGE)


# --- (a) react ------------------------------------------------------------------------------


async def react_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    TALLY.models += 1
    i = react_step(messages)
    if i >= STEPS:
        return text("done")
    name, args = step_call(i)
    return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=call_id(i))], usage=USAGE)


async def react_stream(messages: list[ModelMessage], info: AgentInfo) -> Stream:
    """CHUNKS_PER_REPLY chunks a reply: name, arguments, finish (an empty delta); or "do", "ne", finish.
    (The stream function has no usage channel: FunctionModel estimates it.)"""
    TALLY.models += 1
    i = react_step(messages)
    if i >= STEPS:
        yield "do"
        yield "ne"
        yield {}
        return
    name, args = step_call(i)
    yield {0: DeltaToolCall(name=name, tool_call_id=call_id(i))}
    yield {0: DeltaToolCall(json_args=json.dumps(args))}
    yield {}


REACT_MODEL = FunctionModel(react_reply, stream_function=react_stream)


def counts() -> dict[str, int]:
    return {"tools": TALLY.tools, "models": TALLY.models}


def checked(expected: dict[str, int], answer: str) -> tuple[Callable[[str], None], list[dict[str, int]]]:
    """A per-run check: records every run's counts (the last, or the first wrong one, is reported)."""
    seen: list[dict[str, int]] = []

    def done(output: str) -> None:
        got = {k: v for k, v in counts().items() if k in expected} if output == answer else {k: -1 for k in expected}
        if not seen or seen[-1] == expected:
            seen[:] = [got]

    return done, seen


async def consume_events(agent: Agent[None, Any], prompt: str) -> Any:
    """Reads every event of a streamed run; returns the run's output."""
    output: Any = None
    async with agent.run_stream_events(prompt, usage_limits=NO_LIMIT) as events:
        async for event in events:
            if isinstance(event, AgentRunResultEvent):
                output = event.result.output
    return output


def react(options: Options) -> None:
    expected = {"tools": STEPS, "models": STEPS + 1}
    for kind in ("def", "async"):
        agent = Agent(REACT_MODEL, system_prompt=SYSTEM, tools=make_tools(kind))
        for mode in ("invoke", "stream"):
            done, seen = checked(expected, "done")

            async def run(mode: str = mode, agent: Agent[None, str] = agent, done: Any = done) -> None:
                TALLY.reset()
                if mode == "invoke":
                    done((await agent.run(INPUT, usage_limits=NO_LIMIT)).output)
                else:
                    done(await consume_events(agent, INPUT))

            samples = time_async(run, options.rounds)
            how = "Agent.run" if mode == "invoke" else "Agent.run_stream_events (every event read)"
            report(
                "react",
                f"{kind}-{mode}",
                unit="us/step",
                samples=us(samples, STEPS + 1),
                expected=expected,
                seen=seen[-1],
                how=how,
            )
        if kind == "def":
            done, seen = checked(expected, "done")

            def run_sync(agent: Agent[None, str] = agent, done: Any = done) -> None:
                TALLY.reset()
                done(agent.run_sync(INPUT, usage_limits=NO_LIMIT).output)

            samples = time_sync(run_sync, options.rounds)
            report(
                "react",
                "def-invoke-sync",
                unit="us/step",
                samples=us(samples, STEPS + 1),
                expected=expected,
                seen=seen[-1],
                how="Agent.run_sync",
            )


# --- (b) workflow ---------------------------------------------------------------------------


def answering(answer: str) -> FunctionModel:
    async def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        TALLY.models += 1
        return text(answer)

    return FunctionModel(reply)


def workflow(options: Options) -> None:
    stages = [Agent(answering(f"stage {n}"), system_prompt=SYSTEM) for n in range(PIPELINE_AGENTS)]
    done, seen = checked({"models": PIPELINE_AGENTS}, f"stage {PIPELINE_AGENTS - 1}")

    async def sequential() -> None:
        TALLY.reset()
        output = INPUT
        for stage in stages:  # programmatic hand-off: each run's output is the next one's prompt
            output = (await stage.run(output)).output
        done(output)

    samples = time_async(sequential, options.rounds)
    report(
        "workflow",
        "sequential3",
        unit="us/run",
        samples=us(samples),
        expected={"models": PIPELINE_AGENTS},
        seen=seen[-1],
        how="programmatic hand-off: three Agent.run calls chained",
    )

    workers = [Agent(answering("part"), system_prompt=SYSTEM) for _ in range(PARALLEL_AGENTS)]
    outputs: list[list[str]] = []

    async def parallel() -> None:
        TALLY.reset()
        results = await asyncio.gather(*(worker.run(INPUT) for worker in workers))
        outputs.append([r.output for r in results])

    samples = time_async(parallel, options.rounds)
    models = TALLY.models if outputs and outputs[-1] == ["part"] * PARALLEL_AGENTS else -1
    report(
        "workflow",
        "parallel8",
        unit="us/run",
        samples=us(samples),
        expected={"models": PARALLEL_AGENTS},
        seen={"models": models},
        how="asyncio.gather of eight Agent.run (Pydantic AI has no parallel agent construct)",
    )


# --- (c) approval ---------------------------------------------------------------------------


async def book(city: str) -> str:
    """Books a trip to a city."""
    TALLY.tools += 1
    return f"booked {city}"


async def book_or_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls "book" until its result is in the conversation, then answers "booked"."""
    TALLY.models += 1
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts):
        return text("booked")
    return ModelResponse(parts=[ToolCallPart(APPROVAL_TOOL, {"city": "Paris"}, tool_call_id="call_book")], usage=USAGE)


APPROVAL_MODEL = FunctionModel(book_or_answer)


def booking_agent() -> Agent[None, str | DeferredToolRequests]:
    """What a later process would build again: the agent whose "book" tool needs approval."""
    return Agent(
        APPROVAL_MODEL,
        system_prompt=SYSTEM,
        output_type=[str, DeferredToolRequests],
        tools=[Tool(book, requires_approval=True)],
    )


def approval(options: Options) -> None:
    folder = options.db_dir or tempfile.mkdtemp(prefix="pydantic-ai-bench-")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "pydantic_ai-approval.db")
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, messages BLOB NOT NULL)")
    expected = {"tools": 1, "models": 2}
    done, seen = checked(expected, "booked")
    cycles = iter(range(1 << 30))

    async def cycle() -> None:
        TALLY.reset()
        run_id = f"trip-{next(cycles)}"
        stopped = await booking_agent().run(INPUT)
        requests = stopped.output
        assert isinstance(requests, DeferredToolRequests), requests
        db.execute(
            "INSERT INTO runs VALUES (?, ?)", (run_id, ModelMessagesTypeAdapter.dump_json(stopped.all_messages()))
        )
        db.commit()
        (blob,) = db.execute("SELECT messages FROM runs WHERE id = ?", (run_id,)).fetchone()
        history = ModelMessagesTypeAdapter.validate_json(blob)
        approved = DeferredToolResults(approvals={call.tool_call_id: True for call in requests.approvals})
        resumed = await booking_agent().run(message_history=history, deferred_tool_results=approved)
        done(resumed.output)

    try:
        samples = time_async(cycle, options.rounds)
    finally:
        db.close()
    report(
        "approval",
        "interrupt-resume",
        unit="us/cycle",
        samples=us(samples),
        expected=expected,
        seen=seen[-1],
        how="deferred tools (requires_approval); message history as ModelMessagesTypeAdapter JSON in a "
        "SQLite table written by the adapter (Pydantic AI has no SQLite store); a new Agent resumes it",
    )


# --- (d) import, (e) construct --------------------------------------------------------------

cold_import = import_workload("from pydantic_ai import Agent")


def construct(options: Options) -> None:
    model = FunctionModel(react_reply)
    construction_workload(lambda: Agent(model, tools=[lookup]))(options)


# --- (f) concurrent -------------------------------------------------------------------------


async def start_runs(n: int, release: asyncio.Event) -> Callable[[], Awaitable[int]]:
    async def wait_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await release.wait()
        return text("done")

    agent = Agent(FunctionModel(wait_then_answer), system_prompt=SYSTEM)

    async def one() -> bool:
        return (await agent.run(INPUT)).output == "done"

    return gathered(one() for _ in range(n))


concurrent = concurrent_workload(start_runs)


# --- (g) http -------------------------------------------------------------------------------


def http(options: Options) -> None:
    if not options.base_url:
        skip("http", "one-tool-call", "no --base-url (the harness starts the loopback server)")
        return
    from pydantic_ai.models.openai import OpenAIChatModel  # only this workload talks HTTP
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("bench-model", provider=OpenAIProvider(base_url=options.base_url, api_key="x"))
    agent = Agent(model, system_prompt=SYSTEM, tools=[Tool(lookup)])
    done, seen = checked({"tools": 1}, "done")

    async def run() -> None:
        TALLY.reset()
        async with agent:  # opens the provider's HTTP client on this run's loop and closes it after
            done(await consume_events(agent, INPUT))

    samples = [s * 1e3 for s in time_async(run, options.rounds)]
    report(
        "http",
        "one-tool-call",
        unit="ms/run",
        samples=samples,
        expected={"tools": 1},
        seen=seen[-1],
        how="OpenAIChatModel + OpenAIProvider, run_stream_events",
    )


if __name__ == "__main__":
    main(
        {
            "react": react,
            "workflow": workflow,
            "approval": approval,
            "import": cold_import,
            "construct": construct,
            "concurrent": concurrent,
            "http": http,
        }
    )
