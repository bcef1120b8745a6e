"""The event pair an agent run hands out: an `EventIterator` for the consumer and an
`EventGenerator` for the producer, joined by a `Channel` (Eino's AsyncIterator/AsyncGenerator).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Generic, TypeVar

from rillet._native import Channel

T = TypeVar("T")

__all__ = ["EventGenerator", "EventIterator", "new_event_pair"]


class EventIterator(Generic[T]):
    """The receive side of a run: iterate it with ``for`` or ``async for``.

    Iteration ends when the producer closes the pair, or raises the error it closed with.
    Each event goes to exactly one consumer.
    """

    __slots__ = ("_ch",)

    def __init__(self, ch: Channel[T]) -> None:
        self._ch = ch

    # Iteration is handed straight to the Rust channel: no Python frame per event.
    def __iter__(self) -> Iterator[T]:
        return self._ch

    def __aiter__(self) -> AsyncIterator[T]:
        return self._ch

    def recv(self, timeout: float | None = None) -> T:
        """The next event; raises ChannelClosed at the end, TimeoutError if ``timeout`` passes."""
        return self._ch.recv(timeout)

    async def recv_async(self) -> T:
        return await self._ch.recv_async()

    def recv_many(self, max_items: int, timeout: float | None = None) -> list[T]:
        """Waits for at least one event, then returns up to ``max_items`` of them."""
        return self._ch.recv_many(max_items, timeout)

    async def recv_many_async(self, max_items: int) -> list[T]:
        return await self._ch.recv_many_async(max_items)

    def __repr__(self) -> str:
        return f"<rillet.EventIterator over {self._ch!r}>"


class EventGenerator(Generic[T]):
    """The send side of a run. ``send`` never blocks.

    A producer may outlive its consumer's interest (the run was abandoned and the pair
    closed): its later sends are dropped silently rather than failing the producer.
    """

    __slots__ = ("_ch",)

    def __init__(self, ch: Channel[T]) -> None:
        self._ch = ch

    def send(self, event: T) -> bool:
        """Queues ``event``; returns False (and drops it) if the pair is already closed."""
        return self._ch.try_send(event)

    def close(self, error: BaseException | None = None) -> None:
        """Ends the stream; consumers see ``error`` raised after the queued events, if given."""
        self._ch.close(error)

    @property
    def closed(self) -> bool:
        return self._ch.closed


def new_event_pair() -> tuple[EventIterator[T], EventGenerator[T]]:
    """A connected (iterator, generator) pair over a new unbounded channel."""
    ch: Channel[T] = Channel()
    return EventIterator(ch), EventGenerator(ch)
