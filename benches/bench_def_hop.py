"""The def-tool hop: a ReAct step with ``def`` tools against ``async def`` ones, consumed with
``async for`` and with a plain ``for``, beside the floor of a thread hand-off on this machine.

    PYTHONPATH=python .venv/bin/python benches/bench_def_hop.py [--rounds 15] [--switch-interval S] [--slowed] [CASE ...]
    PYTHONPATH=python .venv/bin/python -m pytest benches/bench_def_hop.py --benchmark-only

Each round runs every case once, in turn (so a busy machine slows them alike); the medians and
minima over the rounds are printed in microseconds per model call (bench_react.py's workload,
K = 50: 51 model calls and 50 tool calls a run), then each def case over the bare round trip
(the median of the per-round ratios: #31's target is at most 2x) and, per def case, how many
of its functions the loop no longer waits for. ``--slowed`` starts every def function with as
many slow calls on record as stop the loop waiting for it (``workers.SLOW_CALLS``): the state
four preemptions of a quick function by a busy machine leave, which lasted for the process's
life before rillet forgot old slow calls. Cases:

* ``async-tools async-for`` / ``async-tools for``: ``async def`` tools, the reference.
* ``def-tools async-for`` / ``def-tools for``: ``def`` tools (a worker thread each call), the
  two of bench_react.py (``add`` and ``echo``) in turn.
* ``def-mix async-for`` / ``def-mix for``: four different ``def`` tools called in turn, one a
  step (``add``, ``echo``, ``upper``, ``count``), as an agent with several tools calls them.
* ``def-one async-for`` / ``def-one for``: one ``def`` function called at every step.
* ``def-inline async-for`` / ``def-inline for``: ``rillet.tool(fn, inline=True)`` (skipped on a
  rillet without it).
* ``floor ping-pong``: one round trip between two bare Python threads through two
  ``queue.SimpleQueue``: the least a hand-off each way costs here (the "bare thread round
  trip" of #31's target).
* ``floor loop<->thread``: one round trip from an asyncio task to a thread and back through
  ``loop.call_soon_threadsafe`` (what a ``def`` tool cost before the loop waited for it).

``async for`` runs the run on a fresh event loop in this thread; ``for`` iterates the run from
plain code, so it runs on rillet's background loop thread and every event crosses to this one.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import json
import queue
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "peers"))  # the peer benchmark's folder

import bench_react as b
import pytest
import rillet
from bench_rillet import RilletDouble
from rillet import FunctionCall, Message, ResponseMeta, ToolCall, Usage
from rillet.chatmodel import ChatModelAgent
from rillet.runner import Runner

K = 50
HOPS = 2000  # round trips per floor measurement
USAGE = Usage(b.PROMPT_TOKENS, b.COMPLETION_TOKENS, b.PROMPT_TOKENS + b.COMPLETION_TOKENS)


def mix_tools() -> list[Callable[..., Any]]:
    """Four different quick ``def`` functions (fresh ones on each call: their pace is their own)."""

    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    def echo(text: str) -> str:
        """Returns the text unchanged."""
        return text

    def upper(text: str) -> str:
        """Returns the text in capitals."""
        return text.upper()

    def count(items: list[int]) -> int:
        """Counts the items."""
        return len(items)

    return [add, echo, upper, count]


ARGUMENTS = {"add": {"a": 2, "b": 3}, "echo": {"text": "hello"}, "upper": {"text": "hello"}, "count": {"items": [1, 2]}}


class TurnDouble:
    """A model double that asks for one call a step of ``names[i % len(names)]``, then
    answers "done" after ``k`` steps."""

    def __init__(self, k: int, names: list[str]) -> None:
        self.k, self.i = k, 0
        self.calls = [(n, json.dumps(ARGUMENTS[n])) for n in names]

    def reset(self) -> None:
        self.i = 0

    async def generate(self, messages: list[Message], *, tools: Any = None, **options: Any) -> Message:
        i = self.i
        self.i += 1
        if i >= self.k:
            return Message(role="assistant", content="done", response_meta=ResponseMeta("stop", USAGE))
        name, args = self.calls[i % len(self.calls)]
        call = ToolCall(index=0, id=f"call_{i}", type="function", function=FunctionCall(name, args))
        return Message(role="assistant", tool_calls=[call], response_meta=ResponseMeta("tool_calls", USAGE))

    async def stream(self, messages: list[Message], *, tools: Any = None, **options: Any) -> Any:
        raise NotImplementedError("this bench invokes")


def _runner(kind: str) -> tuple[Runner, Any, list[Any]]:
    model: Any
    if kind in ("def-mix", "def-one"):
        fns = mix_tools()[: 4 if kind == "def-mix" else 1]
        tools: list[Any] = [rillet.tool(f) for f in fns]
        model = TurnDouble(K, [f.__name__ for f in fns])
    else:
        model = RilletDouble(K)
        if kind == "def-inline":
            tools = [rillet.tool(f, inline=True) for f in b.make_tools("def")]  # type: ignore[call-arg,unused-ignore]
        else:
            tools = b.rillet_tools(kind.partition("-")[0])
    agent = ChatModelAgent("bench", instruction=b.SYSTEM, model=model, tools=tools, max_iterations=K + 1)
    return Runner(agent), model, tools


@dataclass
class Case:
    """One measured thing: ``setup`` (untimed), then ``run`` (timed) returns how many events
    (or round trips) it made; ``per_unit`` turns the run's seconds into microseconds a unit."""

    setup: Callable[[], None]
    run: Callable[[], int]
    expect: int
    units: int
    tools: list[Any]

    def once(self) -> float:
        self.setup()
        t0 = time.perf_counter()
        n = self.run()
        dt = time.perf_counter() - t0
        assert n == self.expect, f"made {n}, expected {self.expect}"
        return dt / self.units * 1e6


