"""The seam between an agent and Temporal: a ChatModel and a tool whose calls, inside a
workflow, are Temporal activities, and outside one call the wrapped model or tool directly.

The agent code (ChatModelAgent, wrappers such as ``requires_approval``, the Runner) runs in
the workflow, where it must be deterministic; only the wrapped model and tool calls do I/O,
so only they become activities. A replayed workflow takes their results from its history
instead of calling them again.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from rillet._native import Message, StreamReader, stream_from_list
from rillet.data import codec
from rillet.errors import ToolArgumentsError
from rillet.run.interrupts import get_resume_context, interrupt
from rillet.tools import BaseTool, ToolInfo, as_tool

__all__ = ["ActivityModel", "ActivityOptions", "ActivityTool", "CONTINUE_AS_NEW", "activity_model", "activity_tool"]

MODEL_ACTIVITY = "rillet.model"
TOOL_ACTIVITY = "rillet.tool"
CONTINUE_AS_NEW = "rillet.temporal: continue-as-new"
"""The info of the interrupt a tool call raises to let its workflow continue as new first."""


@dataclass(frozen=True)
class ActivityOptions:
    """How Temporal runs one kind of call: its timeout per attempt and its retries
    (``RetryPolicy(maximum_attempts=1)`` for a call that must never run twice)."""

    start_to_close_timeout: timedelta = timedelta(minutes=5)
    retry_policy: RetryPolicy = field(default_factory=lambda: RetryPolicy(maximum_attempts=3))
    heartbeat_timeout: timedelta | None = None


# Set while a worker builds its agents, to learn which model and tool each key names.
COLLECTING: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("rillet_temporal_keys", default=None)


# The name of the agent the workflow runs (its factory's), sent with each call: keys are per agent.
current_agent: contextvars.ContextVar[str] = contextvars.ContextVar("rillet_temporal_agent", default="")


def _same(a: Any, b: Any) -> bool:
    return a is b or (getattr(a, "fn", a) is getattr(b, "fn", b) and type(a) is type(b))


def _register(key: str, target: Any) -> None:
    seen = COLLECTING.get()
    if seen is None:
        return
    if key in seen and not _same(seen[key], target):
        raise ValueError(
            f"one agent wraps two different objects under the key {key!r}; give each its own name= "
            "(activity_model(model, name=...) / activity_tool(tool, name=...))"
        )
    seen[key] = target


def _infos_record(tools: Sequence[ToolInfo] | None) -> list[list[Any]] | None:
    return None if tools is None else [[t.name, t.description, t.parameters] for t in tools]


def infos_of(record: list[list[Any]] | None) -> list[ToolInfo] | None:
    return None if record is None else [ToolInfo(n, d, p) for n, d, p in record]


def _arguments_error(e: ActivityError) -> ToolArgumentsError | None:
    """The tool's own ToolArgumentsError, carried back by its activity, so the model is told
    what was wrong with its arguments as it would be without Temporal."""
    cause = e.cause
    if isinstance(cause, ApplicationError) and cause.type == "ToolArgumentsError" and len(cause.details) == 2:
        name, problems = cause.details
        return ToolArgumentsError(str(name), [str(p) for p in problems])
    return None


class ActivityModel:
    """A ChatModel whose ``generate`` is the ``rillet.model`` activity inside a workflow
    (``stream`` too: the reply comes whole, as one chunk). ``key`` names it to the worker,
    which finds the wrapped model by it when it builds the agent."""

    def __init__(self, model: Any, *, name: str | None = None, options: ActivityOptions | None = None) -> None:
        if not (callable(getattr(model, "generate", None)) and callable(getattr(model, "stream", None))):
            raise TypeError(f"activity_model(model): expected a ChatModel, got {type(model).__name__}")
        self.model = model
        self.key = f"model:{name or type(model).__name__}"
        self.options = options or ActivityOptions(timedelta(minutes=2), RetryPolicy(maximum_attempts=5))
        _register(self.key, model)

    async def generate(
        self, messages: list[Message], *, tools: Sequence[ToolInfo] | None = None, **options: Any
    ) -> Message:
        if not workflow.in_workflow():
            reply: Message = await self.model.generate(messages, tools=tools, **options)
            return reply
        request = codec.encode({"messages": list(messages), "tools": _infos_record(tools), "options": options})
        data = await workflow.execute_activity(
            MODEL_ACTIVITY,
            args=[current_agent.get(), self.key, request],
            result_type=bytes,
            start_to_close_timeout=self.options.start_to_close_timeout,
            retry_policy=self.options.retry_policy,
            heartbeat_timeout=self.options.heartbeat_timeout,
        )
        out = codec.decode(data)
        if not isinstance(out, Message):
            raise TypeError(f"the {MODEL_ACTIVITY} activity returned {type(out).__name__}, not a Message")
        return out

    async def stream(
        self, messages: list[Message], *, tools: Sequence[ToolInfo] | None = None, **options: Any
    ) -> StreamReader[Message]:
        if not workflow.in_workflow():
            reader: StreamReader[Message] = await self.model.stream(messages, tools=tools, **options)
            return reader
        return stream_from_list([await self.generate(messages, tools=tools, **options)])

    def __repr__(self) -> str:
        return f"ActivityModel({self.model!r})"


class ActivityTool(BaseTool):
    """A tool whose ``invoke`` is the ``rillet.tool`` activity inside a workflow. Before a
    call, when the workflow's history is long enough that Temporal suggests continuing as new,
    the call interrupts (info :data:`CONTINUE_AS_NEW`); the workflow continues as new from the
    checkpoint and resumes it, and the call then runs."""

    def __init__(self, tool: Any, *, name: str | None = None, options: ActivityOptions | None = None) -> None:
        self.tool = as_tool(tool)
        self.info = self.tool.info
        self.key = f"tool:{name or self.info.name}"
        self.options = options or ActivityOptions()
        _register(self.key, self.tool)

    async def invoke(self, arguments: str) -> str:
        if not workflow.in_workflow():
            return await self.tool.invoke(arguments)
        if _history_is_long() and not get_resume_context().is_target:
            raise interrupt(CONTINUE_AS_NEW)
        try:
            result: str = await workflow.execute_activity(
                TOOL_ACTIVITY,
                args=[current_agent.get(), self.key, arguments],
                result_type=str,
                start_to_close_timeout=self.options.start_to_close_timeout,
                retry_policy=self.options.retry_policy,
                heartbeat_timeout=self.options.heartbeat_timeout,
            )
        except ActivityError as e:
            bad = _arguments_error(e)
            if bad is not None:
                raise bad from None
            raise
        return result

    async def stream(self, arguments: str) -> AsyncIterator[str]:
        yield await self.invoke(arguments)


# The workflow sets it (its own history limit); tests lower it to see continue-as-new happen.
history_limit: contextvars.ContextVar[int] = contextvars.ContextVar("rillet_temporal_history_limit", default=10_000)


def _history_is_long() -> bool:
    info = workflow.info()
    return info.is_continue_as_new_suggested() or info.get_current_history_length() >= history_limit.get()


def activity_model(model: Any, *, name: str | None = None, options: ActivityOptions | None = None) -> ActivityModel:
    """``model`` called as a Temporal activity when the agent runs in a workflow."""
    return ActivityModel(model, name=name, options=options)


def activity_tool(tool: Any, *, name: str | None = None, options: ActivityOptions | None = None) -> ActivityTool:
    """``tool`` (a BaseTool or a function) called as a Temporal activity when the agent runs
    in a workflow."""
    return ActivityTool(tool, name=name, options=options)
