"""Regression tests for stream and accumulator soundness: no Python code runs and no Python
object is dropped under a core lock, closing and taking over readers wakes blocked receivers,
error items do not pile up tracebacks, readers and writers take part in cyclic GC, and a copy
of a bounded pipe stays bounded.

Scenarios that deadlocked before their fix run in a subprocess with a timeout: a thread stuck
on a Rust lock while holding the interpreter cannot be interrupted, so a regression fails
the test instead of hanging the whole run.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import textwrap
import threading
import weakref
from typing import Any

import pytest
from rillet import (
    Message,
    MessageAccumulator,
    StreamEOF,
    StreamReader,
    aconcat_message_stream,
    concat_message_stream,
    convert_stream,
    merge_streams,
    pipe,
    stream_from_list,
)
from support.waiting import at_line, wait_until

T = 10.0  # seconds: generous, only reached if something is broken

pytestmark = pytest.mark.timeout(60)


def isolated(code: str, timeout: float = 20.0) -> str:
    """Runs `code` in a fresh interpreter; fails (rather than hangs) on a deadlock."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"deadlocked: no exit within {timeout} s")
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def start(target: Any) -> threading.Thread:
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t


# --- 1c: no Python object is dropped while the tee lock is held ---------------------------


def test_an_item_whose_del_polls_a_sibling_copy_does_not_deadlock() -> None:
    out = isolated(
        """
        import rillet
        r, w = rillet.pipe()
        a, b = r.copy(2)
        seen = []

        class Probe:
            def __del__(self):
                seen.append(repr(a))  # the reader's lock
                try:
                    seen.append(a.recv(timeout=0.01))  # the tee's lock
                except TimeoutError:
                    seen.append("timeout")

        w.send(Probe())
        a.recv(timeout=5)  # a takes its reference and drops it at once
        b.close()  # b never read the chunk: the tee drops the last reference here
        w.send(1)
        print(seen[1:], a.recv(timeout=5))
        """
    )
    assert out == "['timeout'] 1"


def test_an_item_whose_del_releases_the_gil_does_not_deadlock_two_threads() -> None:
    out = isolated(
        """
        import threading, time, rillet
        current = []
        stop = threading.Event()

        class Probe:
            def __del__(self):
                time.sleep(0.002)  # releases the interpreter while the drop is under way

        def poller():
            while not stop.is_set():
                if current:
                    try:
                        current[-1].recv(timeout=0.0005)
                    except (TimeoutError, rillet.StreamEOF):
                        pass

        t = threading.Thread(target=poller, daemon=True)
        t.start()
        for _ in range(100):
            r, w = rillet.pipe()
            a, b = r.copy(2)
            current.append(a)
            w.send(Probe())
            b.recv(timeout=5)
            a.close()  # the last reference to the Probe goes with a's cursor
        stop.set()
        t.join(5)
        print("alive" if t.is_alive() else "done")
        """
    )
    assert out == "done"


def test_pipe_reader_close_and_writer_drop_with_reentrant_del() -> None:
    out = isolated(
        """
        import rillet
        r, w = rillet.pipe(capacity=4)
        log = []

        class Probe:
            def __del__(self):
                log.append((w.reader_closed, w.send("late")))

        w.send(Probe())
        r.close()
        print(log)
        """
    )
    assert out == "[(True, False)]"


# --- 1d: closing a copy child wakes a thread blocked on it ---------------------------------


def test_closing_a_copy_child_wakes_its_blocked_receiver() -> None:
    r, w = pipe()
    a, b = r.copy(2)
    outcome: list[Any] = []

    def blocked() -> None:
        try:
            a.recv(timeout=T)
        except StreamEOF:
            outcome.append("eof")
        except TimeoutError:
            outcome.append("timeout")

    t = start(blocked)
    wait_until(lambda: at_line(t.ident, "a.recv(timeout=T)"), "the receive to block")
    a.close()
    t.join(T)
    assert outcome == ["eof"], outcome
    assert w.send(1) is True, "b is still open"
    assert b.recv(timeout=T) == 1


def test_closing_a_copy_child_wakes_its_async_receiver() -> None:
    async def main() -> None:
        r, _w = pipe()
        a, _b = r.copy(2)
        task = asyncio.ensure_future(a.arecv())
        await asyncio.sleep(0)  # one turn of the loop: the receive parks
        a.close()
        with pytest.raises(StreamEOF):
            await asyncio.wait_for(task, T)

    asyncio.run(main())


# --- 1g: a reader taken over by copy/convert/merge ends its blocked receive ----------------