def step_async_for(kind: str) -> Case:
    runner, model, tools = _runner(kind)
    loops: list[asyncio.AbstractEventLoop] = []

    async def consume() -> int:
        n = 0
        async for ev in runner.query(b.INPUT):
            if ev.error is not None:
                raise ev.error
            n += 1
        return n

    def setup() -> None:
        while loops:
            loops.pop().close()
        model.reset()
        gc.collect()
        loops.append(asyncio.new_event_loop())

    def run() -> int:
        return loops[-1].run_until_complete(consume())

    return Case(setup, run, 2 * K + 1, K + 1, tools)


def step_for(kind: str) -> Case:
    runner, model, tools = _runner(kind)

    def setup() -> None:
        model.reset()
        gc.collect()

    def run() -> int:
        n = 0
        for ev in runner.query(b.INPUT):
            if ev.error is not None:
                raise ev.error
            n += 1
        return n

    return Case(setup, run, 2 * K + 1, K + 1, tools)


def floor_ping_pong() -> Case:
    there: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    back: queue.SimpleQueue[int] = queue.SimpleQueue()

    def echo() -> None:
        while (x := there.get()) is not None:
            back.put(x)

    threading.Thread(target=echo, daemon=True).start()

    def run() -> int:
        for _ in range(HOPS):
            there.put(1)
            back.get()
        return HOPS

    return Case(lambda: None, run, HOPS, HOPS, [])


def floor_loop_thread() -> Case:
    jobs: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[int]]] = queue.SimpleQueue()

    def worker() -> None:
        while True:
            loop, fut = jobs.get()
            loop.call_soon_threadsafe(fut.set_result, 1)

    threading.Thread(target=worker, daemon=True).start()
    loops: list[asyncio.AbstractEventLoop] = []

    async def hops() -> int:
        loop = asyncio.get_running_loop()
        for _ in range(HOPS):
            fut = loop.create_future()
            jobs.put((loop, fut))
            await fut
        return HOPS

    def setup() -> None:
        while loops:
            loops.pop().close()
        loops.append(asyncio.new_event_loop())

    return Case(setup, lambda: loops[-1].run_until_complete(hops()), HOPS, HOPS, [])


def kinds() -> list[str]:
    out = ["async-tools", "def-tools", "def-mix", "def-one"]
    if "inline" in inspect.signature(rillet.tool).parameters:
        out.append("def-inline")
    return out


def cases() -> dict[str, Callable[[], Case]]:
    """Every case by name, as a maker (a case's runner and threads are made when it is)."""
    out: dict[str, Callable[[], Case]] = {}
    for kind in kinds():
        out[f"{kind} async-for"] = lambda kind=kind: step_async_for(kind)  # type: ignore[misc]
        out[f"{kind} for"] = lambda kind=kind: step_for(kind)  # type: ignore[misc]
    out["floor ping-pong"] = floor_ping_pong
    out["floor loop<->thread"] = floor_loop_thread
    return out


def not_waited(tools: list[Any]) -> int:
    """How many of these def tools' functions the loop no longer waits for (rillet's pace)."""
    paces = [getattr(t._spec(), "pace", None) for t in tools if hasattr(t, "_spec")]
    return sum(1 for p in paces if p is not None and not p.waited)


# --- pytest-benchmark ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(cases()))
def test_def_hop(benchmark: Any, name: str) -> None:
    case = cases()[name]()
    case.once()  # warm: threads started, schemas built
    floor = name.startswith("floor")
    benchmark.group = "def-tool hop: floors (a round)" if floor else "def-tool hop: ReAct run (a round)"
    benchmark.extra_info.update(impl=name, per=case.units, series="floor" if floor else "step", size=K)
    benchmark.pedantic(case.run, setup=case.setup, rounds=9 if floor else 15, warmup_rounds=1)


# --- interleaved rounds ------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--switch-interval", type=float, default=None, help="sys.setswitchinterval(S) first")
    parser.add_argument("--slowed", action="store_true", help="start every def function as four slow calls leave it")
    parser.add_argument("cases", nargs="*", help="case names (default: all); the floors always run")
    options = parser.parse_args()
    if options.switch_interval is not None:
        sys.setswitchinterval(options.switch_interval)
    makers = cases()
    names = [n for n in makers if not options.cases or n in options.cases or n.startswith("floor")]
    todo = {name: makers[name]() for name in names}
    for case in todo.values():
        case.once()  # warm: threads started, schemas built
        if options.slowed:
            from rillet._core import workers

            for t in case.tools:
                if hasattr(t, "_spec") and not t.inline:
                    t._spec().pace.slow = workers.SLOW_CALLS
    times: dict[str, list[float]] = {name: [] for name in todo}
    for _ in range(options.rounds):
        for name, case in todo.items():
            times[name].append(case.once())
    print(f"rillet from {Path(rillet.__file__).parent}, switch interval {sys.getswitchinterval() * 1e3:g} ms")
    for name, xs in times.items():
        unit = "us/round trip" if name.startswith("floor") else "us/step"
        print(f"{name:24} median {statistics.median(xs):8.1f}  min {min(xs):8.1f} {unit}")
    floor = times["floor ping-pong"]
    for name, xs in times.items():
        if not name.startswith("floor"):
            ratio = statistics.median(x / f for x, f in zip(xs, floor, strict=True))
            line = f"{name:24} {ratio:5.2f}x the bare round trip"
            if name.startswith("def-") and not name.startswith("def-inline"):
                line += f" (#31: <= 2x); functions not waited for: {not_waited(todo[name].tools)} of {len(todo[name].tools)}"
            print(line)


if __name__ == "__main__":
    main()
