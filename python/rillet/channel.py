"""`Channel`: the unbounded multi-producer, multi-consumer FIFO every rillet stream uses.

The queue, the blocking receive and the wakeup logic are in Rust (`rillet._native`); this
module adds the asyncio receive path, which parks a future in the channel and awaits it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any, Generic, TypeVar

from rillet import _native
from rillet._native import EMPTY, ChannelClosed

T = TypeVar("T")

__all__ = ["Channel", "ChannelClosed", "EMPTY"]


class Channel(_native.Channel, Generic[T]):
    """An unbounded FIFO of Python objects for any mix of threads and asyncio tasks.

    ``send`` never blocks. Each item reaches exactly one receiver, and each producer's items
    arrive in the order it sent them. ``close(error=None)`` ends the channel: receivers first
    drain what is queued, then get :class:`ChannelClosed` (or ``error``); ``for`` and
    ``async for`` simply stop at a normal close.
    """

    __slots__ = ()

    async def recv_async(self) -> T:
        """Takes the next item, awaiting one if the channel is empty."""
        item = self.try_recv()
        if item is EMPTY:
            item = await self._await_item()
        return item  # type: ignore[no-any-return]

    async def recv_many_async(self, max_items: int) -> list[T]:
        """Awaits at least one item, then returns up to ``max_items`` in a list."""
        batch = self.try_recv_many(max_items)
        if batch:
            return batch
        first = await self._await_item()
        if max_items == 1:
            return [first]
        try:
            rest = self.try_recv_many(max_items - 1)
        except BaseException:
            rest = []  # the channel ended meanwhile; the next receive reports it (ends are sticky)
        return [first, *rest]

    def __aiter__(self) -> AsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        try:
            item = self.try_recv()
            if item is EMPTY:
                item = await self._await_item()
        except ChannelClosed:
            raise StopAsyncIteration from None
        return item  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[T]:
        return self

    async def _await_item(self) -> Any:
        """Parks a future in the channel until an item may be ready, then retries.

        Wakeups are level-triggered: a woken receiver may find the item taken by a faster
        one and parks again. A receiver cancelled after being woken passes its wakeup on.
        """
        loop = asyncio.get_running_loop()
        while True:
            fut = loop.create_future()
            if self._park(fut, loop):
                try:
                    await fut
                except BaseException:
                    self._unpark(fut)
                    raise
            item = self.try_recv()
            if item is not EMPTY:
                return item
