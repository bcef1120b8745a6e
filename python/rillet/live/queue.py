"""The live request queue: what the caller sends to a live run while it reads the run's events.

ADK's ``LiveRequestQueue``: the caller keeps sending (text turns, realtime blobs, activity
signals) from any thread or task, and the live agent takes the requests one at a time with
``await queue.get()``. ``close()`` ends the live session; a closed queue hands out its close
request to every later ``get`` (so each agent of a sequence sees it) and refuses new sends.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from dataclasses import dataclass

from rillet._native import Message
from rillet.errors import LiveQueueClosedError

__all__ = ["Blob", "LiveRequest", "LiveRequestQueue"]


@dataclass(frozen=True, slots=True)
class Blob:
    """Raw realtime input (audio, an image frame...): ``data`` bytes of ``mime_type``."""

    data: bytes
    mime_type: str

    def __post_init__(self) -> None:
        if not isinstance(self.data, (bytes, bytearray, memoryview)):
            raise TypeError(f"Blob(data=...): expected bytes, got {type(self.data).__name__}")
        if not isinstance(self.mime_type, str) or "/" not in self.mime_type:
            raise ValueError(f"Blob(mime_type=...): expected a MIME type such as 'audio/pcm', got {self.mime_type!r}")
        object.__setattr__(self, "data", bytes(self.data))


@dataclass(frozen=True, slots=True)
class LiveRequest:
    """One request of a live session: exactly one of ``content`` (with ``partial``: more of
    the same user turn follows), ``blob``, ``activity_start``, ``activity_end``, ``close``."""

    content: Message | None = None
    partial: bool = False
    blob: Blob | None = None
    activity_start: bool = False
    activity_end: bool = False
    close: bool = False


class LiveRequestQueue:
    """What the caller of :meth:`rillet.Runner.run_live` sends the live run (thread-safe).

    * ``send_content(message, partial=False)``: a user message (a str is a user text);
      ``partial=True`` says the turn goes on: the model answers after the non-partial one
      (or after ``send_activity_end()``);
    * ``send_realtime(blob)``: a :class:`Blob` of realtime input;
    * ``send_activity_start()`` / ``send_activity_end()``: the user starts / stops speaking
      (manual activity detection); a start while the model is answering cuts its answer;
    * ``close()``: ends the session (idempotent); sending after it raises
      :class:`~rillet.errors.LiveQueueClosedError`.
    """

    __slots__ = ("_closed", "_items", "_lock", "_waiters")

    def __init__(self) -> None:
        self._items: deque[LiveRequest] = deque()
        self._lock = threading.Lock()
        # every get() waiting (one per run using the queue): each is woken to look again
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def send_content(self, message: Message | str, *, partial: bool = False) -> None:
        if isinstance(message, str):
            message = Message.user(message)
        elif not isinstance(message, Message):
            raise TypeError(f"send_content(message): expected a rillet.Message or a str, got {type(message).__name__}")
        self.send(LiveRequest(content=message, partial=bool(partial)))

    def send_realtime(self, blob: Blob) -> None:
        if not isinstance(blob, Blob):
            raise TypeError(
                f"send_realtime(blob): expected a rillet.live.Blob(data, mime_type), got {type(blob).__name__}"
            )
        self.send(LiveRequest(blob=blob))

    def send_activity_start(self) -> None:
        self.send(LiveRequest(activity_start=True))

    def send_activity_end(self) -> None:
        self.send(LiveRequest(activity_end=True))

    def close(self) -> None:
        self._put(LiveRequest(close=True), closing=True)

    def send(self, request: LiveRequest) -> None:
        """Queues ``request`` (the ``send_*`` methods build it) and wakes the live run."""
        self._put(request, closing=False)

    def _put(self, request: LiveRequest, closing: bool) -> None:
        with self._lock:
            if self._closed:
                if closing or request.close:
                    return  # closing twice (from two threads too) is fine
                raise LiveQueueClosedError(
                    "the LiveRequestQueue is closed: its live session has ended; start another run_live "
                    "with a new LiveRequestQueue()"
                )
            self._closed = request.close
            self._items.append(request)
            waiters, self._waiters = self._waiters, []
        _wake_all(waiters)

    def unget(self, request: LiveRequest) -> None:
        """Puts back a request taken by an agent that is ending, for the next agent to take
        (a live SequentialAgent hands the session on without losing what the user sent)."""
        with self._lock:
            if not (self._items and self._items[0].close and request.close):
                self._items.appendleft(request)
            waiters, self._waiters = self._waiters, []
        _wake_all(waiters)

    async def get(self) -> LiveRequest:
        """The next request, waiting for one. The close request stays at the head of the
        queue: every later ``get`` returns it again."""
        while True:
            with self._lock:
                if self._items:
                    req = self._items[0]
                    if not req.close:
                        self._items.popleft()
                    return req
                loop = asyncio.get_running_loop()
                fut: asyncio.Future[None] = loop.create_future()
                waiter = (loop, fut)
                self._waiters.append(waiter)
            try:
                await fut
            finally:
                with self._lock:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)

    def __repr__(self) -> str:
        return f"<LiveRequestQueue {len(self._items)} queued{', closed' if self._closed else ''}>"


def _wake_all(waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]) -> None:
    for loop, fut in waiters:
        try:
            loop.call_soon_threadsafe(_wake, fut)
        except RuntimeError:  # its loop is closed: nobody is waiting there any more
            pass


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
