"""The client side: start a run as a workflow, read its events while it runs, resume it.

Events are read with the workflow's ``events`` query, polled: each poll returns what came
since the last one, so a consumer that disconnects resumes from the index it got to.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle, WorkflowHistoryEventFilterType

from rillet._native import Message
from rillet.checkpoint.payload import records_to_events
from rillet.data import codec
from rillet.data.events import AgentEvent
from rillet.temporal.workflow import WORKFLOW_NAME

__all__ = ["answer", "events", "pending_interrupts", "resume", "start_run"]


async def start_run(
    client: Client,
    agent: str,
    messages: Iterable[Message],
    *,
    id: str,
    task_queue: str,
    history_limit: int = 10_000,
) -> WorkflowHandle[Any, bytes]:
    """Starts the agent registered as ``agent`` on ``messages``, as the workflow ``id``. It
    continues as new before its history reaches ``history_limit`` events (or Temporal
    suggests it)."""
    request = codec.encode(
        {"agent": agent, "task_queue": task_queue, "messages": list(messages), "history_limit": history_limit}
    )
    return await client.start_workflow(WORKFLOW_NAME, request, id=id, task_queue=task_queue, result_type=bytes)


async def events(handle: WorkflowHandle[Any, Any], after: int = 0, poll: float = 0.2) -> AsyncIterator[AgentEvent]:
    """The run's events from index ``after`` as it makes them, until it ends. It follows the
    workflow from run to run across continue-as-new, reading each run's last events from the
    closed run (a query Temporal answers by replaying it). Reconnect with ``after`` = the
    number of events already read and ``handle`` for the workflow id (any run of it)."""
    client, run_id = _client_of(handle), handle.run_id
    if run_id is None:
        run_id = (await client.get_workflow_handle(handle.id).describe()).run_id
    while True:
        run = client.get_workflow_handle(handle.id, run_id=run_id)
        status = (await run.describe()).status  # read before the query: a run closed then is read whole
        start, records = codec.decode(await run.query("events", after, result_type=bytes))
        if start > after:
            raise RuntimeError(f"events {after}..{start - 1} are not in this run; pass the first run's handle")
        for ev in records_to_events([codec.decode(r) for r in records]):
            yield ev
        after = start + len(records)
        if status == WorkflowExecutionStatus.CONTINUED_AS_NEW:
            run_id = await _next_run(run)
        elif status != WorkflowExecutionStatus.RUNNING:
            return
        else:
            await asyncio.sleep(poll)


def _client_of(handle: WorkflowHandle[Any, Any]) -> Client:
    # temporalio keeps a handle's client private; a handle is what users hold, and following
    # the workflow from run to run needs handles for other runs
    client: Client = handle._client
    return client


async def _next_run(run: WorkflowHandle[Any, Any]) -> str:
    """The id of the run that ``run`` continued as."""
    async for e in run.fetch_history_events(event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT):
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            return e.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    raise RuntimeError(f"workflow {run.id} run {run.run_id} did not continue as new")


async def pending_interrupts(handle: WorkflowHandle[Any, Any]) -> list[tuple[str, Any]]:
    """The interrupts the run waits on, ``[(id, info)]``; empty while it is not waiting."""
    return [(i, info) for i, info in codec.decode(await handle.query("interrupts", result_type=bytes))]


async def resume(handle: WorkflowHandle[Any, Any], targets: Mapping[str, Any]) -> None:
    """Resumes the interrupted run with ``targets`` ({interrupt id: data}); raises if it is
    not waiting or an id is not one of its pending interrupts."""
    if not isinstance(targets, Mapping):
        raise TypeError(f"resume(targets): expected a dict {{interrupt id: data}}, got {type(targets).__name__}")
    await handle.execute_update("resume", codec.encode(dict(targets)))


async def answer(handle: WorkflowHandle[Any, Any]) -> str | None:
    """Waits for the run to end and returns its answer (the last assistant text)."""
    result = codec.decode(await handle.result())  # follows the runs it continued as
    text: str | None = result["answer"]
    return text
