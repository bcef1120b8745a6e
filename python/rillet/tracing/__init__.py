"""OpenTelemetry spans for rillet runs (the ``rillet[otel]`` extra): a :class:`RunObserver`.

``Runner(agent, observers=[OpenTelemetryObserver()])`` makes one span per agent run
(``invoke_agent <name>``), model call (``chat <model>``) and tool call (``execute_tool
<tool>``), with the GenAI semantic-convention attributes, and span events for interrupts and
errors. Spans go to the tracer provider given (else the global one): rillet sets up no
exporter.

Spans are started and ended explicitly, each in one observer call, and parented through this
observer's own map of open spans keyed by the run and the address of the agent or tool call:
OpenTelemetry's current context is never attached, so no context token lives across an
event-stream suspension, and a consumer that stops early (``break``, ``close``, a cancelled
task) ends every span of the run when the agents' ``on_run_end`` come, with nothing logged.

Layer: integrations, each independent of the others. May import rillet.runner, rillet.prebuilt,
rillet.middlewares and the layers under them (the import-linter contract in pyproject.toml;
docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rillet._core.address import Address, tool_segment
from rillet.errors import Interrupted
from rillet.run.observer import ModelInfo, RunInfo, RunObserver

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from rillet._core.interrupt import InterruptCtx
    from rillet._native import Message, Usage

__all__ = ["OpenTelemetryObserver"]

_Key = tuple[str, Address]  # (run id, address)


def _messages_json(messages: Sequence[Message]) -> str:
    return json.dumps([m.to_dict() for m in messages], ensure_ascii=False, default=str)


class OpenTelemetryObserver(RunObserver):
    """A run observer that emits OpenTelemetry spans. ``tracer_provider`` (default: the
    global provider) is where spans go; ``record_content=True`` also records message
    contents, tool arguments and results (off by default: they may hold personal data)."""

    def __init__(self, tracer_provider: TracerProvider | None = None, *, record_content: bool = False) -> None:
        try:
            from opentelemetry import trace  # the optional rillet[otel] extra, loaded when used
        except ImportError as e:
            raise ImportError(
                "OpenTelemetryObserver needs the OpenTelemetry API: pip install 'rillet[otel]' "
                "(and an SDK with an exporter, e.g. opentelemetry-sdk, to send the spans somewhere)"
            ) from e

        self._trace = trace
        self._tracer: Tracer = trace.get_tracer("rillet", tracer_provider=tracer_provider)
        self.record_content = record_content
        self._runs: dict[_Key, Span] = {}  # open agent-run and tool-call spans
        self._models: dict[_Key, Span] = {}  # the open model call of each agent run
        self._lock = threading.Lock()  # runs on several event loops may share one observer

    # --- spans --------------------------------------------------------------------------------

    def _parent(self, run_id: str, address: Address) -> Span | None:
        """The open span nearest above ``address`` (an agent tool's run sits under its call)."""
        with self._lock:
            for n in range(len(address) - 1, 0, -1):
                span = self._runs.get((run_id, address[:n]))
                if span is not None:
                    return span
        return None

    def _start(self, name: str, parent: Span | None, attributes: dict[str, Any]) -> Span:
        ctx = self._trace.set_span_in_context(parent) if parent is not None else None
        kind = self._trace.SpanKind.CLIENT if attributes["gen_ai.operation.name"] == "chat" else None
        if kind is None:
            return self._tracer.start_span(name, context=ctx, attributes=attributes)
        return self._tracer.start_span(name, context=ctx, kind=kind, attributes=attributes)

    def _end(self, span: Span, error: BaseException | None, record: bool = True) -> None:
        """Ends ``span``, failed with ``error`` (an exception event too if ``record``)."""
        if error is not None and not _quiet(error):
            if record:
                span.record_exception(error)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, f"{type(error).__name__}: {error}"))
            span.set_attribute("error.type", type(error).__qualname__)
        span.end()

    # --- agent runs ---------------------------------------------------------------------------

    def on_run_start(self, run: RunInfo, messages: Sequence[Message]) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": run.agent_name,
            "rillet.run_path": "/".join(map(str, run.run_path)),
            "rillet.run_id": run.run_id,
        }
        if self.record_content and messages:
            attributes["gen_ai.input.messages"] = _messages_json(messages)
        span = self._start(f"invoke_agent {run.agent_name}", self._parent(run.run_id, run.address), attributes)
        with self._lock:
            self._runs[(run.run_id, run.address)] = span

    def on_run_end(self, run: RunInfo, error: BaseException | None) -> None:
        key = (run.run_id, run.address)
        with self._lock:
            span = self._runs.pop(key, None)
            model = self._models.pop(key, None)
            # calls still open (the consumer stopped, the model raised) end with their run
            inner = [k for k in self._runs if k[0] == run.run_id and k[1][: len(run.address)] == run.address]
            orphans = [self._runs.pop(k) for k in inner]
        for s in (model, *orphans, span):
            if s is not None:
                self._end(s, error if s is span or s is model else None, record=s is not span)

    def on_interrupt(self, run: RunInfo, causes: Sequence[InterruptCtx]) -> None:
        span = self._span(run)
        if span is not None:
            attributes: dict[str, Any] = {"rillet.interrupt.ids": [c.id for c in causes]}
            if self.record_content:
                attributes["rillet.interrupt.info"] = [repr(c.info) for c in causes]
            span.add_event("rillet.interrupt", attributes)

    def on_error(self, run: RunInfo, error: BaseException) -> None:
        span = self._span(run)
        if span is not None:  # the standard "exception" event; the status is set at the end
            span.record_exception(error)

    def _span(self, run: RunInfo) -> Span | None:
        with self._lock:
            return self._runs.get((run.run_id, run.address))

    # --- model calls --------------------------------------------------------------------------

    def on_model_start(self, run: RunInfo, model: ModelInfo, messages: Sequence[Message]) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": model.system,
            "gen_ai.request.model": model.name,
            "gen_ai.agent.name": run.agent_name,
        }
        if self.record_content:
            attributes["gen_ai.input.messages"] = _messages_json(messages)
        span = self._start(f"chat {model.name}", self._span(run), attributes)
        with self._lock:
            self._models[(run.run_id, run.address)] = span

    def on_model_end(
        self, run: RunInfo, model: ModelInfo, reply: Message, usage: Usage | None, finish_reason: str
    ) -> None:
        with self._lock:
            span = self._models.pop((run.run_id, run.address), None)
        if span is None:
            return
        if usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
        if finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
        if self.record_content:
            span.set_attribute("gen_ai.output.messages", _messages_json([reply]))
        span.end()

    # --- tool calls ---------------------------------------------------------------------------

    def on_tool_start(self, run: RunInfo, tool: str, call_id: str, arguments: str) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.agent.name": run.agent_name,
        }
        if self.record_content:
            attributes["gen_ai.tool.call.arguments"] = arguments
        span = self._start(f"execute_tool {tool}", self._span(run), attributes)
        with self._lock:
            self._runs[(run.run_id, (*run.address, tool_segment(tool, call_id)))] = span

    def on_tool_end(
        self, run: RunInfo, tool: str, call_id: str, result: str | None, error: BaseException | None
    ) -> None:
        with self._lock:
            span = self._runs.pop((run.run_id, (*run.address, tool_segment(tool, call_id))), None)
        if span is None:
            return
        if self.record_content and result is not None:
            span.set_attribute("gen_ai.tool.call.result", result)
        if error is not None and _is_interrupt(error):
            span.add_event("rillet.interrupt")
            error = None
        self._end(span, error)


def _is_interrupt(error: BaseException) -> bool:
    return isinstance(error, Interrupted)


def _quiet(error: BaseException) -> bool:
    """A consumer stopping the run is not an error of the span."""
    return isinstance(error, asyncio.CancelledError | GeneratorExit)
