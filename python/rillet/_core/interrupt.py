"""Interrupt and resume bookkeeping (Eino's ``internal/core/interrupt.go`` and ``resume.go``).

An interrupt is an :class:`InterruptSignal` tree (one node per interrupt point, with a UUID id
and an :data:`~rillet._core.address.Address`); the Runner persists it. A resumed run gets a
:class:`ResumeScope` over the persisted ids, addresses and states: each component entering an
address learns where it stands (a :class:`ResumePoint`), and each saved state and resume datum
is handed out once. The user API that raises interrupts and builds their events is
:mod:`rillet.run.interrupts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rillet._core.address import Address

__all__ = ["NOT_RESUMING", "InterruptCtx", "InterruptInfo", "InterruptSignal", "ResumePoint", "ResumeScope"]


@dataclass(frozen=True, slots=True)
class InterruptCtx:
    """One interrupt point: its UUID ``id``, its ``address`` (segments such as
    ``agent:<name>`` and ``tool:<name>:<call_id>``), the user ``info`` given when it was
    raised, whether it is a root cause, and its parent context."""

    id: str
    address: Address
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
    address: Address
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
        addresses: Mapping[str, Address],
        states: Mapping[str, Any],
        targets: Mapping[str, Any] | None,
    ) -> None:
        self.addresses = dict(addresses)
        self.states = dict(states)
        self.explicit = targets is not None
        self.data: dict[str, Any] = dict(targets or {})
        self.state_used: set[str] = set()
        self.data_used: set[str] = set()

    def enter(self, address: Address) -> ResumePoint:
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

    def pending_below(self, address: Address) -> bool:
        """Whether an interrupt whose state was not handed out lies strictly below ``address``."""
        n = len(address)
        return any(
            len(addr) > n and addr[:n] == address and iid not in self.state_used for iid, addr in self.addresses.items()
        )

    def next_points(self, address: Address) -> list[str]:
        """The distinct next segments under ``address`` that lead to persisted interrupts."""
        n = len(address)
        seen: list[str] = []
        for addr in self.addresses.values():
            if len(addr) > n and addr[:n] == address and addr[n] not in seen:
                seen.append(addr[n])
        return seen
