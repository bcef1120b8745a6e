"""RedisStreamSource: a run's events read back from its Redis stream, in another process."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from rillet._native import NO_VALUE, StreamWriter, convert_stream, pipe
from rillet.data.events import AgentEvent
from rillet.errors import EventStreamError, EventStreamGapError, EventStreamTimeoutError
from rillet.redis.client import DEFAULT_PREFIX, DEFAULT_URL, checked_client, connect, failures
from rillet.redis.wire import Paths, decode_entry, rebuild_event, recorded_error

if TYPE_CHECKING:
    import redis.asyncio

__all__ = ["RedisStreamSource"]

_START = ("0", "0-0")
_QUEUED = 10_000  # events decoded ahead of the consumer, at most


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


class _Ended:
    """Marks, inside a streamed message, the entry that closed it."""

    __slots__ = ("entry_id",)

    def __init__(self, entry_id: str) -> None:
        self.entry_id = entry_id


class _Inbox:
    """Decoded items waiting for the consumer (cheaper than an asyncio.Queue a chunk); the
    reading task waits while more than ``_QUEUED`` are waiting."""

    __slots__ = ("_items", "_ready", "_space")

    def __init__(self) -> None:
        self._items: deque[tuple[str, Any, str]] = deque()
        self._ready, self._space = asyncio.Event(), asyncio.Event()

    def put(self, item: tuple[str, Any, str]) -> None:
        self._items.append(item)
        self._ready.set()

    async def room(self) -> None:
        if len(self._items) > _QUEUED:
            self._space.clear()
            await self._space.wait()

    async def get(self) -> tuple[str, Any, str]:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        if len(self._items) <= _QUEUED // 2:
            self._space.set()
        return self._items.popleft()


class RedisStreamSource:
    """The events of run ``run_id`` as a :class:`~rillet.redis.RedisStreamSink` published
    them, from the entry after ``after`` (an entry id; the default reads from the start)::

        source = RedisStreamSource("r1", url=url)
        async for event in source:
            ...
        # after a disconnect: RedisStreamSource("r1", url=url, after=source.last_id)

    Iteration ends with the run's end entry (:attr:`status` says how it ended). Events are
    rebuilt as the run made them: agent name, run path, messages, actions and interrupts;
    errors as :class:`~rillet.errors.RecordedError`; a streamed message as a stream you read
    chunk by chunk as it arrives. :attr:`last_id` is where to resume: the end of the last
    event you were given (a streamed one counts once you read its stream to the end, or moved
    past it); resuming in the middle of a message skips to the next event.

    ``timeout`` (seconds, None: forever) bounds the wait for each next entry: a run that never
    ends raises :class:`~rillet.errors.EventStreamTimeoutError`. Entries trimmed before they
    were read raise :class:`~rillet.errors.EventStreamGapError`; an unreachable server
    :class:`~rillet.errors.EventStreamConnectionError`.
    """

    def __init__(
        self,
        run_id: str,
        *,
        url: str = DEFAULT_URL,
        after: str = "0-0",
        prefix: str = DEFAULT_PREFIX,
        timeout: float | None = 60.0,
        batch: int = 1000,
        connect_timeout: float = 5.0,
        client: redis.asyncio.Redis | None = None,
    ) -> None:
        if not isinstance(run_id, str) or not run_id:
            raise ValueError(f"RedisStreamSource(run_id={run_id!r}): give a non-empty string")
        if not isinstance(after, str):
            raise TypeError(f"RedisStreamSource(after={after!r}): give an entry id string such as '1700000000000-0'")
        try:
            _id_key(after)
        except ValueError:
            raise ValueError(
                f"RedisStreamSource(after={after!r}): not a stream entry id (<milliseconds>-<sequence>, "
                "as RedisStreamSource.last_id gives)"
            ) from None
        if timeout is not None and timeout <= 0:
            raise ValueError(f"RedisStreamSource(timeout={timeout}): give a positive number of seconds, or None")
        self.run_id, self.url, self.key = run_id, url, f"{prefix}{run_id}"
        self.timeout, self._batch = timeout, max(1, batch)
        self._after = after
        self._last_id = after
        self.status: str | None = None
        """How the run ended (``done``, ``abandoned`` or ``failed``), once its end entry is read."""
        self._client = (
            checked_client(client, "RedisStreamSource") if client is not None else connect(url, connect_timeout)
        )
        self._own_client = client is None
        self._iterating = False

    @property
    def last_id(self) -> str:
        """The entry id to resume from (``after=``): the end of the last event you were given."""
        return self._last_id

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        if self._iterating:
            raise RuntimeError("a RedisStreamSource is read once; make another with after=source.last_id")
        self._iterating = True
        return self._events()

    async def aclose(self) -> None:
        """Closes the connection (a client given as ``client=`` is left open)."""
        if self._own_client:
            await self._client.aclose()

    async def __aenter__(self) -> RedisStreamSource:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _events(self) -> AsyncIterator[AgentEvent]:
        inbox = _Inbox()
        reader = asyncio.create_task(self._read(inbox))
        try:
            while True:
                kind, value, entry_id = await inbox.get()
                if kind == "event":
                    ev, opens = value
                    if not opens:  # entries come in order: no comparison needed
                        self._last_id = entry_id
                    yield ev
                elif kind == "done":
                    self._last_id = entry_id
                elif kind == "end":
                    self.status = value
                    return
                else:
                    raise value
        finally:
            reader.cancel()
            try:
                await reader
            except (asyncio.CancelledError, Exception):  # noqa: BLE001  # already raised above, or stopped by us
                pass
            await self.aclose()  # read once: the connection is not needed any more

    def _mark(self, item: Any) -> Any:
        """The chunks of a streamed message as the consumer reads them; the close marker
        after the last one moves :attr:`last_id` (unless later events already did)."""
        if isinstance(item, _Ended):
            if _id_key(item.entry_id) > _id_key(self._last_id):
                self._last_id = item.entry_id
            return NO_VALUE
        return item

    async def _read(self, inbox: _Inbox) -> None:
        try:
            await self._read_entries(inbox)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001  # handed to the consumer, raised there
            inbox.put(("error", e, ""))

    async def _first_number(self) -> int:
        """The number of the entry after ``after`` (the run's entries count from 0)."""
        if self._after in _START:
            return 0
        async with failures(self.url, f"RedisStreamSource for run {self.run_id!r}"):
            found: Any = await self._client.xrange(self.key, min=self._after, max=self._after, count=1)
        if not found:
            raise EventStreamGapError(
                f"entry {self._after} is not in stream {self.key!r}: trimmed by the sink's maxlen, expired, or "
                "not an id of this run; resume from a recent source.last_id, or raise RedisStreamSink(maxlen=)"
            )
        record = decode_entry(found[0][1], self._after, self.key)
        return int(record[0]) + 1

    async def _read_entries(self, inbox: _Inbox) -> None:
        expected = await self._first_number()
        cursor, paths = self._after, Paths()
        writer: StreamWriter[Any] | None = None
        try:
            while True:
                entries = await self._next_entries(cursor)
                for raw_id, fields in entries:
                    cursor = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
                    record = decode_entry(fields, cursor, self.key)
                    if record[0] != expected:
                        raise EventStreamGapError(
                            f"stream {self.key!r} lost entries {expected} to {record[0] - 1} before this reader "
                            f"read them (trimmed by the sink's maxlen); raise RedisStreamSink(maxlen=) or read faster"
                        )
                    expected += 1
                    await inbox.room()
                    kind = record[1]
                    if kind == "chunk":
                        if writer is not None:  # else: resumed inside a message, skipped
                            await writer.asend(record[2])
                    elif kind == "close":
                        if writer is not None:
                            await writer.asend(_Ended(cursor))
                            if record[2] is not None:
                                await writer.asend_error(recorded_error(record[2]))
                            writer.close()
                            writer = None
                            inbox.put(("done", None, cursor))
                    elif kind in ("ev", "open"):
                        stream = None
                        if kind == "open":
                            read, writer = pipe()
                            stream = convert_stream(read, self._mark)
                        inbox.put(("event", (rebuild_event(record, paths, stream), kind == "open"), cursor))
                    elif kind == "end":
                        inbox.put(("end", record[3], cursor))
                        return
        finally:
            if writer is not None:  # the consumer's stream ends with the reason, not a silent EOF
                writer.send_error(EventStreamError(f"the source of run {self.run_id!r} stopped inside this message"))

    async def _next_entries(self, cursor: str) -> list[Any]:
        """The next entries after ``cursor``, waiting at most ``timeout`` for the first."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                await self._timed_out(cursor)
            block = 0 if left is None else max(1, int(left * 1000))
            async with failures(self.url, f"RedisStreamSource for run {self.run_id!r}"):
                found: Any = await self._client.xread({self.key: cursor}, count=self._batch, block=block)
            if found:  # RESP2: [[key, entries]]; RESP3: {key: [entries]}
                return list(next(iter(found.values()))[0] if isinstance(found, dict) else found[0][1])

    async def _timed_out(self, cursor: str) -> None:
        async with failures(self.url, f"RedisStreamSource for run {self.run_id!r}"):
            exists = await self._client.exists(self.key)
        why = (
            "the run has not ended: is its publisher still running?"
            if exists
            else "the stream does not exist: no RedisStreamSink published this run id (or the key expired)"
        )
        raise EventStreamTimeoutError(
            f"run {self.run_id!r}: no entry after {cursor} in stream {self.key!r} within {self.timeout} s; {why} "
            "(RedisStreamSource(timeout=None) waits forever)"
        )