@pytest.mark.parametrize("how", ["copy", "convert", "merge"])
def test_a_blocked_recv_ends_when_the_reader_is_taken_over(how: str) -> None:
    r, w = pipe()
    old: list[Any] = []

    def blocked() -> None:
        try:
            old.append(("item", r.recv(timeout=T)))
        except RuntimeError as e:
            old.append(("moved", str(e)))
        except TimeoutError:
            old.append(("timeout", None))

    t = start(blocked)
    wait_until(lambda: at_line(t.ident, 'old.append(("item", r.recv(timeout=T)))'), "the receive to block")
    new: StreamReader
    if how == "copy":
        new = r.copy(2)[0]
    elif how == "convert":
        new = convert_stream(r, lambda x: x)
    else:
        other, _ = pipe()
        new = merge_streams([r, other])
    w.send("mine")  # before the fix the old, still blocked receive took this item
    t.join(T)
    assert old and old[0][0] == "moved", old
    assert "copy()" in old[0][1]
    assert new.recv(timeout=T) == "mine", "the new owner gets every item"


def test_a_taken_over_async_receiver_ends_too() -> None:
    async def main() -> None:
        r, w = pipe()
        task = asyncio.ensure_future(r.arecv())
        await asyncio.sleep(0)  # one turn of the loop: the receive parks
        (child,) = r.copy(2)[:1]
        with pytest.raises(RuntimeError, match="copy"):
            await asyncio.wait_for(task, T)
        w.send(1)
        assert await child.arecv() == 1

    asyncio.run(main())


# --- 1f: push_many does not hold its lock while iterating ----------------------------------


def test_push_many_iterates_without_holding_the_lock() -> None:
    out = isolated(
        """
        import rillet
        acc = rillet.MessageAccumulator()
        sizes = []

        def chunks():
            for text in ["a", "b", "c"]:
                sizes.append(len(acc))
                yield rillet.Message(role="assistant", content=text)

        acc.push_many(chunks())
        print(sizes, acc.finish().content)
        """
    )
    assert out == "[0, 1, 2] abc"


def test_push_many_keeps_the_chunks_before_a_rejected_one() -> None:
    acc = MessageAccumulator()

    def chunks() -> Any:
        yield {"role": "assistant", "content": "a"}
        raise KeyError("boom")

    with pytest.raises(KeyError):
        acc.push_many(chunks())
    assert len(acc) == 1 and acc.finish().content == "a"


def test_replaced_message_values_are_released_after_the_lock() -> None:
    out = isolated(
        """
        import rillet
        m = rillet.Message(role="user", content="hi")
        acc = rillet.MessageAccumulator()
        seen = []

        class Reads:
            def __del__(self):
                seen.append(m.content)  # the message's lock

        class Zero:
            def __bool__(self):
                return False

            def __del__(self):
                seen.append(len(acc))  # the accumulator's lock

        m.extra = {"k": Reads()}
        m.extra = {"k": 1}
        m.tool_calls = [rillet.ToolCall(index=0, extra={"k": Reads()})]
        m.tool_calls = []
        acc.push(rillet.Message(role="assistant", extra={"z": Zero()}))
        acc.push(rillet.Message(role="assistant", extra={"z": Zero()}))  # replaces the first
        print(seen)
        """
    )
    assert out == "['hi', 'hi', 2]"


# --- 2: error items and GC -----------------------------------------------------------------


class Big:
    """A frame-local that a leaked traceback would keep alive."""

    def __init__(self) -> None:
        self.payload = bytearray(100_000)


def test_an_error_shared_by_copy_children_gets_a_fresh_traceback_per_receive() -> None:
    r, w = pipe()
    n = 1_000
    children = r.copy(n)
    w.send_error(ValueError("shared"))
    w.close()
    alive: list[weakref.ref[Big]] = []
    errors: list[BaseException] = []

    def receive(child: StreamReader) -> None:
        local = Big()
        alive.append(weakref.ref(local))
        try:
            child.recv(timeout=T)
        except ValueError as e:
            errors.append(e)

    for child in children:
        receive(child)
    assert len(errors) == n and all(e is errors[0] for e in errors)
    depth = 0
    tb = errors[0].__traceback__
    while tb is not None:
        depth += 1
        tb = tb.tb_next
    assert depth <= 3, f"the traceback grew to {depth} entries"
    gc.collect()
    assert sum(ref() is not None for ref in alive) <= 1, "frames kept alive by the error"


