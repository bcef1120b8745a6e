"""The end-to-end scripted ReAct workload of issue 9, for rillet and its peers.

Every framework runs the same conversation: system prompt "You are a benchmark agent.", user
input "go", and a model double that, for step i = 0..K-1, asks for one tool call with id
``call_{i}`` (``add(a=2, b=3)`` for even i, ``echo(text="hello")`` for odd i), then answers
"done". Every reply carries usage 10/5 tokens. So a run makes K + 1 model calls and K tool
calls, and the numbers are reported in microseconds per model call.

* rillet: ``Runner(ChatModelAgent(...), streaming=...)`` consumed with ``async for``; the
  model double implements rillet's ChatModel protocol (``generate`` / ``stream``).
* langchain: ``langchain.agents.create_agent``; langgraph: ``langgraph.prebuilt.
  create_react_agent``; both driven by a ``BaseChatModel`` subclass (``_agenerate``,
  ``_astream``), through ``ainvoke`` or ``astream(stream_mode="messages")``.
* floor: no framework. A bare asyncio ReAct loop over the same rillet double, sending each
  message through a rillet ``Channel`` to a consumer task; "floor" with def tools hands each
  call to the loop's thread pool and back. A reference for what the work itself costs.

Variants, all in one run: ``def`` tools and ``async def`` tools; non-streaming ("invoke") and
streaming ("stream", 3 chunks per reply in every framework); K = 50 and K = 100. Each round is
one whole run on a fresh event loop (made and closed outside the timing), and every event,
stream chunk or message of the run is consumed.

Run: .venv/bin/python -m pytest benches/bench_react.py --benchmark-only \
         --benchmark-columns=median,mean,rounds --benchmark-group-by=group
(benches/conftest.py then prints microseconds per step, the K = 100 / K = 50 scaling and
every rillet-vs-peer ratio of the run.)
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent / "peers"))  # the peer benchmark's folder

import pytest
import rillet
from bench_rillet import RilletDouble  # the double the peer benchmark runs too
from rillet import Channel, Message
from rillet.chatmodel import ChatModelAgent
from rillet.runner import Runner

SYSTEM = "You are a benchmark agent."
INPUT = "go"
K_VALUES = (50, 100)
TOOL_KINDS = ("def", "async")
MODES = ("invoke", "stream")
CHUNKS_PER_REPLY = 3
PROMPT_TOKENS, COMPLETION_TOKENS = 10, 5

# Rounds per benchmark: a peer's run at K = 100 takes a few hundred milliseconds.
ROUNDS = {"rillet": 30, "floor": 30, "langchain": 7, "langgraph": 7}
WARMUP = 1


def step_call(i: int) -> tuple[str, dict[str, Any]]:
    """The tool call the double asks for at step ``i``."""
    return ("add", {"a": 2, "b": 3}) if i % 2 == 0 else ("echo", {"text": "hello"})


def make_tools(kind: str) -> list[Callable[..., Any]]:
    """The two tools, as plain ``def`` functions or as ``async def`` ones (same names)."""
    if kind == "def":

        def add(a: int, b: int) -> int:
            """Adds two integers."""
            return a + b

        def echo(text: str) -> str:
            """Returns the text unchanged."""
            return text

        return [add, echo]

    async def add(a: int, b: int) -> int:  # type: ignore[no-redef]
        """Adds two integers."""
        return a + b

    async def echo(text: str) -> str:  # type: ignore[no-redef]
        """Returns the text unchanged."""
        return text

    return [add, echo]


# --- rillet -------------------------------------------------------------------------------


def rillet_tools(kind: str) -> list[Any]:
    """The tools as rillet tools (``rillet.tool``), or plain functions where that is missing
    (ChatModelAgent wraps them with ``rillet.tools.as_tool``)."""
    fns = make_tools(kind)
    make = getattr(rillet, "tool", None)
    return [make(f) for f in fns] if make is not None else fns


def rillet_workload(k: int, kind: str, mode: str) -> tuple[Callable[[], Awaitable[int]], Callable[[], None]]:
    model = RilletDouble(k)
    agent = ChatModelAgent("bench", instruction=SYSTEM, model=model, tools=rillet_tools(kind), max_iterations=k + 1)
    runner = Runner(agent, streaming=mode == "stream")

    async def run() -> int:
        n = 0
        async for ev in runner.query(INPUT):
            if ev.error is not None:
                raise ev.error
            n += 1
            mv = ev.message_output
            if mv is not None and mv.message_stream is not None:
                async for _chunk in mv.message_stream:
                    n += 1
        return n

    return run, model.reset


# --- the floor: no framework ---------------------------------------------------------------


def floor_workload(
    k: int, kind: str, mode: str, checked: bool = False
) -> tuple[Callable[[], Awaitable[int]], Callable[[], None]]:
    """The ReAct loop written by hand. ``checked`` (the "floorchecked" workload, for
    callgrind_react.py) adds the two things every framework here does per step and the bare
    loop skips: each tool's arguments validated against its signature by pydantic, and each
    message sent as an AgentEvent (``rillet.event_from_message``) instead of the bare message."""
    model = RilletDouble(k)
    tools = {f.__name__: f for f in make_tools(kind)}
    sync = kind == "def"
    checks = {name: _arguments_validator(fn) for name, fn in tools.items()}
    event = rillet.event_from_message

    async def agent(ch: Channel[Message]) -> None:
        loop = asyncio.get_running_loop()
        state = [Message.system(SYSTEM), Message.user(INPUT)]
        try:
            while True:
                reply = await model.generate(state)
                ch.send(event(reply) if checked else reply)
                state.append(reply)
                if not reply.tool_calls:
                    return
                for call in reply.tool_calls:
                    fn = tools[call.function.name]
                    if checked:
                        args = checks[call.function.name](call.function.arguments)
                    else:
                        args = json.loads(call.function.arguments)
                    if sync:
                        result = await loop.run_in_executor(None, functools.partial(fn, **args))
                    else:
                        result = await fn(**args)
                    text = result if isinstance(result, str) else json.dumps(result)
                    msg = Message.tool_message(text, call.id, call.function.name)
                    ch.send(event(msg) if checked else msg)
                    state.append(msg)
        finally:
            ch.close()

    async def run() -> int:
        ch: Channel[Message] = Channel()
        task = asyncio.get_running_loop().create_task(agent(ch))
        n = 0
        async for _msg in ch:
            n += 1
        await task
        return n

    return run, model.reset


def _arguments_validator(fn: Callable[..., Any]) -> Callable[[str], dict[str, Any]]:
    """JSON arguments -> the validated keyword arguments of ``fn`` (a pydantic model of its
    signature, as the frameworks build one for each tool)."""
    import inspect

    from pydantic import create_model

    fields: dict[str, Any] = {n: (p.annotation, ...) for n, p in inspect.signature(fn).parameters.items()}
    model = create_model(f"{fn.__name__}_args", **fields)
    validate = model.__pydantic_validator__.validate_json
    names = tuple(fields)

    def check(arguments: str) -> dict[str, Any]:
        valid = validate(arguments)
        return {n: getattr(valid, n) for n in names}

    return check


# --- the peers: LangChain's create_agent, LangGraph's create_react_agent -------------------


def peer_model(k: int) -> Any:
    """A BaseChatModel double doing the same work as RilletDouble, in LangChain's types."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
    from pydantic import PrivateAttr

    usage = {
        "input_tokens": PROMPT_TOKENS,
        "output_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
    }

    class PeerDouble(BaseChatModel):
        steps: int
        _i: int = PrivateAttr(default=0)

        @property
        def _llm_type(self) -> str:
            return "bench-double"

        def reset(self) -> None:
            self._i = 0

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _reply(self) -> AIMessage:
            i = self._i
            self._i += 1
            if i >= self.steps:
                return AIMessage(
                    content="done", usage_metadata=dict(usage), response_metadata={"finish_reason": "stop"}
                )  # type: ignore[arg-type]
            name, args = step_call(i)
            return AIMessage(
                content="",
                tool_calls=[{"name": name, "args": args, "id": f"call_{i}", "type": "tool_call"}],
                usage_metadata=dict(usage),  # type: ignore[arg-type]
                response_metadata={"finish_reason": "tool_calls"},
            )

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=self._reply())])

        async def _agenerate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=self._reply())])

        async def _astream(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> AsyncIterator[ChatGenerationChunk]:
            i = self._i
            self._i += 1
            if i >= self.steps:
                chunks = [
                    AIMessageChunk(content="do"),
                    AIMessageChunk(content="ne"),
                    AIMessageChunk(
                        content="",
                        usage_metadata=dict(usage),  # type: ignore[arg-type]
                        response_metadata={"finish_reason": "stop"},
                        chunk_position="last",  # else LangChain appends an empty closing chunk
                    ),
                ]
            else:
                name, args = step_call(i)
                chunks = [
                    AIMessageChunk(
                        content="",
                        tool_call_chunks=[
                            {"name": name, "args": "", "id": f"call_{i}", "index": 0, "type": "tool_call_chunk"}
                        ],
                    ),
                    AIMessageChunk(
                        content="",
                        tool_call_chunks=[
                            {"name": None, "args": json.dumps(args), "id": None, "index": 0, "type": "tool_call_chunk"}
                        ],
                    ),
                    AIMessageChunk(
                        content="",
                        usage_metadata=dict(usage),  # type: ignore[arg-type]
                        response_metadata={"finish_reason": "tool_calls"},
                        chunk_position="last",
                    ),
                ]
            for c in chunks:
                yield ChatGenerationChunk(message=c)

    return PeerDouble(steps=k)


def peer_workload(impl: str, k: int, kind: str, mode: str) -> tuple[Callable[[], Awaitable[int]], Callable[[], None]]:
    model = peer_model(k)
    tools = make_tools(kind)
    if impl == "langchain":
        from langchain.agents import create_agent

        graph = create_agent(model, tools=tools, system_prompt=SYSTEM)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of create_agent
            from langgraph.prebuilt import create_react_agent

            graph = create_react_agent(model, tools, prompt=SYSTEM)
    inputs = {"messages": [{"role": "user", "content": INPUT}]}
    config = {"recursion_limit": 4 * k + 10}  # two graph steps per model call, and some room

    if mode == "invoke":

        async def run() -> int:
            state = await graph.ainvoke(inputs, config)
            msgs = state["messages"]
            if msgs[-1].content != "done":
                raise AssertionError(f"{impl}: unexpected last message {msgs[-1]!r}")
            return len(msgs)

    else:

        async def run() -> int:
            n = 0
            async for _chunk, _meta in graph.astream(inputs, config, stream_mode="messages"):
                n += 1
            return n

    return run, model.reset


# --- the harness ---------------------------------------------------------------------------

WORKLOADS: dict[str, Callable[[int, str, str], tuple[Callable[[], Awaitable[int]], Callable[[], None]]]] = {
    "rillet": rillet_workload,
    "floor": floor_workload,
    "floorchecked": functools.partial(floor_workload, checked=True),  # callgrind_react.py only
    "langchain": functools.partial(peer_workload, "langchain"),
    "langgraph": functools.partial(peer_workload, "langgraph"),
}

# What one run consumes: every event (and stream chunk) for rillet, every message for the
# floor and ainvoke, every (chunk, metadata) pair for astream.
EXPECTED = {
    ("rillet", "invoke"): lambda k: 2 * k + 1,
    ("rillet", "stream"): lambda k: 2 * k + 1 + CHUNKS_PER_REPLY * (k + 1),
    ("floor", "invoke"): lambda k: 2 * k + 1,
    ("langchain", "invoke"): lambda k: 2 * k + 2,  # the user message too
    ("langchain", "stream"): lambda k: CHUNKS_PER_REPLY * (k + 1) + k,
    ("langgraph", "invoke"): lambda k: 2 * k + 2,
    ("langgraph", "stream"): lambda k: CHUNKS_PER_REPLY * (k + 1) + k,
}


def cases() -> Iterator[Any]:
    for k in K_VALUES:
        for kind in TOOL_KINDS:
            for mode in MODES:
                for impl in WORKLOADS:
                    if impl == "floorchecked" or (impl == "floor" and mode == "stream"):
                        continue
                    yield pytest.param(impl, kind, mode, k, id=f"{impl}-{kind}-{mode}-K{k}")


@pytest.mark.parametrize(("impl", "kind", "mode", "k"), list(cases()))
def test_react(benchmark: Any, impl: str, kind: str, mode: str, k: int) -> None:
    run, reset = WORKLOADS[impl](k, kind, mode)
    series = f"react {kind}-tools {mode}"
    benchmark.group = f"{series} K={k}"
    benchmark.extra_info.update(impl=impl, series=series, size=k, per=k + 1, unit="model call")

    def setup() -> tuple[tuple[asyncio.AbstractEventLoop], dict[str, Any]]:
        reset()
        gc.collect()
        return (asyncio.new_event_loop(),), {}

    def target(loop: asyncio.AbstractEventLoop) -> int:
        return loop.run_until_complete(run())

    def teardown(loop: asyncio.AbstractEventLoop) -> None:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()

    n = benchmark.pedantic(target, setup=setup, teardown=teardown, rounds=ROUNDS[impl], warmup_rounds=WARMUP)
    assert n == EXPECTED[impl, mode](k), f"{impl} {kind} {mode} K={k}: consumed {n} items"
