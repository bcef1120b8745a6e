"""Behaviour of rillet.Channel that producers and consumers rely on."""

from __future__ import annotations

import _thread
import asyncio
import decimal
import fractions
import gc
import math
import signal
import subprocess
import sys
import threading
import time
import traceback
import tracemalloc
import weakref
from collections.abc import Callable
from typing import Any

import pytest
import rillet
from rillet import EMPTY, Channel, ChannelClosed, EndOfStream, RilletError
from support.loops import NoThreadsafeLoop, each_on_its_own_thread
from support.waiting import at_line, process_waits, until, wait_until


class Boom(RuntimeError):
    pass


class Weakrefable:
    """An item that can be weakly referenced, to see when the channel lets go of it."""


# -- sending and receiving ------------------------------------------------------------------


def test_fifo_across_send_and_send_many() -> None:
    ch: Channel[int] = Channel()
    ch.send(1)
    ch.send_many([2, 3])
    ch.send_many(iter(range(4, 6)))
    assert len(ch) == 5
    assert [ch.recv() for _ in range(5)] == [1, 2, 3, 4, 5]
    assert len(ch) == 0


def test_try_recv_returns_the_sentinel_when_empty() -> None:
    ch: Channel[int] = Channel()
    assert ch.try_recv() is EMPTY
    assert not EMPTY
    assert repr(EMPTY) == "rillet.EMPTY"
    ch.send(None)
    assert ch.try_recv() is None  # None is an ordinary item


def test_recv_many_returns_between_one_and_max_items() -> None:
    ch: Channel[int] = Channel()
    ch.send_many(range(10))
    assert ch.recv_many(3) == [0, 1, 2]
    assert ch.recv_many(100) == [3, 4, 5, 6, 7, 8, 9]
    assert ch.try_recv_many(5) == []


def test_recv_many_waits_for_the_first_item() -> None:
    ch: Channel[int] = Channel()
    threading.Timer(0.05, ch.send_many, args=([7, 8],)).start()
    assert ch.recv_many(10, timeout=5) in ([7], [7, 8])


def test_send_many_is_atomic_for_receivers() -> None:
    ch: Channel[int] = Channel()
    ch.send_many(range(1000))
    assert ch.recv_many(1000) == list(range(1000))


def test_send_many_with_a_failing_iterable_sends_nothing() -> None:
    def items() -> Any:
        yield 1
        raise Boom("iteration failed")

    ch: Channel[int] = Channel()
    with pytest.raises(Boom):
        ch.send_many(items())
    assert len(ch) == 0


# -- close, drain and errors ----------------------------------------------------------------


def test_close_drains_then_raises_channel_closed() -> None:
    ch: Channel[int] = Channel()
    ch.send_many([1, 2])
    ch.close()
    assert ch.closed
    assert ch.recv() == 1
    assert ch.try_recv() == 2
    for receive in (ch.recv, ch.try_recv, lambda: ch.recv_many(3), lambda: ch.try_recv_many(3)):
        with pytest.raises(ChannelClosed):
            receive()
    assert issubclass(ChannelClosed, RilletError)


def test_close_is_idempotent_and_the_first_close_wins() -> None:
    ch: Channel[int] = Channel()
    ch.close(Boom("first"))
    ch.close()
    ch.close(ValueError("second"))
    with pytest.raises(Boom, match="first"):
        ch.recv()


def test_sending_returns_whether_the_item_was_queued() -> None:
    ch: Channel[int] = Channel()
    assert ch.send(1) is True
    assert ch.try_send(2) is True
    assert ch.send_many([3, 4]) is True
    assert ch.send_many(()) is True
    ch.close()
    dropped = Weakrefable()
    refs = weakref.ref(dropped)
    assert ch.send(dropped) is False  # never raises: the item is dropped
    assert ch.try_send(dropped) is False
    assert ch.send_many([dropped, dropped]) is False
    del dropped
    assert refs() is None, "a refused item is released, not kept"
    assert ch.try_recv_many(10) == [1, 2, 3, 4]


class SubChannel(Channel[int]):
    pass


