"""The consumer's end of an agent run: :class:`RunIterator`, its :class:`RunBatches`, and the
pump that feeds it.

The path of an event: :func:`start_run` spawns a task (:func:`rillet._core.loop.spawn`: on the
caller's event loop when there is one, else on rillet's background loop thread) that pumps the
agent's async generator of events into a :class:`~rillet._native.Channel`, one ``send`` per
event and no Python frame between. :class:`RunIterator` is the receive side, an
:class:`~rillet.data.event_pair.EventIterator` the caller reads with ``for`` (blocking, from any
thread), ``async for``, or :meth:`RunIterator.batches` (lists of the events already there, one
wake-up per list). The pump ends the stream when the generator ends; anything the generator
raises, a ``KeyboardInterrupt`` included, becomes one last error event instead.

The consumer lets go by :meth:`RunIterator.close`, the end of a ``with`` / ``async with`` block,
or dropping the iterator (and its batches): the channel is closed, the task cancelled, the
queued events dropped (their streams close), and the ``on_close`` hook the caller gave (the
Runner frees the session there) runs at once; the cancelled task stops later, on its loop, and
its sends after the close are dropped.

When the event loop the run is a task of is closed or cancels it with the run in flight, nothing
will send again, so the run ends with an error event that says so: the pump sends it as it is
cancelled or destroyed, and a blocking ``for`` over a run of another loop (an ``async`` caller
started it) watches that loop and ends the run itself when the loop is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

from rillet._core.loop import Fatal, RunTask, spawn
from rillet._native import Channel, ChannelRecv
from rillet.data.event_pair import EventIterator
from rillet.data.events import AgentEvent, error_event
from rillet.data.schema import MessageT
from rillet.errors import ChannelClosed, RilletError

__all__ = ["RunBatches", "RunIterator", "close_and_wait", "start_run"]


class RunIterator(EventIterator[AgentEvent[MessageT]]):
    """The events of one run, for ``for`` (blocking, from any thread) or ``async for``.
    Generic over the message type, to a type checker: ``RunIterator[AgenticMessage]``
    yields ``AgentEvent[AgenticMessage]``; plain ``RunIterator`` means ``RunIterator[Message]``.

    Dropping it, or calling :meth:`close`, abandons the run: its task is cancelled and its
    streams are closed. Use ``with`` / ``async with`` to make that explicit.
    """

    __slots__ = ("_on_close", "_task")

    def __init__(self, ch: Channel[AgentEvent[MessageT]]) -> None:
        super().__init__(ch)
        self._task: RunTask | None = None
        # run by close() at once: the cancelled task stops later, on its loop
        self._on_close: Callable[[], None] | None = None

    def __iter__(self) -> Iterator[AgentEvent[MessageT]]:
        return self

    def __next__(self) -> AgentEvent[MessageT]:
        try:
            task = self._task
            if task is not None and task.foreign:
                return self._next_watching(task.loop)
            return self._ch.__next__()
        except RuntimeError as e:
            if _on_loop_thread():
                raise RuntimeError(
                    "a blocking `for` over a run's events would block the running event loop; "
                    "inside async code use `async for event in runner.run(...)`"
                ) from e
            raise

    def _next_watching(self, loop: asyncio.AbstractEventLoop) -> AgentEvent[MessageT]:
        """The next event of a run that is a task of another event loop (one an ``async``
        caller started, iterated with ``for``): if that loop is closed with the run in flight,
        nothing will send again, so the run ends here with an error event."""
        while True:
            try:
                return self._ch.recv(_WATCH_INTERVAL)
            except ChannelClosed:
                raise StopIteration from None
            except TimeoutError:
                ended = self._end_if_loop_closed(loop)
                if ended is not None:
                    return ended

    def _watched_loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop a blocking receive watches (see :meth:`_next_watching`): the run's,
        while it is in flight as a task of a loop other than rillet's own; else None."""
        task = self._task
        return task.loop if task is not None and task.foreign else None

    def _end_if_loop_closed(self, loop: asyncio.AbstractEventLoop) -> AgentEvent[MessageT] | None:
        """When ``loop`` was closed with the run in flight, nothing will send again: closes the
        run and returns the error event that ends it. Else None."""
        if loop.is_closed() and self._task is not None:
            self.close()
            return AgentEvent(error=RilletError(_LOOP_CLOSED))
        return None

    def _batch_receivers(
        self,
    ) -> tuple[
        Callable[[int, float | None], list[AgentEvent[MessageT]]],
        Callable[[int], ChannelRecv[list[AgentEvent[MessageT]]]],
    ]:
        """The channel's own ``recv_many`` and ``arecv_many``, for :class:`RunBatches` to bind
        once: no Python frame of this iterator's between the consumer and each batch."""
        return self._ch.recv_many, self._ch.arecv_many

    def __aiter__(self) -> AsyncIterator[AgentEvent[MessageT]]:
        return self

    def __anext__(self) -> Any:
        return self._ch.__anext__()

    def batches(self, max_events: int = 4096) -> RunBatches:
        """The events in lists, for ``for batch in run.batches()`` or ``async for``: each list
        holds the events already available when it is taken (at least one, at most
        ``max_events``), in order, so a consumer pays one wake-up per batch rather than per event.
        The same stream as iterating the run: every event comes once, whichever way it is read."""
        if isinstance(max_events, bool) or not isinstance(max_events, int):
            raise TypeError(f"RunIterator.batches(max_events=...): an int, got {type(max_events).__name__}")
        if max_events < 1:
            raise ValueError(f"RunIterator.batches(max_events={max_events}): give 1 or more")
        return RunBatches(self, max_events)

    def close(self) -> None:
        """Abandons the run: cancels its task and drops the events not yet received."""
        task, self._task = self._task, None
        self._ch.close()
        if task is not None:
            task.cancel()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()
        with contextlib.suppress(ChannelClosed):
            while self._ch.try_recv_many(64):  # drop queued events: their streams close
                pass

    def __enter__(self) -> RunIterator[MessageT]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> RunIterator[MessageT]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if self._task is not None:
            with contextlib.suppress(Exception):
                self.close()


