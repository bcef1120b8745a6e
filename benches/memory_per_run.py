"""Memory held by a waiting run: N runs started at once, each parked in its model's call on
one asyncio.Event, against the same N waits written in bare asyncio (the floor).

    .venv/bin/python benches/memory_per_run.py [--runs 100000] [--census 5000]

For each design, in its own process: RSS before and after starting the runs (divided by N),
the seconds to drain them all once the event is set, and (with --census) the objects a
waiting run holds, by type (gc-tracked objects, ``sys.getsizeof``; strs, ints and rillet's
Rust-side allocations are not in it but are in the RSS).

* rillet: ``Runner(ChatModelAgent(model=m)).query("go")`` consumed by one task per run with
  ``async for``; ``m.generate`` awaits the event, then answers.
* floor: one task per run iterating an async generator that awaits the event in a coroutine
  and yields one event: what "a run the caller iterates while it waits on a model" costs in
  Python at the least.
* floor-task: the floor with Eino's run semantics (``Agent.Run`` returns at once, the body
  runs in its own goroutine and its events reach the caller through a channel): the body's
  async generator iterated by a task of its own into rillet's Channel (an ``asyncio.Queue``
  holds 3 KB more: four deques), which the caller's task reads. What a run costs at the least in Python once its body has a task of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any


def rss() -> int:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def census() -> tuple[collections.Counter[str], collections.Counter[str]]:
    count: collections.Counter[str] = collections.Counter()
    size: collections.Counter[str] = collections.Counter()
    for o in gc.get_objects():
        name = type(o).__qualname__
        count[name] += 1
        size[name] += sys.getsizeof(o)
    return count, size


def rillet_runs(release: asyncio.Event) -> Callable[[], Awaitable[bool]]:
    from rillet import Message
    from rillet.chatmodel import ChatModelAgent
    from rillet.runner import Runner

    class Waiting:
        async def generate(self, messages: Any, **options: Any) -> Message:
            await release.wait()
            return Message(role="assistant", content="done")

        async def stream(self, messages: Any, **options: Any) -> Any:
            raise NotImplementedError

    runner = Runner(ChatModelAgent("waiter", model=Waiting()))

    async def one() -> bool:
        last = None
        async for event in runner.query("go"):
            last = event
        return last is not None and last.output is not None

    return one


def floor_runs(release: asyncio.Event) -> Callable[[], Awaitable[bool]]:
    async def model() -> str:
        await release.wait()
        return "done"

    async def run() -> AsyncIterator[str]:
        yield await model()

    async def one() -> bool:
        last = None
        async for event in run():
            last = event
        return last == "done"

    return one


def floor_task_runs(release: asyncio.Event) -> Callable[[], Awaitable[bool]]:
    from rillet import Channel  # the cheapest channel here: asyncio.Queue's four deques hold 3 KB

    async def model() -> str:
        await release.wait()
        return "done"

    async def run() -> AsyncIterator[str]:
        yield await model()

    async def body(channel: Channel[str]) -> None:
        async for event in run():
            channel.send(event)
        channel.close()

    async def one() -> bool:
        channel: Channel[str] = Channel()
        task = asyncio.ensure_future(body(channel))
        last = None
        async for event in channel:
            last = event
        await task
        return last == "done"

    return one


DESIGNS = {"rillet": rillet_runs, "floor": floor_runs, "floor-task": floor_task_runs}


async def measure(design: str, n: int, with_census: bool) -> None:
    release = asyncio.Event()
    one = DESIGNS[design](release)
    gc.collect()
    before_objects = census() if with_census else None
    base = rss()
    tasks = [asyncio.ensure_future(one()) for _ in range(n)]
    await asyncio.sleep(0.2)  # every run reaches its model and parks there
    held = rss() - base
    line = f"{design}: {n:,} waiting runs hold {held / 1e6:,.1f} MB of RSS, {held / n:,.0f} B a run"
    if before_objects is not None:
        gc.collect()
        count, size = census()
        rows = sorted(((size[t] - before_objects[1][t]) / n, (count[t] - before_objects[0][t]) / n, t) for t in count)
        total = sum(r[0] for r in rows)
        line += f"; gc-tracked objects {total:,.0f} B a run:"
        for per_run, objects, name in reversed(rows):
            if per_run >= 30:
                line += f"\n    {per_run:6.0f} B  {objects:4.1f} x {name}"
    start = time.perf_counter()
    release.set()
    done = sum(await asyncio.gather(*tasks))
    print(line + f"\n    drained {done:,} of {n:,} in {time.perf_counter() - start:.2f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--census", type=int, default=0, help="also count objects by type over this many runs")
    parser.add_argument("--design", choices=tuple(DESIGNS))
    args = parser.parse_args()
    if args.design:
        n = args.census or args.runs
        asyncio.run(measure(args.design, n, bool(args.census)))
        return
    for design in DESIGNS:  # each in a fresh process: RSS is a high-water mark
        for extra in ([], ["--census", str(args.census)] if args.census else None):
            if extra is None:
                continue
            subprocess.run([sys.executable, __file__, "--design", design, "--runs", str(args.runs), *extra], check=True)


if __name__ == "__main__":
    main()
