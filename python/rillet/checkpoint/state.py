"""The states rillet's agents save in a checkpoint when they are interrupted.

Each is a frozen dataclass registered with :mod:`rillet.codec` under a stable name and a
version (as Eino registers one small struct per state), so a checkpoint holds typed records
and a later rillet that changes a state migrates the old version as it decodes it.

Checkpoints written before these classes existed hold each state as a dict tagged with a
``"kind"`` string; :func:`saved_state` reads that form too, through the class's
``from_legacy`` (the "version 0" of every state), so they keep loading and resuming.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from rillet.data import codec

__all__ = ["checkpoint_state", "saved_state"]


S = TypeVar("S")
C = TypeVar("C", bound=type)


def checkpoint_state(
    name: str, *, version: int = 1, migrate: Callable[[Any, int], Any] | None = None
) -> Callable[[C], C]:
    """Class decorator: registers a frozen dataclass as a checkpointed state under ``name``
    (``version`` and ``migrate`` as for :func:`rillet.codec.register_type`)."""

    def decorate(cls: C) -> C:
        params = getattr(cls, "__dataclass_params__", None)
        if not dataclasses.is_dataclass(cls) or params is None or not params.frozen:
            raise TypeError(f"checkpoint_state: {cls.__qualname__} must be a frozen dataclass")
        return codec.register_type(cls, name, version, migrate)

    return decorate


def saved_state(value: Any, cls: type[S]) -> S | None:
    """``value`` as a ``cls`` state: itself when it is one, converted when it is the legacy
    dict of that state (its ``"kind"`` is ``cls.LEGACY_KIND``), else None (not this agent's)."""
    if isinstance(value, cls):
        return value
    if isinstance(value, dict) and value.get("kind") == getattr(cls, "LEGACY_KIND", None):
        converted: S = cls.from_legacy(value)  # type: ignore[attr-defined]
        return converted
    return None
