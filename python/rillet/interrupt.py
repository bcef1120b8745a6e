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
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rillet.errors import Interrupted

if TYPE_CHECKING:
    from rillet.events import AgentEvent

__all__ = [
    "InterruptCtx",
    "InterruptInfo",
    "InterruptSignal",
    "Interrupted",
    "ResumePoint",
    "composite_interrupt",
    "composite_interrupt_event",
    "get_interrupt_state",
    "get_resume_context",
    "interrupt",
    "interrupt_event",
    "stateful_interrupt",
    "stateful_interrupt_event",
]

_USER_SEGMENTS = ("agent:", "tool:")


@dataclass(frozen=True, slots=True)
class InterruptCtx:
    """One interrupt point: its UUID ``id``, its ``address`` (segments such as
    ``agent:<name>`` and ``tool:<name>:<call_id>``), the user ``info`` given when it was
    raised, whether it is a root cause, and its parent context."""

    id: str
    address: tuple[str, ...]
    info: Any = None
    is_root_cause: bool = False
    parent: InterruptCtx | None = None


@dataclass(slots=True)
class InterruptInfo:
    """What an interrupt event tells the user: ``data`` and one context per root cause."""

    data: Any = None
    interrupt_contexts: list[InterruptCtx] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class InterruptSignal:
    """The internal tree the Runner persists: one node per interrupt point."""

    id: str
    address: tuple[str, ...]
    info: Any = None
    state: Any = None
    subs: list[InterruptSignal] = field(default_factory=list)

    @property
    def is_root_cause(self) -> bool:
        return not self.subs

    def walk(self) -> Iterable[InterruptSignal]:
        yield self
        for s in self.subs:
            yield from s.walk()

    def contexts(self) -> list[InterruptCtx]:
        """One user-facing context per root cause, each with its parent chain."""
        out: list[InterruptCtx] = []

        def visit(sig: InterruptSignal, parent: InterruptCtx | None) -> None:
            ctx = InterruptCtx(sig.id, sig.address, sig.info, sig.is_root_cause, parent)
            if sig.is_root_cause:
                out.append(ctx)
            for s in sig.subs:
                visit(s, ctx)

        visit(self, None)
        return out


def _here() -> tuple[str, ...]:
    """The address of the calling code: the run's address plus the tool call, if in one."""
    from rillet.context import current_run, current_tool_call

    run = current_run()
    address = run.address if run is not None else ()
    scope = current_tool_call()
    if scope is not None:
        address = (*address, f"tool:{scope.tool_name}:{scope.call_id}")
    return address


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
    return InterruptSignal(str(uuid.uuid4()), _here(), info, state, children)


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
    from rillet.events import AgentAction, AgentEvent

    return AgentEvent(action=AgentAction(interrupted=InterruptInfo(data, signal.contexts()), signal=signal))


def interrupt_event(info: Any = None) -> AgentEvent:
    """The event an agent yields to interrupt the run at its own address."""
    return _event(_signal(info, None, ()), info)


def stateful_interrupt_event(info: Any, state: Any) -> AgentEvent:
    """Like :func:`interrupt_event`, also saving ``state`` for the resumed agent."""
    return _event(_signal(info, state, ()), info)


def composite_interrupt_event(info: Any, state: Any, *sub_interrupts: Interrupted | InterruptSignal) -> AgentEvent:
    """An agent's interrupt that bundles interrupts from work nested inside it."""
    return _event(_signal(info, state, sub_interrupts), info)


# --- resuming ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a component stands in a resumed run (see :func:`get_interrupt_state`)."""

    was_interrupted: bool = False
    has_state: bool = False
    state: Any = None
    is_resume_target: bool = False
    has_data: bool = False
    data: Any = None


NOT_RESUMING = ResumePoint()


class ResumeScope:
    """The persisted interrupts of one resumed run and what has been handed out of them."""

    def __init__(
        self,
        addresses: Mapping[str, tuple[str, ...]],
        states: Mapping[str, Any],
        targets: Mapping[str, Any] | None,
    ) -> None:
        self.addresses = dict(addresses)
        self.states = dict(states)
        self.explicit = targets is not None
        self.data: dict[str, Any] = dict(targets or {})
        self.state_used: set[str] = set()
        self.data_used: set[str] = set()

    def enter(self, address: tuple[str, ...]) -> ResumePoint:
        """What the component entering ``address`` gets; consumes its state and data."""
        was = False
        has_state = False
        state = None
        target = False
        has_data = False
        data = None
        for iid, addr in self.addresses.items():
            if addr == address and iid not in self.state_used:
                self.state_used.add(iid)
                was = True
                state = self.states.get(iid)
                has_state = state is not None
                if iid in self.data and iid not in self.data_used:
                    self.data_used.add(iid)
                    target = True
                    data = self.data[iid]
                    has_data = data is not None
                break
        if not target:
            n = len(address)
            for iid, addr in self.addresses.items():
                if len(addr) > n and addr[:n] == address and iid not in self.data_used:
                    if iid in self.data or not self.explicit:
                        target = True
                        break
        return ResumePoint(was, has_state, state, target, has_data, data)

    def pending_below(self, address: tuple[str, ...]) -> bool:
        """Whether an interrupt whose state was not handed out lies strictly below ``address``."""
        n = len(address)
        return any(
            len(addr) > n and addr[:n] == address and iid not in self.state_used for iid, addr in self.addresses.items()
        )

    def next_points(self, address: tuple[str, ...]) -> list[str]:
        """The distinct next segments under ``address`` that lead to persisted interrupts."""
        n = len(address)
        seen: list[str] = []
        for addr in self.addresses.values():
            if len(addr) > n and addr[:n] == address and addr[n] not in seen:
                seen.append(addr[n])
        return seen


_RESUME: ContextVar[ResumeScope | None] = ContextVar("rillet_resume", default=None)


def current_resume() -> ResumeScope | None:
    return _RESUME.get()


def _point() -> ResumePoint:
    from rillet.context import current_run, current_tool_call

    scope = current_tool_call()
    if scope is not None:
        return scope.point
    run = current_run()
    return run.point if run is not None else NOT_RESUMING


def get_interrupt_state() -> tuple[bool, bool, Any]:
    """``(was_interrupted, has_state, state)`` for the calling tool or agent in a resumed run:
    whether it was an interrupt point, and the state it saved (``None`` if none)."""
    p = _point()
    return p.was_interrupted, p.has_state, p.state


def get_resume_context() -> tuple[bool, bool, Any]:
    """``(is_resume_target, has_data, data)``: whether the resume targets the calling tool or
    agent (or something inside it), and the data given for it."""
    p = _point()
    return p.is_resume_target, p.has_data, p.data
