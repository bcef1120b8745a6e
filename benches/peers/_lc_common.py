"""What the LangChain and LangGraph peer scripts share (both run on LangGraph's graph runtime).

A scripted ``BaseChatModel`` (the role of LangChain's own fake chat models) and the workloads
written once against a ``build(model, tools, **options)`` that makes the framework's agent:
``create_agent`` in bench_langchain.py, ``create_react_agent`` in bench_langgraph.py. Runs in
those frameworks' virtual environments only (not type-checked with rillet: mypy skips it).
"""
# mypy: ignore-errors

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import sqlite3
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

# no tracing or telemetry calls leave the process (set before LangChain is imported)
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"
warnings.simplefilter("ignore")  # deprecation notices would go to stderr on every build

from _common import (  # noqa: E402 - after the environment above
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
    gathered,
    lookup,
    make_tools,
    report,
    skip,
    step_call,
    time_async,
    time_sync,
    us,
)
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

USAGE = {
    "input_tokens": PROMPT_TOKENS,
    "output_tokens": COMPLETION_TOKENS,
    "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
}
INPUTS = {"messages": [{"role": "user", "content": INPUT}]}
CONFIG = {"recursion_limit": 4 * STEPS + 10}  # two graph steps per model call, and some room

# A turn of the script: a tool call (name, arguments, id) or the answer's text.
Turn = tuple[str, dict[str, Any], str] | str
Plan = Callable[[int, list[Any]], Turn]


class ScriptedModel(BaseChatModel):
    """Plays ``plan(i, messages)`` at its i-th call, counting each call in TALLY.models; waits
    for ``gate`` (an asyncio.Event) first when one is given."""

    plan: Any
    gate: Any = None
    _i: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "bench-scripted"

    def reset(self) -> None:
        self._i = 0

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        # the script already knows which tools it calls. This favours the peer: a provider's
        # bind_tools converts every tool to its JSON schema, and create_agent binds per model call
        return self

    def _turn(self, messages: list[Any]) -> Turn:
        TALLY.models += 1
        i = self._i
        self._i += 1
        return self.plan(i, messages)

    def _result(self, turn: Turn) -> ChatResult:
        if isinstance(turn, str):
            msg = AIMessage(content=turn, usage_metadata=dict(USAGE), response_metadata={"finish_reason": "stop"})
        else:
            name, args, id_ = turn
            msg = AIMessage(
                content="",
                tool_calls=[{"name": name, "args": args, "id": id_, "type": "tool_call"}],
                usage_metadata=dict(USAGE),
                response_metadata={"finish_reason": "tool_calls"},
            )
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return self._result(self._turn(messages))

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if self.gate is not None:
            await self.gate.wait()
        return self._result(self._turn(messages))

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        if self.gate is not None:
            await self.gate.wait()
        for chunk in _chunks(self._turn(messages)):
            yield ChatGenerationChunk(message=chunk)


def _chunks(turn: Turn) -> Iterator[AIMessageChunk]:
    """CHUNKS_PER_REPLY chunks: name then arguments then finish; or two halves of the text then finish."""
    if isinstance(turn, str):
        yield AIMessageChunk(content=turn[:2])
        yield AIMessageChunk(content=turn[2:])
        finish = "stop"
    else:
        name, args, id_ = turn
        head = {"name": name, "args": "", "id": id_, "index": 0, "type": "tool_call_chunk"}
        yield AIMessageChunk(content="", tool_call_chunks=[head])
        body = {"name": None, "args": json.dumps(args), "id": None, "index": 0, "type": "tool_call_chunk"}
        yield AIMessageChunk(content="", tool_call_chunks=[body])
        finish = "tool_calls"
    # chunk_position="last": else LangChain appends an empty closing chunk of its own
    yield AIMessageChunk(
        content="", usage_metadata=dict(USAGE), response_metadata={"finish_reason": finish}, chunk_position="last"
    )


def react_plan(i: int, messages: list[Any]) -> Turn:
    if i < STEPS:
        name, args = step_call(i)
        return name, args, call_id(i)
    return "done"


def answer(text: str) -> Plan:
    return lambda i, messages: text


def book_plan(i: int, messages: list[Any]) -> Turn:
    """Asks for "book" until its result is in the conversation, then answers "booked"."""
    if isinstance(messages[-1], ToolMessage):
        return "booked"
    return APPROVAL_TOOL, {"city": "Paris"}, "call_book"


def last_text(state: dict[str, Any]) -> str:
    return state["messages"][-1].content


Build = Callable[..., Any]  # build(model, tools, **options) -> the framework's compiled agent


# --- (a) react ------------------------------------------------------------------------------


def react_workload(build: Build) -> Callable[[Options], None]:
    def react(options: Options) -> None:
        for kind, mode in itertools.product(("def", "async"), ("invoke", "stream")):
            react_variant(build, kind, mode, options)
        react_sync(build, options)

    return react