def test_sending_after_close_on_a_subclass_returns_false_too() -> None:
    ch = SubChannel()
    ch.close()
    assert ch.send(1) is False
    assert ch.try_send(1) is False


def test_channel_closed_is_an_end_of_stream() -> None:
    assert issubclass(ChannelClosed, EndOfStream)
    assert issubclass(EndOfStream, RilletError)
    assert issubclass(rillet.StreamEOF, EndOfStream)
    ch: Channel[int] = Channel()
    ch.close()
    with pytest.raises(EndOfStream):
        ch.recv()


def test_close_with_error_reaches_every_receiver_after_the_items() -> None:
    ch: Channel[int] = Channel()
    ch.send(1)
    ch.close(Boom("producer failed"))
    assert list_until_error(ch) == ([1], "producer failed")
    with pytest.raises(Boom):
        ch.recv()  # the end is sticky


def test_close_accepts_an_exception_class() -> None:
    ch: Channel[int] = Channel()
    ch.close(Boom)
    with pytest.raises(Boom):
        ch.recv()


def test_close_rejects_what_is_not_an_exception() -> None:
    ch: Channel[int] = Channel()
    with pytest.raises(TypeError, match="exception instance or class, not str"):
        ch.close("oops")  # type: ignore[arg-type]
    assert not ch.closed


def test_iteration_ends_at_close() -> None:
    ch: Channel[int] = Channel()
    ch.send_many([1, 2, 3])
    ch.close()
    assert list(ch) == [1, 2, 3]
    assert list(ch) == []


def test_async_iteration_ends_at_close_or_raises_the_error() -> None:
    async def collect(ch: Channel[int]) -> list[int]:
        return [x async for x in ch]

    ok: Channel[int] = Channel()
    ok.send_many([1, 2])
    ok.close()
    assert asyncio.run(collect(ok)) == [1, 2]

    failed: Channel[int] = Channel()
    failed.send(1)
    failed.close(Boom("late"))
    with pytest.raises(Boom, match="late"):
        asyncio.run(collect(failed))


def test_close_wakes_blocked_and_awaiting_receivers() -> None:
    ch: Channel[int] = Channel()
    outcome: list[str] = []

    def blocked() -> None:
        try:
            ch.recv()
        except ChannelClosed:
            outcome.append("thread")

    async def awaiting() -> None:
        try:
            await ch.arecv()
        except ChannelClosed:
            outcome.append("task")

    t = threading.Thread(target=blocked)
    t.start()

    async def main() -> None:
        task = asyncio.create_task(awaiting())
        await until(lambda: ch._parks == 1 and at_line(t.ident, "ch.recv()"), "both receivers to wait")
        await asyncio.to_thread(ch.close)
        await task

    asyncio.run(main())
    t.join(5)
    assert sorted(outcome) == ["task", "thread"]


def list_until_error(ch: Channel[int]) -> tuple[list[int], str]:
    got: list[int] = []
    try:
        for x in ch:
            got.append(x)
    except Boom as e:
        return got, str(e)
    raise AssertionError("expected the close error")


# -- timeouts and bad arguments -------------------------------------------------------------


def test_recv_timeout_raises_timeout_error() -> None:
    ch: Channel[int] = Channel()
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        ch.recv(timeout=0.1)
    assert time.monotonic() - start >= 0.09
    with pytest.raises(TimeoutError):
        ch.recv(timeout=0)
    with pytest.raises(TimeoutError):
        ch.recv_many(3, timeout=0.01)


def test_a_huge_timeout_means_wait() -> None:
    ch: Channel[int] = Channel()
    threading.Timer(0.05, ch.send, args=(1,)).start()
    assert ch.recv(timeout=1e300) == 1


@pytest.mark.parametrize("bad", [-1, -0.001, math.nan])
def test_negative_or_nan_timeouts_are_rejected(bad: float) -> None:
    ch: Channel[int] = Channel()
    with pytest.raises(ValueError, match="non-negative number of seconds"):
        ch.recv(timeout=bad)
    with pytest.raises(ValueError, match="non-negative"):
        ch.recv_many(1, timeout=bad)


