"""The native awaitable of `Channel.arecv()`: cancellation, `throw()` in every form CPython
generators accept, re-entrancy, and awaiting one awaitable twice."""

from __future__ import annotations

import asyncio
import types
import warnings
from collections.abc import Callable, Generator
from typing import Any

import pytest
from rillet import Channel, ChannelClosed, new_event_pair
from support.waiting import until

# -- cancellation through Python frames -------------------------------------------------------


def test_wait_for_timeouts_through_a_python_frame_lose_nothing() -> None:
    """`asyncio.wait_for(get(), 0.001)` cancels the task while `get` awaits the channel."""

    async def main() -> list[int]:
        ch: Channel[int] = Channel()

        async def get() -> int:
            return await ch.arecv()

        for _ in range(200):
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(get(), 0.001)
        ch.send_many([1, 2])
        return [await asyncio.wait_for(get(), 5), await asyncio.wait_for(get(), 5)]

    assert asyncio.run(main()) == [1, 2]


def test_cancelling_a_task_inside_async_for() -> None:
    async def main() -> list[int]:
        ch: Channel[int] = Channel()
        got: list[int] = []

        async def consume() -> None:
            async for x in ch:
                got.append(x)

        for round_ in range(50):
            task = asyncio.create_task(consume())
            ch.send(round_)
            await asyncio.sleep(0)  # takes the item, then parks
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        ch.send(99)
        ch.close()
        await asyncio.wait_for(consume(), 5)
        return got

    assert asyncio.run(main()) == [*range(50), 99]


def test_cancelling_event_iterator_and_subclass_receivers() -> None:
    class MyChannel(Channel[int]):
        pass

    async def main() -> list[int]:
        it, gen = new_event_pair()
        sub = MyChannel()

        async def via_iterator() -> int:
            return await it.arecv()

        async def via_subclass() -> list[int]:
            return await sub.arecv_many(5)

        for _ in range(20):
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(via_iterator(), 0.001)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(via_subclass(), 0.001)
        gen.send(1)
        sub.send_many([2, 3])
        return [await asyncio.wait_for(via_iterator(), 5), *await via_subclass()]

    assert asyncio.run(main()) == [1, 2, 3]


# -- throw() in every form ------------------------------------------------------------------


class SubCancelled(asyncio.CancelledError):
    pass


class SubValueError(ValueError):
    pass


def a_traceback() -> types.TracebackType:
    try:
        raise RuntimeError("for its traceback")
    except RuntimeError as e:
        assert e.__traceback__ is not None
        return e.__traceback__


TB = a_traceback()
INSTANCE = ValueError("an instance")
SUB_INSTANCE = SubValueError("a subclass instance")
CANCELLED = asyncio.CancelledError("cancelled")

THROW_FORMS: list[tuple[str, tuple[Any, ...]]] = [
    ("class", (asyncio.CancelledError,)),
    ("instance", (CANCELLED,)),
    ("subclass", (SubCancelled,)),
    ("subclass instance", (SubCancelled("sub"),)),
    ("class and value", (ValueError, "v")),
    ("class and None", (ValueError, None)),
    ("class and argument tuple", (ValueError, ("a", 2))),
    ("class and its instance", (ValueError, INSTANCE)),
    ("class and a subclass instance", (ValueError, SUB_INSTANCE)),
    ("class and an unrelated exception", (ValueError, KeyError("k"))),
    ("class, value and traceback", (ValueError, "v", TB)),
    ("class, None and traceback", (KeyError, None, TB)),
    ("instance, None and traceback", (ValueError("with tb"), None, TB)),
    ("instance and explicit None", (INSTANCE, None)),
    ("GeneratorExit", (GeneratorExit,)),
]


def generator_throw(*args: Any) -> BaseException:
    """What a plain generator raises for `throw(*args)`: the reference behaviour."""

    def gen() -> Generator[None, None, None]:
        yield

    it = gen()
    next(it)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the multi-argument forms
        try:
            it.throw(*args)
        except BaseException as e:
            return e
    raise AssertionError("the generator did not raise")


def awaitable_step(ch: Channel[int]) -> tuple[Any, Callable[..., Any]]:
    """A parked `ch.arecv()` driven directly: its future and its throw."""
    aw = ch.arecv().__await__()
    fut = aw.send(None)
    return fut, aw.throw


def coroutine_step(ch: Channel[int]) -> tuple[Any, Callable[..., Any]]:
    """A parked `ch.arecv()` under a Python coroutine frame, which delegates throw()."""

    async def get() -> int:
        return await ch.arecv()

    coro = get()
    fut = coro.send(None)
    return fut, coro.throw  # the bound method keeps the coroutine alive


