"""Streams: pipe, send/recv (sync and asyncio), error items, close from either side, EOF
stickiness, copy, merge, convert, drop behaviour and concat_message_stream.

Everything that could wait has a timeout, so a bug fails a test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import pytest
import rillet
from rillet import (
    NO_VALUE,
    Message,
    SourceEOF,
    StreamEOF,
    StreamReader,
    aconcat_message_stream,
    concat_message_stream,
    convert_stream,
    merge_named_streams,
    merge_streams,
    pipe,
    stream_from_list,
)
from support.loops import NoThreadsafeLoop, each_on_its_own_thread
from support.waiting import at_line, child_env, wait_until

T = 10.0  # seconds: generous, only reached if something is broken


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, T)

    return asyncio.run(bounded())


def start(target: Callable[[], Any]) -> threading.Thread:
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t


def send_once_blocked(line: str, w: rillet.StreamWriter, item: Any) -> threading.Thread:
    """A thread that sends ``item`` and closes ``w`` once the calling thread waits on the
    source line ``line`` (a receive): so the receive is blocked when the item comes."""
    caller = threading.get_ident()

    def send() -> None:
        wait_until(lambda: at_line(caller, line), f"{line!r} to block")
        w.send(item)
        w.close()

    return start(send)


def drain(reader: StreamReader) -> list[Any]:
    """Every item, with error items recorded as ('error', message)."""
    out: list[Any] = []
    while True:
        try:
            out.append(reader.recv(timeout=T))
        except StreamEOF:
            return out
        except ValueError as e:
            out.append(("error", str(e)))


# --- pipe basics -------------------------------------------------------------------------


def test_unbounded_send_never_blocks_and_order_is_kept() -> None:
    r, w = pipe()
    for i in range(10_000):
        assert w.send(i) is True
    w.close()
    assert list(r) == list(range(10_000))


def test_error_items_are_raised_once_and_the_stream_goes_on() -> None:
    r, w = pipe()
    w.send(1)
    w.send_error(ValueError("boom"))
    w.send(2)
    w.close()
    assert drain(r) == [1, ("error", "boom"), 2]
    with pytest.raises(TypeError, match="exception instance"):
        w.send_error("not an exception")  # type: ignore[arg-type]


def test_eof_is_sticky() -> None:
    r, w = pipe()
    w.close()
    w.close()  # idempotent
    for _ in range(3):
        with pytest.raises(StreamEOF):
            r.recv(timeout=T)
    assert list(r) == []
    assert issubclass(StreamEOF, rillet.RilletError)


def test_send_after_writer_close_raises() -> None:
    r, w = pipe()
    w.close()
    with pytest.raises(rillet.ChannelClosed):
        w.send(1)


def test_reader_close_tells_the_writer_to_stop() -> None:
    r, w = pipe()
    w.send(1)
    r.close()
    assert w.reader_closed and w.send(2) is False
    with pytest.raises(StreamEOF):
        r.recv(timeout=T)


def test_recv_timeout_and_blocking_recv_across_threads() -> None:
    r, w = pipe()
    with pytest.raises(TimeoutError):
        r.recv(timeout=0.05)
    t = send_once_blocked('assert r.recv(timeout=T) == "late"', w, "late")
    assert r.recv(timeout=T) == "late"
    t.join(T)


def test_a_blocked_recv_is_interruptible_with_ctrl_c() -> None:
    code = (
        "import os, signal, sys, threading, rillet\n"
        "from support.waiting import wait_until\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)  # even if the parent ignores it\n"
        "r, w = rillet.pipe()\n"
        "main = threading.get_ident()\n"
        "def interrupt():  # once the main thread is in recv (line 11)\n"
        "    wait_until(lambda: getattr(sys._current_frames().get(main), 'f_lineno', 0) == 11, 'recv')\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "threading.Thread(target=interrupt, daemon=True).start()\n"
        "try:\n"
        "    r.recv()\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=T, env=child_env())
    assert out.stdout.strip() == "interrupted", out.stderr


def test_bounded_send_blocks_a_thread_until_space() -> None:
    r, w = pipe(capacity=2)
    sent: list[int] = []

    def produce() -> None:
        for i in range(6):
            w.send(i, timeout=T)
            sent.append(i)
        w.close()

    t = start(produce)
    wait_until(lambda: len(sent) == 2 and at_line(t.ident, "w.send(i, timeout=T)"), "the third send to wait")
    assert sent == [0, 1], "the third send must wait for space"
    assert list(r) == list(range(6))
    t.join(T)
    with pytest.raises(ValueError):
        pipe(capacity=0)


def test_bounded_send_returns_false_when_the_reader_closes_while_blocked() -> None:
    r, w = pipe(capacity=1)
    w.send(0)
    result: list[bool] = []

    def send() -> None:
        result.append(w.send(1, timeout=T))

    t = start(send)
    wait_until(lambda: at_line(t.ident, "result.append(w.send(1, timeout=T))"), "the send to wait for space")
    r.close()
    t.join(T)
    assert result == [False]


def test_bounded_send_timeout() -> None:
    r, w = pipe(capacity=1)
    w.send(0)
    with pytest.raises(TimeoutError):
        w.send(1, timeout=0.05)


# --- asyncio -----------------------------------------------------------------------------


def test_async_recv_and_iteration() -> None:
    async def main() -> list[Any]:
        r, w = pipe()

        async def produce() -> None:
            for i in range(5):
                w.send(i)
                await asyncio.sleep(0)
            w.send_error(ValueError("mid"))
            w.send(5)
            w.close()

        task = asyncio.create_task(produce())
        got: list[Any] = [await r.arecv()]
        while True:
            try:
                async for x in r:
                    got.append(x)
                break
            except ValueError as e:
                got.append(("error", str(e)))
        await task
        with pytest.raises(StreamEOF):
            await r.arecv()
        return got

    assert run(main()) == [0, 1, 2, 3, 4, ("error", "mid"), 5]


def test_asend_waits_without_blocking_the_loop() -> None:
    async def main() -> tuple[list[int], int]:
        r, w = pipe(capacity=1)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        async def produce() -> None:
            for i in range(20):
                assert await w.asend(i) is True
            w.close()

        tick = asyncio.create_task(ticker())
        prod = asyncio.create_task(produce())
        got = []
        async for x in r:
            got.append(x)
            await asyncio.sleep(0)  # a turn of the loop: the ticker and the parked producer run
        await prod
        tick.cancel()
        return got, ticks

    got, ticks = run(main())
    assert got == list(range(20)) and ticks > 5


def test_asend_returns_false_once_the_reader_closed() -> None:
    async def main() -> bool:
        r, w = pipe(capacity=1)
        await w.asend(0)
        pending = asyncio.create_task(w.asend(1))
        await asyncio.sleep(0)  # one turn of the loop: the send parks, the pipe being full
        r.close()
        return await pending

    assert run(main()) is False


def test_thread_producer_to_asyncio_consumer() -> None:
    r, w = pipe()

    def produce() -> None:
        for i in range(2000):
            w.send(i)
            if i % 100 == 0:
                time.sleep(0.001)
        w.close()

    async def main() -> list[int]:
        start(produce)
        return [x async for x in r]

    assert run(main()) == list(range(2000))


def bounded_threads_to_asyncio(producers: int, per: int, capacity: int) -> None:
    r, w = pipe(capacity=capacity)

    def produce(p: int) -> None:
        for i in range(per):
            assert w.send((p, i), timeout=T) is True

    async def main() -> list[tuple[int, int]]:
        threads = [start(lambda p=p: produce(p)) for p in range(producers)]

        def close_when_done() -> None:
            for t in threads:
                t.join(T * 3)
            w.close()

        start(close_when_done)
        return [x async for x in r]

    got = run(main())
    assert len(got) == producers * per
    for p in range(producers):
        assert [i for q, i in got if q == p] == list(range(per)), "per-producer order"


def test_bounded_pipe_threads_to_asyncio() -> None:
    bounded_threads_to_asyncio(producers=3, per=500, capacity=4)


@pytest.mark.slow
def test_bounded_pipe_threads_to_asyncio_stress() -> None:
    bounded_threads_to_asyncio(producers=4, per=50_000, capacity=16)


def test_blocking_recv_inside_a_running_loop_is_refused() -> None:
    async def main() -> None:
        r, _w = pipe()
        with pytest.raises(RuntimeError, match="would block the running event loop"):
            r.recv()

    run(main())


def test_a_reader_is_woken_by_its_own_loop_after_the_loop_moved_to_another_thread() -> None:
    """A reader parks while its loop runs on one thread; the loop's next turn (on another
    thread, as Temporal runs a workflow's turns) writes: the wakeup is direct, where going
    through call_soon_threadsafe lost it on such a loop."""
    r, w = pipe()
    loop = NoThreadsafeLoop()
    box: dict[str, Any] = {}

    def first_turn() -> None:
        box["task"] = loop.create_task(r.arecv())
        loop.run_until_complete(asyncio.sleep(0))  # the reader parks

    async def write_and_take() -> Any:
        w.send(7)
        return await asyncio.wait_for(box["task"], 10)

    def second_turn() -> None:
        box["got"] = loop.run_until_complete(write_and_take())

    try:
        each_on_its_own_thread(first_turn, second_turn)
        assert box["got"] == 7
    finally:
        loop.close()


def test_cancelled_arecv_does_not_lose_items() -> None:
    async def main() -> list[int]:
        r, w = pipe()
        for _ in range(5):
            task = asyncio.create_task(r.arecv())
            await asyncio.sleep(0)
            task.cancel()
        w.send(1)
        w.send(2)
        w.close()
        return [x async for x in r]

    assert run(main()) == [1, 2]


# --- copy --------------------------------------------------------------------------------


def test_copy_every_child_sees_every_item_including_errors() -> None:
    r, w = pipe()
    children = r.copy(3)
    w.send(1)
    w.send_error(ValueError("e"))
    w.send(2)
    w.close()
    for c in children:
        assert drain(c) == [1, ("error", "e"), 2]
        with pytest.raises(StreamEOF):
            c.recv(timeout=T)
    with pytest.raises(RuntimeError, match="copy"):
        r.recv()


def test_copy_of_one_is_the_reader_itself() -> None:
    r = stream_from_list([1])
    assert r.copy(1) == [r]
    with pytest.raises(ValueError):
        r.copy(0)


def copy_at_speeds(n_items: int, delays: tuple[float, float, float]) -> None:
    r, w = pipe()
    children = r.copy(3)
    results: list[list[Any]] = [[] for _ in children]

    def consume(i: int, delay: float) -> None:
        for x in children[i]:
            results[i].append(x)
            if delay and len(results[i]) % 50 == 0:
                time.sleep(delay)

    threads = [start(lambda i=i, d=d: consume(i, d)) for i, d in enumerate(delays)]

    def produce() -> None:
        for i in range(n_items):
            w.send(i)
        w.close()

    producer = start(produce)
    for t in [producer, *threads]:
        t.join(T * 3)
        assert not t.is_alive()
    for got in results:
        assert got == list(range(n_items))


def test_copy3_consumed_at_different_speeds_from_threads() -> None:
    copy_at_speeds(2_000, (0.0, 0.001, 0.005))


@pytest.mark.slow
def test_copy3_consumed_at_different_speeds_from_threads_stress() -> None:
    copy_at_speeds(200_000, (0.0, 0.0002, 0.001))


def test_copy_children_in_asyncio_and_threads_mixed() -> None:
    r, w = pipe()
    a, b = r.copy(2)
    from_thread: list[int] = []
    t = start(lambda: from_thread.extend(b))

    async def main() -> list[int]:
        async def produce() -> None:
            for i in range(500):
                w.send(i)
                if i % 50 == 0:
                    await asyncio.sleep(0.001)
            w.close()

        asyncio.create_task(produce())
        return [x async for x in a]

    assert run(main()) == list(range(500))
    t.join(T)
    assert from_thread == list(range(500))


def test_copy_source_closes_only_when_all_children_closed() -> None:
    r, w = pipe()
    a, b, c = r.copy(3)
    a.close()
    b.close()
    assert w.send(1) is True
    assert c.recv(timeout=T) == 1
    c.close()
    assert w.send(2) is False


def test_closed_copy_child_reads_eof_and_releases_its_buffer() -> None:
    r, w = pipe()
    a, b = r.copy(2)
    for i in range(3):
        w.send(i)
    assert a.recv(timeout=T) == 0
    b.close()
    with pytest.raises(StreamEOF):
        b.recv(timeout=T)
    assert [a.recv(timeout=T), a.recv(timeout=T)] == [1, 2]


# --- merge and convert -------------------------------------------------------------------


def test_merge_keeps_each_source_order_and_is_fair() -> None:
    merged = merge_streams([stream_from_list(range(100)), stream_from_list(range(1000, 1100))])
    got = list(merged)
    assert [x for x in got if x < 1000] == list(range(100))
    assert [x for x in got if x >= 1000] == list(range(1000, 1100))
    # Both sources ready all the time: neither starves the other (round-robin).
    assert got[:6] == [0, 1000, 1, 1001, 2, 1002]


def test_merge_yields_in_arrival_order_across_threads() -> None:
    (r1, w1), (r2, w2) = pipe(), pipe()
    merged = merge_streams([r1, r2])
    w2.send("b1")
    assert merged.recv(timeout=T) == "b1"
    t = send_once_blocked('assert merged.recv(timeout=T) == "a1"', w1, "a1")
    assert merged.recv(timeout=T) == "a1"
    w2.send_error(ValueError("e2"))
    with pytest.raises(ValueError, match="e2"):
        merged.recv(timeout=T)
    w2.close()
    with pytest.raises(StreamEOF):
        merged.recv(timeout=T)
    t.join(T)


def test_merge_edge_cases_and_close_propagation() -> None:
    assert list(merge_streams([])) == []
    only = stream_from_list([1])
    assert merge_streams([only]) is only
    (r1, w1), (r2, w2) = pipe(), pipe()
    merged = merge_streams([r1, r2])
    merged.close()
    assert w1.send(1) is False and w2.send(1) is False


def test_a_failed_merge_takes_nothing() -> None:
    r, w = pipe()
    with pytest.raises(RuntimeError):
        merge_streams([r, r])
    w.send(1)
    assert r.recv(timeout=T) == 1, "the reader was put back"


def test_merge_async() -> None:
    async def main() -> list[Any]:
        (r1, w1), (r2, w2) = pipe(), pipe()
        merged = merge_streams([r1, r2])

        async def produce(w: rillet.StreamWriter, tag: str) -> None:
            for i in range(50):
                w.send(f"{tag}{i}")
                await asyncio.sleep(0)
            w.close()

        asyncio.create_task(produce(w1, "a"))
        asyncio.create_task(produce(w2, "b"))
        return [x async for x in merged]

    got = run(main())
    assert [x for x in got if x[0] == "a"] == [f"a{i}" for i in range(50)]
    assert [x for x in got if x[0] == "b"] == [f"b{i}" for i in range(50)]


def test_merge_named_marks_each_source_end() -> None:
    merged = merge_named_streams({"x": stream_from_list([1]), "y": stream_from_list([2, 3])})
    got = list(merged)
    assert sorted(x for x in got if isinstance(x, int)) == [1, 2, 3]
    ends = [x.name for x in got if isinstance(x, SourceEOF)]
    assert sorted(ends) == ["x", "y"]
    assert got.index(SourceEOF("x")) > got.index(1)
    with pytest.raises(StreamEOF):
        merged.recv(timeout=T)


def test_convert_maps_skips_and_raises_per_item() -> None:
    def f(x: int) -> Any:
        if x == 3:
            raise ValueError("three")
        return NO_VALUE if x % 2 else x * 10

    assert drain(convert_stream(stream_from_list(range(6)), f)) == [0, 20, ("error", "three"), 40]


def test_convert_error_mapper_replaces_or_drops_errors() -> None:
    def make() -> StreamReader:
        r, w = pipe()
        w.send(1)
        w.send_error(ValueError("keep"))
        w.send_error(KeyError("drop"))
        w.send(2)
        w.close()
        return r

    def mapper(e: BaseException) -> BaseException | None:
        return None if isinstance(e, KeyError) else ValueError(f"wrapped {e}")

    assert drain(convert_stream(make(), lambda x: x, on_error=mapper)) == [1, ("error", "wrapped keep"), 2]
    plain = convert_stream(make(), lambda x: x)
    assert plain.recv(timeout=T) == 1
    with pytest.raises(ValueError, match="keep"):
        plain.recv(timeout=T)
    with pytest.raises(KeyError):
        plain.recv(timeout=T)
    assert plain.recv(timeout=T) == 2


def test_convert_close_propagates_to_the_source() -> None:
    r, w = pipe()
    conv = convert_stream(r, str)
    conv.close()
    assert w.send(1) is False


# --- dropping --------------------------------------------------------------------------


class Payload:
    pass


def test_dropping_an_unread_reader_frees_items_and_stops_the_writer() -> None:
    r, w = pipe()
    item = Payload()
    ref = weakref.ref(item)
    w.send(item)
    del item, r
    gc.collect()
    assert ref() is None, "the buffered item was freed"
    assert w.send(Payload()) is False


def test_dropping_copy_children_closes_the_source() -> None:
    r, w = pipe()
    children = r.copy(2)
    item = Payload()
    ref = weakref.ref(item)
    w.send(item)
    del item, children, r
    gc.collect()
    assert ref() is None
    assert w.send(1) is False


def test_dropping_the_writer_ends_the_stream() -> None:
    r, w = pipe()
    w.send(1)
    del w
    gc.collect()
    assert list(r) == [1]


def test_no_threads_are_left_behind() -> None:
    before = threading.active_count()
    r, w = pipe()
    a, b = r.copy(2)
    merged = merge_streams([a, convert_stream(b, str)])
    w.send(1)
    w.close()
    assert sorted(map(str, merged)) == ["1", "1"]
    del merged, a, b, r, w
    gc.collect()
    assert threading.active_count() == before


# --- concat_message_stream --------------------------------------------------------------


def chunks(n: int) -> list[Message]:
    return [Message(role="assistant", content=f"{i} ") for i in range(n)]


def test_concat_message_stream_drains_and_closes() -> None:
    r, w = pipe()
    t = start(lambda: ([w.send(c) for c in chunks(100)], w.close()))
    out = concat_message_stream(r)
    t.join(T)
    assert out.content == "".join(f"{i} " for i in range(100))
    assert w.send(Message()) is False


def test_concat_message_stream_raises_a_mid_stream_error() -> None:
    r, w = pipe()
    w.send(Message(content="a"))
    w.send_error(ConnectionError("lost"))
    w.send(Message(content="b"))
    w.close()
    with pytest.raises(ConnectionError, match="lost"):
        concat_message_stream(r)
    with pytest.raises(rillet.ConcatError):
        concat_message_stream(stream_from_list([Message(role="user"), Message(role="assistant")]))


def test_aconcat_message_stream() -> None:
    async def main() -> Message:
        r, w = pipe()

        async def produce() -> None:
            for c in chunks(50):
                w.send(c)
                await asyncio.sleep(0)
            w.close()

        asyncio.create_task(produce())
        return await aconcat_message_stream(r)

    assert run(main()).content == "".join(f"{i} " for i in range(50))


def test_copy_then_concat_one_child_while_another_reads() -> None:
    r, w = pipe()
    user_view, agent_view = r.copy(2)
    for c in chunks(10):
        w.send(c)
    w.close()
    assert [m.content for m in user_view] == [f"{i} " for i in range(10)]
    assert concat_message_stream(agent_view).content == "".join(f"{i} " for i in range(10))
