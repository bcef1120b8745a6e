"""rillet's worker threads for synchronous user code (``def`` tools, sync generators).

``await run_sync(fn, *args)`` runs ``fn(*args)`` on a worker thread, inside a copy of the
caller's :mod:`contextvars` context (so ``get_session_value``, ``send_tool_gen_action`` and
friends work there), and resumes the awaiting task with its result or exception.

Why not ``asyncio.to_thread`` or ``loop.run_in_executor``: both go through a
``concurrent.futures.Future`` chained to an asyncio future, a work item, an idle semaphore and
two callbacks per call. Here a job is one tuple on a ``queue.SimpleQueue`` (C, the GIL is
released while a worker waits) and the result comes back with a single
``loop.call_soon_threadsafe``. ``benches/bench_tool_handoff.py`` measures the three designs.

The pool grows on demand: a job finds an idle worker or starts a new thread, up to 256
threads (far above ``ThreadPoolExecutor``'s ``cpu_count + 4``: a sync tool that runs a nested
Runner holds its worker while the inner run's sync tools need workers of their own, and a
small bound deadlocks such trees); beyond that jobs wait in the queue. Workers are daemon threads and live for the process (a forked child starts afresh).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["WorkerPool", "default_pool", "run_sync"]

T = TypeVar("T")

# (loop, future, context, function, arguments); loop and future are None for a detached job
_Job = tuple[
    "asyncio.AbstractEventLoop | None",
    "asyncio.Future[Any] | None",
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
]


def _deliver(fut: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    # Runs on the future's loop. The awaiting task may have been cancelled meanwhile.
    if fut.done():
        return
    if exc is None:
        fut.set_result(result)
    else:
        fut.set_exception(exc)


class WorkerPool:
    """A bounded, grow-on-demand set of daemon threads running jobs for asyncio callers."""

    def __init__(self, max_workers: int | None = None, *, name: str = "rillet-worker") -> None:
        if max_workers is None:
            # Generous: a sync tool may block on a nested run whose own sync tools need
            # workers too; a small bound deadlocks such trees once every worker waits.
            max_workers = 256
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self._name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0  # workers that finished a job and will take the next one

    @property
    def threads(self) -> int:
        """How many worker threads this pool has started."""
        return self._threads

    async def run(self, fn: Callable[..., T], /, *args: Any) -> T:
        """Runs ``fn(*args)`` on a worker, in a copy of the caller's context; returns its
        result or raises its exception (unchanged)."""
        return await self.run_in(contextvars.copy_context(), fn, *args)

    async def run_in(self, ctx: contextvars.Context, fn: Callable[..., T], /, *args: Any) -> T:
        """Runs ``ctx.run(fn, *args)`` on a worker. ``ctx`` must not be entered elsewhere
        meanwhile (a Context runs in one thread at a time)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self.submit((loop, fut, ctx, fn, args))
        return await fut

    def submit_detached(self, ctx: contextvars.Context, fn: Callable[..., Any], /, *args: Any) -> None:
        """Runs ``ctx.run(fn, *args)`` on a worker without waiting for it; an exception it
        raises goes to :func:`threading.excepthook`."""
        self.submit((None, None, ctx, fn, args))

    def submit(self, job: _Job) -> None:
        """Queues ``job``, starting a worker when none is idle and the bound allows one."""
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                start = False
            elif self._threads < self.max_workers:
                self._threads += 1
                start = True
            else:
                start = False
        self._put(job)
        if start:
            threading.Thread(target=self._work, name=f"{self._name}-{self._threads}", daemon=True).start()

    def _put(self, job: _Job) -> None:
        self._jobs.put(job)

    def _get(self) -> _Job:
        return self._jobs.get()

    def _work(self) -> None:
        get, lock = self._get, self._lock
        while True:
            loop, fut, ctx, fn, args = get()
            if fut is None:
                try:
                    ctx.run(fn, *args)
                except BaseException as e:  # noqa: BLE001  (nobody awaits it: report, carry on)
                    args_ = (type(e), e, e.__traceback__, threading.current_thread())
                    threading.excepthook(threading.ExceptHookArgs(args_))
            elif loop is not None and not fut.cancelled():
                result: Any = None
                exc: BaseException | None = None
                try:
                    result = ctx.run(fn, *args)
                except StopIteration as e:  # an asyncio future refuses StopIteration (PEP 479)
                    exc = RuntimeError(f"{getattr(fn, '__qualname__', fn)!s} raised StopIteration")
                    exc.__cause__ = e
                except BaseException as e:  # noqa: BLE001  (handed to the awaiting task)
                    exc = e
                try:
                    loop.call_soon_threadsafe(_deliver, fut, result, exc)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    pass
                del result, exc
            del loop, fut, ctx, fn, args
            with lock:
                self._idle += 1


_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def default_pool() -> WorkerPool:
    """The process-wide pool that sync tools run on (created on first use)."""
    global _pool
    pool = _pool
    if pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = WorkerPool()
            pool = _pool
    return pool


async def run_sync(fn: Callable[..., T], /, *args: Any) -> T:
    """``await run_sync(fn, *args)``: ``fn(*args)`` on the default pool, in a copy of the
    caller's context."""
    return await default_pool().run(fn, *args)


def _after_fork() -> None:
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
