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
    Each event goes to exactly one consumer. Blocking receives (``recv``, ``recv_many``,
    ``for``) refuse to run inside an event loop: use their ``a``-prefixed twins there.
    """

    __slots__ = ("_ch",)

    def __init__(self, ch: Channel[T]) -> None:
        """Wraps the receive side of ``ch``; use :func:`new_event_pair` to make one."""
        self._ch = ch

    # Iteration is handed straight to the Rust channel: no Python frame per event.
    def __iter__(self) -> Iterator[T]:
        """``for event in it``: blocks for each event; stops when the producer closes."""
        return self._ch

    def __aiter__(self) -> AsyncIterator[T]:
        """``async for event in it``: waits without blocking the loop; stops at the close."""
        return self._ch

    def recv(self, timeout: float | None = None) -> T:
        """The next event, waiting up to ``timeout`` seconds (forever if None).

        Raises TimeoutError when the time is up, and at the end ChannelClosed (an
        EndOfStream), or the error the producer closed with.
        """
        return self._ch.recv(timeout)

    async def arecv(self) -> T:
        """``await it.arecv()``: the next event, without blocking the event loop.

        Raises like ``recv`` at the end. Cancelling the awaiting task loses no event.
        """
        return await self._ch.arecv()

    def recv_many(self, max_items: int, timeout: float | None = None) -> list[T]:
        """Waits up to ``timeout`` seconds for at least one event, then returns up to
        ``max_items`` (at least 1) of them in order. Raises like ``recv``."""
        return self._ch.recv_many(max_items, timeout)

    async def arecv_many(self, max_items: int) -> list[T]:
        """``await it.arecv_many(n)``: waits for at least one event without blocking the
        loop, then returns up to ``max_items`` of them. Raises like ``recv`` at the end."""
        return await self._ch.arecv_many(max_items)

    def __repr__(self) -> str:
        return f"<rillet.EventIterator over {self._ch!r}>"


class EventGenerator(Generic[T]):
    """The send side of a run. ``send`` never blocks.

    A producer may outlive its consumer's interest (the run was abandoned and the pair
    closed): its later sends return False and drop the event rather than failing the
    producer.
    """

    __slots__ = ("_ch",)

    def __init__(self, ch: Channel[T]) -> None:
        """Wraps the send side of ``ch``; use :func:`new_event_pair` to make one."""
        self._ch = ch

    def send(self, event: T) -> bool:
        """Queues ``event`` and returns True, or returns False (dropping it) once the pair is
        closed."""
        return self._ch.send(event)

    def close(self, error: BaseException | None = None) -> None:
        """Ends the stream: consumers receive the queued events, then iteration stops, or
        ``error`` is raised if given. Only the first close counts."""
        self._ch.close(error)

    @property
    def closed(self) -> bool:
        """True once the pair was closed (consumers may still be receiving queued events)."""
        return self._ch.closed

    def __repr__(self) -> str:
        return f"<rillet.EventGenerator over {self._ch!r}>"


def new_event_pair() -> tuple[EventIterator[T], EventGenerator[T]]:
    """A connected (iterator, generator) pair over a new unbounded channel."""
    ch: Channel[T] = Channel()
    return EventIterator(ch), EventGenerator(ch)