@pytest.mark.parametrize("bad", [0, -1])
def test_recv_many_needs_at_least_one(bad: int) -> None:
    ch: Channel[int] = Channel()
    ch.send(1)
    with pytest.raises(ValueError, match="max_items must be at least 1"):
        ch.recv_many(bad)
    with pytest.raises(ValueError, match="at least 1"):
        ch.try_recv_many(bad)
    with pytest.raises(ValueError, match="at least 1"):
        asyncio.run(ch.arecv_many(bad))
    assert ch.recv() == 1  # nothing was consumed


# ids written out: repr(object()) differs between pytest-xdist's workers, which must collect the same ids
@pytest.mark.parametrize("bad", ["1", b"1", [1], object()], ids=["'1'", "b'1'", "[1]", "object()"])
def test_a_timeout_that_is_not_a_number_names_the_argument(bad: Any) -> None:
    ch: Channel[int] = Channel()
    with pytest.raises(TypeError, match="timeout must be None or a number of seconds, got"):
        ch.recv(timeout=bad)
    with pytest.raises(TypeError, match="timeout must be None or a number"):
        ch.recv_many(1, bad)


@pytest.mark.parametrize("bad", ["2", 2.0, None], ids=repr)
def test_max_items_that_is_not_an_int_names_the_argument(bad: Any) -> None:
    ch: Channel[int] = Channel()
    ch.send(1)
    for receive in (ch.recv_many, ch.try_recv_many, ch.arecv_many):
        with pytest.raises(TypeError, match="max_items must be an int of at least 1, got"):
            receive(bad)
    assert ch.recv() == 1


def test_max_items_beyond_64_bits() -> None:
    ch: Channel[int] = Channel()
    ch.send_many([1, 2])
    with pytest.raises(ValueError, match="max_items must be at least 1"):
        ch.try_recv_many(-(2**70))
    assert ch.recv_many(2**70) == [1, 2]  # "everything queued"


def test_timeouts_accept_any_real_number() -> None:
    ch: Channel[int] = Channel()
    for timeout in (0, 0.0, False, fractions.Fraction(1, 100), decimal.Decimal("0.01")):
        with pytest.raises(TimeoutError):
            ch.recv(timeout=timeout)


def test_len_closed_and_repr() -> None:
    ch: Channel[int] = Channel()
    ch.send_many([1, 2])
    assert (len(ch), ch.closed, repr(ch)) == (2, False, "<rillet.Channel open, 2 queued>")
    ch.close()
    assert repr(ch) == "<rillet.Channel closed, 2 queued>"


# -- asyncio --------------------------------------------------------------------------------


def test_arecv_and_arecv_many() -> None:
    async def main() -> tuple[int, list[int], list[int]]:
        ch: Channel[int] = Channel()
        loop = asyncio.get_running_loop()
        loop.call_later(0.02, ch.send, 1)
        first = await ch.arecv()
        loop.call_later(0.02, ch.send_many, [2, 3, 4])
        batch = await ch.arecv_many(2)
        rest = await ch.arecv_many(10)
        return first, batch, rest

    assert asyncio.run(main()) == (1, [2, 3], [4])


def test_cancelled_receiver_passes_its_wakeup_on() -> None:
    """A receiver woken for an item, then cancelled before it ran, must not strand the item."""

    async def main() -> int:
        ch: Channel[int] = Channel()
        first = asyncio.create_task(ch.arecv())
        second = asyncio.create_task(ch.arecv())
        await asyncio.sleep(0)  # both park, first in line
        ch.send(42)  # wakes `first` only (one item, one wakeup)
        first.cancel()  # ... which is cancelled before it could take the item
        with pytest.raises(asyncio.CancelledError):
            await first
        return await asyncio.wait_for(second, 5)

    assert asyncio.run(main()) == 42


def test_cancelling_a_parked_receiver_loses_nothing() -> None:
    async def main() -> list[int]:
        ch: Channel[int] = Channel()
        waiting = asyncio.create_task(ch.arecv())
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        ch.send_many([1, 2])
        return [await ch.arecv(), await ch.arecv()]

    assert asyncio.run(main()) == [1, 2]


