"""RedisStreamSink: a run's events, as they happen, on a Redis stream keyed by the run's id."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterable
from typing import TYPE_CHECKING

from rillet._native import Message, StreamReader
from rillet.errors import EventStreamError
from rillet.events import AgentEvent
from rillet.redis.client import DEFAULT_PREFIX, DEFAULT_URL, checked_client, connect, failures
from rillet.redis.wire import FIELD, chunk_entry, close_entry, end_entry, event_entry

if TYPE_CHECKING:
    import redis.asyncio

__all__ = ["RedisStreamSink"]

_BATCH = 1000  # entries sent in one command, at most
_AHEAD = 10_000  # entries not yet sent, at most, before the run waits
# XADDs a batch of entries in one command: a pipeline of XADDs costs the client as much per
# entry to pack and parse as the server takes to run them (a third of the events/s).
_XADD_ALL = f"""
local maxlen = tonumber(ARGV[1])
for i = 2, #ARGV do
  if maxlen > 0 then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxlen, '*', '{FIELD.decode()}', ARGV[i])
  else
    redis.call('XADD', KEYS[1], '*', '{FIELD.decode()}', ARGV[i])
  end
end
return #ARGV - 1
"""


class _Writer:
    """Sends entries in order from one task: everything added while the last batch was on
    the wire goes in the next command, so a fast run is not held to one round trip an event
    and a slow one still sends each entry at once. A run that gets more than ``_AHEAD``
    entries ahead of Redis waits (:meth:`room`)."""

    def __init__(self, client: redis.asyncio.Redis, key: str, maxlen: int | None, url: str) -> None:
        self._client, self._key, self._maxlen, self._url = client, key, maxlen, url
        self._pending: list[bytes] = []
        self._wake, self._room = asyncio.Event(), asyncio.Event()
        self._room.set()
        self._closing = False
        self._xadd = client.register_script(_XADD_ALL)
        self._task = asyncio.create_task(self._run())
        self.n = 0

    def put(self, entry: bytes) -> None:
        """Adds the next entry (numbered ``n``)."""
        if self._task.done():
            self._task.result()  # its failure, raised here
            raise EventStreamError("the stream writer stopped")
        self.n += 1
        self._pending.append(entry)
        self._wake.set()

    async def room(self) -> None:
        """Waits while too many entries are unsent."""
        if len(self._pending) >= _AHEAD:
            self._room.clear()
            await self._room.wait()
            if self._task.done():
                self._task.result()

    async def _run(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._pending:
                    batch, self._pending = self._pending, []
                    self._room.set()
                    for i in range(0, len(batch), _BATCH):
                        async with failures(self._url, f"publishing to stream {self._key!r}"):
                            await self._xadd(keys=[self._key], args=[self._maxlen or 0, *batch[i : i + _BATCH]])
                if self._closing:
                    return
        finally:
            self._room.set()

    async def close(self, expire: float | None) -> None:
        """Sends what is left, then sets the key's expiry."""
        self._closing = True
        self._wake.set()
        await self._task
        if expire is not None:
            async with failures(self._url, f"expiring stream {self._key!r}"):
                await self._client.expire(self._key, max(1, round(expire)))

    def cancel(self) -> None:
        self._task.cancel()


