"""How a ``def`` tool's call crosses to a worker thread and back: a short call comes back to a
loop that waited for it (no trip through the loop's self-pipe), a slow one does not hold the
loop, and ``inline=True`` runs the function on the loop itself."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from rillet import ChatModelAgent, Runner, ScriptedModel
from rillet._core import workers
from rillet._core.workers import WorkerPool
from rillet.tools import FunctionTool, tool
from support.calls import asks, tool_call
from support.waiting import until

var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")


def counting_wakeups(loop: asyncio.AbstractEventLoop) -> list[Any]:
    """Records every ``loop.call_soon_threadsafe`` (the self-pipe wake-up of the loop)."""
    calls: list[Any] = []
    original = loop.call_soon_threadsafe

    def counted(callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        calls.append(callback)
        return original(callback, *args, **kwargs)

    loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    return calls


def test_a_short_call_comes_back_to_the_waiting_loop_without_waking_it_through_its_self_pipe() -> None:
    pool = WorkerPool(name="test-hop")

    def where(x: int) -> tuple[int, str, bool]:
        seen = var.get()
        var.set("set by the worker")  # in a copy of the caller's context: not seen by it
        return x + 1, seen, threading.current_thread() is threading.main_thread()

    async def main() -> tuple[Any, str, list[Any]]:
        wakeups = counting_wakeups(asyncio.get_running_loop())
        var.set("set by the caller")
        # a generous wait: the call is short, so it returns as soon as the worker is done
        out = [await pool.run_waiting(where, i, wait=10.0) for i in range(20)]
        return out, var.get(), wakeups

    out, after, wakeups = asyncio.run(main())
    assert out == [(i + 1, "set by the caller", False) for i in range(20)]
    assert after == "set by the caller"
    assert wakeups == []
    assert pool.threads == 1  # the worker is idle before its caller can submit the next call


def test_what_the_function_schedules_on_the_loop_runs_before_its_caller_resumes() -> None:
    pool = WorkerPool(name="test-hop")
    order: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def report() -> str:
            loop.call_soon_threadsafe(order.append, "callback")  # what send_event does from a tool
            return "result"

        order.append(await pool.run_waiting(report, wait=10.0))

    asyncio.run(main())
    assert order == ["callback", "result"]


def test_exceptions_of_a_waited_call_reach_the_caller_unchanged() -> None:
    pool = WorkerPool(name="test-hop")
    boom = KeyError("boom")

    def fail(exc: BaseException) -> None:
        raise exc

    def stop() -> None:
        raise StopIteration

    async def main() -> list[BaseException]:
        caught: list[BaseException] = []
        for fn, arg in ((fail, boom), (fail, KeyboardInterrupt()), (stop, None)):
            try:
                await pool.run_waiting(fn, *([arg] if arg is not None else []), wait=10.0)
            except BaseException as e:
                caught.append(e)
        return caught

    caught = asyncio.run(main())
    assert caught[0] is boom
    assert type(caught[1]) is KeyboardInterrupt  # handed to the caller, not lost on the worker
    assert isinstance(caught[2], RuntimeError) and "raised StopIteration" in str(caught[2])


def test_a_slow_call_frees_the_loop_after_the_wait_and_is_reported_slow() -> None:
    pool = WorkerPool(name="test-hop")
    pace = workers.Pace()
    running, ticked = threading.Event(), threading.Event()

    def slow() -> str:  # runs until the loop has run other tasks, or a minute
        running.set()
        return "late" if ticked.wait(60) else "the loop never ran meanwhile"

    async def ticker() -> None:
        await until(running.is_set, "the call to start")
        for _ in range(5):  # turns of the loop while the call goes on
            await asyncio.sleep(0)
        ticked.set()

    async def main() -> str:
        task = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        try:
            return await pool.run_waiting(slow, wait=0.01, pace=pace)
        finally:
            task.cancel()

    assert asyncio.run(main()) == "late"  # the loop ran other tasks while the call went on
    assert (pace.slow, pace.late) == (1, 0)


def test_a_quick_call_that_outlasts_the_wait_comes_the_usual_way_and_is_not_reported_slow() -> None:
    pool = WorkerPool(name="test-hop")
    pace = workers.Pace()

    async def main() -> list[int]:
        # wait=0: the loop never waits, so every result comes back through the loop
        return [await pool.run_waiting(abs, -i, wait=0.0, pace=pace) for i in range(10)]

    assert asyncio.run(main()) == list(range(10))
    assert pace.slow == 0  # the function was quick: the wait, not the function, was too short
    assert pace.late == 0 and pace.waited


def test_a_def_tool_that_runs_slowly_is_no_longer_waited_for() -> None:
    @tool
    def nap() -> str:
        """Sleeps a little."""
        time.sleep(0.005)  # 50 times workers.SLOW_CALL
        return "ok"

    async def main() -> list[str]:
        return [await nap.invoke("{}") for _ in range(6)]

    assert asyncio.run(main()) == ["ok"] * 6
    assert nap._spec().pace.slow == 4  # four slow runs, then awaited without the wait


def test_a_cancelled_slow_def_tool_leaves_its_result_unclaimed_and_the_pool_usable() -> None:
    started, release = threading.Event(), threading.Event()

    @tool
    def slow() -> str:
        """Waits to be released."""
        started.set()
        release.wait(10)
        return "late"

    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    async def main() -> str:
        task = asyncio.ensure_future(slow.invoke(""))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        return await add.invoke('{"a": 1, "b": 1}')

    assert asyncio.run(main()) == "2"


def test_an_inline_def_tool_runs_on_the_loop_in_a_copy_of_the_context() -> None:
    def where() -> list[Any]:
        seen = var.get()
        var.set("set by the tool")
        return [threading.current_thread() is threading.main_thread(), seen]

    def stop() -> str:
        raise StopIteration

    inline = tool(where, inline=True)
    stopping = tool(stop, inline=True, description="Stops.")

    async def main() -> tuple[str, str]:
        var.set("set by the caller")
        out = await inline.invoke("{}")
        with pytest.raises(RuntimeError, match="raised StopIteration"):
            await stopping.invoke("{}")
        return out, var.get()

    assert asyncio.run(main()) == ('[true, "set by the caller"]', "set by the caller")
    assert isinstance(inline, FunctionTool) and inline.inline and not tool(where, name="w").inline


def test_inline_is_accepted_by_the_decorator_form() -> None:
    @tool(inline=True)
    def double(x: int) -> int:
        """Doubles."""
        return 2 * x

    assert double.inline
    assert asyncio.run(double.invoke('{"x": 4}')) == "8"


def counting_expired_waits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records each time the loop's wait for a def call's result ran out (the loop was held
    for the whole wait)."""
    expired: list[int] = []
    original = workers._stopped_waiting

    def counted(handoff: Any, loop: asyncio.AbstractEventLoop) -> Any:
        expired.append(1)
        return original(handoff, loop)

    monkeypatch.setattr(workers, "_stopped_waiting", counted)
    return expired


