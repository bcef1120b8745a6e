"""run.batches(): the run's events in lists of those already available, for `for` and
`async for`. Every event comes once and in order, exactly as plain iteration gives them,
also when the run interrupts (checkpoint saved first) or fails, and when a consumer mixes
plain iteration and batches."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet import (
    AgentEvent,
    AgentInput,
    AgentOutput,
    BaseAgent,
    InMemoryCheckpointStore,
    Runner,
)
from rillet.run.agent import RunBatches
from rillet.run.interrupts import interrupt_event


class Script(BaseAgent):
    """Yields ``n`` events numbered 0..n-1, sleeping (a real wait: the consumer catches up)
    before the numbers in ``pauses``; then interrupts, or raises, as asked."""

    def __init__(self, n: int, pauses: frozenset[int] = frozenset(), end: str = "") -> None:
        super().__init__("script", "numbers")
        self.n, self.pauses, self.end = n, pauses, end

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        for i in range(self.n):
            if i in self.pauses:
                await asyncio.sleep(0.0005)
            yield AgentEvent(output=AgentOutput(customized_output=i))
        if self.end == "interrupt":
            yield interrupt_event("approve?")
        elif self.end == "error":
            raise ValueError("boom")


def shape(ev: AgentEvent) -> tuple[Any, ...]:
    """What a consumer tells events apart by."""
    out = ev.output.customized_output if ev.output is not None else None
    interrupted = ev.action.interrupted.data if ev.action is not None and ev.action.interrupted else None
    return (ev.agent_name, tuple(s.agent_name for s in ev.run_path), out, interrupted, repr(ev.error))


def start(agent: Script, checkpoint: bool) -> Any:
    r = Runner(agent, checkpoint_store=InMemoryCheckpointStore())
    return r, r.query("go", checkpoint_id="c1" if checkpoint else None)


def plain_sync(agent: Script, checkpoint: bool = False) -> list[tuple[Any, ...]]:
    return [shape(ev) for ev in start(agent, checkpoint)[1]]


def batched_sync(agent: Script, max_events: int, checkpoint: bool = False) -> tuple[list[tuple[Any, ...]], int]:
    got, batches = [], 0
    for batch in start(agent, checkpoint)[1].batches(max_events):
        assert 1 <= len(batch) <= max_events
        got += [shape(ev) for ev in batch]
        batches += 1
    return got, batches


async def plain_async(agent: Script, checkpoint: bool = False) -> list[tuple[Any, ...]]:
    return [shape(ev) async for ev in start(agent, checkpoint)[1]]


async def batched_async(agent: Script, max_events: int, checkpoint: bool = False) -> list[tuple[Any, ...]]:
    got = []
    async for batch in start(agent, checkpoint)[1].batches(max_events):
        assert 1 <= len(batch) <= max_events
        got += [shape(ev) for ev in batch]
    return got


ENDS = ["", "interrupt", "error"]


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(0, 300),
    pauses=st.frozensets(st.integers(0, 299), max_size=6),
    max_events=st.integers(1, 70),
    end=st.sampled_from(ENDS),
)
def test_batches_give_the_events_plain_iteration_gives(
    n: int, pauses: frozenset[int], max_events: int, end: str
) -> None:
    agent = Script(n, pauses, end)
    checkpoint = end == "interrupt"
    expected = plain_sync(agent, checkpoint)
    assert len(expected) == n + (end != "")
    assert batched_sync(agent, max_events, checkpoint)[0] == expected
    assert asyncio.run(batched_async(agent, max_events, checkpoint)) == expected
    assert asyncio.run(plain_async(agent, checkpoint)) == expected


def test_the_last_batch_ends_with_the_error_event() -> None:
    got, _ = batched_sync(Script(5, end="error"), 3)
    assert [g[2] for g in got] == [0, 1, 2, 3, 4, None]
    assert got[-1] == ("script", ("script",), None, None, "ValueError('boom')")


def test_an_interrupt_batch_comes_after_the_checkpoint_is_saved() -> None:
    store = InMemoryCheckpointStore()
    r = Runner(Script(3, end="interrupt"), checkpoint_store=store)
    seen = []
    for batch in r.query("go", checkpoint_id="c1").batches():
        for ev in batch:
            if ev.action is not None and ev.action.interrupted is not None:
                assert store.get("c1") is not None  # saved before the event reached us
            seen.append(shape(ev))
    assert [s[2] for s in seen] == [0, 1, 2, None]
    assert seen[-1][3] == "approve?"


def test_a_consumer_gets_many_events_a_batch_when_they_are_ready() -> None:
    # the agent never waits: everything is queued long before the consumer looks
    got, batches = batched_sync(Script(5000), 1000)
    assert [g[2] for g in got] == list(range(5000))
    assert batches < 5000


def test_plain_iteration_and_batches_share_one_stream() -> None:
    run = start(Script(50, frozenset({10, 30})), False)[1]
    first = [next(run) for _ in range(7)]
    rest = [ev for batch in run.batches(4) for ev in batch]
    assert [shape(ev)[2] for ev in first + rest] == list(range(50))


def test_async_batches_of_a_run_started_on_the_loop() -> None:
    async def main() -> list[Any]:
        run = Runner(Script(100, frozenset({50}))).query("go")
        batches = run.batches()
        assert isinstance(batches, RunBatches)
        return [shape(ev)[2] async for batch in batches for ev in batch]

    assert asyncio.run(main()) == list(range(100))


def test_a_blocking_for_over_batches_on_the_loop_says_what_to_use() -> None:
    async def main() -> None:
        run = Runner(Script(3, frozenset({0}))).query("go")
        with pytest.raises(RuntimeError, match="async for batch in run.batches"):
            next(iter(run.batches()))
        run.close()

    asyncio.run(main())


def test_batches_of_another_loops_run_taken_before_the_run_is_closed_end_at_the_close() -> None:
    """Batches read with ``for`` watch the loop of a run an async caller started; once the run
    is closed they end, with none of its events, whether the loop still runs or not."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def start() -> Any:
        return Runner(Script(10**6, frozenset(range(0, 10**6, 10)))).query("go")

    try:
        run = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
        batches = run.batches()
        assert next(batches)  # in flight
        run.close()
        got: list[Any] = []
        reader = threading.Thread(target=lambda: got.extend(batches), daemon=True)
        reader.start()
        reader.join(30)
        assert not reader.is_alive(), "the batches of the closed run kept waiting"
        assert got == []
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


def test_max_events_must_be_positive() -> None:
    run = Runner(Script(1)).query("go")
    with pytest.raises(ValueError, match="max_events=0"):
        run.batches(0)
    for wrong in ("3", 2.5, True):  # told at the call, naming the argument, not at the first batch
        with pytest.raises(TypeError, match="max_events"):
            run.batches(wrong)  # type: ignore[arg-type]
    run.close()


def test_a_never_waiting_agent_lets_its_consumer_in_before_it_ends() -> None:
    # The run's pump gives the loop a turn every few hundred events: an agent that never
    # awaits does not queue its whole run before the consumer sees the first event.
    produced: list[int] = []

    class Eager(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            for i in range(5000):
                produced.append(i)
                yield AgentEvent(output=AgentOutput(customized_output=i))

    async def main() -> tuple[int, int]:
        run = Runner(Eager("eager")).query("go")
        first = await run.__anext__()
        assert first.output is not None and first.output.customized_output == 0
        ahead = len(produced)
        rest = sum(len(b) for b in [b async for b in run.batches()])
        return ahead, 1 + rest

    ahead, total = asyncio.run(main())
    assert total == 5000
    assert ahead < 5000
