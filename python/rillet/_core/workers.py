"""rillet's worker threads for synchronous user code (``def`` tools, sync generators).

``await run_sync(fn, *args)`` runs ``fn(*args)`` on a worker thread, inside a copy of the
caller's :mod:`contextvars` context (so ``get_session_value``, ``send_tool_gen_action`` and
friends work there), and resumes the awaiting task with its result or exception.

Why not ``asyncio.to_thread`` or ``loop.run_in_executor``: both go through a
``concurrent.futures.Future`` chained to an asyncio future, a work item, an idle semaphore and
two callbacks per call. Here the jobs sit in a native queue (:class:`rillet._native.WorkQueue`:
a worker parks in its ``take`` with the GIL released until a job comes) and a result comes back
with a single ``loop.call_soon_threadsafe``.
``benches/bench_tool_handoff.py`` measures the designs.

:meth:`WorkerPool.run_waiting` (what ``def`` tools use) saves the way back for a short call:
the event loop's thread waits for the result itself, GIL released, so that a call that
finishes in time costs one thread wake-up each way and no trip through the loop (no self-pipe
write, ``epoll`` wake-up, future callback or extra task step). Each side's part of the
exchange is one native call: the loop's thread posts the job and waits for its outcome
(``WorkQueue.call``); the worker stores the outcome, wakes the loop's thread and parks for its
next job, having released the GIL before the wake-up, so that the woken thread finds it free
(``WorkQueue.hand``). The worker's loop (``_work``) and the start of a worker thread stay in
Python, so that no native frame lies under user code: CPython ends a daemon thread that wants
the GIL back while the interpreter exits by unwinding its stack, which must not cross native
frames (it aborts the process). The wait is bounded (``QUICK_WAIT``, 1 ms; Ctrl-C is checked every
50 ms of a longer one): past it the loop's thread stops waiting, under the hand-off's lock, and
goes back to its other work; the worker then sees that nobody waits and the outcome comes the
usual way, through ``call_soon_threadsafe`` to a future. The worker times the function itself,
and a call that ran longer than ``SLOW_CALL`` (100 µs) counts in the function's :class:`Pace`,
so that a slow function stops being waited for (the loop must not be held while it runs: other
runs share it); while one call is past its wait, the function's other calls are not waited
for either. The count is of recent calls: ``QUICK_CALLS`` quick calls in a row take one slow
call off it (calls not waited for are timed too), so that a quick function that a busy machine
preempted a few times (its wall-clock time is what is measured) is waited for again instead of
losing the fast way back for the rest of the process's life.

The pool grows on demand: a job finds an idle worker or starts a new thread, up to 256
threads (far above ``ThreadPoolExecutor``'s ``cpu_count + 4``: a sync tool that runs a nested
Runner holds its worker while the inner run's sync tools need workers of their own, and a
small bound deadlocks such trees); beyond that jobs wait in the queue. Workers are daemon threads and live for the process (a forked child starts afresh).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from rillet._native import Handoff, WorkQueue

__all__ = ["Pace", "WorkerPool", "default_pool", "run_sync"]

T = TypeVar("T")

QUICK_WAIT = 0.001
"""Seconds the event loop's thread waits at most for a :meth:`WorkerPool.run_waiting` call's
result before it goes back to its other work (on a loaded machine a woken thread may wait
hundreds of microseconds for a CPU: a shorter wait often expires for a call of microseconds)."""

SLOW_CALL = 0.0001
"""A :meth:`WorkerPool.run_waiting` function that ran longer than this (seconds, measured on
the worker) counts as too slow to wait for."""

SLOW_CALLS = 4
"""After this many calls that ran longer than ``SLOW_CALL``, a function is no longer waited for
(the count is at most this; see ``QUICK_CALLS``)."""

QUICK_CALLS = 64
"""This many calls in a row of a function that ran quick (at most ``SLOW_CALL``) take one off
its count of slow calls: a function that is slow now and then is waited for at most once per
``QUICK_CALLS`` of its calls, one that blocks every time never again after ``SLOW_CALLS``."""

# Orders the updates of a Pace shared by loops of several threads (held for a few bytecodes;
# one for every pool: it is rarely contended).
_handshake = threading.Lock()


class Pace:
    """How one function's :meth:`WorkerPool.run_waiting` calls went, shared by all its callers
    (every run, every loop): ``slow`` counts the recent calls that ran longer than
    ``SLOW_CALL`` (up to ``SLOW_CALLS``; ``quick`` counts the quick calls since the last slow
    one or the last one taken off, and every ``QUICK_CALLS`` of them take one off), ``late``
    the calls the loop stopped waiting for that are still running. The loop waits for a call
    only while ``slow`` is under ``SLOW_CALLS`` and no call is late: a function that blocks (a
    network call, a lock) holds the loop for one wait, not one per concurrent call."""

    __slots__ = ("late", "quick", "slow")

    def __init__(self) -> None:
        self.slow = 0
        self.quick = 0
        self.late = 0

    @property
    def waited(self) -> bool:
        """Whether the loop waits for the next call."""
        return self.slow < SLOW_CALLS and self.late <= 0

    def _ran(self, took: float | None, late: int = 0) -> None:
        """Counts a call that ran ``took`` seconds on its worker (None: a call that is not
        over, or was cancelled before it was), and ``late`` more calls running late."""
        if took is not None and took > SLOW_CALL:
            with _handshake:  # the callers may be loops of several threads
                self.slow = min(self.slow + 1, SLOW_CALLS)
                self.quick = 0
                self.late += late
        elif late or (took is not None and self.slow):  # (a quick call of a quick function: nothing)
            with _handshake:
                self.late += late
                if took is not None and self.slow:
                    self.quick += 1
                    if self.quick >= QUICK_CALLS:
                        self.slow -= 1
                        self.quick = 0


def _stopped_waiting(handoff: Handoff, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
    """The future a call's caller awaits once its wait for the call ran out: the worker's late
    outcome goes there."""
    fut: asyncio.Future[Any] = loop.create_future()
    handoff.fut = fut
    return fut


def _late(handoff: Handoff) -> None:
    # Runs on the caller's loop: the outcome of a call its caller stopped waiting for. No
    # future: the caller gave up (a signal), the outcome is dropped.
    fut = handoff.fut
    result, exc = handoff.outcome()
    if fut is not None:
        handoff.fut = None
        _deliver(fut, result, exc)


def _deliver(fut: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    # Runs on the future's loop. The awaiting task may have been cancelled meanwhile.
    if fut.done():
        return
    if exc is None:
        fut.set_result(result)
    else:
        fut.set_exception(exc)


def _outcome(
    ctx: contextvars.Context, fn: Callable[..., Any], args: tuple[Any, ...]
) -> tuple[Any, BaseException | None]:
    """``ctx.run(fn, *args)``'s result, or the exception to hand to the awaiting task."""
    try:
        return ctx.run(fn, *args), None
    except StopIteration as e:  # an asyncio future refuses StopIteration (PEP 479)
        exc = RuntimeError(f"{getattr(fn, '__qualname__', fn)!s} raised StopIteration")
        exc.__cause__ = e
        return None, exc
    except BaseException as e:  # noqa: BLE001  (handed to the awaiting task)
        return None, e


