"""Run events over Redis Streams (rillet.redis): a RedisStreamSink publishes a run's events, and
RedisStreamSources in this or other processes get the same events, streamed messages chunk by
chunk, resuming from an entry id after a disconnect; failures are named errors, never hangs."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    BaseAgent,
    ChatModelAgent,
    FunctionCall,
    Message,
    Runner,
    ScriptedModel,
    ToolCall,
    event_from_message,
    pipe,
    tool,
)
from rillet.data.codec import DecodeError, EncodeError
from rillet.errors import RecordedError
from rillet.run.interrupts import get_interrupt_state, interrupt
from support.optional import need
from support.servers import free_port, start_redis
from support.stream_agents import Mixed, arow

need("redis")
from rillet.redis import (  # noqa: E402  # after the check that redis-py is installed
    EventStreamConnectionError,
    EventStreamGapError,
    EventStreamTimeoutError,
    RedisStreamSink,
    RedisStreamSource,
)

HERE = Path(__file__).resolve().parents[1] / "support"


def run_id() -> str:
    return uuid.uuid4().hex


async def publish_rows(url: str, rid: str, events: Any, **sink: Any) -> list[Any]:
    async with RedisStreamSink(url, **sink) as s:
        return [await arow(ev) async for ev in s.publish(events, run_id=rid)]


async def read_rows(url: str, rid: str, **source: Any) -> tuple[list[Any], RedisStreamSource]:
    async with RedisStreamSource(rid, url=url, **{"timeout": 10, **source}) as src:
        return [await arow(ev) async for ev in src], src


@pytest.mark.parametrize("acknowledged", [True, False])
def test_a_reader_gets_every_kind_of_event_as_the_publisher_saw_it(redis_url: str, acknowledged: bool) -> None:
    async def main() -> None:
        rid = run_id()
        local = await publish_rows(redis_url, rid, Runner(Mixed(40)).query("go"), acknowledged=acknowledged)
        remote, src = await read_rows(redis_url, rid)
        assert remote == local
        assert src.status == "done"
        kinds = {row[2] for row in remote if len(row) > 2}
        assert kinds >= {"message", "stream", "custom", "action", "error"}
        assert remote[-1][2:] == ["error", "ValueError", "failed after 39 events"]
        assert [r for r in remote if r[2] == "stream"][0][5] == [
            {"role": "assistant", "content": "s1-"},
            {"role": "", "content": "a"},
            {"role": "", "content": "b"},
        ]

    asyncio.run(main())


async def _each(events: Any) -> AsyncIterator[AgentEvent]:
    async for ev in events:  # a plain async iterator: no batches to take
        yield ev


async def entries_when_given(url: str, events: Any, **sink: Any) -> list[tuple[int, int]]:
    """For each event and chunk the consumer gets: (entries it has been given so far, entries
    another client then finds on the stream)."""
    import redis.asyncio as aioredis

    rid, watcher, seen = run_id(), aioredis.Redis.from_url(url), []
    async with RedisStreamSink(url, **sink) as s:
        async for ev in s.publish(events, run_id=rid):
            seen.append((len(seen) + 1, await watcher.xlen(s.key(rid))))
            mv = ev.message_output
            if mv is not None and mv.message_stream is not None:
                async for _ in mv.message_stream:
                    seen.append((len(seen) + 1, await watcher.xlen(s.key(rid))))
                seen.append((len(seen) + 1, await watcher.xlen(s.key(rid))))  # its close entry
    await watcher.aclose()
    return seen


@pytest.mark.parametrize("feed", ["run iterator", "async generator"])
def test_each_event_and_chunk_is_in_redis_before_the_consumer_gets_it(redis_url: str, feed: str) -> None:
    """A publisher killed right after acting on an event must not take that event with it."""

    async def main() -> None:
        run = Runner(Mixed(41)).query("go")
        seen = await entries_when_given(redis_url, run if feed == "run iterator" else _each(run))
        early = [(given, there) for given, there in seen if there < given]
        assert not early, f"{len(early)} of {len(seen)} given before Redis had them: {early[:5]}"
        assert len(seen) == 41 + 5 * (3 + 1)  # 41 events; 5 streamed messages of 3 chunks and a close

    asyncio.run(main())


@tool
def approve(what: str) -> str:
    """Asks a person."""
    if not get_interrupt_state()[0]:
        raise interrupt({"approve": what})
    return "ok"


def test_interrupts_tool_calls_and_errors_are_rebuilt(redis_url: str) -> None:
    ask = Message.assistant("", [ToolCall(index=0, id="c1", function=FunctionCall("approve", '{"what": "deploy"}'))])
    agent = ChatModelAgent("ops", model=ScriptedModel([ask]), tools=[approve])

    async def main() -> None:
        rid = run_id()
        local = await publish_rows(redis_url, rid, Runner(agent, streaming=True).query("deploy?"))
        async with RedisStreamSource(rid, url=redis_url, timeout=10) as src:
            events = [ev async for ev in src]
        interrupted = events[-1].action.interrupted if events[-1].action is not None else None
        assert interrupted is not None
        assert [(c.info, c.address, c.is_root_cause) for c in interrupted.interrupt_contexts] == [
            ({"approve": "deploy"}, ("agent:ops", "tool:approve:c1"), True)
        ]
        assert local[-1][-1] == [
            [interrupted.interrupt_contexts[0].id, ["agent:ops", "tool:approve:c1"], "{'approve': 'deploy'}", True]
        ]
        assert events[0].message_output is not None and events[0].message_output.is_streaming
        assert (await events[0].message_output.aget_message()).tool_calls[0].function.name == "approve"

    asyncio.run(main())


class Dripping(BaseAgent):
    """Streams a message whose second chunk is written only once ``go_on`` is set."""

    def __init__(self) -> None:
        super().__init__("drip", "")
        self.go_on = asyncio.Event()

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        reader, writer = pipe()

        async def write() -> None:
            await writer.asend(Message.assistant("first "))
            await self.go_on.wait()
            await writer.asend(Message(content="second"))
            writer.close()

        task = asyncio.create_task(write())
        yield event_from_message(None, reader)
        await task
        yield event_from_message(Message.assistant("after"))


def test_a_streamed_message_reaches_readers_chunk_by_chunk_while_it_is_written(redis_url: str) -> None:
    async def main() -> None:
        rid, agent = run_id(), Dripping()
        sink = RedisStreamSink(redis_url)
        publishing = asyncio.create_task(sink.drain(Runner(agent).query("go"), run_id=rid))
        async with RedisStreamSource(rid, url=redis_url, timeout=10) as src:
            events = aiter(src)
            first = await anext(events)
            mv = first.message_output
            assert mv is not None and mv.message_stream is not None
            assert (await mv.message_stream.arecv()).content == "first "  # the second is not written yet
            agent.go_on.set()
            assert [c.content async for c in mv.message_stream] == ["second"]
            rest = [await arow(ev) async for ev in events]
        assert rest == [
            ["drip", ["drip"], "message", "assistant", "", False, {"role": "assistant", "content": "after"}]
        ]
        assert await publishing == 2
        await sink.aclose()

    asyncio.run(asyncio.wait_for(main(), 30))


class Failing(BaseAgent):
    """Streams a message whose model stream fails after its first chunk, then one more event."""

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        reader, writer = pipe()
        writer.send(Message.assistant("half "))
        writer.send_error(ConnectionResetError("the model went away"))
        writer.close()
        yield event_from_message(None, reader)
        yield event_from_message(Message.assistant("after"))


def test_a_failed_model_stream_fails_for_the_consumer_and_the_readers_alike(redis_url: str) -> None:
    async def main() -> None:
        rid, local = run_id(), []
        async with RedisStreamSink(redis_url) as sink:
            async for ev in sink.publish(Runner(Failing("failing", "")).query("go"), run_id=rid):
                mv = ev.message_output
                assert mv is not None
                if mv.message_stream is None:
                    local.append(mv.message.content if mv.message is not None else None)
                    continue
                local.append((await mv.message_stream.arecv()).content)
                with pytest.raises(ConnectionResetError, match="the model went away"):
                    await mv.message_stream.arecv()
        async with RedisStreamSource(rid, url=redis_url, timeout=10) as src:
            events = [ev async for ev in src]
        stream = events[0].message_output.message_stream if events[0].message_output is not None else None
        assert stream is not None and (await stream.arecv()).content == "half "
        with pytest.raises(RecordedError, match="ConnectionResetError: the model went away"):
            await stream.arecv()
        assert local == ["half ", "after"] and src.status == "done"

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_reader_resumes_from_last_id_and_sees_each_event_once(redis_url: str) -> None:
    async def main() -> None:
        rid = run_id()
        local = await publish_rows(redis_url, rid, Runner(Mixed(50)).query("go"))
        for stop in range(1, 13):  # after whole and streamed messages, tool results, custom outputs, actions
            seen: list[Any] = []
            async with RedisStreamSource(rid, url=redis_url, timeout=10) as src:
                async for ev in src:
                    seen.append(await arow(ev))
                    if len(seen) == stop:
                        break
            rest, _ = await read_rows(redis_url, rid, after=src.last_id)
            assert seen + rest == local, stop
        # a streamed message not read to its end is not done: it comes again
        async with RedisStreamSource(rid, url=redis_url, timeout=10) as src:
            async for ev in src:
                if ev.message_output is not None and ev.message_output.message_stream is not None:
                    assert await ev.message_output.message_stream.arecv()
                    break
        rest, _ = await read_rows(redis_url, rid, after=src.last_id)
        assert rest == local[1:]

    asyncio.run(main())


def test_resuming_inside_a_streamed_message_skips_to_the_next_event(redis_url: str) -> None:
    async def main() -> None:
        rid = run_id()
        local = await publish_rows(redis_url, rid, Runner(Mixed(10)).query("go"))
        import redis.asyncio as aioredis

        client = aioredis.Redis.from_url(redis_url)
        ids = [i.decode() for i, _ in await client.xrange(f"rillet:events:{rid}")]
        await client.aclose()
        rest, _ = await read_rows(redis_url, rid, after=ids[2])  # entries: m0, open s1, chunk, ...
        assert rest == local[2:]

    asyncio.run(main())


def test_a_reader_that_fell_behind_maxlen_gets_a_gap_error(redis_url: str) -> None:
    async def main() -> None:
        rid = run_id()
        await publish_rows(redis_url, rid, Runner(Mixed(2000)).query("go"), maxlen=50)
        with pytest.raises(EventStreamGapError, match=r"lost entries 0 to \d+ .*maxlen"):
            await read_rows(redis_url, rid)
        with pytest.raises(EventStreamGapError, match="is not in stream .* trimmed by the sink's maxlen"):
            await read_rows(redis_url, rid, after="1-0")

    asyncio.run(main())


def test_an_unreachable_server_is_a_connection_error_naming_it() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    sent: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Sends an email."""
        sent.append(to)
        return "sent"

    call = ToolCall(index=0, id="c1", function=FunctionCall("send_email", '{"to": "ops"}'))
    mailer = ChatModelAgent("mailer", model=ScriptedModel([Message.assistant("", [call]), "done"]), tools=[send_email])

    async def main() -> None:
        # entering the sink checks Redis, so the run in the block is never started: no email
        # (before, the error came from drain, after runner.query had started the run and it had sent it)
        with pytest.raises(EventStreamConnectionError, match=rf"cannot reach Redis at {url}.*redis-server running"):
            async with RedisStreamSink(url, connect_timeout=2) as sink:
                await sink.drain(Runner(mailer).query("go"), run_id="r")
        assert sent == []
        # publish without `async with` says so too, before any event
        sink = RedisStreamSink(url, connect_timeout=2)
        with pytest.raises(EventStreamConnectionError, match=rf"cannot reach Redis at {url}.*redis-server running"):
            await sink.drain(Runner(Mixed(3)).query("go"), run_id="r")
        await sink.aclose()
        with pytest.raises(
            EventStreamConnectionError, match=rf"RedisStreamSource for run 'r': cannot reach Redis at {url}"
        ):
            await read_rows(url, "r", connect_timeout=2)

    asyncio.run(asyncio.wait_for(main(), 30))


