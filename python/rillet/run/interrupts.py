"""Interrupts: stop a run so a person or another process can decide, then resume it by id.

Inside a tool, ``raise rillet.interrupt(info)`` (or :func:`stateful_interrupt` to keep some
state, or :func:`composite_interrupt` to bundle interrupts of nested work). Inside an agent's
``_run``, yield :func:`interrupt_event` and its twins instead. Each interrupt point gets a fresh
UUID ``id`` and an ``address`` (segments such as ``agent:<name>`` and
``tool:<name>:<call_id>``); the Runner saves a checkpoint and the user resumes with
``runner.resume(checkpoint_id, targets={id: data})``.

While a resumed run re-executes, each component finds out where it stands with
:func:`get_interrupt_state` (was I interrupted, with what state) and :func:`get_resume_context`
(am I a resume target, with what data). A leaf that was interrupted but is not a target
interrupts again, so it stays resumable. Each saved state and each resume datum is handed out
once per resumed run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any, NamedTuple

from rillet._core.interrupt import InterruptCtx, InterruptInfo, InterruptSignal
from rillet._core.scope import current_point, here
from rillet.data.events import AgentEvent, interrupt_action
from rillet.errors import Interrupted

__all__ = [
    "InterruptCtx",
    "InterruptInfo",
    "InterruptState",
    "Interrupted",
    "ResumeContext",
    "composite_interrupt",
    "composite_interrupt_event",
    "get_interrupt_state",
    "get_resume_context",
    "interrupt",
    "interrupt_event",
    "stateful_interrupt",
    "stateful_interrupt_event",
]

# What a user reads off an interrupt event is defined in the foundation (the Runner and the
# checkpoint use it below the agent layer) but belongs to this module's API, as Eino's adk
# package aliases its internal/core types: name the public home in help() and reprs.
InterruptCtx.__module__ = InterruptInfo.__module__ = __name__

# Where interrupt ids come from: a fresh UUID, unless the run's context names another source.
# A Temporal workflow names its deterministic one, so a replayed run's interrupts keep their ids.
ID_SOURCE: ContextVar[Callable[[], str] | None] = ContextVar("rillet_interrupt_ids", default=None)


def _new_id() -> str:
    source = ID_SOURCE.get()
    return str(uuid.uuid4()) if source is None else source()


def _signal(info: Any, state: Any, subs: Iterable[Interrupted | InterruptSignal]) -> InterruptSignal:
    children = []
    for s in subs:
        if isinstance(s, Interrupted):
            children.append(s.signal)
        elif isinstance(s, InterruptSignal):
            children.append(s)
        else:
            raise TypeError(
                f"composite_interrupt: every sub-interrupt must be an Interrupted exception or an InterruptSignal, "
                f"got {type(s).__name__}"
            )
    return InterruptSignal(_new_id(), here(), info, state, children)


def interrupt(info: Any = None) -> Interrupted:
    """An interrupt of the tool that is running, for ``raise``. ``info`` is shown to the user
    and saved in the checkpoint (it must be encodable by :mod:`rillet.codec`)."""
    return Interrupted(_signal(info, None, ()))


def stateful_interrupt(info: Any, state: Any) -> Interrupted:
    """Like :func:`interrupt`, also saving ``state``, which the resumed tool reads back with
    :func:`get_interrupt_state`."""
    return Interrupted(_signal(info, state, ()))


def composite_interrupt(info: Any, state: Any, *sub_interrupts: Interrupted | InterruptSignal) -> Interrupted:
    """An interrupt that bundles the interrupts of work nested inside this tool (for example
    an inner run), with ``state`` to resume that work from."""
    return Interrupted(_signal(info, state, sub_interrupts))


def _event(signal: InterruptSignal, data: Any) -> AgentEvent:
    return AgentEvent(action=interrupt_action(InterruptInfo(data, signal.contexts()), signal))


def interrupt_event(info: Any = None) -> AgentEvent:
    """The event an agent yields to interrupt the run at its own address."""
    return _event(_signal(info, None, ()), info)


def stateful_interrupt_event(info: Any, state: Any) -> AgentEvent:
    """Like :func:`interrupt_event`, also saving ``state`` for the resumed agent."""
    return _event(_signal(info, state, ()), info)


def composite_interrupt_event(info: Any, state: Any, *sub_interrupts: Interrupted | InterruptSignal) -> AgentEvent:
    """An agent's interrupt that bundles interrupts from work nested inside it."""
    return _event(_signal(info, state, sub_interrupts), info)


class InterruptState(NamedTuple):
    """What :func:`get_interrupt_state` returns; unpacks as ``(was_interrupted, has_state, state)``."""

    was_interrupted: bool
    """Whether the caller was an interrupt point of the run being resumed."""
    has_state: bool
    """Whether it saved a state (with :func:`stateful_interrupt` or a composite interrupt)."""
    state: Any
    """That state, or None."""


class ResumeContext(NamedTuple):
    """What :func:`get_resume_context` returns; unpacks as ``(is_target, has_data, data)``."""

    is_target: bool
    """Whether the resume targets the caller (or an interrupt point inside it)."""
    has_data: bool
    """Whether the resume gave data (not None) for the caller itself."""
    data: Any
    """That data, or None."""


def get_interrupt_state() -> InterruptState:
    """``InterruptState(was_interrupted, has_state, state)`` for the calling tool or agent in a
    resumed run: whether it was an interrupt point, and the state it saved (``None`` if none)."""
    p = current_point()
    return InterruptState(p.was_interrupted, p.has_state, p.state)


def get_resume_context() -> ResumeContext:
    """``ResumeContext(is_target, has_data, data)``: whether the resume targets the calling tool
    or agent (or something inside it), and the data given for it."""
    p = current_point()
    return ResumeContext(p.is_resume_target, p.has_data, p.data)
