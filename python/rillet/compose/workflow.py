"""Workflow agents: Sequential, Loop and Parallel (Eino's ``workflow.go``, ADK's workflow agents).

Children are not called with the workflow's input: each rebuilds its input from the run's
root input and the recorded events (other agents' messages as ``For context:`` user
messages). Children may not transfer to the workflow.

* An error event from a child is forwarded and stops Sequential and Loop.
* Exit (the child's last action) stops Sequential and Loop.
* BreakLoop ends the nearest Loop after the current child; the loop marks it ``done`` so an
  enclosing loop carries on.
* The run path accumulates finished children (``[seq, a, b]`` for the second child) while
  the interrupt address does not (``agent:seq, agent:b``).
* Parallel runs its children at once, each in its own lane: a child sees the events recorded
  before the workflow started and its own, never a sibling's; the lanes are joined in
  recording order when all children have finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rillet._core.address import agent_segment
from rillet._core.loop import Inbox, child_task
from rillet._core.scope import current_resume
from rillet.checkpoint.payload import events_to_records, records_to_events
from rillet.checkpoint.state import checkpoint_state, saved_state
from rillet.data.events import AgentEvent, RunPath, RunStep, extend_path, interrupt_signal
from rillet.data.run_config import BUDGET
from rillet.errors import LiveNotSupportedError
from rillet.flow import FlowAgent, OnSubAgents, adopt, flow_of, with_disallow_transfer_to_parent
from rillet.live import LiveAgent, LiveContext
from rillet.run.agent import Agent, AgentCallback, AgentInput, BaseAgent
from rillet.run.context import RunContext, Session, current_run
from rillet.run.interrupts import composite_interrupt_event
from rillet.tools import BaseTool, ToolInfo

__all__ = ["LoopAgent", "ParallelAgent", "SequentialAgent", "WorkflowAgent"]


# --- what each workflow saves when a child interrupts (docs/checkpoint-format.md) -----------


@checkpoint_state("rillet.sequential")
@dataclass(frozen=True, slots=True)
class SequentialState:
    """A SequentialAgent resumes at the child at ``index``."""

    LEGACY_KIND = "rillet.sequential"

    index: int

    @classmethod
    def from_legacy(cls, saved: dict[str, Any]) -> SequentialState:
        return cls(int(saved["index"]))


@checkpoint_state("rillet.loop")
@dataclass(frozen=True, slots=True)
class LoopState:
    """A LoopAgent resumes in round ``iteration`` (0 = the first) at the child at ``index``."""

    LEGACY_KIND = "rillet.loop"

    iteration: int
    index: int

    @classmethod
    def from_legacy(cls, saved: dict[str, Any]) -> LoopState:
        return cls(int(saved["iteration"]), int(saved["index"]))


@checkpoint_state("rillet.parallel")
@dataclass(frozen=True, slots=True)
class ParallelState:
    """A ParallelAgent keeps each lane's events (records, by lane) and where each of them
    stood in the recording order of all lanes (``order``; None in checkpoints written before
    it was kept), so the resumed lanes join in the order they were recorded."""

    LEGACY_KIND = "rillet.parallel"

    lanes: tuple[list[Any], ...]
    order: tuple[list[int], ...] | None = None

    @classmethod
    def from_legacy(cls, saved: dict[str, Any]) -> ParallelState:
        lanes, order = saved["lanes"], saved.get("order")
        n = len(lanes)
        return cls(
            tuple(lanes[str(i)] for i in range(n)),
            tuple(order[str(i)] for i in range(n)) if order is not None else None,
        )


class WorkflowAgent(BaseAgent):
    """The base of the workflow agents: a name, a description and the children (everything
    after ``name`` by keyword: ``SequentialAgent("seq", sub_agents=[a, b])``)."""

    records_own_events = True  # each child records its events in the session itself
    _children_fixed = True  # given as sub_agents=[...] when made

    def __init__(
        self,
        name: str,
        *,
        description: str = "",
        sub_agents: Sequence[Agent] = (),
        before_agent_callbacks: AgentCallback | Iterable[AgentCallback] = (),
        after_agent_callbacks: AgentCallback | Iterable[AgentCallback] = (),
    ) -> None:
        super().__init__(
            name,
            description,
            before_agent_callbacks=before_agent_callbacks,
            after_agent_callbacks=after_agent_callbacks,
        )
        kind = type(self).__name__
        if not isinstance(name, str) or not isinstance(description, str):
            raise TypeError(
                f"{kind}(name, description=..., sub_agents=...): name and description must be str "
                f"(got {type(name).__name__} and {type(description).__name__}); pass the agents as sub_agents=[...]"
            )
        if not sub_agents:
            raise ValueError(f"{kind} {name!r}: sub_agents is empty; give it at least one agent")
        self._children: list[FlowAgent] = []
        names: set[str] = set()
        for a in sub_agents:
            if not (callable(getattr(a, "run", None)) and isinstance(getattr(a, "name", None), str)):
                raise TypeError(f"{kind} {name!r}: sub_agents must be agents, got {type(a).__name__}")
            flow = flow_of(a)  # keeps sub-agents set on `a` before
            if flow.name in names:
                raise ValueError(f"{kind} {name!r}: two sub-agents are named {flow.name!r}")
            adopt(flow.agent, self, f"{kind} {name!r}")
            if flow.parent is not None:
                raise ValueError(f"{kind} {name!r}: {flow.name!r} already has a parent, {flow.parent.name!r}")
            names.add(flow.name)
            self._children.append(with_disallow_transfer_to_parent(flow))
            if isinstance(flow.agent, OnSubAgents):
                flow.agent.on_disallow_transfer_to_parent()

    def _context(self) -> RunContext | None:
        """The workflow's own run context (set by its flow wrapper), or None when it was
        run directly (then it wraps itself)."""
        run = current_run()
        if run is None or not run.run_path or run.run_path[-1].agent_name != self.name:
            return None
        return run

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        run = self._context()
        if run is None:  # run directly, not through a Runner: give it its place first
            async for ev in FlowAgent(self).events(input, **options):
                yield ev
            return
        async for ev in self._steps(run, **options):
            yield ev

    def _steps(self, run: RunContext, **options: Any) -> AsyncIterator[AgentEvent]:
        raise NotImplementedError


def _run_child(child: FlowAgent, run: RunContext, path: RunPath, **options: Any) -> AsyncIterator[AgentEvent]:
    """One child's events, under the workflow's address with run path ``path``."""
    return child.events_in(RunContext(run.session, path, run.address, run.root_input), None, **options)


class _Outcome:
    __slots__ = ("interrupt", "stop")

    def __init__(self) -> None:
        self.stop = False
        self.interrupt: AgentEvent | None = None


async def _sequence_child(
    child: FlowAgent, run: RunContext, path: RunPath, outcome: _Outcome, **options: Any
) -> AsyncIterator[AgentEvent]:
    """A child's events with Sequential's rules: events with an action are held back by one,
    so the child's last action can be judged after it ends; an error, or the invocation's
    end, stops the workflow."""
    held: AgentEvent | None = None
    async for ev in _run_child(child, run, path, **options):
        if ev.error is not None:
            outcome.stop = True
        if ev.action is not None:
            if held is not None:
                yield held
            held = ev
            continue
        if held is not None:
            yield held
            held = None
        yield ev
    budget = BUDGET.get()
    if budget is not None and budget.ended is not None:  # end_invocation: no further child runs
        outcome.stop = True
    if held is not None:
        action = held.action
        if action is not None and interrupt_signal(action) is not None:
            outcome.stop = True
            outcome.interrupt = held  # the workflow wraps it in its own interrupt
            return
        if action is not None and action.exit:
            outcome.stop = True
        yield held


def _wrap_interrupt(child_event: AgentEvent, state: SequentialState | LoopState) -> AgentEvent:
    """The workflow's interrupt around a child's: saves where to resume, keeps the child's
    agent name and run path (Eino's composite workflow interrupt)."""
    action = child_event.action
    signal = interrupt_signal(action) if action is not None else None
    assert action is not None and signal is not None
    data = action.interrupted.data if action.interrupted is not None else None
    ev = composite_interrupt_event(data, state, signal)
    ev.agent_name, ev.run_path = child_event.agent_name, child_event.run_path
    return ev


S = TypeVar("S")


def _saved(run: RunContext, cls: type[S]) -> S | None:
    """This workflow's own saved state when the run resumes it."""
    return saved_state(run.point.state, cls) if run.point.was_interrupted else None


class SequentialAgent(WorkflowAgent):
    """Runs its children one after another. Live (:meth:`run_live`), it hands the session to
    each child in turn: a child's turn ends when its model calls ``task_completed``."""

    def run_live(self, input: AgentInput, live: LiveContext, **options: Any) -> AsyncIterator[AgentEvent]:
        """The children's live runs in order, over the same requests and history (ADK's
        live SequentialAgent); raises :class:`~rillet.errors.LiveNotSupportedError` at once
        when a child cannot run live. The session closing ends the sequence."""
        kids = [c.agent for c in self._children]
        base = RunPath((*live.run_path, RunStep(self.name)))
        runs: list[tuple[LiveContext, AsyncIterator[AgentEvent]]] = []
        extra = (*live.extra_tools, TaskCompletedTool())
        for kid in kids:
            if not isinstance(kid, LiveAgent):
                raise LiveNotSupportedError(
                    f"SequentialAgent {self.name!r}: sub-agent {kid.name!r} ({type(kid).__name__}) cannot run live; "
                    "use ChatModelAgents with live_model=... (or agents with run_live, see rillet.live.LiveAgent)"
                )
            child = LiveContext(live.requests, live.history, base, extra)
            runs.append((child, kid.run_live(input, child, **options)))  # raises now if it cannot
            base = extend_path(base, RunStep(kid.name))
        return self._live(live, runs)

    @staticmethod
    async def _live(
        live: LiveContext, runs: list[tuple[LiveContext, AsyncIterator[AgentEvent]]]
    ) -> AsyncIterator[AgentEvent]:
        try:
            for child, events in runs:
                async for ev in events:
                    yield ev
                if child.closed:
                    live.closed = True
                    return
        finally:
            for _, events in runs:
                await events.aclose()  # type: ignore[attr-defined]

    async def _steps(self, run: RunContext, **options: Any) -> AsyncIterator[AgentEvent]:
        saved = _saved(run, SequentialState)
        start = saved.index if saved is not None else 0
        path = run.run_path + [RunStep(c.name) for c in self._children[:start]]
        for i in range(start, len(self._children)):
            child = self._children[i]
            outcome = _Outcome()
            async for ev in _sequence_child(child, run, path, outcome, **options):
                yield ev
            if outcome.interrupt is not None:
                yield _wrap_interrupt(outcome.interrupt, SequentialState(i))
            if outcome.stop:
                return
            path = path + (RunStep(child.name),)


class TaskCompletedTool(BaseTool):
    """The tool a live SequentialAgent offers each child: calling it ends the child's turn,
    and the next child takes the session (``ends_live_agent``)."""

    ends_live_agent = True

    def __init__(self) -> None:
        self.info = ToolInfo(
            "task_completed",
            "Signals that you have completed the user's question or task, so the next agent takes over.",
            {"type": "object", "properties": {}},
        )

    async def invoke(self, arguments: str) -> str:
        return "Task completed."


class LoopAgent(WorkflowAgent):
    """Runs its children in order, again and again: ``max_iterations`` rounds (0: until a
    child breaks the loop, exits or fails)."""

    def __init__(
        self,
        name: str,
        *,
        description: str = "",
        sub_agents: Sequence[Agent] = (),
        max_iterations: int = 0,
        before_agent_callbacks: AgentCallback | Iterable[AgentCallback] = (),
        after_agent_callbacks: AgentCallback | Iterable[AgentCallback] = (),
    ) -> None:
        super().__init__(
            name,
            description=description,
            sub_agents=sub_agents,
            before_agent_callbacks=before_agent_callbacks,
            after_agent_callbacks=after_agent_callbacks,
        )
        if not isinstance(max_iterations, int) or isinstance(max_iterations, bool):
            raise TypeError(
                f"LoopAgent {name!r}: max_iterations must be an int (0 means no limit), got {max_iterations!r}"
            )
        if max_iterations < 0:
            raise ValueError(
                f"LoopAgent {name!r}: max_iterations must be >= 0 (0 means no limit), got {max_iterations}"
            )
        self.max_iterations = max_iterations

    async def _steps(self, run: RunContext, **options: Any) -> AsyncIterator[AgentEvent]:
        saved = _saved(run, LoopState)
        i, start = (saved.iteration, saved.index) if saved is not None else (0, 0)
        names = [RunStep(c.name) for c in self._children]
        path = run.run_path + names * i + names[:start]  # shared: O(1) a step from here on
        while self.max_iterations == 0 or i < self.max_iterations:
            for j in range(start, len(self._children)):
                child = self._children[j]
                outcome = _Outcome()
                broke = False
                async for ev in _sequence_child(child, run, path, outcome, **options):
                    brk = ev.action.break_loop if ev.action is not None else None
                    if brk is not None and not brk.done:
                        brk.done = True  # the nearest loop acts on it; outer loops carry on
                        brk.current_iterations = i
                        broke = True
                    yield ev
                if outcome.interrupt is not None:
                    yield _wrap_interrupt(outcome.interrupt, LoopState(i, j))
                if outcome.stop or broke:
                    return
                path = path + (names[j],)
            start = 0
            i += 1


class ParallelAgent(WorkflowAgent):
    """Runs its children at the same time, each in its own lane of the session. Interrupts of
    children are gathered into one interrupt of the workflow; resuming it reruns only the
    interrupted children."""

    async def _steps(self, run: RunContext, **options: Any) -> AsyncIterator[AgentEvent]:
        saved = _saved(run, ParallelState)
        lanes = [run.session.lane(f"{self.name}.{c.name}") for c in self._children]
        base = len(lanes[0].events)
        todo = list(range(len(self._children)))
        if saved is not None:
            resume = current_resume()
            wanted = resume.next_points(run.address) if resume is not None else []
            todo = [i for i, c in enumerate(self._children) if agent_segment(c.name) in wanted]
            places = saved.order
            first = time.monotonic_ns() - sum(len(records) for records in saved.lanes)
            for i, records in enumerate(saved.lanes):
                stamps = [first + p for p in places[i]] if places is not None else None
                lanes[i].restore(records_to_events(records), stamps)  # in the order they were recorded
        queue: Inbox[tuple[int, AgentEvent | BaseException | None]] = Inbox()

        async def pump(i: int) -> None:
            lane_run = RunContext(lanes[i], run.run_path, run.address, run.root_input)
            try:
                async for ev in _run_child(self._children[i], lane_run, lane_run.run_path, **options):
                    queue.put_nowait((i, ev))
            except BaseException as e:
                queue.put_nowait((i, e))
                raise
            finally:
                queue.put_nowait((i, None))

        tasks = [child_task(pump(i)) for i in todo]
        interrupted: list[AgentEvent] = []
        try:
            running = len(tasks)
            while running:
                _, item = await queue.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    raise item
                elif item.action is not None and interrupt_signal(item.action) is not None:
                    interrupted.append(item)  # gathered into the workflow's interrupt below
                else:
                    yield item
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if interrupted:
            state = ParallelState(
                tuple([await events_to_records(lane.events[base:]) for lane in lanes]),
                tuple(Session.order(lanes, base)),
            )
            signals = [
                s for ev in interrupted if ev.action is not None and (s := interrupt_signal(ev.action)) is not None
            ]
            data = {
                ev.agent_name: ev.action.interrupted.data for ev in interrupted if ev.action and ev.action.interrupted
            }
            out = composite_interrupt_event(data, state, *signals)
            out.agent_name, out.run_path = self.name, run.run_path
            yield out
            return
        run.session.join(lanes, base)
