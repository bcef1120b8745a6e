"""The workflow: one rillet run, from its first event to its answer, across interrupts.

It builds the agent (see :mod:`rillet.temporal.worker`) and runs it with a Runner on the
workflow's own event loop, which is deterministic: model and tool calls wrapped by
:mod:`rillet.temporal.proxies` are activities, interrupt ids come from the workflow's
seeded UUIDs, and the checkpoint lives in an async in-memory store (no threads). So a worker
that replays the history (after another one died) gets the same run, taking every finished
call's result from the history.

At an interrupt it waits for the ``resume`` update, which carries the resume targets; it
continues as new (the checkpoint's bytes as the new run's input) when the history is long.
Its events are kept, encoded, and read by the ``events`` query while it runs.

The module is imported again inside Temporal's sandbox for each run: rillet is passed
through (the same modules, with the native extension), nothing here runs at import.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from rillet.checkpoint.payload import events_to_records
    from rillet.data import codec
    from rillet.data.events import AgentEvent
    from rillet.run.interrupts import ID_SOURCE
    from rillet.runner import Runner
    from rillet.temporal.proxies import CONTINUE_AS_NEW, current_agent, history_limit
    from rillet.temporal.registry import agent_for

__all__ = ["RunnerWorkflow"]

WORKFLOW_NAME = "rillet.Runner"
_ID = "run"  # the checkpoint's id in the run's own store


class _Store:
    """The run's checkpoint, in memory, with async methods: the Runner awaits them on the
    workflow's loop (a plain store's methods would run on threads, which a workflow cannot)."""

    def __init__(self, data: bytes | None) -> None:
        self.data = data

    async def get(self, checkpoint_id: str) -> bytes | None:
        return self.data

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        self.data = data

    async def delete(self, checkpoint_id: str) -> None:
        self.data = None


@workflow.defn(name=WORKFLOW_NAME)
class RunnerWorkflow:
    """Input and output are :mod:`rillet.codec` bytes. The input is a dict with ``agent``
    (the factory's name), ``task_queue`` (whose workers know the agent by that name: a
    replay elsewhere, as in Temporal's Replayer, looks it up there too), ``messages`` and
    ``history_limit``; after a continue-as-new, ``checkpoint``, ``targets`` and ``seen``
    (the events of the runs before). The result is a dict with ``answer`` (the last
    assistant text) and ``events`` (how many the workflow made)."""

    def __init__(self) -> None:
        self._events: list[bytes] = []  # one codec record each
        self._seen = 0  # events of the runs this one continues
        self._pending: list[tuple[str, Any]] = []  # the interrupts waiting for a resume: (id, info)
        self._targets: dict[str, Any] | None = None

    @workflow.run
    async def run(self, request: bytes) -> bytes:
        req = codec.decode(request)
        self._seen = int(req.get("seen", 0))
        history_limit.set(int(req.get("history_limit", 10_000)))
        ID_SOURCE.set(lambda: str(workflow.uuid4()))  # the Runner copies this context
        current_agent.set(req["agent"])
        store = _Store(req.get("checkpoint"))
        runner = Runner(agent_for(req["task_queue"], req["agent"]), checkpoint_store=store)
        if store.data is None:
            events = runner.run(req["messages"], checkpoint_id=_ID)
        else:
            events = await runner.aresume(_ID, targets=req.get("targets"))
        answer: str | None = None
        while True:
            interrupted: list[tuple[str, Any]] = []
            async for ev in events:
                answer = await self._record(ev, answer, interrupted)
            if not interrupted:
                return codec.encode({"answer": answer, "events": self._seen + len(self._events)})
            targets = {i: None for i, info in interrupted if info == CONTINUE_AS_NEW}
            self._pending = [(i, info) for i, info in interrupted if info != CONTINUE_AS_NEW]
            if self._pending:
                await workflow.wait_condition(lambda: self._targets is not None)
                assert self._targets is not None
                targets.update(self._targets)
                self._pending, self._targets = [], None
            if _history_is_long():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    codec.encode(
                        {
                            "agent": req["agent"],
                            "task_queue": req["task_queue"],
                            "checkpoint": store.data,
                            "targets": targets,
                            "seen": self._seen + len(self._events),
                            "history_limit": history_limit.get(),
                        }
                    )
                )
            events = await runner.aresume(_ID, targets=targets)

    async def _record(self, ev: AgentEvent, answer: str | None, interrupted: list[tuple[str, Any]]) -> str | None:
        """Keeps ``ev`` for the ``events`` query (a continue-as-new interrupt is the workflow's
        own business: not kept); returns the answer so far."""
        act = ev.action
        if act is not None and act.interrupted is not None:
            ctxs = [c for c in act.interrupted.interrupt_contexts if c.is_root_cause]
            interrupted.extend((c.id, c.info) for c in ctxs)
            if all(c.info == CONTINUE_AS_NEW for c in ctxs):
                return answer
        self._events.append(codec.encode((await events_to_records([ev]))[0]))
        if ev.error is not None:
            raise ApplicationError(f"the run failed: {ev.error}", type=type(ev.error).__name__, non_retryable=True)
        mv = ev.output.message_output if ev.output is not None else None
        msg = mv.message if mv is not None else None
        if msg is not None and mv is not None and mv.role == "assistant" and not msg.tool_calls:
            return msg.content
        return answer

    @workflow.query(name="events")
    def events(self, after: int) -> bytes:
        """The run's events from index ``after`` (counted from the first run, across
        continue-as-new), as a codec list of event records."""
        start = max(after - self._seen, 0)
        return codec.encode([self._seen + start, self._events[start:]])

    @workflow.query(name="interrupts")
    def interrupts(self) -> bytes:
        """The interrupts waiting for a resume, as a codec list of ``[id, info]``."""
        return codec.encode([list(p) for p in self._pending])

    @workflow.update(name="resume")
    def resume(self, targets: bytes) -> None:
        """Resumes the interrupted run with ``targets`` (codec bytes of ``{interrupt id: data}``)."""
        self._targets = codec.decode(targets)

    @resume.validator
    def _check_resume(self, targets: bytes) -> None:
        wanted = codec.decode(targets)
        if not self._pending or self._targets is not None:
            raise ApplicationError("the run is not waiting for a resume (no interrupt is pending)")
        if not isinstance(wanted, dict):
            raise ApplicationError(f"resume targets must be a dict {{interrupt id: data}}, got {type(wanted).__name__}")
        known = {i for i, _ in self._pending}
        unknown = sorted(set(wanted) - known)
        if unknown:
            raise ApplicationError(f"resume targets {unknown} are not pending interrupts; they are {sorted(known)}")


def _history_is_long() -> bool:
    info = workflow.info()
    return info.is_continue_as_new_suggested() or info.get_current_history_length() >= history_limit.get()