def tb_frames(tb: types.TracebackType | None) -> list[types.TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


@pytest.mark.parametrize("driver", [awaitable_step, coroutine_step], ids=["direct", "coroutine"])
@pytest.mark.parametrize(("form", "args"), THROW_FORMS, ids=[f for f, _ in THROW_FORMS])
def test_throw_accepts_every_form_a_generator_does(
    driver: Callable[[Channel[int]], tuple[Any, Callable[..., Any]]],
    form: str,
    args: tuple[Any, ...],
) -> None:
    expected = generator_throw(*args)

    async def main() -> BaseException:
        ch: Channel[int] = Channel()
        fut, throw = driver(ch)
        assert ch._parks == 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # the coroutine's own warning
            with pytest.raises(BaseException) as raised:
                throw(*args)
        # The wait was withdrawn: a later item wakes nobody and stays queued.
        ch.send(7)
        assert not fut.done()
        assert ch.try_recv() == 7
        return raised.value

    got = asyncio.run(main())
    assert type(got) is type(expected)
    assert got.args == expected.args
    if isinstance(args[0], BaseException) or (len(args) > 1 and got is args[1]):
        assert got is expected  # the given instance itself, as a generator raises it
    if len(args) == 3:
        assert TB in tb_frames(got.__traceback__), "the given traceback is kept"


BAD_THROWS: list[tuple[tuple[Any, ...], str]] = [
    ((INSTANCE, "value"), "instance exception may not have a separate value"),
    ((42,), "exceptions must be classes or instances deriving from BaseException, not int"),
    ((int,), "exceptions must be classes or instances deriving from BaseException, not type"),
    ((ValueError, None, "tb"), "third argument must be a traceback object"),
]


@pytest.mark.parametrize(("args", "message"), BAD_THROWS, ids=[m for _, m in BAD_THROWS])
def test_a_malformed_throw_raises_type_error_and_leaves_the_wait_in_place(args: tuple[Any, ...], message: str) -> None:
    reference = generator_throw(*args)
    assert isinstance(reference, TypeError) and message in str(reference)

    async def main() -> None:
        ch: Channel[int] = Channel()
        fut, throw = awaitable_step(ch)
        with pytest.raises(TypeError, match=message):
            throw(*args)
        ch.send(1)
        assert fut.done(), "still parked: the send woke it"

    asyncio.run(main())


def test_a_thrown_class_whose_init_sends_passes_the_wakeup_on() -> None:
    """Building the exception runs Python code: here it sends the item this wait is woken for."""

    async def main() -> int:
        ch: Channel[int] = Channel()
        fut, throw = awaitable_step(ch)  # first in line
        other = asyncio.create_task(ch.arecv())  # type: ignore[arg-type]
        await asyncio.sleep(0)

        class Reentrant(Exception):
            def __init__(self) -> None:
                super().__init__()
                ch.send(5)  # wakes the first waiter, which is giving up

        with pytest.raises(Reentrant):
            throw(Reentrant)
        assert fut.done()
        return await asyncio.wait_for(other, 5)

    assert asyncio.run(main()) == 5


def test_a_thrown_class_whose_init_throws_into_the_same_wait() -> None:
    async def main() -> None:
        ch: Channel[int] = Channel()
        fut, throw = awaitable_step(ch)

        class Reentrant(Exception):
            def __init__(self) -> None:
                super().__init__()
                throw(KeyError("inner"))

        with pytest.raises(KeyError, match="inner"):
            throw(Reentrant)
        with pytest.raises(ZeroDivisionError):
            throw(ZeroDivisionError)  # withdrawn already: just raises
        ch.send(1)
        assert not fut.done()
        assert await ch.arecv() == 1

    asyncio.run(main())


def test_a_constructor_returning_a_non_exception_is_a_type_error() -> None:
    class Odd(Exception):
        def __new__(cls, *args: Any) -> Any:
            return 42

    async def main() -> None:
        ch: Channel[int] = Channel()
        fut, throw = awaitable_step(ch)
        with pytest.raises(TypeError, match="should have returned an instance of BaseException"):
            throw(Odd)
        ch.send(1)
        assert fut.done(), "the wait stays in place"

    asyncio.run(main())


# -- awaiting one awaitable twice -----------------------------------------------------------


def test_awaiting_one_awaitable_twice_at_once_is_refused() -> None:
    async def main() -> tuple[int, int]:
        ch: Channel[int] = Channel()
        shared = ch.arecv()

        async def wait(aw: Any) -> int:
            return int(await aw)

        first = asyncio.create_task(wait(shared))
        second = asyncio.create_task(wait(shared))
        await until(lambda: second.done() and ch._parks == 1, "the first to park and the second to fail")
        with pytest.raises(RuntimeError, match="already being awaited"):
            second.result()
        third = asyncio.create_task(wait(ch.arecv()))  # parks behind the first
        await until(lambda: ch._parks == 2, "the third to park")
        ch.send(1)
        got_first = await asyncio.wait_for(first, 5)
        ch.send(2)  # must reach the third: no forgotten future swallows it
        return got_first, await asyncio.wait_for(third, 5)

    assert asyncio.run(main()) == (1, 2)


def test_stepping_a_parked_awaitable_again_is_refused() -> None:
    async def main() -> None:
        ch: Channel[int] = Channel()
        aw = ch.arecv().__await__()
        fut = aw.send(None)
        with pytest.raises(RuntimeError, match="already being awaited"):
            aw.send(None)
        with pytest.raises(RuntimeError, match="already being awaited"):
            next(aw)
        ch.send(3)  # the first wait is intact and woken
        assert fut.done()
        with pytest.raises(StopIteration) as stop:
            aw.send(None)
        assert stop.value.value == 3

    asyncio.run(main())


def test_an_awaitable_resumed_after_its_future_was_cancelled_withdraws_and_retries() -> None:
    async def main() -> None:
        ch: Channel[int] = Channel()
        aw = ch.arecv().__await__()
        fut = aw.send(None)
        fut.cancel()  # cancelled by someone else, and resumed rather than thrown into
        new_fut = aw.send(None)  # parks again, without leaving the old future behind
        assert new_fut is not fut
        ch.send(4)
        assert new_fut.done()
        with pytest.raises(StopIteration) as stop:
            aw.send(None)
        assert stop.value.value == 4

    asyncio.run(main())


def test_closing_the_channel_reaches_a_receiver_in_a_python_frame() -> None:
    async def main() -> None:
        ch: Channel[int] = Channel()

        async def get() -> int:
            return await ch.arecv()

        task = asyncio.create_task(get())
        await asyncio.sleep(0)
        ch.close()
        with pytest.raises(ChannelClosed):
            await asyncio.wait_for(task, 5)

    asyncio.run(main())