def react_variant(build: Build, kind: str, mode: str, options: Options) -> None:
    model = ScriptedModel(plan=react_plan)
    agent = build(model, make_tools(kind), system_prompt=SYSTEM)
    chunks = [0]

    async def invoke() -> None:
        TALLY.reset()
        model.reset()
        if last_text(await agent.ainvoke(INPUTS, CONFIG)) != "done":
            TALLY.models = -1

    async def stream() -> None:  # every (message chunk, metadata) pair is read by the caller
        TALLY.reset()
        model.reset()
        n, text = 0, ""
        async for chunk, _meta in agent.astream(INPUTS, CONFIG, stream_mode="messages"):
            n += 1
            if isinstance(chunk, AIMessageChunk):
                text += chunk.content
        chunks[0] = n
        if not text.endswith("done"):
            TALLY.models = -1

    samples = time_async(invoke if mode == "invoke" else stream, options.rounds)
    extra = {"chunks_read": chunks[0]} if mode == "stream" else {}
    report(
        "react",
        f"{kind}-{mode}",
        unit="us/step",
        samples=us(samples, STEPS + 1),
        expected={"tools": STEPS, "models": STEPS + 1},
        seen={"tools": TALLY.tools, "models": TALLY.models},
        **extra,
    )


def react_sync(build: Build, options: Options) -> None:
    """ "def-invoke-sync": def tools under the graph's synchronous ``invoke``."""
    model = ScriptedModel(plan=react_plan)
    agent = build(model, make_tools("def"), system_prompt=SYSTEM)

    def run() -> None:
        TALLY.reset()
        model.reset()
        if last_text(agent.invoke(INPUTS, CONFIG)) != "done":
            TALLY.models = -1

    samples = time_sync(run, options.rounds)
    report(
        "react",
        "def-invoke-sync",
        unit="us/step",
        samples=us(samples, STEPS + 1),
        expected={"tools": STEPS, "models": STEPS + 1},
        seen={"tools": TALLY.tools, "models": TALLY.models},
    )


# --- (b) workflow ---------------------------------------------------------------------------


def workflow_workload(build: Build) -> Callable[[Options], None]:
    """Agents as nodes of a LangGraph StateGraph (the sequential and parallel construct both
    frameworks document): a chain START -> a0 -> a1 -> a2 -> END, and eight nodes each with an
    edge from START and to END (run in one superstep, concurrently)."""

    def agents(n: int) -> list[Any]:
        return [build(ScriptedModel(plan=answer(f"text {j}")), [], name=f"a{j}") for j in range(n)]

    def sequential() -> Any:
        graph = StateGraph(MessagesState)
        previous = START
        for j, agent in enumerate(agents(PIPELINE_AGENTS)):
            graph.add_node(f"a{j}", agent)
            graph.add_edge(previous, f"a{j}")
            previous = f"a{j}"
        graph.add_edge(previous, END)
        return graph.compile()

    def parallel() -> Any:
        graph = StateGraph(MessagesState)
        for j, agent in enumerate(agents(PARALLEL_AGENTS)):
            graph.add_node(f"a{j}", agent)
            graph.add_edge(START, f"a{j}")
            graph.add_edge(f"a{j}", END)
        return graph.compile()

    def workflow(options: Options) -> None:
        cases = [
            ("sequential3", sequential(), PIPELINE_AGENTS, "StateGraph chain of 3 agent subgraphs"),
            ("parallel8", parallel(), PARALLEL_AGENTS, "StateGraph: 8 agent subgraphs, each an edge from START"),
        ]
        for variant, graph, n, how in cases:
            outputs: list[dict[str, Any]] = []

            async def run(graph: Any = graph, outputs: list[dict[str, Any]] = outputs) -> None:
                TALLY.reset()
                outputs.append(await graph.ainvoke(INPUTS))

            samples = time_async(run, options.rounds)
            texts = sorted(m.content for m in outputs[-1]["messages"][1:])
            whole = texts == [f"text {j}" for j in range(n)]
            seen = {"models": TALLY.models if whole else -1}
            report("workflow", variant, unit="us/run", samples=us(samples), expected={"models": n}, seen=seen, how=how)

    return workflow


# --- (c) approval ---------------------------------------------------------------------------