async def _unfinished() -> AsyncIterator[AgentEvent]:
    yield event_from_message(Message.assistant("hello"))
    await asyncio.sleep(3600)  # a run that never ends
    yield event_from_message(Message.assistant("never"))


def test_a_run_that_never_ends_times_out_with_why(redis_url: str) -> None:
    async def main() -> None:
        rid = run_id()
        sink = RedisStreamSink(redis_url)
        events = sink.publish(_unfinished(), run_id=rid)
        assert (await anext(events)).message_output is not None
        publishing = asyncio.create_task(anext(events))
        got: list[Any] = []
        with pytest.raises(EventStreamTimeoutError, match=r"within 0.5 s; the run has not ended: is its publisher"):
            async with RedisStreamSource(rid, url=redis_url, timeout=0.5) as src:
                async for ev in src:
                    got.append(await arow(ev))
        assert [r[6]["content"] for r in got] == ["hello"]
        with pytest.raises(EventStreamTimeoutError, match="the stream does not exist: no RedisStreamSink published"):
            await read_rows(redis_url, "no-such-run", timeout=0.2)
        publishing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await publishing
        rows, src = await read_rows(redis_url, rid)
        assert len(rows) == 1 and src.status == "abandoned"
        await sink.aclose()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_consumer_that_stops_early_ends_the_stream_as_abandoned(redis_url: str) -> None:
    async def main() -> None:
        rid, agent = run_id(), Dripping()
        async with RedisStreamSink(redis_url) as sink:
            async for ev in sink.publish(Runner(agent).query("go"), run_id=rid):
                assert ev.message_output is not None
                break  # inside the streamed message, with its second chunk never written
        async with RedisStreamSource(rid, url=redis_url, timeout=10) as src:
            events = [ev async for ev in src]
        assert src.status == "abandoned" and len(events) == 1
        mv = events[0].message_output
        assert mv is not None and mv.message_stream is not None
        with pytest.raises(RecordedError, match="EventStreamError: the publisher's run was abandoned"):
            [c async for c in mv.message_stream]

    asyncio.run(asyncio.wait_for(main(), 30))