def test_wait_for_timeout_on_arecv_loses_nothing() -> None:
    async def main() -> list[int]:
        ch: Channel[int] = Channel()
        for _ in range(20):
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(ch.arecv(), 0.001)
        ch.send_many(range(3))
        return [await ch.arecv() for _ in range(3)]

    assert asyncio.run(main()) == [0, 1, 2]


def test_cancel_storm_delivers_every_item_exactly_once() -> None:
    items = 3000

    async def main() -> list[int]:
        ch: Channel[int] = Channel()
        got: list[int] = []

        async def consumer() -> None:
            while True:
                try:
                    got.append(await ch.arecv())
                except ChannelClosed:
                    return

        async def canceller() -> None:
            # Keep starting receivers that get cancelled at random points.
            for i in range(items // 3):
                t = asyncio.create_task(ch.arecv())
                await asyncio.sleep(0)
                if not t.done():
                    t.cancel()
                try:
                    got.append(await t)
                except asyncio.CancelledError:
                    pass
                if i % 7 == 0:
                    await asyncio.sleep(0)

        consumers = [asyncio.create_task(consumer()) for _ in range(3)]

        def produce() -> None:
            for i in range(items):
                ch.send(i)
                if i % 50 == 0:
                    time.sleep(0.0005)

        storm = asyncio.create_task(canceller())
        await asyncio.to_thread(produce)
        await storm
        ch.close()
        await asyncio.wait_for(asyncio.gather(*consumers), 10)
        return got

    got = asyncio.run(main())
    assert sorted(got) == list(range(items))


def test_receiver_on_another_event_loop_than_the_sender() -> None:
    ch: Channel[int] = Channel()
    received: list[int] = []
    ready = threading.Event()

    def receiver_loop() -> None:
        async def main() -> None:
            ready.set()
            async for x in ch:
                received.append(x)

        asyncio.run(main())

    t = threading.Thread(target=receiver_loop)
    t.start()
    ready.wait(5)

    async def sender() -> None:
        for i in range(500):
            ch.send(i)
            if i % 10 == 0:
                await asyncio.sleep(0.001)
        ch.close()

    asyncio.run(sender())
    t.join(10)
    assert received == list(range(500))


def test_a_receiver_whose_loop_closed_passes_its_wakeup_on() -> None:
    ch: Channel[int] = Channel()
    dead_loop = asyncio.new_event_loop()

    async def receive() -> int:
        return await ch.arecv()

    stranded = dead_loop.create_task(receive())
    dead_loop.run_until_complete(asyncio.sleep(0))  # one turn of the loop: the task parks in the channel
    assert ch._parks == 1
    dead_loop.close()  # ... and can never run again

    def send_later() -> None:
        wait_until(lambda: ch._parks == 2, "the live receiver to park, behind the dead one")
        ch.send(5)  # wakes the dead waiter first, which must hand the item on

    threading.Thread(target=send_later).start()
    assert asyncio.run(asyncio.wait_for(receive(), 5)) == 5
    del stranded


def test_a_dead_waiter_on_the_senders_own_thread_passes_its_wakeup_on() -> None:
    """The sender runs on the thread of a parked waiter whose loop is closed: resolving its
    future directly fails, and the next parked receiver must get the wakeup instead."""
    ch: Channel[int] = Channel()
    dead_loop = asyncio.new_event_loop()

    async def receive() -> int:
        return await ch.arecv()

    stranded = dead_loop.create_task(receive())
    dead_loop.run_until_complete(asyncio.sleep(0))  # parks first in line, on this thread
    dead_loop.close()

    async def main() -> int:
        live = asyncio.create_task(receive())
        await asyncio.sleep(0)  # parks second
        assert ch._parks == 2
        assert ch.send(5) is True  # same thread as the dead waiter: no call_soon_threadsafe
        return await asyncio.wait_for(live, 5)

    assert asyncio.run(main()) == 5
    stranded._log_destroy_pending = False  # type: ignore[attr-defined]
    del stranded


class FailingWakeupLoop(asyncio.SelectorEventLoop):
    """A loop whose cross-thread wakeups raise `error` while it is set."""

    error: BaseException | None = None

    def call_soon_threadsafe(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if self.error is not None:
            raise self.error
        return super().call_soon_threadsafe(*args, **kwargs)


@pytest.mark.parametrize("error", [RuntimeError("loop broken"), KeyboardInterrupt(), SystemExit(3)], ids=repr)
def test_a_wakeup_that_raises_is_passed_on(error: BaseException) -> None:
    """Whatever call_soon_threadsafe raises, the wakeup goes to the next parked receiver; an
    error that is not an Exception (Ctrl-C) then reaches the sender."""
    ch: Channel[int] = Channel()
    failing = FailingWakeupLoop()
    parked = threading.Event()

    async def receive() -> int:
        parks = ch._parks
        task = asyncio.create_task(ch.arecv())  # type: ignore[arg-type]
        await until(lambda: ch._parks > parks, "the receive to park")
        parked.set()
        return await task

    first = failing.create_task(receive())
    failing.run_until_complete(until(parked.is_set, "the first receive to park"))  # first in line, on this thread
    assert ch._parks == 1
    got: list[int] = []

    def live_receiver() -> None:
        got.append(asyncio.run(asyncio.wait_for(receive(), 5)))

    live = threading.Thread(target=live_receiver)
    parked.clear()
    live.start()
    assert parked.wait(5)
    failing.error = error
    sent: list[object] = []

    def send_from_another_thread() -> None:
        try:
            sent.append(ch.send(1))
        except BaseException as e:
            sent.append(e)

    sender = threading.Thread(target=send_from_another_thread)
    sender.start()
    sender.join(5)
    live.join(5)
    assert got == [1], "the wakeup reached the second receiver"
    assert sent == [True] if isinstance(error, Exception) else sent == [error]
    # The first receiver's wakeup was lost with its loop's failure; it can still be cancelled.
    failing.error = None
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        failing.run_until_complete(first)
    failing.close()


class CountingLoop(asyncio.SelectorEventLoop):
    """Counts cross-thread wakeups (each one writes to the loop's self-pipe)."""

    threadsafe_calls = 0

    def call_soon_threadsafe(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.threadsafe_calls += 1
        return super().call_soon_threadsafe(*args, **kwargs)


def test_cross_thread_wakeups_are_one_per_parked_waiter_not_per_item() -> None:
    ch: Channel[int] = Channel()
    loop = CountingLoop()
    items = 20_000

    def produce() -> None:
        for i in range(items):
            ch.send(i)
        ch.close()

    async def consume() -> list[int]:
        threading.Thread(target=produce).start()
        return [x async for x in ch]

    try:
        assert loop.run_until_complete(consume()) == list(range(items))
    finally:
        loop.close()
    assert loop.threadsafe_calls <= ch._parks
    assert loop.threadsafe_calls < items // 10


def test_a_sender_on_the_receivers_loop_thread_wakes_it_without_a_syscall() -> None:
    ch: Channel[int] = Channel()
    loop = CountingLoop()

    async def main() -> list[int]:
        async def produce() -> None:
            for i in range(100):
                ch.send(i)
                await asyncio.sleep(0)
            ch.close()

        producer = asyncio.create_task(produce())
        got = [x async for x in ch]
        await producer
        return got

    try:
        assert loop.run_until_complete(main()) == list(range(100))
    finally:
        loop.close()
    assert ch._parks > 0
    assert loop.threadsafe_calls == 0


def test_a_receiver_is_woken_by_its_own_loop_after_the_loop_moved_to_another_thread() -> None:
    """The receiver parks while its loop runs on one thread; the loop's next turn runs on
    another thread and sends. The sender is on the receiver's loop, so the wakeup is direct:
    going through call_soon_threadsafe would lose it on such a loop (the receiver never woke,
    and a Temporal replay scheduled fewer commands than the original run)."""
    ch: Channel[int] = Channel()
    loop = NoThreadsafeLoop()
    box: dict[str, Any] = {}

    async def receive() -> int:
        return await ch.arecv()

    def first_turn() -> None:
        box["task"] = loop.create_task(receive())
        loop.run_until_complete(asyncio.sleep(0))  # the receiver parks in the channel

    async def send_and_take() -> int:
        ch.send(7)
        return await asyncio.wait_for(box["task"], 10)

    def second_turn() -> None:
        box["got"] = loop.run_until_complete(send_and_take())

    try:
        each_on_its_own_thread(first_turn, second_turn)
        assert box["got"] == 7
    finally:
        loop.close()


# -- Ctrl-C ---------------------------------------------------------------------------------


def test_a_sender_on_the_thread_a_loop_left_wakes_the_loop_where_it_runs_now() -> None:
    """The receiver parks while its loop runs on this thread; the loop then runs on another
    thread, and this thread sends. The loop must be woken where it runs (call_soon_threadsafe):
    resolving the future here, by the thread the receiver parked on, left it parked."""
    ch: Channel[int] = Channel()
    loop = asyncio.new_event_loop()
    task = loop.create_task(ch.arecv())
    loop.run_until_complete(asyncio.sleep(0))  # parks, on this thread
    running = threading.Event()
    got: list[int] = []

    async def take() -> None:
        running.set()
        got.append(await asyncio.wait_for(task, 10))

    other = threading.Thread(target=loop.run_until_complete, args=(take(),))
    other.start()
    try:
        assert running.wait(10)
        ch.send(7)  # from this thread, which runs no loop now
        other.join(15)
        assert got == [7]
    finally:
        other.join(15)
        loop.close()


# A parent that ignores SIGINT (a background shell does) passes that on: a child restores
# Python's usual handler first, as an interactive Python has it.
RESTORE_SIGINT = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def test_ctrl_c_interrupts_a_blocked_recv() -> None:
    ch: Channel[int] = Channel()
    # interrupt_main does nothing while SIGINT is ignored: install the usual handler meanwhile
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    main = threading.get_ident()

    def interrupt_when_blocked() -> None:
        wait_until(lambda: at_line(main, "ch.recv(timeout=60.0)"), "the main thread to block in recv")
        _thread.interrupt_main()

    interrupter = threading.Thread(target=interrupt_when_blocked, daemon=True)
    try:
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):  # a TimeoutError, not a hang, if the interrupt is lost
            ch.recv(timeout=60.0)
    finally:
        interrupter.join(60)
        signal.signal(signal.SIGINT, previous)
    ch.send(1)
    assert ch.recv() == 1  # the channel is still usable


def test_sigint_interrupts_a_blocked_recv_in_a_real_process() -> None:
    code = RESTORE_SIGINT + (
        "import sys, rillet\n"
        "ch = rillet.Channel()\n"
        "print('blocking', flush=True)\n"
        "try:\n"
        "    ch.recv()\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(3)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "blocking"
        wait_until(lambda: process_waits(proc.pid), "the child to block in recv")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 3  # interrupted, not left blocked
        assert proc.stdout.read().strip() == "interrupted"
    finally:
        if proc.poll() is None:  # the test failed: leave no child blocked behind
            proc.kill()
            proc.wait()
        proc.stdout.close()


# -- the native awaitable -------------------------------------------------------------------


@pytest.mark.parametrize("item", [1, None, (1, 2), ValueError("an item, not an error")], ids=repr)
def test_await_protocol_without_am_send(item: object) -> None:
    """Debuggers and tracers drive awaitables through __next__/send; values survive intact."""
    ch: Channel[object] = Channel()
    ch.send_many([item, item])
    for step in (lambda it: next(it), lambda it: it.send(None)):
        with pytest.raises(StopIteration) as stop:
            step(ch.arecv().__await__())
        assert stop.value.value == item or stop.value.value is item


def test_awaiting_under_a_tracer_takes_the_slow_path_correctly() -> None:
    async def main() -> list[object]:
        ch: Channel[object] = Channel()
        asyncio.get_running_loop().call_later(0.01, ch.send_many, [(1, 2), None])
        return [await ch.arecv(), await ch.arecv()]

    sys.settrace(lambda *args: None)
    try:
        got = asyncio.run(main())
    finally:
        sys.settrace(None)
    assert got == [(1, 2), None]


def test_an_abandoned_wait_does_not_swallow_a_wakeup() -> None:
    async def main() -> int:
        ch: Channel[int] = Channel()
        abandoned = ch.arecv().__await__()
        abandoned.send(None)  # parks first in line, then its owner forgets it
        waiting = asyncio.create_task(ch.arecv())  # type: ignore[arg-type]
        await asyncio.sleep(0)
        assert ch._parks == 2
        del abandoned
        gc.collect()
        ch.send(1)  # one item, one wakeup: it must reach the live receiver
        return await asyncio.wait_for(waiting, 5)

    assert asyncio.run(main()) == 1


def test_closing_an_awaiting_coroutine_withdraws_it() -> None:
    async def main() -> int:
        ch: Channel[int] = Channel()

        async def receive() -> int:
            return await ch.arecv()

        coro = receive()
        coro.send(None)  # parked
        waiting = asyncio.create_task(receive())
        await asyncio.sleep(0)
        coro.close()  # GeneratorExit reaches the awaitable's close()
        ch.send(2)
        return await asyncio.wait_for(waiting, 5)

    assert asyncio.run(main()) == 2


def test_arecv_needs_a_running_loop_only_to_wait() -> None:
    ch: Channel[int] = Channel()
    ch.send(1)
    with pytest.raises(StopIteration):
        next(ch.arecv().__await__())  # ready: no loop needed
    with pytest.raises(RuntimeError, match="no running event loop"):
        next(ch.arecv().__await__())


def test_channel_is_generic_in_annotations() -> None:
    alias = Channel[int]
    assert alias.__origin__ is Channel and alias.__args__ == (int,)
    assert isinstance(alias(), Channel)


# -- memory ---------------------------------------------------------------------------------


class Tracked:
    """An item that records when it is freed."""

    freed: list[str] = []

    def __init__(self, name: str) -> None:
        self.name = name
        self.ref: object = None

    def __del__(self) -> None:
        Tracked.freed.append(self.name)


def test_items_of_a_dropped_channel_are_freed() -> None:
    Tracked.freed.clear()
    ch: Channel[Tracked] = Channel()
    ch.send_many([Tracked("a"), Tracked("b")])
    del ch
    assert sorted(Tracked.freed) == ["a", "b"]


def test_reference_cycles_through_a_channel_are_collected() -> None:
    Tracked.freed.clear()
    gc.disable()
    try:
        ch: Channel[Tracked] = Channel()

        async def use_async_paths() -> None:
            ch.send(Tracked("warm-up"))
            async for _ in ch:
                break  # leaves the cached awaitable in place

        asyncio.run(use_async_paths())
        item = Tracked("in a cycle")
        item.ref = ch  # channel -> item -> channel
        ch.send(item)
        error = RuntimeError("closing error")
        error.args = (ch,)  # channel -> error -> channel
        ch.close(error)
        del ch, item, error
        gc.collect()
    finally:
        gc.enable()
    assert "in a cycle" in Tracked.freed


def traceback_length(e: BaseException) -> int:
    return len(traceback.extract_tb(e.__traceback__))


def closed_with_a_raised_error() -> tuple[Channel[int], Boom]:
    ch: Channel[int] = Channel()

    def producer() -> None:
        raise Boom("producer failed")

    try:
        producer()
    except Boom as e:
        ch.close(e)
        return ch, e
    raise AssertionError


def receive_error(receive: Callable[[Channel[int]], object], ch: Channel[int]) -> Boom:
    big = bytearray(100_000)  # a frame worth keeping alive, if the traceback kept it
    try:
        receive(ch)
    except Boom as e:
        assert len(big) == 100_000
        return e
    raise AssertionError("expected the close error")


def next_async(ch: Channel[int]) -> object:
    async def step() -> object:
        return await ch.__anext__()

    return asyncio.run(step())


RECEIVERS: dict[str, Callable[[Channel[int]], object]] = {
    "recv": lambda ch: ch.recv(),
    "try_recv": lambda ch: ch.try_recv(),
    "recv_many": lambda ch: ch.recv_many(3),
    "try_recv_many": lambda ch: ch.try_recv_many(3),
    "for": lambda ch: list(ch),
    "arecv": lambda ch: asyncio.run(ch.arecv()),  # type: ignore[arg-type]
    "arecv_many": lambda ch: asyncio.run(ch.arecv_many(2)),  # type: ignore[arg-type]
    "async for": next_async,
}


@pytest.mark.parametrize("receive", RECEIVERS.values(), ids=RECEIVERS.keys())
def test_each_receiver_gets_the_close_error_with_a_fresh_traceback(
    receive: Callable[[Channel[int]], object],
) -> None:
    ch, error = closed_with_a_raised_error()
    at_close = traceback_length(error)
    first = receive_error(receive, ch)
    assert first is error, "the very instance the channel was closed with"
    fresh = traceback_length(first)
    for _ in range(50):
        again = receive_error(receive, ch)
    assert traceback_length(again) == fresh, "the traceback does not grow per receive"
    names = [f.name for f in traceback.extract_tb(again.__traceback__)]
    assert names.count("receive_error") == 1 and "producer" in names
    assert fresh > at_close, "the receiver's frame is on top of the one it was closed with"


def test_receiving_the_close_error_repeatedly_keeps_no_frames_alive() -> None:
    ch, _ = closed_with_a_raised_error()
    receive = RECEIVERS["recv"]
    receive_error(receive, ch)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(300):
            receive_error(receive, ch)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # Before the fix every receive kept its 100 KB frame: 30 MB here.
    assert grown < 1_000_000, f"{grown} bytes kept by 300 receives"


def test_the_close_error_context_is_reset_for_each_receiver() -> None:
    ch: Channel[int] = Channel()
    ch.close(Boom("end"))
    with pytest.raises(Boom) as first:
        ch.recv()
    try:
        raise KeyError("a receiver's own trouble")
    except KeyError:
        with pytest.raises(Boom):
            raise first.value  # a receiver re-raises it while handling something else
    assert isinstance(first.value.__context__, KeyError)
    with pytest.raises(Boom) as later:
        ch.recv()
    assert later.value.__context__ is None, "one receiver's context is not shown to the next"


def test_a_blocking_receive_inside_an_event_loop_is_refused_clearly() -> None:
    async def main() -> tuple[int, list[int]]:
        ch: Channel[int] = Channel()
        with pytest.raises(RuntimeError, match="would block the running event loop; use `await ch.arecv"):
            ch.recv()
        with pytest.raises(RuntimeError, match="async for"):
            next(iter(ch))
        with pytest.raises(RuntimeError, match="would block"):
            ch.recv_many(3, timeout=0.5)
        with pytest.raises(TimeoutError):
            ch.recv(timeout=0)  # does not wait, so it is allowed
        ch.send_many([1, 2, 3])
        return ch.recv(), ch.recv_many(5)  # items ready: nothing blocks

    assert asyncio.run(main()) == (1, [2, 3])


def test_subclasses_behave_the_same() -> None:
    """Subclasses reach the channel through PyO3's slots rather than the direct fast paths."""

    class Tagged(Channel[int]):
        tag = "events"

    ch = Tagged()
    ch.send(1)
    ch.send_many([2, 3])
    assert ch.try_send(4) is True
    ch.close()
    assert list(ch) == [1, 2, 3, 4]

    async def drain() -> list[int]:
        other = Tagged()
        other.send_many([5, 6])
        other.close()
        return [x async for x in other]

    assert asyncio.run(drain()) == [5, 6]


def test_package_exposes_version_and_channel() -> None:
    assert rillet.__version__
    ch = rillet.Channel()
    ch.send(1)
    assert ch.recv() == 1
