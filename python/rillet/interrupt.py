"""Interrupt data as users see it (Eino's ``InterruptInfo`` and ``InterruptCtx``).

An interrupt stops a run so a person or another process can decide something; the Runner saves
a checkpoint and the run is resumed later by interrupt id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["InterruptCtx", "InterruptInfo"]


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