class Endless(BaseAgent):
    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        i = 0
        while True:
            yield event_from_message(Message.assistant(f"m{i}"))
            i += 1
            await asyncio.sleep(0.01)


def test_redis_going_away_mid_run_is_a_connection_error_for_publisher_and_reader() -> None:
    server = start_redis()  # this test's own server, stopped in the middle
    try:

        async def main() -> None:
            rid = run_id()
            sink = RedisStreamSink(server.url)
            source = RedisStreamSource(rid, url=server.url, timeout=10)
            reading = aiter(source)
            publishing = sink.publish(Runner(Endless("endless", "")).query("go"), run_id=rid)
            await anext(publishing)
            assert (await anext(reading)).message_output is not None
            server.stop()
            with pytest.raises(EventStreamConnectionError, match=f"publishing to stream 'rillet:events:{rid}'"):
                async for _ in publishing:
                    pass
            with pytest.raises(EventStreamConnectionError, match=f"RedisStreamSource for run '{rid}'"):
                async for _ in reading:
                    pass
            await sink.aclose()

        asyncio.run(asyncio.wait_for(main(), 30))
    finally:
        server.stop()


class Unencodable(BaseAgent):
    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        ev = event_from_message(Message.assistant("x"))
        assert ev.output is not None
        ev.output.customized_output = object()
        yield ev


