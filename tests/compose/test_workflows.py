"""Workflow agents: Sequential, Loop and Parallel, their run paths, and loops at scale."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    AgentOutput,
    BaseAgent,
    LoopAgent,
    Message,
    ParallelAgent,
    Runner,
    RunStep,
    SequentialAgent,
    event_from_message,
    new_break_loop_action,
    new_exit_action,
)
from rillet.tools import ExitTool
from support.multi_agent import agent, call, path, summary


def test_sequential_run_paths_accumulate_and_children_see_each_other_as_context() -> None:
    a = agent("a", ["draft"])
    b = agent("b", ["review"])
    seq = SequentialAgent("seq", description="writes then reviews", sub_agents=[a, b])
    events = list(Runner(seq).query("write"))
    assert summary(events) == [("a", "seq/a", "assistant:draft"), ("b", "seq/a/b", "assistant:review")]
    assert [m.content for m in b.model.calls[0].messages] == ["write", "For context: [a] said: draft."]  # type: ignore[attr-defined]


def test_sequential_stops_on_exit_and_on_error() -> None:
    quitter = agent("q", [Message.assistant("", [call("exit", {"final_result": "stop"})])], exit_tool=ExitTool())
    never = agent("never", ["unreachable"])
    events = list(Runner(SequentialAgent("s", sub_agents=[quitter, never])).query("x"))
    assert events[-1].action is not None and events[-1].action.exit
    assert never.model.call_count == 0  # type: ignore[attr-defined]

    failing = agent("f", [Message.assistant("", [call("nope", {})])], max_iterations=1, tools=[ExitTool()])
    never2 = agent("never2", ["unreachable"])
    events = list(Runner(SequentialAgent("s2", sub_agents=[failing, never2])).query("x"))
    assert events[-1].error is not None and never2.model.call_count == 0  # type: ignore[attr-defined]


class Breaker(BaseAgent):
    """Says something, and breaks the loop on its ``at``-th call (0: on every call)."""

    def __init__(self, name: str, at: int) -> None:
        super().__init__(name, "breaks")
        self.at = at
        self.calls = 0

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        self.calls += 1
        ev = event_from_message(Message.assistant(f"{self.name}#{self.calls}"))
        if self.at == 0 or self.calls == self.at:
            ev.action = new_break_loop_action(self.name)
        yield ev


def test_loop_runs_rounds_and_break_loop_ends_it_after_the_current_child() -> None:
    writer = agent("writer", ["v1", "v2", "v3"])
    reviewer = Breaker("reviewer", at=2)
    loop = LoopAgent("loop", sub_agents=[writer, reviewer], max_iterations=5)
    events = list(Runner(loop).query("write"))
    assert [s[2] for s in summary(events)] == [
        "assistant:v1",
        "assistant:reviewer#1",
        "assistant:v2",
        "assistant:reviewer#2",
    ]
    brk = events[-1].action.break_loop
    assert brk.done and brk.current_iterations == 1
    assert summary(events)[2][1] == "loop/writer/reviewer/writer"  # run paths accumulate across rounds


def test_loop_max_iterations_bounds_the_rounds() -> None:
    events = list(Runner(LoopAgent("l", sub_agents=[agent("w", ["1", "2", "3"])], max_iterations=2)).query("x"))
    assert [s[2] for s in summary(events)] == ["assistant:1", "assistant:2"]


def test_nested_loops_break_only_the_innermost() -> None:
    inner = LoopAgent("inner", sub_agents=[Breaker("b", at=0)], max_iterations=0)
    outer = LoopAgent("outer", sub_agents=[inner, agent("after", ["a1", "a2"])], max_iterations=2)
    events = list(Runner(outer).query("x"))
    texts = [s[2] for s in summary(events)]
    assert texts == ["assistant:b#1", "assistant:a1", "assistant:b#2", "assistant:a2"]


def test_parallel_children_run_at_once_in_isolated_lanes_then_join() -> None:
    both_started = asyncio.Barrier(2) if hasattr(asyncio, "Barrier") else None

    class Lane(BaseAgent):
        def __init__(self, name: str) -> None:
            super().__init__(name, "lane")
            self.saw: list[str] = []

        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            if both_started is not None:
                await asyncio.wait_for(both_started.wait(), 5)  # proves they run at the same time
            self.saw = [m.content for m in input.messages]
            yield event_from_message(Message.assistant(f"from {self.name}"))
            await asyncio.sleep(0)
            self.saw_later = [m.content for m in input.messages]

    x, y = Lane("x"), Lane("y")
    final = agent("final", ["merged"])
    seq = SequentialAgent("seq", sub_agents=[ParallelAgent("par", sub_agents=[x, y]), final])
    events = list(Runner(seq).query("go"))
    assert sorted(s[2] for s in summary(events)[:2]) == ["assistant:from x", "assistant:from y"]
    assert {s[1] for s in summary(events)[:2]} == {"seq/par/x", "seq/par/y"}
    assert x.saw == ["go"] and y.saw == ["go"]  # neither saw its sibling
    seen = [m.content for m in final.model.calls[0].messages]  # type: ignore[attr-defined]
    assert seen[0] == "go" and sorted(seen[1:]) == ["For context: [x] said: from x.", "For context: [y] said: from y."]


def test_parallel_forwards_a_childs_error_and_the_others_finish() -> None:
    failing = agent("f", [Message.assistant("", [call("nope", {})])], max_iterations=1, tools=[ExitTool()])
    fine = agent("ok", ["fine"])
    events = list(Runner(ParallelAgent("p", sub_agents=[failing, fine])).query("x"))
    kinds = sorted("error" if e.error else e.message_output.role for e in events)
    assert kinds.count("error") == 1 and "assistant" in kinds
    assert any(s[2] == "assistant:fine" for s in summary(events))


def test_loop_stops_on_a_childs_error() -> None:
    failing = agent("f", [Message.assistant("", [call("nope", {})])], max_iterations=1, tools=[ExitTool()])
    events = list(Runner(LoopAgent("l", sub_agents=[failing, agent("never", ["x"])], max_iterations=0)).query("x"))
    assert events[-1].error is not None and "exceeds max iterations" in str(events[-1].error)


def test_sequential_forwards_break_loop_without_stopping() -> None:
    seq = SequentialAgent("s", sub_agents=[Breaker("b", at=0), agent("next", ["still runs"])])
    events = list(Runner(seq).query("x"))
    assert [s[2] for s in summary(events)] == ["assistant:b#1", "assistant:still runs"]
    assert events[0].action.break_loop is not None and not events[0].action.break_loop.done


def test_parallel_forwards_exit_without_stopping_siblings() -> None:
    class Quit(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            ev = event_from_message(Message.assistant("bye"))
            ev.action = new_exit_action()
            yield ev

    events = list(Runner(ParallelAgent("p", sub_agents=[Quit("q"), agent("other", ["still here"])])).query("x"))
    assert sorted(s[2] for s in summary(events)) == ["assistant:bye", "assistant:still here"]


def test_run_path_behaves_as_the_tuple_of_its_steps() -> None:
    import pickle

    from rillet import RunPath

    steps = path("loop", "a", "b", "a", "c")
    p = RunPath(steps)
    assert p == steps and steps == p and p != steps[:-1] and p != list(steps)
    by_path: dict[object, int] = {p: 1}
    assert hash(p) == hash(steps) and by_path[steps] == 1
    assert repr(p) == repr(steps) and str(p) == str(steps)
    assert len(p) == 5 and list(p) == list(steps) and tuple(p) == steps
    assert [p[i] for i in range(-5, 5)] == [steps[i] for i in range(-5, 5)]
    assert p[:2] == steps[:2] and p[1:4] == steps[1:4] and p[::2] == steps[::2] and p[9:] == ()
    assert list(reversed(p)) == list(reversed(steps)) and RunStep("c") in p and RunStep("z") not in p
    assert p.index(RunStep("b")) == 2 and p.count(RunStep("a")) == 2
    assert p + (RunStep("d"),) == (*steps, RunStep("d")) and steps[:1] + p[1:] == p
    assert pickle.loads(pickle.dumps(p)) == p and RunPath() == () and not RunPath()
    with pytest.raises(IndexError):
        p[5]
    assert RunPath(steps[:3]) == p[:3] and p[:3] is p[:3]  # a prefix is shared, not copied


def test_loop_events_carry_eino_run_paths_that_share_their_prefix() -> None:
    events = list(Runner(LoopAgent("l", sub_agents=[agent("w", ["1", "2", "3"])], max_iterations=3)).query("x"))
    assert [e.run_path for e in events] == [path("l", "w"), path("l", "w", "w"), path("l", "w", "w", "w")]
    assert events[2].run_path[:2] is events[0].run_path  # the third's prefix is the first's path


class _Tick(BaseAgent):
    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        yield AgentEvent(output=AgentOutput(customized_output=len(input.messages)))


@pytest.mark.slow
def test_a_6000_iteration_loop_costs_the_same_per_event_and_memory_grows_linearly() -> None:
    import time
    import tracemalloc

    n, window = 6000, 1000

    async def stamped() -> list[float]:
        # `async for`: the run and its consumer share this thread, whose CPU time counts the
        # work of both and none of the waiting for a core (a `for` consumer on another thread
        # only timed when it dequeued events the run had made long before)
        return [
            time.thread_time()
            async for _ev in Runner(LoopAgent("loop", sub_agents=[_Tick("t")], max_iterations=n)).query("go")
        ]

    firsts, lasts = [], []
    for _ in range(3):  # min over repetitions: a busy machine only ever adds time
        stamps = asyncio.run(stamped())
        assert len(stamps) == n
        firsts.append(stamps[window] - stamps[0])
        lasts.append(stamps[-1] - stamps[-1 - window])
    assert min(lasts) < 3 * min(firsts), (firsts, lasts)  # was 20x: each event copied its run path

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        held: dict[int, int] = {}
        events = []
        for i, ev in enumerate(Runner(LoopAgent("loop", sub_agents=[_Tick("t")], max_iterations=n)).query("go"), 1):
            events.append(ev)  # kept, as a consumer collecting the run would
            if i in (n // 2, n):
                held[i] = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert events[-1].run_path == path("loop", *["t"] * n)
    # linear: the second half costs what the first did (quadratic: three times as much)
    assert held[n] - held[n // 2] < 1.5 * held[n // 2], held
    assert held[n] < 20_000_000, held  # was 230 MB


class _Say(BaseAgent):
    """Says one thing a run and never reads its input."""

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        yield event_from_message(Message.assistant(self.name))


@pytest.mark.slow  # a cost-growth check: alone, in make test's serial pass
def test_loop_children_that_never_read_their_input_cost_the_same_at_8000_iterations_as_at_1000() -> None:
    import gc
    import time

    async def per_iteration(n: int) -> float:
        loop = LoopAgent("loop", sub_agents=[_Say("a")], max_iterations=n)
        gc.collect()
        start = time.thread_time()  # this thread's CPU time: the run is on this thread's loop
        count = 0
        async for _ in Runner(loop).query("go"):
            count += 1
        assert count == n
        return (time.thread_time() - start) / n

    async def measure() -> tuple[list[float], list[float]]:
        small, large = [], []
        for _ in range(3):
            small.append(await per_iteration(1000))
            large.append(await per_iteration(8000))
        return small, large

    # A ratio of two timings in one test (nothing to count covers the history copied for each
    # child); the min over repetitions, as a busy machine only ever adds time.
    small, large = asyncio.run(measure())
    assert min(large) < 1.5 * min(small), (small, large)  # was 3.6x: each child's history was rebuilt


def test_a_loop_child_is_not_handed_a_rewritten_history_it_does_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from rillet import flow

    rewritten: list[str] = []
    real = flow.rewrite_message

    def counted(msg: Message, agent_name: str) -> Message:
        rewritten.append(agent_name)
        return real(msg, agent_name)

    monkeypatch.setattr(flow, "rewrite_message", counted)
    n = 200
    events = list(Runner(LoopAgent("loop", sub_agents=[_Say("a"), _Say("b")], max_iterations=n)).query("go"))
    assert len(events) == 2 * n
    assert rewritten == []  # was n^2 (40,000): every child's history, rebuilt and never read


def test_a_loop_child_reading_its_input_late_sees_the_history_as_it_started() -> None:
    inputs: list[AgentInput] = []

    class Keeper(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            inputs.append(input)  # read only after the whole loop has run
            yield event_from_message(Message.assistant(f"{self.name}{len(inputs)}"))

    loop = LoopAgent("loop", sub_agents=[Keeper("k"), _Say("s")], max_iterations=3)
    assert len(list(Runner(loop).query("go"))) == 6
    seen = [[m.content for m in i.messages] for i in inputs]
    assert seen == [
        ["go"],
        ["go", "k1", "For context: [s] said: s."],
        ["go", "k1", "For context: [s] said: s.", "k2", "For context: [s] said: s."],
    ]
    assert inputs[0] == AgentInput([Message.user("go")]) and "go" in repr(inputs[0])


def test_an_agent_input_keeps_the_dataclass_api_it_had_deferred_or_not() -> None:
    """AgentInput was a dataclass: ``dataclasses.replace`` (a before_agent callback returning a
    changed input), ``asdict`` and ``is_dataclass`` still work, on a loop child's deferred input
    too (built when read). Before: TypeError 'replace() should be called on dataclass instances'."""
    import copy
    import dataclasses
    import pickle

    inputs: list[AgentInput] = []

    class Keeper(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            inputs.append(input)
            yield event_from_message(Message.assistant(self.name))

    list(Runner(LoopAgent("loop", sub_agents=[Keeper("k"), _Say("s")], max_iterations=2)).query("go"))
    deferred = inputs[1]
    assert dataclasses.is_dataclass(deferred) and [f.name for f in dataclasses.fields(AgentInput)] == [
        "messages",
        "enable_streaming",
    ]
    changed = dataclasses.replace(deferred, enable_streaming=True)
    assert type(changed) is AgentInput and changed.enable_streaming and changed.messages == deferred.messages
    assert [m.content for m in changed.messages] == ["go", "k", "For context: [s] said: s."]
    assert dataclasses.replace(deferred, messages=[Message.user("x")]).messages == [Message.user("x")]
    assert dataclasses.asdict(AgentInput([Message.user("q")])) == {
        "messages": [Message.user("q")],
        "enable_streaming": False,
    }
    assert copy.copy(deferred) == deferred == pickle.loads(pickle.dumps(deferred))
