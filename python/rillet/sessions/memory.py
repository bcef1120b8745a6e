"""Sessions in a dict: for tests and single-process programs."""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from rillet.sessions.protocol import SessionData, SessionHead, SessionInfo, build_data, busy_error, now

__all__ = ["InMemorySessionStore"]


@dataclass
class _Entry:
    created_at: float
    updated_at: float
    turns: builtins.list[bytes] = field(default_factory=builtins.list)  # turn i is turns[i - 1]
    values: dict[str, bytes] = field(default_factory=dict)
    summary: bytes | None = None
    summary_through: int = 0
    busy: tuple[str, float] | None = None  # (owner, expiry on time.monotonic)


class InMemorySessionStore:
    """A :class:`~rillet.sessions.SessionStore` in memory; thread-safe."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self.rows_read = 0

    def acquire(self, session_id: str, owner: str, lease: float) -> None:
        t = time.monotonic()
        with self._lock:
            entry = self._sessions.get(session_id)
            if entry is None:
                entry = self._sessions[session_id] = _Entry(now(), now())
            if entry.busy is not None and entry.busy[0] != owner and entry.busy[1] > t:
                raise busy_error(session_id, "this process", entry.busy[1] - t)
            entry.busy = (owner, t + lease)

    def release(self, session_id: str, owner: str) -> None:
        with self._lock:
            entry = self._sessions.get(session_id)
            if entry is not None and entry.busy is not None and entry.busy[0] == owner:
                entry.busy = None

    def head(self, session_id: str) -> SessionHead | None:
        with self._lock:
            e = self._sessions.get(session_id)
            if e is None:
                return None
            return SessionHead(len(e.turns), e.summary_through, e.summary, dict(e.values))

    def turns(
        self, session_id: str, *, after: int = 0, before: int | None = None, limit: int | None = None
    ) -> builtins.list[tuple[int, bytes]]:
        with self._lock:
            e = self._sessions.get(session_id)
            if e is None:
                return []
            hi = len(e.turns) if before is None else min(before - 1, len(e.turns))
            lo = max(after + 1, 1 if limit is None else hi - limit + 1)
            rows = [(i, e.turns[i - 1]) for i in range(hi, lo - 1, -1)]
            self.rows_read += len(rows)
            return rows

    def append(self, session_id: str, data: bytes, values: Mapping[str, bytes]) -> int:
        with self._lock:
            e = self._sessions.get(session_id)
            if e is None:
                e = self._sessions[session_id] = _Entry(now(), now())
            e.turns.append(bytes(data))
            e.values.update(values)
            e.updated_at = now()
            return len(e.turns)

    def set_summary(self, session_id: str, through: int, data: bytes) -> None:
        with self._lock:
            e = self._sessions.get(session_id)
            if e is not None:
                e.summary, e.summary_through = bytes(data), through

    def get(self, session_id: str) -> SessionData | None:
        head = self.head(session_id)
        return None if head is None else build_data(session_id, head, self.turns(session_id))

    def list(self) -> builtins.list[SessionInfo]:
        with self._lock:
            items = [SessionInfo(k, len(e.turns), e.created_at, e.updated_at) for k, e in self._sessions.items()]
        return sorted(items, key=lambda i: i.updated_at, reverse=True)

    def delete(self, session_id: str) -> bool:
        with self._lock:
            return self._sessions.pop(session_id, None) is not None

    def prune(self, older_than: float) -> int:
        cutoff, t = now() - older_than, time.monotonic()
        with self._lock:
            old = [k for k, e in self._sessions.items() if e.updated_at < cutoff and (e.busy is None or e.busy[1] <= t)]
            for k in old:
                del self._sessions[k]
        return len(old)

    def __repr__(self) -> str:
        return f"InMemorySessionStore({len(self._sessions)} sessions)"
