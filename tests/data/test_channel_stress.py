"""Stress: many producers and consumers on threads and event loops; nothing lost or doubled.

Four producer threads and two asyncio producer tasks each send `PER_PRODUCER` items tagged
(producer, sequence). The full sizes (100,000 each) run in the slow set; the fast set uses
smaller ones with the same shapes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest
from rillet import Channel, ChannelClosed

Item = tuple[int, int]
THREAD_PRODUCERS = 4
TASK_PRODUCERS = 2

SIZES = [
    pytest.param(5_000, id="5k"),
    pytest.param(100_000, id="100k", marks=pytest.mark.slow),
]


def start_producers(ch: Channel[Item], per_producer: int) -> threading.Thread:
    """Starts all producers; the returned thread closes the channel when they are done."""

    def thread_producer(p: int) -> None:
        for seq in range(per_producer):
            if seq % 64 == 0:
                ch.send_many([(p, s) for s in range(seq, min(seq + 8, per_producer))])
                continue
            if seq % 64 < 8:
                continue  # sent in the batch above
            ch.send((p, seq))

    def task_producers() -> None:
        async def one(p: int) -> None:
            for seq in range(per_producer):
                ch.send((p, seq))
                if seq % 100 == 0:
                    await asyncio.sleep(0)

        async def both() -> None:
            await asyncio.gather(*(one(THREAD_PRODUCERS + i) for i in range(TASK_PRODUCERS)))

        asyncio.run(both())

    workers = [threading.Thread(target=thread_producer, args=(p,)) for p in range(THREAD_PRODUCERS)]
    workers.append(threading.Thread(target=task_producers))
    for w in workers:
        w.start()

    def close_when_done() -> None:
        for w in workers:
            w.join()
        ch.close()

    closer = threading.Thread(target=close_when_done)
    closer.start()
    return closer


def check_exactly_once_in_order(received: list[list[Item]], per_producer: int) -> None:
    producers = THREAD_PRODUCERS + TASK_PRODUCERS
    seen: set[Item] = set()
    for got in received:
        last = [-1] * producers
        for p, seq in got:
            assert seq > last[p], f"producer {p}: {seq} arrived after {last[p]}"
            last[p] = seq
        seen.update(got)
    total = sum(len(got) for got in received)
    assert len(seen) == total, "an item was delivered twice"
    assert total == producers * per_producer, "items were lost"


def sync_consumer(ch: Channel[Item], out: list[Item]) -> None:
    while True:
        try:
            out.extend(ch.recv_many(256) if len(out) % 3 else [ch.recv()])
        except ChannelClosed:
            return


async def async_consumer(ch: Channel[Item], out: list[Item]) -> None:
    while True:
        try:
            if len(out) % 3:
                out.extend(await ch.arecv_many(256))
            else:
                out.append(await ch.arecv())
        except ChannelClosed:
            return


def run_consumers(ch: Channel[Item], starters: list[Callable[[list[Item]], threading.Thread]]) -> list[list[Item]]:
    outs: list[list[Item]] = [[] for _ in starters]
    threads = [start(out) for start, out in zip(starters, outs)]
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a consumer hung"
    return outs


def as_thread(ch: Channel[Item]) -> Callable[[list[Item]], threading.Thread]:
    def start(out: list[Item]) -> threading.Thread:
        t = threading.Thread(target=sync_consumer, args=(ch, out))
        t.start()
        return t

    return start


def as_loop(ch: Channel[Item]) -> Callable[[list[Item]], threading.Thread]:
    def start(out: list[Item]) -> threading.Thread:
        t = threading.Thread(target=lambda: asyncio.run(async_consumer(ch, out)))
        t.start()
        return t

    return start


@pytest.mark.parametrize("per_producer", SIZES)
def test_one_sync_consumer(per_producer: int) -> None:
    ch: Channel[Item] = Channel()
    closer = start_producers(ch, per_producer)
    outs = run_consumers(ch, [as_thread(ch)])
    closer.join()
    check_exactly_once_in_order(outs, per_producer)


@pytest.mark.parametrize("per_producer", SIZES)
def test_one_async_consumer(per_producer: int) -> None:
    ch: Channel[Item] = Channel()
    closer = start_producers(ch, per_producer)
    outs = run_consumers(ch, [as_loop(ch)])
    closer.join()
    check_exactly_once_in_order(outs, per_producer)


@pytest.mark.parametrize("per_producer", SIZES)
def test_three_competing_consumers(per_producer: int) -> None:
    """Two threads and one event loop compete; each item reaches exactly one of them."""
    ch: Channel[Item] = Channel()
    closer = start_producers(ch, per_producer)
    outs = run_consumers(ch, [as_thread(ch), as_loop(ch), as_thread(ch)])
    closer.join()
    check_exactly_once_in_order(outs, per_producer)
    assert sum(len(o) for o in outs) == (THREAD_PRODUCERS + TASK_PRODUCERS) * per_producer


@pytest.mark.parametrize("per_producer", SIZES)
def test_three_competing_tasks_on_one_loop(per_producer: int) -> None:
    ch: Channel[Item] = Channel()
    closer = start_producers(ch, per_producer)
    outs: list[list[Item]] = [[], [], []]

    async def main() -> None:
        await asyncio.gather(*(async_consumer(ch, out) for out in outs))

    asyncio.run(main())
    closer.join()
    check_exactly_once_in_order(outs, per_producer)