def approval_workload(
    build_approval: Callable[[Any], Any], resume: Callable[[list[Any]], Any], how: str
) -> Callable[[Options], None]:
    """``build_approval(saver)`` makes the agent whose "book" call waits for a person; the first
    half runs until the interrupt on one SQLite connection, the second resumes with
    ``Command(resume=resume(interrupts))`` through a new agent on a new connection to the file."""

    def approval(options: Options) -> None:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # this workload's only
        from langgraph.types import Command

        path = os.path.join(options.db_dir or tempfile.mkdtemp(prefix="lc-bench-"), "langgraph-approval.db")
        threads = itertools.count()
        texts: list[str] = []

        async def cycle() -> None:
            TALLY.reset()
            config = {"configurable": {"thread_id": f"trip-{os.getpid()}-{next(threads)}"}}
            async with AsyncSqliteSaver.from_conn_string(path) as saver:
                state = await build_approval(saver).ainvoke(INPUTS, config)
            interrupts = state.get("__interrupt__") or []
            if not interrupts or TALLY.tools:
                raise AssertionError(f"the run did not stop for approval: {state}")
            async with AsyncSqliteSaver.from_conn_string(path) as saver:  # as a later process would
                state = await build_approval(saver).ainvoke(Command(resume=resume(interrupts)), config)
            texts.append(last_text(state))

        samples = time_async(cycle, options.rounds)
        with sqlite3.connect(path) as db:  # the state really went through the file
            saved = db.execute("select count(*) from checkpoints").fetchone()[0]
        seen = {"tools": TALLY.tools, "models": TALLY.models if texts[-1] == "booked" and saved else -1}
        report(
            "approval",
            "interrupt-resume",
            unit="us/cycle",
            samples=us(samples),
            expected={"tools": 1, "models": 2},
            seen=seen,
            how=how,
        )

    return approval


def book(city: str) -> str:
    """Books a trip to a city."""
    TALLY.tools += 1
    return f"booked {city}"


# --- (f) concurrent -------------------------------------------------------------------------


def concurrent_workload_of(build: Build) -> Callable[[Options], None]:
    async def start_runs(n: int, release: asyncio.Event) -> Callable[[], Awaitable[int]]:
        agent = build(ScriptedModel(plan=answer("done"), gate=release), [])

        async def one() -> bool:
            return last_text(await agent.ainvoke(INPUTS)) == "done"

        return gathered(one() for _ in range(n))

    return concurrent_workload(start_runs)


# --- (g) http -------------------------------------------------------------------------------


def http_workload(build: Build) -> Callable[[Options], None]:
    """One run through langchain-openai's ChatOpenAI (the OpenAI SDK's async client, streaming),
    two ways: "one-tool-call", each run on a fresh loop with a new HTTP client (ChatOpenAI's
    default client is cached per process and bound to the loop that first used it, so each
    round gets a new agent and client: the client's making is timed, the graph's is not); and
    "one-tool-call-warm", one agent and its client reused on one loop, as a long-lived service
    runs."""

    def http(options: Options) -> None:
        if not options.base_url:
            skip("http", "one-tool-call", "no --base-url (the harness starts the loopback server)")
            return
        from langchain_openai import ChatOpenAI  # this workload's only
        from openai import DefaultAsyncHttpxClient

        def client_and_model() -> tuple[Any, Any]:
            client = DefaultAsyncHttpxClient()
            model = ChatOpenAI(
                model="bench-model", base_url=options.base_url, api_key="x", streaming=True, http_async_client=client
            )
            return client, model

        def agent() -> tuple[Any, Any]:
            client, model = client_and_model()
            return build(model, [lookup]), client

        texts: list[str] = []

        def fresh() -> float:
            # the client (and ChatOpenAI over it) is made inside the timing, as rillet's and the
            # httpx floor's fresh runs make theirs (its SSL context load is most of such a run);
            # only build()'s graph compile stays outside (the construct workload times that)
            gc.disable()
            try:
                start = time.perf_counter()
                client, model = client_and_model()
                made = time.perf_counter() - start
            finally:
                gc.enable()
            graph = build(model, [lookup])
            loop = asyncio.new_event_loop()
            try:
                return made + run_timed(loop, graph, texts)
            finally:
                loop.run_until_complete(client.aclose())
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        def warm() -> list[float]:
            graph, client = agent()
            loop = asyncio.new_event_loop()
            try:
                return [run_timed(loop, graph, texts) for _ in range(options.rounds + 1)][1:]  # 1 warm-up
            finally:
                loop.run_until_complete(client.aclose())
                loop.close()

        cases = [
            (
                "one-tool-call",
                lambda: [fresh() for _ in range(options.rounds + 1)][1:],
                "a fresh loop per run, the client and ChatOpenAI made inside the timing",
            ),
            ("one-tool-call-warm", warm, "one loop, agent and client reused"),
        ]
        for variant, timed, how in cases:
            samples = [s * 1e3 for s in timed()]
            seen = {"tools": TALLY.tools if texts[-1] == "done" else -1}
            report("http", variant, unit="ms/run", samples=samples, expected={"tools": 1}, seen=seen, how=how)

    return http


def run_timed(loop: asyncio.AbstractEventLoop, graph: Any, texts: list[str]) -> float:
    """Seconds of one ``graph.ainvoke`` on ``loop``, garbage collection off while timing."""
    TALLY.reset()
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        texts.append(last_text(loop.run_until_complete(graph.ainvoke(INPUTS))))
        return time.perf_counter() - start
    finally:
        gc.enable()
