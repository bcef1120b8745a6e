"""A Temporal worker that runs rillet agents: the workflow and the two activities, with the
agents it knows by name.

An agent is given as a factory (a function returning a fresh agent): the workflow builds
its own agent tree for each run, inside the workflow, and the worker builds each agent once
more, outside, to find the models and tools its activities call by key.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from rillet.data import codec
from rillet.errors import ToolArgumentsError
from rillet.temporal.proxies import COLLECTING, MODEL_ACTIVITY, TOOL_ACTIVITY, infos_of
from rillet.temporal.registry import AgentFactory, register
from rillet.temporal.workflow import RunnerWorkflow
from rillet.tools import BaseTool, build_schemas

__all__ = ["rillet_worker", "sandbox_runner"]


class _Calls:
    """The activities: each model or tool call, found by its key among the wrapped objects of
    the worker's agents (built once, on the first call)."""

    def __init__(self, factories: Mapping[str, AgentFactory]) -> None:
        self._factories = dict(factories)
        self._targets: dict[str, dict[str, Any]] | None = None

    def build(self) -> dict[str, dict[str, Any]]:
        """Builds every agent once, collecting the models and tools each wraps by key."""
        if self._targets is None:
            self._targets = {}
            for name, factory in self._factories.items():
                found: dict[str, Any] = {}
                token = COLLECTING.set(found)
                try:
                    agent = factory()
                finally:
                    COLLECTING.reset(token)
                self._targets[name] = found
                # here too: function tools build their schemas on first use, which in the
                # sandbox would import the parts of pydantic it cannot import
                tools = [*(t for t in found.values() if isinstance(t, BaseTool)), *getattr(agent, "tools", ())]
                build_schemas(t.info for t in tools)
        return self._targets

    def _target(self, agent: str, key: str) -> Any:
        targets = self.build().get(agent, {})
        if key not in targets:
            raise ApplicationError(
                f"agent {agent!r} of this worker wraps no model or tool {key!r} (it wraps {sorted(targets)})",
                non_retryable=True,
            )
        return targets[key]

    @activity.defn(name=MODEL_ACTIVITY)
    async def model(self, agent: str, key: str, request: bytes) -> bytes:
        req = codec.decode(request)
        model = self._target(agent, key)
        reply = await model.generate(req["messages"], tools=infos_of(req["tools"]), **req["options"])
        return codec.encode(reply)

    @activity.defn(name=TOOL_ACTIVITY)
    async def tool(self, agent: str, key: str, arguments: str) -> str:
        try:
            result: str = await self._target(agent, key).invoke(arguments)
        except ToolArgumentsError as e:  # the model's mistake: no retry, and the model is told
            raise ApplicationError(
                str(e), e.tool_name, list(e.problems), type="ToolArgumentsError", non_retryable=True
            ) from e
        return result


_WORKFLOW_MODULE = "rillet.temporal.workflow"


def _rillet_modules() -> list[str]:
    """Every module of rillet (found on disk, none imported) but the workflow module and its
    package, which the sandbox must import afresh for each run."""
    names: list[str] = []

    def walk(path: Path, prefix: str) -> None:
        for m in pkgutil.iter_modules([str(path)], prefix):
            names.append(m.name)
            if m.ispkg:
                walk(path / m.name.rpartition(".")[2], m.name + ".")

    walk(Path(__file__).resolve().parent.parent, "rillet.")
    return [n for n in names if n not in ("rillet.temporal", _WORKFLOW_MODULE)]


def sandbox_runner(passthrough: Iterable[str] = ()) -> SandboxedWorkflowRunner:
    """Temporal's sandbox, with rillet's modules passed through (the same modules as the
    worker's, with the native extension; the ones rillet imports on first use too), and
    pydantic, which function tools build their schemas with. ``passthrough`` adds modules
    your agent factories import on first use."""
    modules = [*_rillet_modules(), "pydantic", "pydantic_core", *passthrough]
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules(*modules))


def rillet_worker(
    client: Client,
    task_queue: str,
    agents: Mapping[str, AgentFactory],
    *,
    passthrough: Iterable[str] = (),
    **options: Any,
) -> Worker:
    """A Temporal ``Worker`` on ``task_queue`` that runs :class:`RunnerWorkflow` for
    ``agents`` (name -> factory) and the model and tool activities of their wrapped calls.
    ``passthrough`` names modules the factories import on first use (see
    :func:`sandbox_runner`); ``options`` go to ``Worker`` (``max_concurrent_activities=...``).

    Workflow activations run on one thread (``workflow_task_executor``; workflow code is light:
    the model and tool calls run as activities, on the worker's own event loop). Any other
    executor works too, Temporal's ``Replayer`` with its default pool included: rillet's
    wakeups made on a workflow's loop are plain callbacks of that loop whichever thread its
    turn runs on (the loop has no ``call_soon_threadsafe``), so a replay wakes the run's tasks
    in the same order."""
    if not agents:
        raise ValueError("rillet_worker(agents=...): give at least one agent factory, {name: factory}")
    register(task_queue, dict(agents))
    calls = _Calls(agents)
    calls.build()  # here, outside the sandbox: what the factories import on first use is then loaded
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[RunnerWorkflow],
        activities=[calls.model, calls.tool],
        workflow_runner=sandbox_runner(passthrough),
        workflow_task_executor=options.pop(
            "workflow_task_executor", ThreadPoolExecutor(max_workers=1, thread_name_prefix="rillet-workflows")
        ),
        **options,
    )
