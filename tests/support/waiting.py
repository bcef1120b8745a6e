"""Waiting, in tests, for what another thread, task or process does.

Wait for an event, a condition, a queue or a pipe when the code under test offers one. Where
nothing signals (a server that starts in another process, a count that another thread
changes), poll the condition itself with these, up to a generous deadline: a test then takes
as long as the machine needs, and fails with what it waited for if that never happens. Never
sleep a fixed time and hope the other side got there: on a busy machine it has not
(tests/contract/test_architecture.py refuses such sleeps in the test files).
"""

from __future__ import annotations

import asyncio
import inspect
import linecache
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["DEADLINE", "at_line", "child_env", "process_waits", "tasks_on_rillets_loop", "until", "wait_until"]

DEADLINE = 30.0  # seconds: far beyond what any wait here takes on an idle machine
_POLL = 0.005  # seconds between looks at the condition


def wait_until(condition: Callable[[], object], what: str, seconds: float = DEADLINE) -> None:
    """Returns once ``condition()`` is true; raises AssertionError naming ``what`` after
    ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds:g} s for {what}")
        time.sleep(_POLL)


async def until(condition: Callable[[], Any], what: str, seconds: float = DEADLINE) -> Any:
    """:func:`wait_until` for a coroutine: the event loop runs on while it waits. The condition
    may be a coroutine function (a request to a server); returns its first true value."""
    deadline = time.monotonic() + seconds
    while True:
        got = condition()
        if inspect.isawaitable(got):
            got = await got
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds:g} s for {what}")
        await asyncio.sleep(_POLL)


def at_line(thread: int | None, source: str) -> bool:
    """Whether thread ``thread`` (an ident) is executing the line whose text is ``source``: in a
    call on it that blocks in native code (a channel's ``recv``), which nothing else shows."""
    frame = sys._current_frames().get(thread) if thread is not None else None
    return frame is not None and linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip() == source


def process_waits(pid: int) -> bool:
    """Whether process ``pid`` is asleep (blocked in a wait, not running); True where /proc
    does not tell (then only the test's coverage depends on it, not its outcome)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] == "S"


def tasks_on_rillets_loop() -> int:
    """How many tasks rillet's background event loop holds (the runs started from sync code
    and their parts): 0 once every such run has ended."""
    from rillet._core import loop

    async def count() -> int:
        return len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])

    return asyncio.run_coroutine_threadsafe(count(), loop.background_loop()).result(DEADLINE)


def child_env() -> dict[str, str]:
    """The environment for a child Python process whose script waits with this module."""
    here = str(Path(__file__).resolve().parents[1])  # tests/, which holds support/
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)}
