"""Workflow agents against LangGraph graphs doing the same work, in one run.

Two shapes, each agent or graph node making exactly one call to an instant model double that
answers with one assistant message (text and usage 10/5 tokens):

* **sequential-3**: rillet ``SequentialAgent`` of 3 ``ChatModelAgent``s; LangGraph
  ``StateGraph(MessagesState)`` with 3 nodes in a chain (START -> n0 -> n1 -> n2 -> END), each
  node calling its model on the messages so far and appending the reply.
* **parallel-8**: rillet ``ParallelAgent`` of 8 ``ChatModelAgent``s; LangGraph: 8 nodes fanned
  out from START, all joined into one ``join`` node (a no-op: rillet's ParallelAgent joins its
  lanes without a further step) before END.

rillet's agents each hold a ``ScriptedModel`` with one scripted reply (``record=False``),
rewound before every round; LangGraph's nodes each call a ``BaseChatModel`` double with
``ainvoke``. Modes, all in one run:

* ``rillet``: ``Runner(workflow)`` consumed with ``async for``, every event counted.
* ``langgraph-ainvoke``: ``graph.ainvoke(input)``, the final state checked.
* ``langgraph-astream``: ``graph.astream(input, stream_mode="updates")``, every update counted
  (one per node, the join node included).

A third, rillet-only series, **loop rounds**: a ``LoopAgent`` of one ``BaseAgent`` that says
one thing a round and never reads its input, run for 1,000 and for 8,000 rounds; the summary's
"largest size / smallest size" is how its cost per round scales (flat: about x1.00).

One round is one whole run on the benchmark's event loop (one loop per benchmark, as a
server keeps one), so pytest-benchmark's "ops" column is runs per second; events per second is events per run / median
(``extra_info["events"]``: 3 and 8 for rillet, the same for ainvoke's new messages, 3 and 9
updates for astream).

Run: .venv/bin/python -m pytest benches/bench_workflows.py --benchmark-only \
         --benchmark-columns=median,mean,ops,rounds --benchmark-group-by=group
(benches/conftest.py then prints every rillet-vs-peer ratio of the run.)
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    BaseAgent,
    ChatModelAgent,
    LoopAgent,
    Message,
    ParallelAgent,
    ResponseMeta,
    Runner,
    ScriptedModel,
    SequentialAgent,
    Usage,
    event_from_message,
)

INPUT = "go"
PROMPT_TOKENS, COMPLETION_TOKENS = 10, 5
SHAPES = {"sequential-3": 3, "parallel-8": 8}
ROUNDS = {"rillet": 300, "langgraph-ainvoke": 100, "langgraph-astream": 100}
WARMUP = 5

Workload = tuple[Callable[[], Awaitable[int]], Callable[[], None], int]


def reply_text(i: int) -> str:
    return f"agent {i} has done its part of the work"


# --- rillet -----------------------------------------------------------------------------


def rillet_workload(shape: str) -> Workload:
    n = SHAPES[shape]
    usage = Usage(PROMPT_TOKENS, COMPLETION_TOKENS, PROMPT_TOKENS + COMPLETION_TOKENS)
    models = [
        ScriptedModel(
            [Message(role="assistant", content=reply_text(i), response_meta=ResponseMeta("stop", usage))],
            record=False,
            name=f"m{i}",
        )
        for i in range(n)
    ]
    agents = [ChatModelAgent(f"a{i}", model=m) for i, m in enumerate(models)]
    workflow = (
        SequentialAgent("seq", sub_agents=agents)
        if shape.startswith("seq")
        else ParallelAgent("par", sub_agents=agents)
    )
    runner = Runner(workflow)

    async def run() -> int:
        count = 0
        async for ev in runner.query(INPUT):
            if ev.error is not None:
                raise ev.error
            count += 1
        return count

    def reset() -> None:
        for m in models:
            m.reset()

    return run, reset, n


# --- LangGraph ----------------------------------------------------------------------------


def peer_model(i: int) -> Any:
    """A LangChain chat model double: one instant AIMessage per call (text and usage)."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    text = reply_text(i)
    usage = {
        "input_tokens": PROMPT_TOKENS,
        "output_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
    }

    class PeerDouble(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "bench-double"

        def _reply(self) -> ChatResult:
            msg = AIMessage(content=text, usage_metadata=dict(usage), response_metadata={"finish_reason": "stop"})  # type: ignore[arg-type]
            return ChatResult(generations=[ChatGeneration(message=msg)])

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            return self._reply()

        async def _agenerate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            return self._reply()

    return PeerDouble()


def peer_graph(shape: str) -> Any:
    from langgraph.graph import END, START, MessagesState, StateGraph

    n = SHAPES[shape]
    builder = StateGraph(MessagesState)

    def node(model: Any) -> Callable[[MessagesState], Awaitable[dict[str, Any]]]:
        async def call(state: MessagesState) -> dict[str, Any]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        return call

    names = [f"n{i}" for i in range(n)]
    for i, name in enumerate(names):
        builder.add_node(name, node(peer_model(i)))
    if shape.startswith("seq"):
        for a, b in zip([START, *names], [*names, END], strict=True):
            builder.add_edge(a, b)
    else:

        async def join(state: MessagesState) -> dict[str, Any]:
            return {}

        builder.add_node("join", join)
        for name in names:
            builder.add_edge(START, name)
        builder.add_edge(names, "join")
        builder.add_edge("join", END)
    return builder.compile()


def peer_workload(mode: str, shape: str) -> Workload:
    n = SHAPES[shape]
    graph = peer_graph(shape)
    inputs = {"messages": [{"role": "user", "content": INPUT}]}

    if mode == "ainvoke":

        async def run() -> int:
            state = await graph.ainvoke(inputs)
            msgs = state["messages"]
            if len(msgs) != n + 1 or msgs[-1].type != "ai":
                raise AssertionError(f"langgraph: unexpected final state {msgs!r}")
            return len(msgs) - 1

        return run, lambda: None, n

    async def stream() -> int:
        count = 0
        async for _update in graph.astream(inputs, stream_mode="updates"):
            count += 1
        return count

    return stream, lambda: None, n if shape.startswith("seq") else n + 1


WORKLOADS: dict[str, Callable[[str], Workload]] = {
    "rillet": rillet_workload,
    "langgraph-ainvoke": lambda shape: peer_workload("ainvoke", shape),
    "langgraph-astream": lambda shape: peer_workload("astream", shape),
}


# --- the harness ----------------------------------------------------------------------------


@pytest.mark.parametrize("impl", list(WORKLOADS))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_workflow(benchmark: Any, impl: str, shape: str) -> None:
    run, reset, events = WORKLOADS[impl](shape)
    benchmark.group = f"workflow {shape}"
    benchmark.extra_info.update(
        impl=impl, series=f"workflow {shape}", size=SHAPES[shape], per=events, unit="event", events=events
    )

    # One event loop for the benchmark, as a server keeps one; each round is one run on it.
    loop = asyncio.new_event_loop()
    try:
        # Check the work once, outside the timing: a run yields the expected events.
        reset()
        got = loop.run_until_complete(run())
        assert got == events, f"{impl} {shape}: {got} events, expected {events}"

        def setup() -> tuple[tuple[()], dict[str, Any]]:
            reset()
            gc.collect()
            return (), {}

        result = benchmark.pedantic(
            lambda: loop.run_until_complete(run()), setup=setup, rounds=ROUNDS[impl], warmup_rounds=WARMUP
        )
        assert result == events
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


# --- a LoopAgent's cost per round, at two sizes ---------------------------------------------

LOOP_ROUNDS = (1000, 8000)


class Say(BaseAgent):
    """Says one thing a round and never reads its input (the history it is given)."""

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        yield event_from_message(Message.assistant(self.name))


@pytest.mark.parametrize("rounds", LOOP_ROUNDS)
def test_loop_rounds(benchmark: Any, rounds: int) -> None:
    benchmark.group = "workflow loop rounds"
    benchmark.extra_info.update(impl="rillet", series="loop rounds", size=rounds, per=rounds, unit="event")

    async def run() -> int:
        count = 0
        async for _ev in Runner(LoopAgent("loop", sub_agents=[Say("say")], max_iterations=rounds)).query(INPUT):
            count += 1
        return count

    def setup() -> None:
        gc.collect()

    loop = asyncio.new_event_loop()
    try:
        result = benchmark.pedantic(lambda: loop.run_until_complete(run()), setup=setup, rounds=5, warmup_rounds=1)
        assert result == rounds
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
