"""The cost of handing a sync (``def``) tool to a worker thread and back to the event loop.

Run: .venv/bin/python -m pytest benches/bench_tool_handoff.py --benchmark-only
Each round makes ``N`` hand-offs of a function that does nothing, one after another
("sequential", a tool call per ReAct step) or four at a time ("gather4", one round of four
parallel tool calls); divide the median by ``N`` for the cost of one hand-off. Designs:

* ``to_thread``: ``asyncio.to_thread`` (the loop's default executor, context copied).
* ``executor``: ``loop.run_in_executor`` on a shared ``ThreadPoolExecutor``, context copied.
* ``rillet``: ``rillet._core.workers.run_sync`` (jobs on the pool's native queue, results
  back by one ``call_soon_threadsafe``).
* ``rillet-waiting``: ``WorkerPool.run_waiting``, what sync tools use: the same job, its
  result waited for by the loop's thread (one native call each way, no trip through the loop).
* ``rillet-channel``: Python worker threads fed through a ``rillet.Channel`` instead.
* ``inline``: calling the function on the loop, the floor (no thread at all).

``test_tool_invoke`` times a whole ``FunctionTool.invoke`` (validation, call, JSON result)
of a ``def`` and an ``async def`` tool.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from rillet import Channel
from rillet._core.workers import _deliver, default_pool, run_sync

N = 400


def noop() -> int:
    return 1


class ChannelPool:
    """Worker threads fed through a rillet Channel, each result back by one
    ``call_soon_threadsafe`` (the pool's design before its queue went native, the Channel as
    its queue)."""

    def __init__(self, workers: int = 4) -> None:
        self._channel: Channel[tuple[Any, ...]] = Channel()
        for i in range(workers):
            threading.Thread(target=self._work, name=f"bench-channel-{i}", daemon=True).start()

    async def run(self, fn: Callable[..., Any], /, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._channel.send((loop, fut, contextvars.copy_context(), fn, args))
        return await fut

    def _work(self) -> None:
        while True:
            loop, fut, ctx, fn, args = self._channel.recv()
            try:
                result, exc = ctx.run(fn, *args), None
            except BaseException as e:  # noqa: BLE001  (handed to the awaiting task)
                result, exc = None, e
            loop.call_soon_threadsafe(_deliver, fut, result, exc)
            del loop, fut, ctx, fn, args, result, exc


_executor = ThreadPoolExecutor(max_workers=min(32, (os.cpu_count() or 1) + 4))
_channel_pool = ChannelPool()


async def _to_thread() -> int:
    return await asyncio.to_thread(noop)


async def _executor_call() -> int:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_executor, contextvars.copy_context().run, noop)


async def _rillet() -> int:
    return await run_sync(noop)


async def _rillet_waiting() -> int:
    return await default_pool().run_waiting(noop)


async def _rillet_channel() -> int:
    return await _channel_pool.run(noop)


async def _inline() -> int:
    return noop()


DESIGNS: dict[str, Callable[[], Awaitable[int]]] = {
    "to_thread": _to_thread,
    "executor": _executor_call,
    "rillet": _rillet,
    "rillet-waiting": _rillet_waiting,
    "rillet-channel": _rillet_channel,
    "inline": _inline,
}


def _collect() -> None:
    gc.collect()  # untimed, so earlier garbage is not collected inside a round


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    lp = asyncio.new_event_loop()
    yield lp
    lp.run_until_complete(lp.shutdown_default_executor())
    lp.close()


def _sequential(call: Callable[[], Awaitable[int]]) -> Callable[[], Awaitable[None]]:
    async def body() -> None:
        for _ in range(N):
            await call()

    return body


def _gather4(call: Callable[[], Awaitable[int]]) -> Callable[[], Awaitable[None]]:
    async def body() -> None:
        for _ in range(N // 4):
            await asyncio.gather(call(), call(), call(), call())

    return body


@pytest.mark.parametrize("shape", ["sequential", "gather4"])
@pytest.mark.parametrize("impl", list(DESIGNS))
def test_handoff(benchmark: Any, loop: asyncio.AbstractEventLoop, shape: str, impl: str) -> None:
    make = _sequential if shape == "sequential" else _gather4
    body = make(DESIGNS[impl])
    loop.run_until_complete(body())  # warm: threads started, code paths hot
    benchmark.group = f"tool hand-off {shape} ({N} calls)"
    benchmark.extra_info["impl"] = impl
    benchmark.pedantic(
        lambda: loop.run_until_complete(body()),
        setup=_collect,
        rounds=15,
        warmup_rounds=1,
    )


def _tools() -> dict[str, Any]:
    from rillet import tool

    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    @tool
    async def aadd(a: int, b: int) -> int:
        """Adds."""
        return a + b

    return {"def": add, "async def": aadd}


@pytest.mark.parametrize("kind", ["def", "async def"])
def test_tool_invoke(benchmark: Any, loop: asyncio.AbstractEventLoop, kind: str) -> None:
    """A whole FunctionTool.invoke: validation, the call (a hand-off for def), JSON result."""
    t = _tools()[kind]

    async def body() -> None:
        for _ in range(N):
            await t.invoke('{"a": 2, "b": 3}')

    loop.run_until_complete(body())
    benchmark.group = f"FunctionTool.invoke ({N} calls)"
    benchmark.extra_info["impl"] = f"rillet {kind}"
    benchmark.pedantic(lambda: loop.run_until_complete(body()), setup=_collect, rounds=15, warmup_rounds=1)
