"""The peer workloads on the OpenAI Agents SDK (``openai-agents``), run in its own virtual environment.

The offline test model is a :class:`agents.models.interface.Model` of our own (``get_response`` and
``stream_response``, the interface every SDK model implements) that plays ``_common``'s script;
streamed replies are Responses-API events, three a reply. Tracing is disabled and its processors
dropped, so nothing leaves the machine but the loopback requests of workload (g).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

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
    make_tools,
    report,
    step_call,
    time_async,
    time_on_one_loop,
    time_sync,
    us,
)
from agents import (
    Agent,
    ModelResponse,
    OpenAIChatCompletionsModel,
    Runner,
    RunState,
    Usage,
    function_tool,
    set_trace_processors,
    set_tracing_disabled,
)
from agents.models.interface import Model
from openai import AsyncOpenAI
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

set_tracing_disabled(True)
set_trace_processors([])  # no exporter either

# --- the offline test model -------------------------------------------------------------------

# What a script answers for one model call: ("call", name, arguments, call id) or ("text", text).
Reply = tuple[Any, ...]
Script = Callable[[Any], Awaitable[Reply]]


def _tool_results(items: Any) -> int:
    """How many tool results the model's input holds: the step the conversation is at."""
    if isinstance(items, str):
        return 0
    return sum(1 for item in items if isinstance(item, dict) and item.get("type") == "function_call_output")


def _output(reply: Reply) -> Any:
    if reply[0] == "call":
        _, name, arguments, cid = reply
        return ResponseFunctionToolCall(
            id=cid, call_id=cid, type="function_call", name=name, arguments=json.dumps(arguments)
        )
    text = ResponseOutputText(type="output_text", text=reply[1], annotations=[])
    return ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed", content=[text])


def _usage() -> Usage:
    return Usage(
        requests=1,
        input_tokens=PROMPT_TOKENS,
        output_tokens=COMPLETION_TOKENS,
        total_tokens=PROMPT_TOKENS + COMPLETION_TOKENS,
    )


def _response_usage() -> ResponseUsage:
    return ResponseUsage(
        input_tokens=PROMPT_TOKENS,
        output_tokens=COMPLETION_TOKENS,
        total_tokens=PROMPT_TOKENS + COMPLETION_TOKENS,
        input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
    )


class ScriptModel(Model):
    """Answers each call with what ``script`` says for the conversation so far; counts its calls."""

    def __init__(self, script: Script) -> None:
        self.script = script

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        TALLY.models += 1
        reply = await self.script(input)
        return ModelResponse(output=[_output(reply)], usage=_usage(), response_id=None)

    async def stream_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        TALLY.models += 1
        reply = await self.script(input)
        item = _output(reply)
        if reply[0] == "call":  # the name chunk, the arguments chunk
            opened = item.model_copy(update={"arguments": ""})
            yield ResponseOutputItemAddedEvent(
                type="response.output_item.added", item=opened, output_index=0, sequence_number=0
            )
            yield ResponseFunctionCallArgumentsDeltaEvent(
                type="response.function_call_arguments.delta",
                delta=item.arguments,
                item_id=item.id,
                output_index=0,
                sequence_number=1,
            )
        else:  # the answer in two pieces
            text = reply[1]
            for n, piece in enumerate((text[:2], text[2:])):
                yield ResponseTextDeltaEvent(
                    type="response.output_text.delta",
                    delta=piece,
                    item_id=item.id,
                    content_index=0,
                    output_index=0,
                    logprobs=[],
                    sequence_number=n,
                )
        response = Response(
            id="resp",
            created_at=0,
            model="script",
            object="response",
            output=[item],
            tool_choice="auto",
            tools=[],
            parallel_tool_calls=False,
            status="completed",
            usage=_response_usage(),
        )
        yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=2)


async def react_script(items: Any) -> Reply:
    step = _tool_results(items)
    if step < STEPS:
        name, arguments = step_call(step)
        return ("call", name, arguments, call_id(step))
    return ("text", "done")


def answer(text: str) -> Script:
    async def script(items: Any) -> Reply:
        return ("text", text)

    return script


# --- timing with counts -----------------------------------------------------------------------


