"""The def-tool hop: a ReAct step with ``def`` tools against ``async def`` ones, consumed with
``async for`` and with a plain ``for``, beside the floor of a thread hand-off on this machine.

    PYTHONPATH=python .venv/bin/python benches/bench_def_hop.py [--rounds 15] [--switch-interval S]

Each round runs every case once, in turn (so a busy machine slows them alike); the medians and
minima over the rounds are printed in microseconds per model call (bench_react.py's workload,
K = 50: 51 model calls and 50 tool calls a run). Cases:

* ``async-tools async-for`` / ``async-tools for``: ``async def`` tools, the reference.
* ``def-tools async-for`` / ``def-tools for``: ``def`` tools (a worker thread each call).
* ``def-inline async-for`` / ``def-inline for``: ``rillet.tool(fn, inline=True)`` (skipped on a
  rillet without it).
* ``floor ping-pong``: one round trip between two bare Python threads through two
  ``queue.SimpleQueue``: the least a hand-off each way costs here.
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
import queue
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import bench_react as b
import rillet
from rillet.chatmodel import ChatModelAgent
from rillet.runner import Runner

K = 50
HOPS = 2000  # round trips per floor measurement


def _runner(kind: str) -> tuple[Runner, b.RilletDouble]:
    model = b.RilletDouble(K)
    if kind == "def-inline":
        tools: list[Any] = [rillet.tool(f, inline=True) for f in b.make_tools("def")]  # type: ignore[call-arg,unused-ignore]
    else:
        tools = b.rillet_tools(kind.partition("-")[0])
    agent = ChatModelAgent("bench", instruction=b.SYSTEM, model=model, tools=tools, max_iterations=K + 1)
    return Runner(agent), model


def _per_step(n: int, seconds: float) -> float:
    assert n == 2 * K + 1, f"consumed {n} events, expected {2 * K + 1}"
    return seconds / (K + 1) * 1e6


def step_async_for(kind: str) -> Callable[[], float]:
    runner, model = _runner(kind)

    async def run() -> int:
        n = 0
        async for ev in runner.query(b.INPUT):
            if ev.error is not None:
                raise ev.error
            n += 1
        return n

    def once() -> float:
        model.reset()
        gc.collect()
        loop = asyncio.new_event_loop()
        try:
            t0 = time.perf_counter()
            n = loop.run_until_complete(run())
            dt = time.perf_counter() - t0
        finally:
            loop.close()
        return _per_step(n, dt)

    return once


def step_for(kind: str) -> Callable[[], float]:
    runner, model = _runner(kind)

    def once() -> float:
        model.reset()
        gc.collect()
        n = 0
        t0 = time.perf_counter()
        for ev in runner.query(b.INPUT):
            if ev.error is not None:
                raise ev.error
            n += 1
        dt = time.perf_counter() - t0
        return _per_step(n, dt)

    return once


def floor_ping_pong() -> Callable[[], float]:
    there: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    back: queue.SimpleQueue[int] = queue.SimpleQueue()

    def echo() -> None:
        while (x := there.get()) is not None:
            back.put(x)

    threading.Thread(target=echo, daemon=True).start()

    def once() -> float:
        t0 = time.perf_counter()
        for _ in range(HOPS):
            there.put(1)
            back.get()
        return (time.perf_counter() - t0) / HOPS * 1e6

    return once


def floor_loop_thread() -> Callable[[], float]:
    jobs: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[int]]] = queue.SimpleQueue()

    def worker() -> None:
        while True:
            loop, fut = jobs.get()
            loop.call_soon_threadsafe(fut.set_result, 1)

    threading.Thread(target=worker, daemon=True).start()

    async def hops() -> None:
        loop = asyncio.get_running_loop()
        for _ in range(HOPS):
            fut = loop.create_future()
            jobs.put((loop, fut))
            await fut

    def once() -> float:
        loop = asyncio.new_event_loop()
        try:
            t0 = time.perf_counter()
            loop.run_until_complete(hops())
            return (time.perf_counter() - t0) / HOPS * 1e6
        finally:
            loop.close()

    return once


def cases() -> dict[str, Callable[[], float]]:
    kinds = ["async-tools", "def-tools"]
    if "inline" in inspect.signature(rillet.tool).parameters:
        kinds.append("def-inline")
    out: dict[str, Callable[[], float]] = {}
    for kind in kinds:
        out[f"{kind} async-for"] = step_async_for(kind)
        out[f"{kind} for"] = step_for(kind)
    out["floor ping-pong"] = floor_ping_pong()
    out["floor loop<->thread"] = floor_loop_thread()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--switch-interval", type=float, default=None, help="sys.setswitchinterval(S) first")
    options = parser.parse_args()
    if options.switch_interval is not None:
        sys.setswitchinterval(options.switch_interval)
    todo = cases()
    for once in todo.values():
        once()  # warm: threads started, schemas built
    times: dict[str, list[float]] = {name: [] for name in todo}
    for _ in range(options.rounds):
        for name, once in todo.items():
            times[name].append(once())
    print(f"rillet from {Path(rillet.__file__).parent}, switch interval {sys.getswitchinterval() * 1e3:g} ms")
    for name, xs in times.items():
        unit = "us/round trip" if name.startswith("floor") else "us/step"
        print(f"{name:24} median {statistics.median(xs):8.1f}  min {min(xs):8.1f} {unit}")


if __name__ == "__main__":
    main()