def test_concurrent_calls_of_a_blocking_def_tool_hold_the_loop_for_one_wait_not_one_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 50 runs on one loop call a tool that blocks (an HTTP request, a lock): once one call is
    # known to run long, the others must not hold the loop for their own waits (50 ms here).
    expired = counting_expired_waits(monkeypatch)
    release = threading.Event()

    @tool
    def fetch(url: str) -> str:
        """Blocks like a network call."""
        release.wait(10)
        return url

    async def main() -> list[str]:
        calls = asyncio.gather(*[fetch.invoke(f'{{"url": "u{i}"}}') for i in range(50)])
        await until(lambda: expired, "a call to outlast the loop's wait")
        release.set()
        return await calls

    assert asyncio.run(main()) == [f"u{i}" for i in range(50)]
    assert len(expired) == 1


def test_tools_made_again_from_one_function_share_its_slow_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # an agent built per request (tools=[tool(fn)] each time): a slow function stops being
    # waited for after four slow runs in all, not four per tool object
    expired = counting_expired_waits(monkeypatch)

    def nap() -> str:
        """Sleeps a little."""
        time.sleep(0.005)
        return "ok"

    async def main() -> list[str]:
        return [await tool(nap).invoke("{}") for _ in range(8)]

    assert asyncio.run(main()) == ["ok"] * 8
    # A count per tool object would hold the loop for all 8 calls. Four is the most: on a loaded
    # machine a waited call can end before the loop's wait begins (it still counts as slow, but
    # no wait runs out), so fewer is possible.
    assert 1 <= len(expired) <= workers.SLOW_CALLS == 4


