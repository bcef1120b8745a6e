"""Interrupt addresses (Eino's ``internal/core/address.go``).

An address says where an interrupt point sits: a tuple of segments from the run's root agent
down, such as ``agent:trip`` then ``tool:pay:call_9``. :class:`AddressSegment` is the only place
that builds a segment's string form or parses one. An :data:`Address` holds each segment in
that string form, which is what checkpoints persist and what users see in
``InterruptCtx.address``: byte-identical to the form rillet has always saved.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["AGENT", "TOOL", "USER_KINDS", "Address", "AddressSegment", "agent_segment", "tool_segment"]

AGENT = "agent"
TOOL = "tool"
USER_KINDS = (AGENT, TOOL)
"""The segment kinds users see (Eino filters its internal ``runnable``/``node`` kinds out)."""

Address = tuple[str, ...]
"""A full address: each segment in :meth:`AddressSegment.text` form."""


class AddressSegment(NamedTuple):
    """One step of an address: its ``kind`` (``agent`` or ``tool``), ``id`` (the agent's or
    tool's name) and ``sub_id`` (a tool call's id; None for an agent)."""

    kind: str
    id: str
    sub_id: str | None = None

    def text(self) -> str:
        """The segment's one string form: ``kind:id``, or ``kind:id:sub_id`` with a sub id."""
        if self.sub_id is None:
            return f"{self.kind}:{self.id}"
        return f"{self.kind}:{self.id}:{self.sub_id}"

    def __str__(self) -> str:
        return self.text()

    @classmethod
    def parse(cls, text: str) -> AddressSegment:
        """The segment written as ``text`` (the inverse of :meth:`text`). An agent segment has
        no sub id (its name is the rest, colons included); for other kinds the id runs to the
        next ``:`` and what follows is the sub id."""
        kind, sep, rest = text.partition(":")
        if not sep or not kind:
            raise ValueError(f"not an address segment: {text!r} (expected 'kind:id' or 'kind:id:sub_id')")
        if kind == AGENT:
            return cls(kind, rest)
        id_, sep, sub_id = rest.partition(":")
        return cls(kind, id_, sub_id if sep else None)


def agent_segment(name: str) -> str:
    """The segment (string form) an agent named ``name`` adds to the address."""
    return AddressSegment(AGENT, name).text()


def tool_segment(name: str, call_id: str) -> str:
    """The segment (string form) a call ``call_id`` of the tool ``name`` adds to the address."""
    return AddressSegment(TOOL, name, call_id).text()