def close_and_wait(runs: Iterable[RunIterator[Any]], timeout: float) -> None:
    """Closes each run and waits, ``timeout`` seconds at most, for their tasks to end. For a
    process about to exit, whose event loop thread would stop the runs mid-way: each run's own
    clean-up happens first (a resume releases its claim on its checkpoint, which would refuse
    every later resume of it until the claim's lease ran out; a session run its hold). Runs
    on a loop that cannot run their clean-up while this waits (the caller's own, a stopped or
    closed one) are closed without waiting."""
    going: dict[asyncio.AbstractEventLoop, set[asyncio.Task[Any]]] = {}
    for run in runs:
        handle = run._task  # close() forgets it
        run.close()
        task = handle.task if handle is not None else None
        if handle is not None and task is not None and not task.done():
            going.setdefault(handle.loop, set()).add(task)
    try:
        here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    deadline = time.monotonic() + timeout  # one wait for all the loops, not one each
    for loop, tasks in going.items():
        left = deadline - time.monotonic()
        if loop is here or loop.is_closed() or not loop.is_running() or left <= 0:
            continue  # it cannot run their clean-up while we wait (ours, or stopped): closed only

        async def ended(tasks: set[asyncio.Task[Any]] = tasks, left: float = left) -> None:
            await asyncio.wait(tasks, timeout=left)

        waiting = ended()
        try:
            future = asyncio.run_coroutine_threadsafe(waiting, loop)
        except RuntimeError:  # the loop closed meanwhile: nothing runs any more
            waiting.close()
            continue
        with contextlib.suppress(Exception):
            future.result(left + 1)


class RunBatches:
    """A run's events in lists of those already available (:meth:`RunIterator.batches`). It
    keeps its run alive: the run is abandoned when this and the run iterator are both dropped."""

    __slots__ = ("_arecv_many", "_loop", "_max", "_recv_many", "_run")

    def __init__(self, run: RunIterator[Any], max_events: int) -> None:
        self._run = run
        self._max = max_events
        self._recv_many, self._arecv_many = run._batch_receivers()
        # Fixed while the run is in flight; once it is closed, its channel is closed and empty
        # and every receive ends at once, however long it would have waited.
        self._loop = run._watched_loop()

    def __iter__(self) -> Iterator[list[AgentEvent]]:
        return self

    def __next__(self) -> list[AgentEvent]:
        loop = self._loop
        try:
            while True:
                try:
                    return self._recv_many(self._max, None if loop is None else _WATCH_INTERVAL)
                except TimeoutError:  # only when watching: see RunIterator._next_watching
                    assert loop is not None
                    ended = self._run._end_if_loop_closed(loop)
                    if ended is not None:
                        return [ended]
        except ChannelClosed:
            raise StopIteration from None
        except RuntimeError as e:
            if _on_loop_thread():
                raise RuntimeError(
                    "a blocking `for` over a run's batches would block the running event loop; "
                    "inside async code use `async for batch in run.batches()`"
                ) from e
            raise

    def __aiter__(self) -> AsyncIterator[list[AgentEvent]]:
        return self

    async def __anext__(self) -> list[AgentEvent]:
        try:
            return await self._arecv_many(self._max)
        except ChannelClosed:
            raise StopAsyncIteration from None


