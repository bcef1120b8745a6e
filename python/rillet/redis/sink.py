"""RedisStreamSink: a run's events, as they happen, on a Redis stream keyed by the run's id."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator
from typing import TYPE_CHECKING

from rillet._native import EMPTY, Message, StreamReader, StreamWriter, pipe
from rillet.data.event_pair import EventIterator
from rillet.data.events import AgentEvent
from rillet.errors import ChannelClosed, EncodeError, EventStreamError, StreamEOF
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
    and a slow one still sends each entry at once. :meth:`synced` waits until Redis has
    acknowledged every entry added; a run that gets more than ``_AHEAD`` entries ahead of
    Redis waits (:meth:`room`)."""

    def __init__(self, client: redis.asyncio.Redis, key: str, maxlen: int | None, url: str) -> None:
        self._client, self._key, self._maxlen, self._url = client, key, maxlen, url
        self._pending: list[bytes] = []
        self._wake, self._room = asyncio.Event(), asyncio.Event()
        self._room.set()
        self._closing = False
        self._xadd = client.register_script(_XADD_ALL)
        self._progress = asyncio.Event()  # set after each command Redis answered
        self._task = asyncio.create_task(self._run())
        self.n = 0  # entries added
        self.acked = 0  # of them, acknowledged by Redis
        self.events = 0  # of them, events (for the end entry)

    def put(self, entry: bytes) -> None:
        """Adds the next entry (numbered ``n``)."""
        self._check()
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

    async def synced(self) -> None:
        """Waits until Redis has acknowledged every entry added so far."""
        n = self.n
        while self.acked < n:
            self._check()
            self._progress.clear()
            await self._progress.wait()

    def _check(self) -> None:
        if self._task.done():
            self._task.result()  # its failure, raised here
            raise EventStreamError("the stream writer stopped")

    async def _run(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._pending:
                    batch, self._pending = self._pending, []
                    self._room.set()
                    for i in range(0, len(batch), _BATCH):
                        part = batch[i : i + _BATCH]
                        async with failures(self._url, f"publishing to stream {self._key!r}"):
                            await self._xadd(keys=[self._key], args=[self._maxlen or 0, *part])
                        self.acked += len(part)
                        self._progress.set()
                if self._closing:
                    return
        finally:
            self._room.set()
            self._progress.set()  # a waiter sees the failure

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

    Each event is acknowledged by Redis before you get it, and each chunk of a streamed
    message before your copy of the stream gets it: a publisher that dies right after acting
    on one leaves it on the stream for the readers. The events of a run's iterator already
    waiting when the sink takes the next one are sent in one command, then handed on.
    ``acknowledged=False`` hands each event on at once and sends it behind you (faster for
    a run that produces events faster than round trips to Redis, but the last events a dead
    publisher acted on may never reach the stream).

    The stream is trimmed to about ``maxlen`` entries (``MAXLEN ~``; None keeps all): a
    reader that falls further behind gets :class:`~rillet.errors.EventStreamGapError`.
    ``expire`` (seconds) deletes the key that long after the run ends. ``client`` is a
    ``redis.asyncio.Redis`` to use instead of connecting to ``url``.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        maxlen: int | None = 100_000,
        prefix: str = DEFAULT_PREFIX,
        expire: float | None = None,
        acknowledged: bool = True,
        connect_timeout: float = 5.0,
        client: redis.asyncio.Redis | None = None,
    ) -> None:
        if maxlen is not None and maxlen < 1:
            raise ValueError(f"RedisStreamSink(maxlen={maxlen}): give a positive entry count, or None to keep all")
        self.url, self.maxlen, self.prefix, self.expire = url, maxlen, prefix, expire
        self.acknowledged = acknowledged
        self._client = (
            checked_client(client, "RedisStreamSink") if client is not None else connect(url, connect_timeout)
        )
        self._own_client = client is None
        self._publishing: set[AsyncGenerator[AgentEvent, None]] = set()

    def key(self, run_id: str) -> str:
        """The Redis key of run ``run_id``'s stream."""
        return f"{self.prefix}{run_id}"

    def publish(self, events: AsyncIterable[AgentEvent], *, run_id: str) -> AsyncGenerator[AgentEvent, None]:
        """``events`` (a run's, e.g. ``runner.run(...)``), each on the stream of ``run_id``
        before you get it (with ``acknowledged=False``: queued, sent behind you). Ending
        early (``break``) marks the run abandoned for the readers."""
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
        """Checks that Redis answers, so that an unreachable server fails here, before the
        code in the block starts a run (``runner.run(...)`` starts it at once)."""
        try:
            async with failures(self.url, "RedisStreamSink"):
                await self._client.ping()
        except BaseException:
            if self._own_client:  # no __aexit__ follows a failed __aenter__
                await self._client.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _publish(
        self, events: AsyncIterable[AgentEvent], run_id: str, me: list[AsyncGenerator[AgentEvent, None]]
    ) -> AsyncGenerator[AgentEvent, None]:
        key = self.key(run_id)
        try:
            async with failures(self.url, f"RedisStreamSink for run {run_id!r}"):
                await self._client.ping()  # before any event; the run, already started by its caller, is stopped
        except BaseException:
            self._publishing.discard(me[0])
            await _abandon(events)
            raise
        writer = _Writer(self._client, key, self.maxlen, self.url)
        status, pump = "abandoned", None
        try:
            async with contextlib.aclosing(_batches(events)) as batches:
                async for batch in batches:
                    start = 0
                    while start < len(batch):
                        group, opens, error = _put_group(writer, batch, start)
                        start += len(group)
                        await _sent(writer, self.acknowledged)
                        for ev in group:
                            if opens and ev is group[-1]:
                                pump = _start_pump(ev, writer, self.acknowledged)
                            yield ev
                            if pump is not None:
                                await pump
                                pump = None
                        if error is not None:
                            raise error
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
            await self._finish(writer, pump, status)

    async def _finish(self, writer: _Writer, pump: asyncio.Task[None] | None, status: str) -> None:
        """Ends the stream: an unfinished message closed with an error, then the end entry."""
        try:
            if pump is not None and not pump.done():  # inside a streamed message: close it
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pump
                writer.put(close_entry(writer.n, EventStreamError(f"the publisher's run was {status}")))
            writer.put(end_entry(writer.n, writer.events, status))
            await writer.close(self.expire)
        except BaseException:
            writer.cancel()
            raise


