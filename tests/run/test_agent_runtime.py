"""Events, BaseAgent, the run context and the Runner's run lifecycle (no leaks)."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import Message, pipe, stream_from_list
from rillet.data.events import (
    AgentAction,
    AgentEvent,
    RunStep,
    event_from_message,
    new_break_loop_action,
    new_exit_action,
    new_transfer_to_agent_action,
    peek_message,
)
from rillet.run.agent import AgentInput, BaseAgent, start_run
from rillet.run.context import add_session_value, add_session_values, get_session_value, get_session_values
from rillet.runner import Runner
from support.waiting import tasks_on_rillets_loop, until, wait_until


def chunks(*texts: str) -> Any:
    return stream_from_list([Message(role="assistant", content=t) for t in texts])


# --- events --------------------------------------------------------------------------------


def test_event_from_message_whole_and_streamed() -> None:
    ev = event_from_message(Message.assistant("hi"))
    mv = ev.message_output
    assert mv is not None and not mv.is_streaming and mv.role == "assistant" and mv.tool_name == ""
    assert ev.agent_name == "" and ev.run_path == () and ev.action is None and ev.error is None
    tool_ev = event_from_message(None, chunks("a"), role="tool", tool_name="search")
    assert tool_ev.message_output.is_streaming and tool_ev.message_output.tool_name == "search"


def test_variant_get_message_is_destructive_and_module_peek_message_is_not() -> None:
    ev = event_from_message(None, chunks("Hel", "lo"))
    assert peek_message(ev).content == "Hello"
    assert peek_message(ev).content == "Hello"  # still readable: the stream was copied
    assert [c.content for c in ev.message_output.message_stream] == ["Hel", "lo"]

    ev = event_from_message(None, chunks("Hel", "lo"))
    mv = ev.message_output
    assert mv.get_message().content == "Hello"
    assert mv.message_stream is None  # drained
    assert mv.get_message().content == "Hello"  # kept
    with pytest.raises(ValueError, match="no messages"):
        event_from_message(None, stream_from_list([])).message_output.get_message()


def test_actions_and_run_steps() -> None:
    assert new_exit_action() == AgentAction(exit=True)
    assert new_transfer_to_agent_action("b").transfer_to_agent.dest_agent_name == "b"
    brk = new_break_loop_action("w").break_loop
    assert (brk.from_agent, brk.done, brk.current_iterations) == ("w", False, 0)
    step = RunStep("a")
    assert str(step) == "a" and step == RunStep("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.agent_name = "b"  # type: ignore[misc]


# --- BaseAgent -------------------------------------------------------------------------


class Scripted(BaseAgent):
    def __init__(self, name: str, texts: list[str], fail: Exception | None = None) -> None:
        super().__init__(name, "says things")
        self.texts = texts
        self.fail = fail

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        for t in self.texts:
            yield event_from_message(Message.assistant(t))
        if self.fail is not None:
            raise self.fail


def test_run_returns_at_once_and_never_raises() -> None:
    gate = threading.Event()

    class Waits(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            await asyncio.get_running_loop().run_in_executor(None, gate.wait)
            yield event_from_message(Message.assistant("late"))
            raise ValueError("boom")

    it = Waits("w").run(AgentInput([]))  # returns while the body is blocked
    gate.set()
    events = list(it)
    assert [e.message_output.message.content for e in events[:1]] == ["late"]
    assert isinstance(events[1].error, ValueError) and len(events) == 2


def test_runner_fills_agent_name_and_run_path() -> None:
    events = list(Runner(Scripted("root", ["a", "b"])).query("hi"))
    assert [(e.agent_name, e.run_path) for e in events] == [("root", (RunStep("root"),))] * 2
    err = list(Runner(Scripted("root", [], fail=KeyError("k"))).query("hi"))
    assert err[0].agent_name == "root" and isinstance(err[0].error, KeyError)


def test_runner_rejects_what_is_not_an_agent_or_a_message() -> None:
    with pytest.raises(TypeError, match="expected an agent"):
        Runner(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item 0 is str"):
        Runner(Scripted("r", [])).run(["hi"])  # type: ignore[list-item]


# --- session values --------------------------------------------------------------------


def test_session_functions_are_noops_outside_a_run() -> None:
    add_session_value("k", 1)
    add_session_values({"a": 1})
    assert get_session_value("k") is None and get_session_value("k", 7) == 7
    assert get_session_values() == {}


def test_session_values_are_shared_within_a_run_and_seeded_by_the_runner() -> None:
    seen: list[Any] = []

    class Reads(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            add_session_value("b", 2)
            add_session_values({"c": 3})
            seen.append(get_session_values())
            seen.append(await asyncio.to_thread(get_session_value, "a"))  # threads see it too
            yield event_from_message(Message.assistant("ok"))

    list(Runner(Reads("r")).query("x", session_values={"a": 1}))
    assert seen == [{"a": 1, "b": 2, "c": 3}, 1]
    list(Runner(Reads("r")).query("x"))
    assert seen[2] == {"b": 2, "c": 3}  # a new run has a new session


# --- consumption and leaks -------------------------------------------------------------


def test_blocking_for_inside_a_running_loop_says_to_use_async_for() -> None:
    class Slow(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            await asyncio.Event().wait()  # never an event: the blocking next() would wait
            yield event_from_message(Message.assistant("x"))

    async def main() -> None:
        with Runner(Slow("s")).query("x") as it:
            with pytest.raises(RuntimeError, match="async for"):
                next(iter(it))

    asyncio.run(main())


class Endless(BaseAgent):
    """Streams forever until cancelled; records whether it was cleaned up."""

    def __init__(self) -> None:
        super().__init__("endless")
        self.closed = threading.Event()
        self.writers: list[Any] = []

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        try:
            i = 0
            while True:
                reader, writer = pipe()
                self.writers.append(writer)
                writer.send(Message(role="assistant", content=str(i)))
                writer.close()
                yield event_from_message(None, reader)
                i += 1
                await asyncio.sleep(0.001)
        finally:
            self.closed.set()


def test_abandoning_a_sync_run_cancels_its_task_and_closes_its_streams() -> None:
    threads_before = threading.active_count()
    agent = Endless()
    it = Runner(agent).query("x")
    for n, _ev in enumerate(it):
        if n == 5:
            break
    del it, _ev
    gc.collect()
    assert agent.closed.wait(30), "the agent's body was not closed"
    wait_until(lambda: tasks_on_rillets_loop() == 0, "the run's tasks on rillet's loop to end")
    # every stream the consumer never read was closed: its writer learns the reader is gone
    gc.collect()
    assert all(w.reader_closed for w in agent.writers)
    assert threading.active_count() <= threads_before + 1  # at most rillet's loop thread appeared


def test_abandoning_an_async_run_cancels_its_task() -> None:
    agent = Endless()

    async def main() -> int:
        async with Runner(agent).query("x") as it:
            async for ev in it:
                if ev.message_output and (await ev.message_output.aget_message()).content == "3":
                    break

        def others() -> list[asyncio.Task[Any]]:
            return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

        await until(lambda: agent.closed.is_set() and not others(), "the run's task to end")
        return len(others())

    assert asyncio.run(main()) == 0
    assert agent.closed.is_set()


def test_start_run_calls_on_close_once_when_the_consumer_lets_go_of_the_run() -> None:
    """What the Runner frees a session with: run by close() itself (the cancelled task ends
    later, on its loop), once however often the run is closed, and when the iterator is dropped."""
    let_go: list[str] = []
    agent = Endless()
    it = start_run(agent.events(AgentInput()), on_close=lambda: let_go.append("closed"))
    next(it)
    assert let_go == []
    it.close()
    it.close()
    assert let_go == ["closed"]
    assert agent.closed.wait(30), "the abandoned run's task was not cancelled"

    dropped = start_run(Endless().events(AgentInput()), on_close=lambda: let_go.append("dropped"))
    next(dropped)
    del dropped
    gc.collect()
    assert let_go == ["closed", "dropped"]
    wait_until(lambda: tasks_on_rillets_loop() == 0, "the runs' tasks on rillet's loop to end")


def test_close_and_wait_returns_once_the_runs_clean_up_is_done() -> None:
    """What a process about to exit calls (rillet run/resume/web at Ctrl-C): close() alone
    returns at once, while the run's `finally` (a resume releasing its claim) is still to run
    on rillet's loop thread, which dies with the process."""
    from rillet.run.run_handle import close_and_wait

    cleaned = threading.Event()
    inside = threading.Event()

    async def slow_to_clean() -> AsyncIterator[Any]:
        try:
            yield AgentEvent(agent_name="a")
            inside.set()
            await asyncio.Event().wait()
            yield AgentEvent(agent_name="a")
        finally:
            await asyncio.sleep(0)  # the clean-up awaits, as a store's release does
            await asyncio.sleep(0)
            cleaned.set()

    runs = [start_run(slow_to_clean()) for _ in range(2)]
    for run in runs:
        next(run)
    assert inside.wait(30)
    close_and_wait(runs, 30)
    assert cleaned.is_set()
    close_and_wait(runs, 30)  # closed already: nothing to wait for


