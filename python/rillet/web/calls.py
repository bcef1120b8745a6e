"""The model and tool calls of a dev UI run, for its call inspector: a run observer (and a
plugin that only looks at the tools offered) that turns each call into ``call`` records, and
marks the run's events with the call that made them and with how a failure happened.

A ``call`` record is sent when a call starts (``status`` ``running``: what was sent) and again
when it ends (``ok`` or ``error``: the reply or result, tokens when the model reports them, the
latency); the page merges the two by ``id``. Times are seconds since the epoch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from rillet._native import Message, Usage
from rillet.chatmodel.config import ModelContext
from rillet.errors import (
    AgentToolError,
    ExceedMaxIterationsError,
    GuardrailError,
    ModelError,
    RunLimitExceededError,
    ScriptExhaustedError,
    ToolArgumentsError,
    ToolCallError,
)
from rillet.run.observer import ModelInfo, RunInfo, RunObserver
from rillet.run.plugin import Plugin

__all__ = ["CallLog", "error_kind"]

Path = tuple[str, ...]


def _path(run: RunInfo) -> Path:
    return tuple(s.agent_name for s in run.run_path) or (run.agent_name,)


def _usage(usage: Usage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "cached_tokens": usage.cached_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def _error(e: BaseException) -> dict[str, str]:
    return {"type": type(e).__name__, "message": str(e)}


def error_kind(e: BaseException | dict[str, Any] | None, open_call: str | None = None) -> str:
    """Where an error happened, as the chat labels it: ``guardrail``, ``limit``, ``tool``,
    ``model``, else ``agent``; ``open_call`` is the kind of the call the agent was in."""
    if isinstance(e, GuardrailError):
        return "guardrail"
    if isinstance(e, (RunLimitExceededError, ExceedMaxIterationsError)):
        return "limit"
    if isinstance(e, (ToolCallError, ToolArgumentsError, AgentToolError)):
        return "tool"
    if isinstance(e, (ModelError, ScriptExhaustedError)):
        return "model"
    return open_call or "agent"


class _ToolsOffered(Plugin):
    """Notes the tools each model call is offered (its ``before_model`` changes nothing)."""

    def __init__(self, log: CallLog) -> None:
        super().__init__("rillet-web-calls")
        self.log = log

    def before_model(self, ctx: ModelContext) -> None:
        tools = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in ctx.tools]
        with self.log.lock:
            self.log.offered[ctx.agent_name] = tools


class CallLog(RunObserver):
    """One run's calls: each becomes records handed to ``emit`` (from the run's event loop).
    :meth:`annotate` adds to an event's record the call behind it (``call``), whether a tool
    result is a failure (``failed``) and where an error happened (``error.kind``)."""

    def __init__(self, emit: Callable[[dict[str, Any]], None]) -> None:
        self.emit = emit
        self.lock = threading.Lock()
        self.offered: dict[str, list[dict[str, Any]]] = {}  # agent name -> tools of its next model call
        self.plugin = _ToolsOffered(self)
        self._count = 0
        self._open: dict[str, dict[str, Any]] = {}  # call id -> the call, until it ends
        self._model_of: dict[Path, str] = {}  # run path -> its latest model call
        self._model_by_agent: dict[str, str] = {}  # agent name -> its latest model call (where paths differ)
        self._tool_of: dict[str, str] = {}  # tool call id (the model's) -> its latest call
        self._tool_error: dict[str, bool] = {}  # our call id -> failed
        self._failed_in: dict[Path, str] = {}  # run path -> kind of the call open when it failed

    def _next(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def _start(self, call: dict[str, Any]) -> None:
        self._open[call["id"]] = call
        self.emit({"type": "call", "status": "running", **call})

    def _end(self, call_id: str, **end: Any) -> None:
        call = self._open.pop(call_id, None)
        if call is None:
            return
        ended = time.time()
        self.emit(
            {
                "type": "call",
                "id": call_id,
                "kind": call["kind"],
                "ended": ended,
                "latency_ms": round((ended - call["started"]) * 1000, 1),
                **end,
            }
        )

    def end_open(self, status: str) -> None:
        """Ends, with ``status``, every call still open: the run was cancelled or stopped
        with them in flight, and a model call cut short reports no end of its own."""
        for call_id in list(self._open):
            self._end(call_id, status=status)

    # --- the observer's hooks (on the run's event loop)

    def on_model_start(self, run: RunInfo, model: ModelInfo, messages: Sequence[Message]) -> None:
        path = _path(run)
        with self.lock:
            call_id = self._next("m")
            self._model_of[path] = call_id
            self._model_by_agent[run.agent_name] = call_id
            tools = self.offered.pop(run.agent_name, None)
        self._start(
            {
                "id": call_id,
                "kind": "model",
                "agent": run.agent_name,
                "path": list(path),
                "model": model.name,
                "provider": model.system,
                "messages": [m.to_dict() for m in messages],
                "tools": tools,
                "started": time.time(),
            }
        )

    def on_model_end(
        self, run: RunInfo, model: ModelInfo, reply: Message, usage: Usage | None, finish_reason: str
    ) -> None:
        with self.lock:
            call_id = self._model_of.get(_path(run))
        if call_id is not None:
            self._end(call_id, status="ok", reply=reply.to_dict(), usage=_usage(usage), finish_reason=finish_reason)

    def on_tool_start(self, run: RunInfo, tool: str, call_id: str, arguments: str) -> None:
        with self.lock:
            ours = self._next("t")
            self._tool_of[call_id] = ours
        self._start(
            {
                "id": ours,
                "kind": "tool",
                "agent": run.agent_name,
                "path": list(_path(run)),
                "tool": tool,
                "call_id": call_id,
                "arguments": arguments,
                "started": time.time(),
            }
        )

    def on_tool_end(
        self, run: RunInfo, tool: str, call_id: str, result: str | None, error: BaseException | None
    ) -> None:
        with self.lock:
            ours = self._tool_of.get(call_id)
            if ours is not None:
                self._tool_error[ours] = error is not None
        if ours is None:
            return
        if error is None:
            self._end(ours, status="ok", result=result)
        elif isinstance(error, Exception):
            self._end(ours, status="error", result=result, error=_error(error))
        else:  # an interrupt or a cancellation: the call did not fail, it was paused or cut
            self._end(ours, status="interrupted" if type(error).__name__ == "Interrupted" else "cancelled")

    def on_error(self, run: RunInfo, error: BaseException) -> None:
        path = _path(run)
        with self.lock:
            model = self._model_of.get(path)
            open_kind = "model" if model in self._open else None
            self._failed_in[path] = error_kind(error, open_kind)
        if open_kind == "model" and model is not None:
            self._end(model, status="error", error=_error(error))

    # --- the event records (on the run's consuming thread)

    def annotate(self, record: dict[str, Any]) -> None:
        """Marks an ``event`` record with its call, its failure and where its error happened."""
        if record.get("type") != "event":
            return
        path = tuple(record.get("path") or ())
        with self.lock:
            # an agent tool's inner run reports its own run path; its events come under the caller's
            model = self._model_of.get(path) or self._model_by_agent.get(str(record.get("agent")))
            if record.get("role") == "assistant" and model is not None:
                record["call"] = model
            elif record.get("role") == "tool" and record.get("tool_call_id") in self._tool_of:
                ours = self._tool_of[record["tool_call_id"]]
                record["call"] = ours
                if self._tool_error.get(ours):
                    record["failed"] = True
            if "error" in record:
                record["error"]["kind"] = self._failed_in.get(path) or record["error"].get("kind") or "agent"