def _work(queue: WorkQueue) -> None:
    # A worker thread's loop. The functions run from here, a Python frame, so that no native
    # frame lies under them: CPython ends a daemon thread that wants the GIL back while the
    # interpreter exits by unwinding its stack, which native frames must not be in.
    take, hand, idle = queue.take, queue.hand, queue.idle
    job = take()
    while True:
        if type(job) is Handoff:
            call = job.start()  # None: its caller gave up, or the task awaiting it was cancelled
            if call is None:
                del job
                idle()
                job = take()
                continue
            ctx, fn, args = call
            del call
            job.keep(*_outcome(ctx, fn, args))
            del ctx, fn, args
            # idle, the waiting caller woken (GIL released first) and parked for the next
            # job: one native call; None: the caller stopped waiting, the outcome goes late
            nxt = hand(job)
            if nxt is None:
                try:
                    job.event_loop.call_soon_threadsafe(_late, job)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    pass
                del job
                nxt = take()
            job = nxt
            del nxt
            continue
        loop, fut, ctx, fn, args = job
        del job
        if fut is None:
            try:
                ctx.run(fn, *args)
            except BaseException as e:  # noqa: BLE001  (nobody awaits it: report, carry on)
                args_ = (type(e), e, e.__traceback__, threading.current_thread())
                threading.excepthook(threading.ExceptHookArgs(args_))
                del e, args_
        elif not fut.cancelled():
            result, exc = _outcome(ctx, fn, args)
            idle()
            try:
                loop.call_soon_threadsafe(_deliver, fut, result, exc)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass
            del loop, fut, ctx, fn, args, result, exc
            job = take()
            continue
        del loop, fut, ctx, fn, args
        idle()
        job = take()


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
        self._queue = WorkQueue(max_workers)

    @property
    def threads(self) -> int:
        """How many worker threads this pool has started."""
        return self._queue.threads

    def _start(self, n: int | None) -> None:
        # Starts worker thread number n, when the queue asked for one (Python code is never
        # called from the native queue: see _work).
        if n:
            threading.Thread(target=_work, args=(self._queue,), name=f"{self._name}-{n}", daemon=True).start()

    async def run(self, fn: Callable[..., T], /, *args: Any) -> T:
        """Runs ``fn(*args)`` on a worker, in a copy of the caller's context; returns its
        result or raises its exception (unchanged)."""
        return await self.run_in(contextvars.copy_context(), fn, *args)

    async def run_in(self, ctx: contextvars.Context, fn: Callable[..., T], /, *args: Any) -> T:
        """Runs ``ctx.run(fn, *args)`` on a worker. ``ctx`` must not be entered elsewhere
        meanwhile (a Context runs in one thread at a time)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._start(self._queue.put_future(loop, fut, ctx, fn, args))
        return await fut

    async def run_waiting(
        self, fn: Callable[..., T], /, *args: Any, wait: float = QUICK_WAIT, pace: Pace | None = None
    ) -> T:
        """:meth:`run`, for a call expected to be short: the loop's thread waits up to
        ``wait`` seconds for the result (GIL released) before it goes back to its other work
        and awaits it. ``pace`` (the function's :class:`Pace`) records how the call went; while
        it says the function is slow, or a call of it is running late, the loop does not wait
        (the call is still timed, so that a function that turned quick is waited for again). A
        signal (KeyboardInterrupt) raised during the wait leaves the call running and its result
        unclaimed, as a cancelled :meth:`run` does. Callbacks that ``fn`` scheduled on the loop
        (``call_soon_threadsafe``) run before the caller resumes, as with :meth:`run`; on a loop
        other than asyncio's own, this is :meth:`run`."""
        loop = asyncio.get_running_loop()
        callbacks = getattr(loop, "_ready", None)  # asyncio's own loops: the callbacks to run next
        if callbacks is None:
            # another loop: results come through it, after what fn scheduled on it
            return await self.run_in(contextvars.copy_context(), fn, *args)
        queued = len(callbacks)
        if pace is not None and not pace.waited:
            # not waited for: the result comes through the loop, timed on the worker as ever
            handoff = self._queue.call(loop, contextvars.copy_context(), fn, args, 0.0)
            self._start(handoff.spawn)
            future: asyncio.Future[T] = loop.create_future()
            handoff.fut = future
            try:
                return await future
            finally:
                pace._ran(handoff.took if handoff.finished else None)
        # one native call: the job is posted and its outcome waited for, GIL released
        handoff = self._queue.call(loop, contextvars.copy_context(), fn, args, wait)
        if handoff.spawn:  # posted, not waited for yet: its worker thread is to be started
            self._start(handoff.spawn)
            self._queue.wait(handoff, wait)
        if not handoff.arrived:
            fut = _stopped_waiting(handoff, loop)
            late = False
            try:
                if pace is not None:
                    pace._ran(None, 1)  # running late: the function's other calls are not waited for
                    late = True
                return await fut  # type: ignore[no-any-return]
            finally:
                if late:
                    assert pace is not None
                    pace._ran(handoff.took if handoff.finished else None, -1)
        took = handoff.took
        if pace is not None and (took > SLOW_CALL or pace.slow):
            pace._ran(took)
        # taken now: the hand-off stays with its (idle) worker until the next job, and a
        # cancellation at the yield below must not leave the result there
        result, exc = handoff.outcome()
        if len(callbacks) > queued:
            # fn scheduled callbacks on this loop (send_event from a tool's thread does): they
            # run first, as they did when the result came through the loop after them
            await asyncio.sleep(0)
        if exc is not None:
            raise exc
        return result  # type: ignore[no-any-return]

    def submit_detached(self, ctx: contextvars.Context, fn: Callable[..., Any], /, *args: Any) -> None:
        """Runs ``ctx.run(fn, *args)`` on a worker without waiting for it; an exception it
        raises goes to :func:`threading.excepthook`."""
        self._start(self._queue.put_detached(ctx, fn, args))


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