def test_an_error_item_keeps_the_traceback_it_was_sent_with() -> None:
    r, w = pipe()
    a, b = r.copy(2)

    def fail() -> None:
        raise ValueError("at source")

    try:
        fail()
    except ValueError as e:
        w.send_error(e)
    for child in (a, b):
        with pytest.raises(ValueError) as info:
            child.recv(timeout=T)
        names = [entry.name for entry in info.traceback]
        assert "fail" in names and names.count("fail") == 1


def test_a_cycle_through_a_buffered_item_is_collected() -> None:
    class Node:
        reader: Any = None

    r, w = pipe()
    node = Node()
    node.reader = r
    w.send(node)
    ref = weakref.ref(node)
    del node, r
    gc.collect()
    assert ref() is None
    assert w.reader_closed and w.send(1) is False


def test_a_convert_function_referencing_its_reader_is_collected() -> None:
    r, _w = pipe()
    box: list[Any] = []
    converted = convert_stream(r, lambda x: (box, x))
    box.append(converted)
    ref = weakref.ref(converted)
    del converted, box
    gc.collect()
    assert ref() is None


def test_a_cycle_through_copy_children_is_collected() -> None:
    class Node:
        children: Any = None

    r, w = pipe()
    node = Node()
    node.children = r.copy(2)
    w.send(node)
    ref = weakref.ref(node)
    del node, r
    gc.collect()
    assert ref() is None
    assert w.send(1) is False


def test_writer_closed_is_about_the_writer_only() -> None:
    r, w = pipe()
    r.close()
    assert w.reader_closed and not w.closed
    w.close()
    assert w.closed


# --- 3: bounded copies, send results, argument errors ------------------------------------


def test_a_copy_of_a_bounded_pipe_is_bounded_by_the_slowest_child() -> None:
    cap = 4
    r, w = pipe(capacity=cap)
    fast, slow = r.copy(2)
    sent: list[int] = []
    n = 200

    def produce() -> None:
        for i in range(n):
            w.send(i, timeout=T)
            sent.append(i)
        w.close()

    producer = start(produce)
    fast_got: list[int] = []
    fast_thread = start(lambda: fast_got.extend(fast))
    wait_until(lambda: len(sent) >= cap and at_line(producer.ident, "w.send(i, timeout=T)"), "the writer to wait")
    # The slow child has read nothing: the writer is held back, so memory stays bounded.
    assert len(sent) <= 2 * cap, len(sent)
    assert len(fast_got) <= cap
    slow_got = list(slow)
    producer.join(T)
    fast_thread.join(T)
    assert slow_got == list(range(n))
    assert fast_got == list(range(n))


def test_send_returns_whether_the_item_was_queued() -> None:
    r, w = pipe()
    assert w.send(1) is True
    assert w.send_error(ValueError("x")) is True
    r.close()
    assert w.send(2) is False
    assert w.send_error(ValueError("y")) is False

    async def main() -> None:
        r2, w2 = pipe()
        assert await w2.asend(1) is True
        del r2
        gc.collect()
        assert await w2.asend(2) is False

    asyncio.run(main())


def test_a_dropped_reader_after_async_for_break_tells_the_producer() -> None:
    async def main() -> bool:
        r, w = pipe()
        for i in range(3):
            w.send(i)
        async with r:  # closes the reader on exit, e.g. after a break
            async for x in r:
                if x == 1:
                    break
        return w.send(9)

    assert asyncio.run(main()) is False


def test_argument_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="capacity"):
        pipe(capacity=-1)
    with pytest.raises(ValueError, match="capacity"):
        pipe(capacity=0)
    with pytest.raises(TypeError, match="capacity"):
        pipe(capacity="3")  # type: ignore[arg-type]
    r, w = pipe()
    with pytest.raises(TypeError, match="timeout"):
        r.recv(timeout="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="timeout"):
        w.send(1, timeout="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        r.recv(timeout=-1)


def test_aconcat_message_stream_takes_the_same_options() -> None:
    def chunks() -> list[Message]:
        usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
        return [
            Message.from_dict({"role": "assistant", "content": "a", "response_meta": {"usage": usage}}),
            Message.from_dict({"role": "assistant", "content": "b", "response_meta": {"usage": usage}}),
        ]

    want = concat_message_stream(stream_from_list(chunks()), usage="sum")
    got = asyncio.run(aconcat_message_stream(stream_from_list(chunks()), usage="sum"))
    assert got == want and got.response_meta is not None
    assert got.response_meta.usage is not None and got.response_meta.usage.total_tokens == 6
    with pytest.raises(ValueError, match="usage"):
        asyncio.run(aconcat_message_stream(stream_from_list([]), usage="min"))  # type: ignore[arg-type]