def test_a_function_that_turned_quick_is_waited_for_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # a quick function that a busy machine preempted a few times (its time on the worker is
    # wall-clock time) must not lose the waited hand-off for the rest of the process's life
    pool = WorkerPool(name="test-hop")
    pace = workers.Pace()

    async def calls(n: int) -> list[Any]:
        wakeups = counting_wakeups(asyncio.get_running_loop())
        for i in range(n):
            assert await pool.run_waiting(abs, -i, wait=10.0, pace=pace) == i
        return wakeups

    monkeypatch.setattr(workers, "SLOW_CALL", -1.0)  # every call counts as slow
    asyncio.run(calls(workers.SLOW_CALLS + 2))
    assert (pace.slow, pace.waited) == (workers.SLOW_CALLS, False)  # the count stops at SLOW_CALLS
    monkeypatch.setattr(workers, "SLOW_CALL", 60.0)  # every call counts as quick
    not_waited = asyncio.run(calls(workers.QUICK_CALLS))  # results through the loop, timed all the same
    assert len(not_waited) == workers.QUICK_CALLS
    assert pace.slow == workers.SLOW_CALLS - 1 and pace.waited
    assert asyncio.run(calls(20)) == []  # waited for again: no trip through the loop
    monkeypatch.setattr(workers, "SLOW_CALL", -1.0)
    asyncio.run(calls(1))  # one slow call more and it is not waited for again
    assert not pace.waited


def test_a_slow_def_tool_among_quick_ones_leaves_them_waited_for() -> None:
    # an agent's tools called in turn: the slow one stops being waited for, the quick ones do not
    @tool
    def nap() -> str:
        """Sleeps a little."""
        time.sleep(0.005)  # 50 times workers.SLOW_CALL
        return "ok"

    def quick(i: int) -> Callable[..., int]:
        def fn(x: int) -> int:
            """Adds one."""
            return x + i

        fn.__name__ = f"quick{i}"
        return fn

    quicks = [tool(quick(i)) for i in range(3)]

    async def main() -> list[str]:
        out = []
        for _ in range(8):
            out.append(await nap.invoke("{}"))
            out.extend([await q.invoke('{"x": 1}') for q in quicks])
        return out

    assert asyncio.run(main()) == ["ok", "1", "2", "3"] * 8
    assert not nap._spec().pace.waited
    assert all(q._spec().pace.waited for q in quicks)


# --- sync tools that run whole runners from their worker threads ---------------------------


def test_sync_tools_running_nested_runners_do_not_starve_the_worker_pool() -> None:
    @tool
    def leaf() -> str:
        """A sync leaf."""
        return "leaf"

    @tool
    def nested() -> str:
        """Runs a whole inner agent synchronously, from a worker thread."""
        inner = ChatModelAgent("inner", model=ScriptedModel([asks(tool_call("leaf", {})), "inner done"]), tools=[leaf])
        return [e.message_output.message.content for e in Runner(inner).query("go")][-1]

    n = 12
    model = ScriptedModel([asks(*[tool_call("nested", {}, f"c{i}", i) for i in range(n)]), "outer done"])
    list(Runner(ChatModelAgent("outer", model=model, tools=[nested])).query("x"))
    assert [m.content for m in model.calls[1].messages if m.role == "tool"] == ["inner done"] * n