def test_an_event_the_codec_cannot_encode_names_the_fix(redis_url: str) -> None:
    async def main() -> None:
        async with RedisStreamSink(redis_url) as sink:
            with pytest.raises(EncodeError, match="event 0 of agent 'u' cannot be sent.*register_type"):
                await sink.drain(Runner(Unencodable("u", "")).query("go"), run_id=run_id())

    asyncio.run(main())


def test_entries_another_program_wrote_are_refused_by_name(redis_url: str) -> None:
    async def main() -> None:
        import redis.asyncio as aioredis

        rid = run_id()
        client = aioredis.Redis.from_url(redis_url)
        entry = (await client.xadd(f"rillet:events:{rid}", {"data": "hello"})).decode()
        await client.aclose()
        with pytest.raises(
            DecodeError, match=f"entry {entry} of stream 'rillet:events:{rid}' was not written by a RedisStreamSink"
        ):
            await read_rows(redis_url, rid)

    asyncio.run(main())


def test_a_client_of_either_protocol_can_be_given(redis_url: str) -> None:
    import redis.asyncio as aioredis

    async def main() -> None:
        rid = run_id()
        for protocol in (2, 3):
            client = aioredis.Redis.from_url(redis_url, protocol=protocol)
            if protocol == 2:
                local = await publish_rows(redis_url, rid, Runner(Mixed(20)).query("go"), client=client)
            rows, _ = await read_rows(redis_url, rid, client=client)
            assert rows == local, protocol
            await client.aclose()

    asyncio.run(main())
    with pytest.raises(ValueError, match="stream entries are binary; give a client made without decode_responses=True"):
        RedisStreamSource("r", client=aioredis.Redis(decode_responses=True))


