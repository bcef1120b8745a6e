"""Where a run's coroutine executes.

Inside a running event loop a run is a task on that loop. From plain synchronous code it goes to
one background event-loop thread owned by rillet (started on first use, a daemon), and its
events cross back through the Rust channel, which releases the GIL while the consumer waits.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, Generic, TypeVar

from rillet.errors import Fatal

__all__ = ["Fatal", "Inbox", "RunTask", "background_loop", "child_task", "joined", "result_of", "spawn"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """rillet's own event loop, running forever in a daemon thread."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                try:
                    _run_forever(loop)
                finally:  # if it ever stops, the next run starts a new loop instead of hanging
                    loop.close()

            threading.Thread(target=main, name="rillet-loop", daemon=True).start()
            ready.wait()
            _loop = loop
        return _loop


def _run_forever(loop: asyncio.AbstractEventLoop) -> None:
    """Runs ``loop`` until it is stopped. A KeyboardInterrupt or SystemExit that a task or
    callback lets out (asyncio re-raises them out of the loop) is reported and the loop goes
    on: every run of the process shares it, and their consumers would wait for ever."""
    while True:
        try:
            loop.run_forever()
            return
        except (KeyboardInterrupt, SystemExit) as e:
            loop.call_exception_handler(
                {"message": f"{type(e).__name__} escaped a task on rillet's event loop", "exception": e}
            )


async def _contained(coro: Coroutine[Any, Any, T]) -> T:
    try:
        return await coro
    except (KeyboardInterrupt, SystemExit) as e:
        raise Fatal(e) from None


def result_of(task: asyncio.Future[T]) -> T:
    """``task.result()`` of a :func:`child_task`, raising a carried KeyboardInterrupt or
    SystemExit as itself, so the code that joins the task sees what the agent code raised."""
    try:
        return task.result()
    except Fatal as e:
        exc = e.exc
    raise exc


async def joined(task: Awaitable[T]) -> T:
    """``await task`` of a :func:`child_task`, unwrapped as :func:`result_of` does."""
    try:
        return await task
    except Fatal as e:
        exc = e.exc
    raise exc


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # the parent reports the failure: no "never retrieved" log at exit


def child_task(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task for part of a run (a tool call, a stream's producer, a workflow lane) on the
    running loop. A KeyboardInterrupt or SystemExit ends it with :class:`Fatal`; it does not
    log "destroyed but pending" when its loop is closed under it (the run's task does)."""
    task = asyncio.ensure_future(_contained(coro))
    _no_pending_log(task)
    task.add_done_callback(_retrieve)
    return task


def _no_pending_log(task: asyncio.Task[Any]) -> None:
    # as asyncio.gather does for its children: a run's tasks destroyed with their closed loop
    # are reported to the run's consumer (an error event), not logged
    task._log_destroy_pending = False  # type: ignore[attr-defined]


class Inbox(Generic[T]):
    """``asyncio.Queue``'s ``put_nowait`` and ``get`` for one consumer task. Unlike
    ``Queue.get``, a ``get`` destroyed with its closed loop leaves quietly (``Queue.get``
    cancels its waiter then, which needs the loop: an "Exception ignored" traceback)."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: collections.deque[T] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: T) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> T:
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()


class RunTask:
    """A handle on a spawned run: ``cancel()`` works from any thread, at any time."""

    __slots__ = ("_cancelled", "_loop", "_task", "foreign")

    def __init__(self, loop: asyncio.AbstractEventLoop, *, foreign: bool = False) -> None:
        self._loop = loop
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False
        self.foreign = foreign  # on a loop the caller runs, not rillet's background loop

    def cancel(self) -> None:
        if self._cancelled:
            return
        self._cancelled = True
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._cancel_now()
        elif not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._cancel_now)
            except RuntimeError:  # the loop closed meanwhile: nothing is running any more
                pass

    def _cancel_now(self) -> None:
        if self._task is not None:
            self._task.cancel()

    @property
    def task(self) -> asyncio.Task[Any] | None:
        return self._task

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the run is a task of."""
        return self._loop


def spawn(coro: Coroutine[Any, Any, Any], ctx: contextvars.Context | None = None) -> RunTask:
    """Starts ``coro`` as a task: on the running loop if there is one, else on rillet's
    background loop. ``ctx`` is the context it runs in (default: a copy of the caller's)."""
    if ctx is None:
        ctx = contextvars.copy_context()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    handle = RunTask(loop or background_loop(), foreign=loop is not None)
    if loop is not None:
        handle._task = loop.create_task(coro, context=ctx)
        _no_pending_log(handle._task)
        return handle

    def start() -> None:
        if handle._cancelled:
            coro.close()
            return
        handle._task = handle._loop.create_task(coro, context=ctx)
        _no_pending_log(handle._task)

    handle._loop.call_soon_threadsafe(start)
    return handle
