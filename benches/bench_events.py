"""Event throughput through the Runner: a custom agent yielding N small events, consumed whole.

Rows, all in one run (events per second = N / median round time):

* ``bare``: the agent's own async generator (its ``_run``) iterated directly (no framework): the ceiling.
* ``queue``: the same generator pumped by a producer task into an ``asyncio.Queue`` read by the
  consumer: the plain asyncio pipeline a user could write instead.
* ``rillet-async`` / ``rillet-for``: ``Runner(agent).query(...)`` consumed with ``async for``
  (on the caller's loop) and with a plain ``for`` (the run on rillet's background loop).
* ``rillet-batches-async`` / ``rillet-batches-for``: the same, consumed with
  ``run.batches()``: lists of the events already available.

Each event is ``AgentEvent(output=AgentOutput(customized_output=i))``: small, no message, so the
numbers are the event path's cost, not a model's. The ``*-msg`` rows yield what every model
produces instead, an event carrying a whole assistant message (``event_from_message``), built
in the agent's loop as a model's events are.

Run: .venv/bin/python -m pytest benches/bench_events.py --benchmark-only \
         --benchmark-columns=median,rounds --benchmark-group-by=group
(benches/conftest.py prints the per-event time of each row and the ratios to rillet.)
Interleaved rounds, rates printed: .venv/bin/python benches/bench_events.py [ROW ...]
Instruction counts: .venv/bin/python benches/callgrind_events.py
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from rillet import AgentEvent, AgentInput, AgentOutput, BaseAgent, Message, Runner, event_from_message

N = 200_000


class Spammer(BaseAgent):
    """A custom agent yielding ``n`` small events and nothing else."""

    def __init__(self, n: int) -> None:
        super().__init__("spammer", "yields small events")
        self.n = n

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        for i in range(self.n):
            yield AgentEvent(output=AgentOutput(customized_output=i))


class Talker(BaseAgent):
    """A custom agent yielding ``n`` events that each carry an assistant message."""

    def __init__(self, n: int) -> None:
        super().__init__("talker", "yields message events")
        self.n = n

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        for _ in range(self.n):
            yield event_from_message(Message.assistant("ok"))


def events(n: int, agent: type[BaseAgent] = Spammer) -> AsyncIterator[AgentEvent]:
    """The agent's own generator, for the rows without a framework."""
    return agent(n)._run(AgentInput())  # type: ignore[call-arg]


async def _bare(n: int, agent: type[BaseAgent] = Spammer) -> int:
    seen = 0
    async for _ in events(n, agent):
        seen += 1
    return seen


async def _queue(n: int, agent: type[BaseAgent] = Spammer) -> int:
    q: asyncio.Queue[AgentEvent | None] = asyncio.Queue()

    async def produce() -> None:
        async for ev in events(n, agent):
            q.put_nowait(ev)
        q.put_nowait(None)

    task = asyncio.create_task(produce())
    seen = 0
    while await q.get() is not None:
        seen += 1
    await task
    return seen


async def _rillet_async(n: int, agent: type[BaseAgent] = Spammer) -> int:
    seen = 0
    async for _ in Runner(agent(n)).query("go"):  # type: ignore[call-arg]
        seen += 1
    return seen


def _rillet_for(n: int, agent: type[BaseAgent] = Spammer) -> int:
    seen = 0
    for _ in Runner(agent(n)).query("go"):  # type: ignore[call-arg]
        seen += 1
    return seen


def _talking(fn: Callable[[int, type[BaseAgent]], Any]) -> Callable[[int], Any]:
    return lambda n: fn(n, Talker)


async def _batches_async(n: int) -> int:
    seen = 0
    async for batch in Runner(Spammer(n)).query("go").batches():
        seen += len(batch)
    return seen


def _batches_for(n: int) -> int:
    seen = 0
    for batch in Runner(Spammer(n)).query("go").batches():
        seen += len(batch)
    return seen


def _on_loop(fn: Callable[[int], Any]) -> Callable[[int], int]:
    def run(n: int) -> int:
        loop = asyncio.new_event_loop()
        try:
            return int(loop.run_until_complete(fn(n)))
        finally:
            loop.close()

    return run


WORKLOADS: dict[str, Callable[[int], int]] = {
    "bare": _on_loop(_bare),
    "queue": _on_loop(_queue),
    "rillet-async": _on_loop(_rillet_async),
    "rillet-for": _rillet_for,
    "rillet-batches-async": _on_loop(_batches_async),
    "rillet-batches-for": _batches_for,
    "bare-msg": _on_loop(_talking(_bare)),
    "queue-msg": _on_loop(_talking(_queue)),
    "rillet-async-msg": _on_loop(_talking(_rillet_async)),
    "rillet-for-msg": _talking(_rillet_for),
}


@pytest.mark.parametrize("impl", list(WORKLOADS))
def test_events(benchmark: Any, impl: str) -> None:
    run = WORKLOADS[impl]
    benchmark.group = f"events through the Runner ({N // 1000}k events)"
    benchmark.extra_info.update(impl=impl, per=N, unit="event", series="events", size=N)
    # a collection before each round, untimed: garbage of the last round is not collected in this one
    result = benchmark.pedantic(run, setup=lambda: (gc.collect(), ((N,), {}))[1], rounds=7, warmup_rounds=1)
    assert result == N  # every event reached the consumer


def main(rows: list[str], rounds: int = 5) -> None:
    """Rounds of every row in turn (so a busy machine slows all rows alike), then each row's
    median rate."""
    import statistics
    import time

    rates: dict[str, list[float]] = {row: [] for row in rows}
    for _ in range(rounds):
        for row in rows:
            gc.collect()
            start = time.perf_counter()
            assert WORKLOADS[row](N) == N
            rates[row].append(N / (time.perf_counter() - start))
    for row in rows:
        print(f"{row:<22} {statistics.median(rates[row]) / 1e3:8.0f} k events/s", flush=True)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:] or list(WORKLOADS))