def test_close_and_wait_on_the_callers_own_loop_or_a_closed_one_closes_without_waiting() -> None:
    """The caller's own loop cannot run the clean-up while it blocks (it waited its whole
    timeout, here longer than the test may take); a closed loop never will (it left an
    un-awaited coroutine behind, a RuntimeWarning)."""
    import warnings

    from rillet.run.run_handle import close_and_wait

    async def forever() -> AsyncIterator[Any]:
        yield AgentEvent(agent_name="a")
        await asyncio.Event().wait()

    async def on_our_loop() -> None:
        run = start_run(forever())
        await run.__anext__()
        close_and_wait([run], 600)  # returns at once: the run is closed, its task cancelled
        await asyncio.sleep(0)

    asyncio.run(on_our_loop())

    loop = asyncio.new_event_loop()

    async def started_there() -> Any:
        run = start_run(forever())
        await run.__anext__()
        return run

    thread = threading.Thread(target=loop.run_forever)
    thread.start()
    run = asyncio.run_coroutine_threadsafe(started_there(), loop).result(30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(30)
    loop.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        close_and_wait([run], 600)
        gc.collect()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


def test_abandoning_a_streaming_run_closes_every_copy_of_the_model_stream() -> None:
    from rillet import ChatModelAgent

    reader, writer = pipe()

    class Live:
        async def generate(self, messages: list[Message], **kw: Any) -> Message:
            raise AssertionError("streaming runs call stream()")

        async def stream(self, messages: list[Message], **kw: Any) -> Any:
            return reader

    writer.send(Message(role="assistant", content="first words"))
    it = Runner(ChatModelAgent("s", model=Live()), streaming=True).query("x")  # type: ignore[arg-type]
    first = next(iter(it))
    first.message_output.message_stream.close()  # the consumer stops reading...
    it.close()  # ...and abandons the run
    wait_until(lambda: writer.reader_closed, "the model stream's reader to close")
    assert writer.reader_closed  # the producer learns nobody reads: the agent's and the session's copies closed
    assert writer.send(Message(content="more")) is False


def test_abandoning_a_streaming_run_frees_its_streams_without_a_garbage_collection() -> None:
    """The consumer drops the event it read (without closing its stream) and closes the run:
    nothing of the cancelled run may keep a reader in a reference cycle (the pump's task in
    its own frame did), or the model's producer streams on until the collector runs."""
    from rillet import ChatModelAgent

    class Live:
        def __init__(self) -> None:
            self.readers, self.writer = [(pair := pipe())[0]], pair[1]

        async def generate(self, messages: list[Message], **kw: Any) -> Message:
            raise AssertionError("streaming runs call stream()")

        async def stream(self, messages: list[Message], **kw: Any) -> Any:
            return self.readers.pop()  # the run holds the only reference

    model = Live()
    writer = model.writer
    writer.send(Message(role="assistant", content="first words"))
    it = Runner(ChatModelAgent("s", model=model), streaming=True).query("x")  # type: ignore[arg-type]
    gc.collect()
    gc.disable()
    try:
        first = next(iter(it))
        assert first.message_output is not None and first.message_output.is_streaming
        del first
        it.close()
        wait_until(lambda: writer.reader_closed, "the model stream's readers to close with no collection", 10)
    finally:
        gc.enable()