class Counted:
    """Resets the tally before each run and keeps the counts of the last run, or of the first run
    that differed from ``expected`` (so one bad run among good ones still shows)."""

    def __init__(self, expected: dict[str, int]) -> None:
        self.expected = expected
        self.seen: dict[str, int] = {}

    def start(self) -> None:
        TALLY.reset()

    def finish(self) -> None:
        if self.seen and self.seen != self.expected:
            return
        self.seen = {key: getattr(TALLY, key) for key in self.expected}

    def wrap_async(self, make: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
        async def run() -> None:
            self.start()
            await make()
            self.finish()

        return run

    def wrap_sync(self, fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            self.start()
            fn()
            self.finish()

        return run


def expect_output(result: Any, text: str) -> None:
    if result.final_output != text:
        raise RuntimeError(f"the run answered {result.final_output!r}, not {text!r}")


def rounds_of(options: Options) -> int:
    return 2 if options.quick else options.rounds


# --- (a) react ----------------------------------------------------------------------------------


def react_agent(kind: str) -> Agent[Any]:
    tools = [function_tool(fn) for fn in make_tools(kind)]
    return Agent(name="react", instructions=SYSTEM, model=ScriptModel(react_script), tools=tools)


async def run_invoke(agent: Agent[Any]) -> None:
    expect_output(await Runner.run(agent, INPUT, max_turns=STEPS + 5), "done")


async def run_stream(agent: Agent[Any]) -> None:
    result = Runner.run_streamed(agent, INPUT, max_turns=STEPS + 5)
    async for _event in result.stream_events():
        pass
    expect_output(result, "done")


def react(options: Options) -> None:
    expected = {"tools": STEPS, "models": STEPS + 1}
    rounds = rounds_of(options)
    for kind in ("def", "async"):
        agent = react_agent(kind)
        for mode, run in (("invoke", run_invoke), ("stream", run_stream)):
            counted = Counted(expected)
            samples = time_async(counted.wrap_async(lambda run=run, agent=agent: run(agent)), rounds)
            report(
                "react",
                f"{kind}-{mode}",
                unit="us/step",
                samples=us(samples, STEPS + 1),
                expected=expected,
                seen=counted.seen,
            )
    agent = react_agent("def")
    counted = Counted(expected)

    def run_sync() -> None:
        expect_output(Runner.run_sync(agent, INPUT, max_turns=STEPS + 5), "done")

    samples = time_sync(counted.wrap_sync(run_sync), rounds)
    report(
        "react", "def-invoke-sync", unit="us/step", samples=us(samples, STEPS + 1), expected=expected, seen=counted.seen
    )


# --- (b) workflow ---------------------------------------------------------------------------------


def workflow(options: Options) -> None:
    rounds = rounds_of(options)
    stages = [
        Agent(name=f"stage{i}", instructions=SYSTEM, model=ScriptModel(answer(f"stage {i} done")))
        for i in range(PIPELINE_AGENTS)
    ]

    async def sequential() -> None:
        text = INPUT
        for stage in stages:  # each answer is the next agent's input
            text = (await Runner.run(stage, text)).final_output
        if text != f"stage {PIPELINE_AGENTS - 1} done":
            raise RuntimeError(f"the pipeline answered {text!r}")

    counted = Counted({"models": PIPELINE_AGENTS})
    samples = time_async(counted.wrap_async(sequential), rounds)
    report(
        "workflow",
        "sequential3",
        unit="us/run",
        samples=us(samples),
        expected=counted.expected,
        seen=counted.seen,
        how="three Runner.run calls chained, each final_output the next input (the SDK has no "
        "sequential construct; a handoff passes the conversation to an agent the model picks)",
    )

    workers = [
        Agent(name=f"worker{i}", instructions=SYSTEM, model=ScriptModel(answer("done"))) for i in range(PARALLEL_AGENTS)
    ]

    async def parallel() -> None:
        results = await asyncio.gather(*(Runner.run(worker, INPUT) for worker in workers))
        for result in results:
            expect_output(result, "done")

    counted = Counted({"models": PARALLEL_AGENTS})
    samples = time_async(counted.wrap_async(parallel), rounds)
    report(
        "workflow",
        "parallel8",
        unit="us/run",
        samples=us(samples),
        expected=counted.expected,
        seen=counted.seen,
        how="asyncio.gather of eight Runner.run calls (the SDK's documented way; it has no parallel construct)",
    )


# --- (c) approval ---------------------------------------------------------------------------------


async def booking_script(items: Any) -> Reply:
    if _tool_results(items):
        return ("text", "booked")
    return ("call", APPROVAL_TOOL, {"city": "Paris"}, "call_book")


def book(city: str) -> str:
    """Books a trip to a city."""
    TALLY.tools += 1
    return f"booked {city}"


def booking_agent() -> Agent[Any]:
    tool = function_tool(book, name_override=APPROVAL_TOOL, needs_approval=True)
    return Agent(name="booker", instructions=SYSTEM, model=ScriptModel(booking_script), tools=[tool])


def approval(options: Options) -> None:
    folder = options.db_dir or tempfile.mkdtemp(prefix="oai-approval-")
    path = os.path.join(folder, "openai_agents_approval.sqlite")
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE IF NOT EXISTS run_state (run_id TEXT PRIMARY KEY, state TEXT NOT NULL)")
    db.commit()
    first = booking_agent()

    async def cycle() -> None:
        run_id = uuid.uuid4().hex
        paused = await Runner.run(first, INPUT)
        if len(paused.interruptions) != 1 or TALLY.tools:
            raise RuntimeError(f"expected one pending approval, saw {paused.interruptions!r}")
        db.execute("INSERT INTO run_state VALUES (?, ?)", (run_id, paused.to_state().to_string()))
        db.commit()
        # the person approves later: a new agent, the state read back from SQLite
        agent = booking_agent()
        (saved,) = db.execute("SELECT state FROM run_state WHERE run_id = ?", (run_id,)).fetchone()
        state = await RunState.from_string(agent, saved)
        for pending in state.get_interruptions():
            state.approve(pending)
        expect_output(await Runner.run(agent, state), "booked")

    counted = Counted({"tools": 1, "models": 2})
    try:
        samples = time_async(counted.wrap_async(cycle), rounds_of(options))
    finally:
        db.close()
    report(
        "approval",
        "interrupt-resume",
        unit="us/cycle",
        samples=us(samples),
        expected=counted.expected,
        seen=counted.seen,
        how="function_tool(needs_approval=True); result.interruptions; RunState.to_string() written to a "
        "SQLite table by the script (the SDK's SQLiteSession stores conversation items, not a paused "
        "run's state); a new Agent, RunState.from_string, approve, Runner.run(agent, state)",
    )


# --- (d) import, (e) construct --------------------------------------------------------------------

_construct_model = ScriptModel(answer("done"))

construct = construction_workload(lambda: Agent(name="agent", model=_construct_model, tools=[function_tool(lookup)]))


# --- (f) concurrent -------------------------------------------------------------------------------


async def start_runs(n: int, release: asyncio.Event) -> Callable[[], Awaitable[int]]:
    async def wait_then_answer(items: Any) -> Reply:
        await release.wait()
        return ("text", "done")

    agent = Agent(name="waiter", instructions=SYSTEM, model=ScriptModel(wait_then_answer))

    # One Agent per run (agent.clone()): runs sharing one Agent each check the tools of every
    # other run using it at every turn, so N runs cost O(N^2) (1,000 runs sharing one agent took
    # 26 s to drain against 2.6 s for 500).
    async def one() -> bool:
        return (await Runner.run(agent.clone(), INPUT)).final_output == "done"

    return gathered(one() for _ in range(n))


# --- (g) http -------------------------------------------------------------------------------------


def http(options: Options) -> None:
    if not options.base_url:
        raise RuntimeError("workload http needs --base-url (the loopback server of _server.py)")
    rounds = 3 if options.quick else max(5, options.rounds)

    def http_agent(client: AsyncOpenAI) -> Agent[Any]:
        model = OpenAIChatCompletionsModel(model="bench-model", openai_client=client)
        tool = function_tool(lookup)
        return Agent(name="http", instructions=SYSTEM, model=model, tools=[tool])

    async def once(agent: Agent[Any]) -> None:
        result = Runner.run_streamed(agent, INPUT)
        async for _event in result.stream_events():
            pass
        expect_output(result, "done")

    async def fresh() -> None:
        # as rillet's and the httpx floor's "one-tool-call": a new client on each run's fresh loop,
        # made and closed inside the timing (a client's SSL context load is most of such a run)
        client = AsyncOpenAI(base_url=options.base_url, api_key="x")
        try:
            await once(http_agent(client))
        finally:
            await client.close()

    def warm() -> tuple[list[float], dict[str, int]]:
        client = AsyncOpenAI(base_url=options.base_url, api_key="x")
        agent = http_agent(client)
        counted = Counted({"tools": 1})

        async def close() -> None:
            with contextlib.suppress(Exception):
                await client.close()

        # the warm-up run pays the connection and the SDK's first-use costs
        return time_on_one_loop(counted.wrap_async(lambda: once(agent)), rounds, close), counted.seen

    counted = Counted({"tools": 1})
    samples = time_async(counted.wrap_async(fresh), rounds)
    report(
        "http",
        "one-tool-call",
        unit="ms/run",
        samples=[s * 1e3 for s in samples],
        expected={"tools": 1},
        seen=counted.seen,
        how="OpenAIChatCompletionsModel over a new AsyncOpenAI(base_url=loopback) per run (fresh loop), "
        "Runner.run_streamed with every event read",
    )
    samples, seen = warm()
    report(
        "http",
        "one-tool-call-warm",
        unit="ms/run",
        samples=[s * 1e3 for s in samples],
        expected={"tools": 1},
        seen=seen,
        how="OpenAIChatCompletionsModel over AsyncOpenAI(base_url=loopback), Runner.run_streamed with every "
        "event read; one client made once and reused across runs on one event loop",
    )


if __name__ == "__main__":
    from _common import main

    print(f"openai-agents on Python {sys.version.split()[0]}", file=sys.stderr)
    main(
        {
            "react": react,
            "workflow": workflow,
            "approval": approval,
            "import": import_workload("from agents import Agent, Runner, function_tool"),
            "construct": construct,
            "concurrent": concurrent_workload(start_runs),
            "http": http,
        }
    )