def test_arguments_are_checked_up_front() -> None:
    with pytest.raises(ValueError, match="not a stream entry id"):
        RedisStreamSource("r", after="latest")
    with pytest.raises(ValueError, match="non-empty string"):
        RedisStreamSource("")
    with pytest.raises(ValueError, match="timeout=0"):
        RedisStreamSource("r", timeout=0)
    with pytest.raises(ValueError, match="maxlen=0"):
        RedisStreamSink(maxlen=0)
    with pytest.raises(ValueError, match="non-empty string"):
        RedisStreamSink().publish(Runner(Mixed(1)).query("go"), run_id="")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_100k_events_reach_three_reader_processes_in_order_one_resuming_by_entry_id(
    redis_url: str, tmp_path: Path
) -> None:
    """The acceptance run: readers in three other processes, started before the run; the third
    drops its connection after 40,000 events and resumes from its last entry id."""
    rid, events = run_id(), 100_000
    outs = [tmp_path / f"reader{i}.jsonl" for i in range(3)]
    readers = [
        subprocess.Popen([sys.executable, str(HERE / "stream_agents.py"), redis_url, rid, str(out), str(stop)])
        for out, stop in zip(outs, (0, 0, 40_000))
    ]
    try:

        async def publish() -> list[str]:
            async with RedisStreamSink(redis_url, maxlen=None, expire=60) as sink:
                return [
                    json.dumps(await arow(ev))
                    async for ev in sink.publish(Runner(Mixed(events)).query("go"), run_id=rid)
                ]

        local = asyncio.run(publish())
        for proc in readers:
            assert proc.wait(timeout=240) == 0
    finally:
        for proc in readers:
            proc.kill()
            proc.wait()
    assert len(local) == events
    for out in outs:
        lines = out.read_text().splitlines()
        assert lines[-1] == json.dumps(["status", "done"])
        assert lines[:-1] == local, out.name
