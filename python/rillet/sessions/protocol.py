"""The session store protocol and what it holds.

A store keeps, per session id: the turns (one append-only row each: the turn's messages,
encoded once), the session values (one row per key, rewritten only when a turn changes it), an
optional summary snapshot (the turns up to ``through`` condensed into messages), and a busy
mark (which run holds the session). Stores deal in bytes; this module encodes and decodes with
:mod:`rillet.codec`, so a store never sees a Python object it would have to understand.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rillet._native import AgenticMessage, Message
from rillet.data import codec
from rillet.errors import SessionBusyError

__all__ = [
    "SessionData",
    "SessionHead",
    "SessionInfo",
    "SessionStore",
    "Turn",
    "busy_error",
    "decode_messages",
    "encode_messages",
]


@dataclass(frozen=True)
class SessionHead:
    """What a store reads of a session before its turns: the number of its last turn, its
    summary snapshot (``summary`` covers turns 1..``summary_through``; None without one) and
    its values, each encoded."""

    last_turn: int
    summary_through: int
    summary: bytes | None
    values: dict[str, bytes]


@dataclass(frozen=True)
class SessionInfo:
    """One line of :meth:`SessionStore.list`: times are ``time.time()`` seconds."""

    session_id: str
    turns: int
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class Turn:
    """One turn of a session: its number (from 1) and its messages."""

    index: int
    messages: list[Message]


@dataclass
class SessionData:
    """A session as :meth:`SessionStore.get` returns it: every turn, the summary's messages
    (empty without one, then ``summary_through`` is 0) and the current values."""

    session_id: str
    turns: list[Turn] = field(default_factory=list)
    summary: list[Message] = field(default_factory=list)
    summary_through: int = 0
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def messages(self) -> list[Message]:
        """Every turn's messages, oldest first (the summary is not among them)."""
        return [m for t in self.turns for m in t.messages]


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions live. The Runner calls the first five methods; users call the last four.

    * ``acquire(id, owner, lease)`` marks the session busy for ``owner`` (creating it if new)
      or raises :class:`~rillet.errors.SessionBusyError` while another owner's unexpired mark
      holds it; ``release(id, owner)`` clears the mark if ``owner`` holds it.
    * ``head(id)`` reads the head (None for an unknown id); ``turns(id, after=, before=,
      limit=)`` reads turns ``after < index < before``, newest first, at most ``limit``.
    * ``append(id, data, values)`` adds one turn and writes the changed values, in one
      transaction; ``set_summary(id, through, data)`` replaces the snapshot.
    * ``get``, ``list``, ``delete`` and ``prune(older_than)`` (seconds since the last turn;
      busy sessions are kept) manage sessions.

    ``rows_read`` counts the turn rows read since the store was made: what tests use to
    check that a load reads a bounded number of rows.
    """

    rows_read: int

    def acquire(self, session_id: str, owner: str, lease: float) -> None: ...

    def release(self, session_id: str, owner: str) -> None: ...

    def head(self, session_id: str) -> SessionHead | None: ...

    def turns(
        self, session_id: str, *, after: int = 0, before: int | None = None, limit: int | None = None
    ) -> list[tuple[int, bytes]]: ...

    def append(self, session_id: str, data: bytes, values: Mapping[str, bytes]) -> int: ...

    def set_summary(self, session_id: str, through: int, data: bytes) -> None: ...

    def get(self, session_id: str) -> SessionData | None: ...

    def list(self) -> list[SessionInfo]: ...

    def delete(self, session_id: str) -> bool: ...

    def prune(self, older_than: float) -> int: ...


def encode_messages(messages: list[Message]) -> bytes:
    return codec.encode(list(messages))


def decode_messages(data: bytes) -> list[Message]:
    """A row's messages: Messages, or the AgenticMessages of a block-list run (the codec
    encodes both; a turn holds one type, the one its run was given)."""
    out = codec.decode(data)
    if not isinstance(out, list) or not all(isinstance(m, (Message, AgenticMessage)) for m in out):
        raise codec.DecodeError("a session row does not hold a list of rillet.Message; it was not written by rillet")
    return out


def build_data(session_id: str, head: SessionHead, rows: list[tuple[int, bytes]]) -> SessionData:
    """The decoded session of ``head`` and its turn ``rows`` (any order)."""
    return SessionData(
        session_id,
        [Turn(i, decode_messages(d)) for i, d in sorted(rows)],
        decode_messages(head.summary) if head.summary is not None else [],
        head.summary_through,
        {k: codec.decode(v) for k, v in head.values.items()},
    )


def busy_error(session_id: str, where: str, seconds_left: float) -> SessionBusyError:
    return SessionBusyError(
        f"session[{session_id}] is in use by another run (in {where}; the mark expires in "
        f"{max(seconds_left, 0.0):.0f} s if that run died); wait for it to finish and try again"
    )


def now() -> float:
    return time.time()