async def _batches(events: AsyncIterable[AgentEvent]) -> AsyncGenerator[list[AgentEvent], None]:
    """The events in lists: from a run's event iterator, all those already waiting (sent in
    one command); from anything else one by one, since taking the next event of an async
    generator early would run it ahead of its consumer."""
    if isinstance(events, EventIterator):
        while True:
            try:
                batch = await events.arecv_many(_BATCH)
            except ChannelClosed:
                return
            yield batch
    else:
        async for ev in events:
            yield [ev]


def _put_group(
    writer: _Writer, batch: list[AgentEvent], start: int
) -> tuple[list[AgentEvent], bool, EncodeError | None]:
    """Adds the entries of ``batch[start:]`` up to the first event whose message is streamed
    (its chunks must come next on the stream). Returns those events, whether the last one
    opens a stream, and the error of an event that cannot be encoded (where the group ends:
    the events before it are still sent and handed on)."""
    group: list[AgentEvent] = []
    for ev in batch[start:]:
        try:
            entry, opens = event_entry(writer.n, ev)
        except EncodeError as e:
            return group, False, e
        writer.put(entry)
        writer.events += 1
        group.append(ev)
        if opens:
            return group, True, None
    return group, False, None


async def _sent(writer: _Writer, acknowledged: bool) -> None:
    """Waits until what was added may be handed on: acknowledged by Redis, or (not
    ``acknowledged``) only while too far ahead of it."""
    await (writer.synced() if acknowledged else writer.room())


async def _abandon(events: AsyncIterable[AgentEvent]) -> None:
    """Stops the run whose events no one reads any more (as dropping its iterator would)."""
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()
        return
    close = getattr(events, "close", None)
    if close is not None:
        close()


def _start_pump(ev: AgentEvent, writer: _Writer, acknowledged: bool) -> asyncio.Task[None]:
    """Gives ``ev`` a stream of its own, fed by a task that sends each chunk to Redis first."""
    mv = ev.message_output
    assert mv is not None and mv.message_stream is not None
    out: StreamWriter[Message]
    source = mv.message_stream
    mv.message_stream, out = pipe()
    return asyncio.create_task(_pump(source, writer, out, acknowledged))


async def _pump(stream: StreamReader[Message], writer: _Writer, out: StreamWriter[Message], acknowledged: bool) -> None:
    """Sends the chunks of a streamed message as they arrive, then its close entry, and
    hands each on to ``out`` (the consumer's stream) once :func:`_sent` allows."""
    error: Exception | None = None
    try:
        try:
            async for chunks in _ready_chunks(stream):
                for chunk in chunks:
                    writer.put(chunk_entry(writer.n, chunk))
                await _sent(writer, acknowledged)
                for chunk in chunks:
                    await out.asend(chunk)  # False once the consumer dropped its stream: Redis still gets it
        except (asyncio.CancelledError, EventStreamError):
            raise
        except Exception as e:  # noqa: BLE001  # a failed model stream is data for the readers
            error = e
        finally:
            stream.close()
        writer.put(close_entry(writer.n, error))
        await _sent(writer, acknowledged)
    except asyncio.CancelledError:
        out.send_error(EventStreamError("the publisher stopped inside this message"))
        raise
    except BaseException as e:
        out.send_error(e)  # e.g. Redis went away: the consumer's stream says so, not a silent end
        raise
    if error is not None:
        await out.asend_error(error)
    out.close()


async def _ready_chunks(stream: StreamReader[Message]) -> AsyncIterator[list[Message]]:
    """The chunks of ``stream`` in lists of those already there (at least one each), so
    that a message streamed faster than round trips to Redis is sent in few commands."""
    while True:
        try:
            chunks = [await stream.arecv()]
        except StreamEOF:
            return
        end: Exception | None = None
        try:
            while len(chunks) < _BATCH and (chunk := stream._poll()) is not EMPTY:
                chunks.append(chunk)
        except Exception as e:  # noqa: BLE001  # its end or its error: after the chunks before it
            end = e
        yield chunks
        if isinstance(end, StreamEOF):
            return
        if end is not None:
            raise end