_WATCH_INTERVAL = 0.25  # seconds between checks that a foreign run's event loop is still open
_LOOP_CLOSED = "the run was stopped: the event loop it ran on was closed with the run in flight"


def _on_loop_thread() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def start_run(
    events: AsyncIterator[AgentEvent],
    ctx: contextvars.Context | None = None,
    *,
    on_close: Callable[[], None] | None = None,
) -> RunIterator:
    """Pumps ``events`` into a new run iterator from a task (see :func:`rillet._core.loop.spawn`),
    running in ``ctx`` (default: a copy of the caller's context). ``on_close()`` runs once, when
    the consumer closes or drops the iterator: at once, while the cancelled task ends later."""
    ch: Channel[AgentEvent] = Channel()
    it = RunIterator(ch)
    it._on_close = on_close
    it._task = spawn(_pump(events, ch), ctx)
    return it


class _Closing:
    """``contextlib.aclosing`` for a run's events, except when the run's coroutine is being
    destroyed (its loop was closed under it): the generator is then suspended mid-step and
    cannot be closed; it is finalized on its own."""

    __slots__ = ("events",)

    def __init__(self, events: AsyncIterator[AgentEvent]) -> None:
        self.events = events

    async def __aenter__(self) -> AsyncIterator[AgentEvent]:
        return self.events

    async def __aexit__(self, typ: type[BaseException] | None, *exc: object) -> None:
        if typ is not GeneratorExit:
            await self.events.aclose()  # type: ignore[attr-defined]


_YIELD_EVERY_MASK = 255  # the pump lets the loop run after every 256 events


def _cancelled_from_outside() -> bool:
    """Whether the calling task was cancelled (its loop closing, its consumer gone), rather than
    agent code letting a CancelledError out. A function, not a local of :func:`_pump`: the
    task kept in the pump's frame would make a cycle (the task holds the CancelledError, whose
    traceback holds the frames, whose locals hold the task) that keeps every reader of the run's
    streams open until the garbage collector runs, so a model's producer goes on streaming."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _pump(events: AsyncIterator[AgentEvent], gen: Channel[AgentEvent]) -> None:
    send = gen.send  # the channel itself, not an EventGenerator: no Python frame per event
    try:
        async with _Closing(events) as evs:
            sent = 0
            async for ev in evs:
                if not send(ev):
                    break  # the consumer is gone
                sent += 1
                if not sent & _YIELD_EVERY_MASK:
                    # An agent that never waits would queue its whole run before the consumer
                    # (and every other task of the loop) got a turn: let it in now and then, so
                    # events are handled while young (cheaper for the garbage collector too).
                    await asyncio.sleep(0)
    except asyncio.CancelledError as e:
        if _cancelled_from_outside():
            if not gen.closed:  # not abandoned by its consumer: its event loop is shutting down
                gen.send(
                    AgentEvent(
                        error=RilletError("the run was cancelled: the event loop it ran on closed or cancelled it")
                    )
                )
            raise
        gen.send(error_event(e))  # agent code let a CancelledError escape: an error, as data
    except Fatal as e:  # a KeyboardInterrupt or SystemExit raised in one of the run's child tasks
        gen.send(error_event(e.exc))
    except GeneratorExit:  # destroyed: its loop was closed with the run in flight
        if not gen.closed:
            gen.send(AgentEvent(error=RilletError(_LOOP_CLOSED)))
        raise
    except BaseException as e:
        # A KeyboardInterrupt, a SystemExit or a user's own BaseException raised by agent code
        # (a tool, a model, a callback) that nothing handled as data: the run's error event,
        # never an exception that would stop the event loop other runs share, nor an end
        # the consumer could take for a finished run.
        gen.send(error_event(e))
    finally:
        gen.close()
