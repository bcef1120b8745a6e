"""Run observers: one object told what a whole run does, agent by agent.

``Runner(agent, observers=[...])`` puts the observers in the run scope
(:data:`rillet._core.scope.OBSERVING`), so every agent of the run reports to them: transfer
targets, workflow children, the inner runs of agent tools, and each model and tool call of a
ChatModelAgent. With no observer the hooks below are never called (one context-variable
read per agent run, model call and tool call), and an observer that raises is logged on the
``rillet`` logger and skipped: it never breaks the run.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from rillet._core.address import Address, agent_segment
from rillet.data.events import AgentEvent, RunPath, RunStep, extend_path, interrupt_signal
from rillet.run.context import current_run

if TYPE_CHECKING:
    from rillet._core.interrupt import InterruptCtx
    from rillet._native import Message, Usage
    from rillet.run.context import RunContext

__all__ = ["ModelInfo", "RunInfo", "RunObserver"]

_log = logging.getLogger("rillet")


@dataclass(frozen=True, slots=True)
class RunInfo:
    """Which agent run a notification is about. ``run_id`` is the same for every agent of one
    Runner run (agent tools' inner runs included); ``address`` is unique within it (the run
    path plus the tool calls an agent tool runs under), and an agent's parent run is the
    longest prefix of its address that is open."""

    run_id: str
    agent_name: str
    run_path: RunPath
    address: Address


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """The model of a model call: its name (``OpenAIChatModel.model``, else the class name)
    and its provider (``openai``, else the class name)."""

    name: str
    system: str


class RunObserver:
    """The run-wide observer: subclass it and override what you need (every method does
    nothing here). Methods are called on the run's event loop, in the order things happen;
    they must not block."""

    def on_run_start(self, run: RunInfo, messages: Sequence[Message]) -> None:
        """An agent starts (``messages``: its input; empty for a transfer target or workflow
        child, which rebuild theirs from the run's history)."""

    def on_run_end(self, run: RunInfo, error: BaseException | None) -> None:
        """An agent ended: normally, with ``error``, interrupted, or stopped by its consumer."""

    def on_model_start(self, run: RunInfo, model: ModelInfo, messages: Sequence[Message]) -> None:
        """A model call starts with ``messages``."""

    def on_model_end(
        self, run: RunInfo, model: ModelInfo, reply: Message, usage: Usage | None, finish_reason: str
    ) -> None:
        """A model call returned ``reply`` (a streamed one once read to its end). A call that
        raises has no end: the agent's :meth:`on_error` and :meth:`on_run_end` follow."""

    def on_tool_start(self, run: RunInfo, tool: str, call_id: str, arguments: str) -> None:
        """A tool call starts."""

    def on_tool_end(
        self, run: RunInfo, tool: str, call_id: str, result: str | None, error: BaseException | None
    ) -> None:
        """A tool call ended: ``result`` (a failed call's result is the error text the model
        is sent, with ``error`` set), or ``error`` alone (an interrupt, a cancellation, or
        ``tool_error="raise"``)."""

    def on_interrupt(self, run: RunInfo, causes: Sequence[InterruptCtx]) -> None:
        """The agent interrupted: one context per root cause (its ``info``, ``address`` and
        ``id``, as the interrupt event will show them)."""

    def on_error(self, run: RunInfo, error: BaseException) -> None:
        """The agent ended with an error event."""


@dataclass(frozen=True, slots=True)
class Observing:
    """What the run scope holds while observers are set: them and the run's id."""

    observers: tuple[RunObserver, ...]
    run_id: str


def observing(observers: Sequence[RunObserver]) -> Observing | None:
    """The run-scope value for a new run with ``observers`` (None for none: zero cost)."""
    if not observers:
        return None
    for o in observers:
        missing = [m for m in _METHODS if not callable(getattr(o, m, None))]
        if missing:
            raise TypeError(
                f"observers: {o!r} has no {', '.join(missing)}; an observer subclasses rillet.RunObserver "
                "(whose methods do nothing) and overrides the ones it needs"
            )
    return Observing(tuple(observers), uuid.uuid4().hex)


_METHODS = [m for m in vars(RunObserver) if m.startswith("on_")]


def notify(obs: Any, method: str, *args: Any) -> None:
    """Calls ``method`` on every observer; one that raises is logged and skipped."""
    for o in cast(Observing, obs).observers:
        try:
            getattr(o, method)(*args)
        except Exception:  # noqa: BLE001  # a sink's failure is logged, never the run's
            _log.exception("run observer %r raised in %s; the run goes on", o, method)


def _info(obs: Any, run: RunContext | None, agent_name: str) -> RunInfo:
    run_id = cast(Observing, obs).run_id
    if run is None:
        return RunInfo(run_id, agent_name, RunPath(), ())
    return RunInfo(run_id, agent_name, run.run_path, run.address)


# --- agent runs (the flow wrapper) ------------------------------------------------------------


def run_start(obs: Any, agent_name: str, messages: Sequence[Message], parent: RunContext | None = None) -> RunInfo:
    """An agent's run starts under ``parent`` (default: the calling code's run): its info, reported."""
    if parent is None:
        parent = current_run()
    path = parent.run_path if parent is not None else RunPath()
    address = parent.address if parent is not None else ()
    info = RunInfo(
        cast(Observing, obs).run_id,
        agent_name,
        extend_path(path, RunStep(agent_name)),
        (*address, agent_segment(agent_name)),
    )
    notify(obs, "on_run_start", info, messages)
    return info


def run_event(obs: Any, info: RunInfo, ev: AgentEvent) -> BaseException | None:
    """An event of the run: its own interrupts and errors are reported; its error returned."""
    if ev.run_path != info.run_path:
        return None
    if ev.error is not None:
        notify(obs, "on_error", info, ev.error)
        return ev.error
    if ev.action is not None and ev.action.interrupted is not None:
        signal = interrupt_signal(ev.action)
        notify(obs, "on_interrupt", info, signal.contexts() if signal is not None else [])
    return None


def run_end(obs: Any, info: RunInfo, error: BaseException | None) -> None:
    notify(obs, "on_run_end", info, error)


# --- model and tool calls (the ChatModelAgent's steps) ----------------------------------------


def model_info(model: Any) -> ModelInfo:
    """The name and provider of ``model``."""
    name = getattr(model, "model", None)
    cls = type(model)
    system = "openai" if cls.__name__ == "OpenAIChatModel" else cls.__name__
    return ModelInfo(name if isinstance(name, str) and name else cls.__name__, system)


def model_start(obs: Any, agent_name: str, model: Any, messages: Sequence[Message]) -> None:
    notify(obs, "on_model_start", _info(obs, current_run(), agent_name), model_info(model), messages)


def model_end(obs: Any, agent_name: str, model: Any, reply: Message) -> None:
    meta = reply.response_meta
    usage, reason = (meta.usage, meta.finish_reason) if meta is not None else (None, "")
    notify(obs, "on_model_end", _info(obs, current_run(), agent_name), model_info(model), reply, usage, reason)


def tool_start(obs: Any, agent_name: str, tool: str, call_id: str, arguments: str) -> None:
    notify(obs, "on_tool_start", _info(obs, current_run(), agent_name), tool, call_id, arguments)


def tool_end(
    obs: Any, agent_name: str, tool: str, call_id: str, result: str | None, error: BaseException | None
) -> None:
    notify(obs, "on_tool_end", _info(obs, current_run(), agent_name), tool, call_id, result, error)
