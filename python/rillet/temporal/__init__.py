"""rillet on Temporal (``pip install 'rillet[temporal]'``): a Runner run as a Temporal
workflow, so a run outlives its worker. See docs/temporal.md.

Wrap what does I/O: ``activity_model(model)`` and ``activity_tool(tool)`` make each call an
activity (retried, with a timeout); the rest of the agent runs in the workflow. Serve agents
with :func:`rillet_worker`, start runs with :func:`start_run`, read their events with
:func:`events`, resume interrupts with :func:`resume`.

Layer: integrations, each independent of the others. May import rillet.runner, rillet.prebuilt,
rillet.middlewares and the layers under them (the import-linter contract in pyproject.toml;
docs/architecture.md).
"""

from __future__ import annotations

try:
    import temporalio  # noqa: F401  (the extra this package needs, checked first for a clear error)
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("rillet.temporal needs temporalio: pip install 'rillet[temporal]'") from e

from rillet.temporal.client import answer, events, pending_interrupts, resume, start_run
from rillet.temporal.proxies import (
    CONTINUE_AS_NEW,
    ActivityModel,
    ActivityOptions,
    ActivityTool,
    activity_model,
    activity_tool,
)
from rillet.temporal.registry import AgentFactory
from rillet.temporal.worker import rillet_worker
from rillet.temporal.workflow import RunnerWorkflow

__all__ = [
    "CONTINUE_AS_NEW",
    "ActivityModel",
    "ActivityOptions",
    "ActivityTool",
    "AgentFactory",
    "RunnerWorkflow",
    "activity_model",
    "activity_tool",
    "answer",
    "events",
    "pending_interrupts",
    "resume",
    "rillet_worker",
    "start_run",
]
