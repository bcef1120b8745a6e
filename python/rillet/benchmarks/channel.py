"""Channel workloads: thread→thread, task→task and thread→asyncio, single and batched.

Every function moves the given items (made beforehand, so that making them is not timed)
from one producer to one consumer and returns when the consumer has them all. Each side uses its library's natural idiom: rillet's consumer iterates
the channel (``for`` / ``async for``) until the producer closes it; the peers' consumers call
``get`` until a sentinel arrives. Peers have no batch API, so they are measured per item;
rillet's batched variants (``send_many`` / ``recv_many``) are compared against those.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rillet import Channel

Items = Sequence[object]
BATCH = 64  # items a producer sends between yields, and per send_many
RECV_BATCH = 65536


@dataclass(frozen=True)
class Scenario:
    """One producer/consumer shape with rillet's variants and the peers it is compared to."""

    name: str
    rillet: dict[str, Callable[[Items], None]]
    peers: dict[str, Callable[[Items], None]]
    # (rillet variant, peer, the minimum ratio rillet aims for)
    targets: list[tuple[str, str, float]] = field(default_factory=list)


# -- thread → thread ------------------------------------------------------------------------


def _in_thread(produce: Callable[[], None]) -> threading.Thread:
    t = threading.Thread(target=produce)
    t.start()
    return t


def _sender_thread(ch: Channel[object], items: Items) -> threading.Thread:
    """A thread that sends the items one by one, then closes the channel."""

    def produce() -> None:
        send = ch.send
        for x in items:
            send(x)
        ch.close()

    return _in_thread(produce)


def _batch_sender_thread(ch: Channel[object], items: Items) -> threading.Thread:
    """A thread that sends the items BATCH at a time."""

    def produce() -> None:
        for start in range(0, len(items), BATCH):
            ch.send_many(items[start : start + BATCH])

    return _in_thread(produce)


def rillet_thread_to_thread(items: Items) -> None:
    ch: Channel[object] = Channel()
    t = _sender_thread(ch, items)
    for _ in ch:
        pass
    t.join()


def rillet_thread_to_thread_batched(items: Items) -> None:
    ch: Channel[object] = Channel()
    t = _batch_sender_thread(ch, items)
    got = 0
    while got < len(items):
        got += len(ch.recv_many(RECV_BATCH))
    t.join()


def _stdlib_thread_to_thread(q: queue.SimpleQueue[object] | queue.Queue[object], items: Items) -> None:
    def produce() -> None:
        put = q.put
        for x in items:
            put(x)
        put(None)

    t = _in_thread(produce)
    get = q.get
    while get() is not None:
        pass
    t.join()


def simplequeue_thread_to_thread(items: Items) -> None:
    _stdlib_thread_to_thread(queue.SimpleQueue(), items)


def queue_thread_to_thread(items: Items) -> None:
    _stdlib_thread_to_thread(queue.Queue(), items)


def bare_list_thread_to_thread(items: Items) -> None:
    """Not a queue: the floor of the batched shape. The producer thread extends a plain list
    with the same slices, the consumer takes it after a join. Its cost is the slicing, the
    reference counting and the handoff between cores, which any queue pays too."""
    buf: list[object] = []

    def produce() -> None:
        for start in range(0, len(items), BATCH):
            buf.extend(items[start : start + BATCH])

    _in_thread(produce).join()
    taken = buf[:]
    buf.clear()
    del taken


# -- task → task, one event loop ------------------------------------------------------------


async def _produce_on_loop(send: Callable[[object], object], items: Items) -> None:
    for start in range(0, len(items), BATCH):
        for x in items[start : start + BATCH]:
            send(x)
        await asyncio.sleep(0)


def rillet_task_to_task(items: Items) -> None:
    async def main() -> None:
        ch: Channel[object] = Channel()

        async def produce() -> None:
            await _produce_on_loop(ch.send, items)
            ch.close()

        producer = asyncio.create_task(produce())
        async for _ in ch:
            pass
        await producer

    asyncio.run(main())


def rillet_task_to_task_batched(items: Items) -> None:
    async def main() -> None:
        ch: Channel[object] = Channel()

        async def produce() -> None:
            for start in range(0, len(items), BATCH):
                ch.send_many(items[start : start + BATCH])
                await asyncio.sleep(0)

        producer = asyncio.create_task(produce())
        got = 0
        while got < len(items):
            got += len(await ch.arecv_many(RECV_BATCH))
        await producer

    asyncio.run(main())


def asyncio_queue_task_to_task(items: Items) -> None:
    async def main() -> None:
        q: asyncio.Queue[object] = asyncio.Queue()

        async def produce() -> None:
            await _produce_on_loop(q.put_nowait, items)
            q.put_nowait(None)

        producer = asyncio.create_task(produce())
        get = q.get
        while await get() is not None:
            pass
        await producer

    asyncio.run(main())


# -- thread → asyncio -----------------------------------------------------------------------


def rillet_thread_to_asyncio(items: Items) -> None:
    async def main() -> None:
        ch: Channel[object] = Channel()
        t = _sender_thread(ch, items)
        async for _ in ch:
            pass
        t.join()

    asyncio.run(main())


def rillet_thread_to_asyncio_batched(items: Items) -> None:
    async def main() -> None:
        ch: Channel[object] = Channel()
        t = _batch_sender_thread(ch, items)
        got = 0
        while got < len(items):
            got += len(await ch.arecv_many(RECV_BATCH))
        t.join()

    asyncio.run(main())


async def _sync_to_async_queue(q: Any, items: Items) -> None:
    """A thread puts through ``q.sync_q``, this task gets through ``q.async_q`` (janus, culsans)."""

    def produce() -> None:
        put = q.sync_q.put
        for x in items:
            put(x)
        put(None)

    t = _in_thread(produce)
    get = q.async_q.get
    while await get() is not None:
        pass
    t.join()


def janus_thread_to_asyncio(items: Items) -> None:
    import janus

    async def main() -> None:
        q: janus.Queue[object] = janus.Queue()
        await _sync_to_async_queue(q, items)
        await q.aclose()

    asyncio.run(main())


def culsans_thread_to_asyncio(items: Items) -> None:
    import culsans

    async def main() -> None:
        await _sync_to_async_queue(culsans.Queue(), items)

    asyncio.run(main())


SCENARIOS = [
    Scenario(
        "thread→thread",
        rillet={"rillet": rillet_thread_to_thread, "rillet batched": rillet_thread_to_thread_batched},
        peers={
            "queue.SimpleQueue": simplequeue_thread_to_thread,
            "queue.Queue": queue_thread_to_thread,
            "bare list (floor)": bare_list_thread_to_thread,
        },
        targets=[("rillet", "queue.SimpleQueue", 1.0), ("rillet batched", "queue.SimpleQueue", 5.0)],
    ),
    Scenario(
        "task→task",
        rillet={"rillet": rillet_task_to_task, "rillet batched": rillet_task_to_task_batched},
        peers={"asyncio.Queue": asyncio_queue_task_to_task},
        targets=[("rillet", "asyncio.Queue", 3.0)],
    ),
    Scenario(
        "thread→asyncio",
        rillet={"rillet": rillet_thread_to_asyncio, "rillet batched": rillet_thread_to_asyncio_batched},
        peers={"janus": janus_thread_to_asyncio, "culsans": culsans_thread_to_asyncio},
        targets=[("rillet", "janus", 5.0)],
    ),
]
