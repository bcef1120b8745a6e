"""The native hand-off of ``WorkerPool.run_waiting`` (``rillet._native.WorkQueue``): the loop's
thread posts a call and waits for its outcome in one native call, the worker hands it back and
parks in one; an outcome its caller stopped waiting for comes the usual way, through the loop.
Each outcome reaches its caller exactly once, whichever way it goes."""

from __future__ import annotations

import _thread
import asyncio
import gc
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest
from rillet import ChatModelAgent, Runner, ScriptedModel
from rillet._core import workers
from rillet._core.workers import WorkerPool
from rillet.tools import tool
from support.calls import asks, tool_call
from support.waiting import child_env, until, wait_until


class Fatal(BaseException):
    """A BaseException that is neither Exception nor one of Python's own."""


def test_late_results_and_exceptions_come_through_the_loop() -> None:
    pool = WorkerPool(name="test-handoff")
    boom = ValueError("late boom")

    go = threading.Event()

    def slow(x: Any) -> Any:
        go.wait(10)  # until the loop runs again: past the loop's wait
        go.clear()
        if isinstance(x, BaseException):
            raise x
        return x

    async def late(x: Any, wait: float) -> Any:
        asyncio.get_running_loop().call_soon(go.set)  # runs once the loop stopped waiting
        return await pool.run_waiting(slow, x, wait=wait)

    async def main() -> list[Any]:
        out: list[Any] = [await late(1, 0.001)]
        try:
            await late(boom, 0.001)
        except ValueError as e:
            out.append(e)
        out.append(await late(3, 0.0))  # no wait at all
        return out

    assert asyncio.run(main()) == [1, boom, 3]


def test_a_job_raising_a_base_exception_reaches_its_caller_and_the_worker_goes_on() -> None:
    pool = WorkerPool(name="test-handoff")
    fatal = Fatal("fatal")

    def fail(exc: BaseException) -> None:
        raise exc

    async def main() -> list[Any]:
        out: list[Any] = []
        for wait in (10.0, 0.0):
            for exc in (fatal, KeyboardInterrupt(), SystemExit(3)):
                try:
                    await pool.run_waiting(fail, exc, wait=wait)
                except BaseException as e:
                    out.append(e)
        out.append(await pool.run_waiting(abs, -5, wait=10.0))
        return out

    out = asyncio.run(main())
    assert out[0] is fatal and out[3] is fatal
    assert [type(e) for e in out[:6]] == [Fatal, KeyboardInterrupt, SystemExit] * 2
    assert out[6] == 5
    assert pool.threads == 1  # one worker did it all: none died of the exceptions


def test_cancelling_the_task_awaiting_a_late_call_drops_its_result() -> None:
    pool = WorkerPool(name="test-handoff")
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def blocked() -> str:
        started.set()
        release.wait(10)
        finished.set()
        return "dropped"

    async def main() -> int:
        task = asyncio.ensure_future(pool.run_waiting(blocked, wait=0.001))
        await until(started.is_set, "the call to start")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        await until(finished.is_set, "the call to finish")  # its late outcome: nobody takes it
        return await pool.run_waiting(abs, -2, wait=10.0)

    assert asyncio.run(main()) == 2


def test_a_call_not_waited_for_and_cancelled_while_queued_never_runs() -> None:
    pool = WorkerPool(max_workers=1, name="test-handoff")
    pace = workers.Pace()
    pace.slow = workers.SLOW_CALLS  # not waited for
    gate, ran = threading.Event(), []

    async def main() -> None:
        busy = asyncio.ensure_future(pool.run(gate.wait, 10))  # the only worker is busy
        queued = asyncio.ensure_future(pool.run_waiting(ran.append, "ran", pace=pace))
        for _ in range(3):  # the call is queued behind the busy worker's job
            await asyncio.sleep(0)
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        gate.set()
        await busy
        assert await pool.run_waiting(abs, -1, wait=10.0) == 1  # after the skipped one

    asyncio.run(main())
    assert ran == []