class RedisStreamSink:
    """Publishes runs' events to Redis streams, one stream per run id
    (``<prefix><run_id>``), for :class:`~rillet.redis.RedisStreamSource` readers in other
    processes::

        async for event in RedisStreamSink(url).publish(runner.run(messages), run_id="r1"):
            ...  # the events, unchanged, as without the sink

    A streamed message is sent chunk by chunk as it arrives (readers get a stream too), while
    your copy of the event still holds its own stream. The stream is trimmed to about
    ``maxlen`` entries (``MAXLEN ~``; None keeps all): a reader that falls further behind
    gets :class:`~rillet.errors.EventStreamGapError`. ``expire`` (seconds) deletes the key
    that long after the run ends. ``client`` is a ``redis.asyncio.Redis`` to use instead of
    connecting to ``url``.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        maxlen: int | None = 100_000,
        prefix: str = DEFAULT_PREFIX,
        expire: float | None = None,
        connect_timeout: float = 5.0,
        client: redis.asyncio.Redis | None = None,
    ) -> None:
        if maxlen is not None and maxlen < 1:
            raise ValueError(f"RedisStreamSink(maxlen={maxlen}): give a positive entry count, or None to keep all")
        self.url, self.maxlen, self.prefix, self.expire = url, maxlen, prefix, expire
        self._client = (
            checked_client(client, "RedisStreamSink") if client is not None else connect(url, connect_timeout)
        )
        self._own_client = client is None
        self._publishing: set[AsyncGenerator[AgentEvent, None]] = set()

    def key(self, run_id: str) -> str:
        """The Redis key of run ``run_id``'s stream."""
        return f"{self.prefix}{run_id}"

    def publish(self, events: AsyncIterable[AgentEvent], *, run_id: str) -> AsyncGenerator[AgentEvent, None]:
        """``events`` (a run's, e.g. ``runner.run(...)``), each sent to the stream of ``run_id``
        before you get it. Ending early (``break``) marks the run abandoned for the readers."""
        if not isinstance(run_id, str) or not run_id:
            raise ValueError(f"RedisStreamSink.publish(run_id={run_id!r}): give a non-empty string")
        me: list[AsyncGenerator[AgentEvent, None]] = []
        gen = self._publish(events, run_id, me)
        me.append(gen)
        self._publishing.add(gen)  # held, so that a `break` leaves it for aclose() to end
        return gen

    async def drain(self, events: AsyncIterable[AgentEvent], *, run_id: str) -> int:
        """Publishes every event of ``events`` with no local consumer; returns how many."""
        count = 0
        async for _ in self.publish(events, run_id=run_id):
            count += 1
        return count

    async def aclose(self) -> None:
        """Ends the runs still being published (their readers see them abandoned: a ``break``
        out of ``publish`` does not end it), then closes the connection (a client given as
        ``client=`` is left open)."""
        for gen in list(self._publishing):
            await gen.aclose()
        if self._own_client:
            await self._client.aclose()

    async def __aenter__(self) -> RedisStreamSink:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _publish(
        self, events: AsyncIterable[AgentEvent], run_id: str, me: list[AsyncGenerator[AgentEvent, None]]
    ) -> AsyncGenerator[AgentEvent, None]:
        key = self.key(run_id)
        try:
            async with failures(self.url, f"RedisStreamSink for run {run_id!r}"):
                await self._client.ping()  # an unreachable server fails here, before the run
        except BaseException:
            self._publishing.discard(me[0])
            await _abandon(events)
            raise
        writer = _Writer(self._client, key, self.maxlen, self.url)
        count, status, pump = 0, "abandoned", None
        try:
            async for ev in events:
                entry, opens = event_entry(writer.n, ev)
                writer.put(entry)
                await writer.room()
                count += 1
                if opens:
                    mv = ev.message_output
                    assert mv is not None and mv.message_stream is not None
                    mv.message_stream, mine = mv.message_stream.copy(2)
                    pump = asyncio.create_task(_pump(mine, writer))
                yield ev
                if pump is not None:
                    await pump
                    pump = None
            status = "done"
        except (GeneratorExit, asyncio.CancelledError):
            await _abandon(events)  # the consumer stopped: so does the run
            raise
        except BaseException:
            status = "failed"
            await _abandon(events)  # e.g. Redis went away: no one can read the rest of the run
            raise
        finally:
            self._publishing.discard(me[0])
            await self._finish(writer, pump, count, status)

    async def _finish(self, writer: _Writer, pump: asyncio.Task[None] | None, count: int, status: str) -> None:
        """Ends the stream: an unfinished message closed with an error, then the end entry."""
        try:
            if pump is not None and not pump.done():  # inside a streamed message: close it
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pump
                writer.put(close_entry(writer.n, EventStreamError(f"the publisher's run was {status}")))
            writer.put(end_entry(writer.n, count, status))
            await writer.close(self.expire)
        except BaseException:
            writer.cancel()
            raise


async def _abandon(events: AsyncIterable[AgentEvent]) -> None:
    """Stops the run whose events no one reads any more (as dropping its iterator would)."""
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()
        return
    close = getattr(events, "close", None)
    if close is not None:
        close()


async def _pump(stream: StreamReader[Message], writer: _Writer) -> None:
    """Sends the chunks of a streamed message as they arrive, then its close entry."""
    error: BaseException | None = None
    try:
        async for chunk in stream:
            writer.put(chunk_entry(writer.n, chunk))
            await writer.room()
    except (asyncio.CancelledError, EventStreamError):
        raise
    except Exception as e:  # noqa: BLE001  # a failed model stream is data for the readers
        error = e
    finally:
        stream.close()
    writer.put(close_entry(writer.n, error))
