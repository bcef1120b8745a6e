"""An event loop shaped like Temporal's workflow loop, for the wakeup paths that must not
depend on the thread a loop turn runs on."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any


class NoThreadsafeLoop(asyncio.SelectorEventLoop):
    """Like Temporal's workflow loop: it has no ``call_soon_threadsafe``, and its turns may run
    on different threads (one per workflow activation, from a thread pool)."""

    def call_soon_threadsafe(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        raise NotImplementedError("this loop's turns run on any thread; it has no call_soon_threadsafe")


def each_on_its_own_thread(*turns: Callable[[], None]) -> None:
    """Runs ``turns`` one after the other, each on a new thread (a workflow's activations)."""
    for turn in turns:
        thread = threading.Thread(target=turn)
        thread.start()
        thread.join()