def test_a_signal_during_the_wait_raises_there_and_leaves_the_call_unclaimed() -> None:
    # Ctrl-C while the loop's thread waits for a def call: KeyboardInterrupt out of the wait
    # (the wait is long here: it is cut short), the call goes on, its result is dropped.
    pool = WorkerPool(name="test-handoff")
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def blocked() -> str:
        started.set()
        release.wait(10)
        finished.set()
        return "unclaimed"

    def interrupt() -> None:
        started.wait(10)  # the main thread is in its wait (it posted the call from there)
        _thread.interrupt_main()

    loop = asyncio.new_event_loop()  # no asyncio.Runner: the default SIGINT handler raises
    # interrupt_main does nothing while SIGINT is ignored or left to the OS (a background
    # shell, or an earlier test in this process): the usual handler meanwhile
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(pool.run_waiting(blocked, wait=30.0))
        assert time.monotonic() - t0 < 10
        release.set()
        assert finished.wait(10)

        async def after() -> int:
            return await pool.run_waiting(abs, -3, wait=10.0)

        assert loop.run_until_complete(after()) == 3
    finally:
        signal.signal(signal.SIGINT, previous)
        loop.close()


def test_a_late_result_for_a_closed_loop_is_dropped_and_the_worker_goes_on() -> None:
    pool = WorkerPool(max_workers=1, name="test-handoff")
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def blocked() -> str:
        started.set()
        release.wait(10)
        finished.set()
        return "nobody"

    async def leave() -> None:
        task = asyncio.ensure_future(pool.run_waiting(blocked, wait=0.001))
        await until(started.is_set, "the call to start")  # and the loop to run again: it is late
        task.cancel()

    loop = asyncio.new_event_loop()
    loop.run_until_complete(leave())
    loop.close()
    release.set()
    assert finished.wait(10)
    assert asyncio.run(pool.run_waiting(abs, -4, wait=10.0)) == 4
    assert pool.threads == 1


def test_a_hand_off_left_in_a_cycle_by_a_closed_loop_is_collected() -> None:
    # a task left awaiting a late outcome when its loop closed: task -> frame -> hand-off ->
    # future -> task; the hand-off reports what it holds to the garbage collector
    pool = WorkerPool(max_workers=1, name="test-handoff")
    started, release = threading.Event(), threading.Event()

    def blocked() -> bool:
        started.set()
        return release.wait(10)

    loop = asyncio.new_event_loop()
    task = loop.create_task(pool.run_waiting(blocked, wait=0.001))
    loop.run_until_complete(until(started.is_set, "the call to start"))  # the task awaits it late
    loop.close()
    release.set()
    assert asyncio.run(pool.run_waiting(abs, -1, wait=10.0)) == 1  # the one worker is done with it
    ref = weakref.ref(task)
    del task, loop
    gc.collect()
    assert ref() is None


def test_a_detached_job_reports_its_exception_to_threading_excepthook(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = WorkerPool(name="test-handoff")
    seen: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_value))
    boom = Fatal("detached")

    def fail() -> None:
        raise boom

    pool.submit_detached(workers.contextvars.copy_context(), fail)
    wait_until(lambda: seen, "the exception to be reported")
    assert seen == [boom]


def test_a_call_that_runs_a_loop_of_its_own_waits_on_another_worker_of_the_pool() -> None:
    # re-entrancy: a def call that itself waits for def calls on the same pool
    pool = WorkerPool(name="test-handoff")

    def inner(x: int) -> int:
        return x * 10

    def outer(x: int) -> list[int]:
        async def calls() -> list[int]:
            return [await pool.run_waiting(inner, x + i, wait=10.0) for i in range(5)]

        return asyncio.run(calls())

    async def main() -> list[list[int]]:
        return [await pool.run_waiting(outer, i * 100, wait=10.0) for i in range(3)]

    assert asyncio.run(main()) == [[i * 1000 + 10 * j for j in range(5)] for i in range(3)]
    assert pool.threads == 2


