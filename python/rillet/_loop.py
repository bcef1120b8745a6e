"""Where a run's coroutine executes.

Inside a running event loop a run is a task on that loop. From plain synchronous code it goes to
one background event-loop thread owned by rillet (started on first use, a daemon), and its
events cross back through the Rust channel, which releases the GIL while the consumer waits.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any

__all__ = ["RunTask", "background_loop", "spawn"]

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
                    loop.run_forever()
                finally:  # if it ever stops, the next run starts a new loop instead of hanging
                    loop.close()

            threading.Thread(target=main, name="rillet-loop", daemon=True).start()
            ready.wait()
            _loop = loop
        return _loop


class RunTask:
    """A handle on a spawned run: ``cancel()`` works from any thread, at any time."""

    __slots__ = ("_cancelled", "_loop", "_task")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False

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


def spawn(coro: Coroutine[Any, Any, Any], ctx: contextvars.Context | None = None) -> RunTask:
    """Starts ``coro`` as a task: on the running loop if there is one, else on rillet's
    background loop. ``ctx`` is the context it runs in (default: a copy of the caller's)."""
    if ctx is None:
        ctx = contextvars.copy_context()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    handle = RunTask(loop or background_loop())
    if loop is not None:
        handle._task = loop.create_task(coro, context=ctx)
        return handle

    def start() -> None:
        if handle._cancelled:
            coro.close()
            return
        handle._task = handle._loop.create_task(coro, context=ctx)

    handle._loop.call_soon_threadsafe(start)
    return handle