def test_def_tools_running_runners_with_def_tools_two_levels_deep() -> None:
    @tool
    def leaf(n: int) -> int:
        """A sync leaf."""
        return n + 1

    def agent(name: str, tools: list[Any], called: str, n: int) -> ChatModelAgent:
        calls = [tool_call(called, {"n": i} if called == "leaf" else {}, f"c{i}", i) for i in range(n)]
        return ChatModelAgent(name, model=ScriptedModel([asks(*calls), f"{name} done"]), tools=tools)

    @tool
    def middle() -> str:
        """Runs an agent whose def tool is a leaf."""
        return [e.message_output.message.content for e in Runner(agent("inner", [leaf], "leaf", 3)).query("go")][-1]

    @tool
    def top() -> str:
        """Runs an agent whose def tool runs an agent."""
        return [e.message_output.message.content for e in Runner(agent("middle", [middle], "middle", 3)).query("go")][
            -1
        ]

    model = ScriptedModel([asks(*[tool_call("top", {}, f"t{i}", i) for i in range(3)]), "outer done"])
    list(Runner(ChatModelAgent("outer", model=model, tools=[top])).query("x"))
    assert [m.content for m in model.calls[1].messages if m.role == "tool"] == ["middle done"] * 3


EXIT_WHILE_RUNNING = """
import asyncio, threading
from rillet._core.workers import WorkerPool

pool = WorkerPool(name="exit")
started = threading.Event()

def spin() -> None:  # pure Python: the worker takes the GIL back again and again
    started.set()
    while True:
        pass

def starts_threads() -> None:  # a caller that keeps starting worker threads meanwhile
    async def calls() -> None:
        while True:
            await asyncio.gather(*[pool.run(spin) for _ in range(2)])
    asyncio.run(calls())

threading.Thread(target=starts_threads, daemon=True).start()
started.wait(30)
print("exiting", flush=True)
"""


def test_the_process_exits_cleanly_while_workers_run_python_code(tmp_path: Path) -> None:
    # CPython ends a daemon thread that wants the GIL back while the interpreter exits by
    # unwinding its stack (pthread_exit, 3.11-3.13): no native frame may lie under the
    # function a worker runs, nor under the start of a worker thread (it aborted the process)
    script = tmp_path / "exit_while_running.py"
    script.write_text(textwrap.dedent(EXIT_WHILE_RUNNING))
    for _ in range(5):
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=child_env())
        assert (out.returncode, out.stdout) == (0, "exiting\n"), out.stderr


@pytest.mark.slow
def test_many_concurrent_calls_on_several_loops_each_get_their_own_result_once() -> None:
    # loops on four threads, many tasks each, waits that expire or not at random and functions
    # of random length: every call gets its own result, exactly once, whichever way it came
    pool = WorkerPool(name="test-handoff-stress")
    calls_per_task, tasks_per_loop = 200, 20

    def work(tag: tuple[int, int, int], pause: float, fail: bool) -> tuple[int, int, int]:
        if pause:
            time.sleep(pause)  # the function's own work (a call this long), not a wait for a thread
        if fail:
            raise KeyError(tag)
        return tag

    async def task(lp: int, t: int, rng: random.Random) -> list[Any]:
        got: list[Any] = []
        for i in range(calls_per_task):
            tag = (lp, t, i)
            pause = rng.choice((0.0, 0.0, 0.0, 0.0002, 0.002))
            wait = rng.choice((0.0, 0.0001, 0.001, 10.0))
            fail = rng.random() < 0.1
            try:
                got.append(await pool.run_waiting(work, tag, pause, fail, wait=wait))
            except KeyError as e:
                got.append(("failed", e.args[0]))
        return got

    results: dict[int, list[Any]] = {}

    def loop_thread(lp: int) -> None:
        async def main() -> list[Any]:
            rng = random.Random(lp)
            parts = await asyncio.gather(*[task(lp, t, random.Random(rng.random())) for t in range(tasks_per_loop)])
            return [x for part in parts for x in part]

        results[lp] = asyncio.run(main())

    threads = [threading.Thread(target=loop_thread, args=(lp,)) for lp in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert sorted(results) == [0, 1, 2, 3]
    for lp, got in results.items():
        tags = [x[1] if x[0] == "failed" else x for x in got]
        assert sorted(tags) == [(lp, t, i) for t in range(tasks_per_loop) for i in range(calls_per_task)]
