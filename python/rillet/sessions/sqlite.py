"""Sessions in a SQLite file, which may be the checkpoint store's file (own tables).

Tables: ``sessions`` (one row per session: times, last turn, summary, busy mark),
``session_turns`` (one append-only row per turn: the turn's messages, encoded once) and
``session_values`` (one row per session value, rewritten only when a turn changes it). A turn
therefore writes its own bytes plus a row header and an index entry; loading with a last-N
policy reads N turn rows through the (session, turn) primary key, whatever the session's length.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

from rillet.checkpoint.sqlite_file import APP_ID as _APP_ID
from rillet.checkpoint.sqlite_file import SqliteFile
from rillet.errors import SessionError
from rillet.sessions.protocol import SessionData, SessionHead, SessionInfo, build_data, busy_error, now

__all__ = ["SqliteSessionStore"]

_TABLES = (
    "CREATE TABLE IF NOT EXISTS sessions ("
    " key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, created_at REAL NOT NULL, updated_at REAL NOT NULL,"
    " last_turn INTEGER NOT NULL DEFAULT 0, summary_through INTEGER NOT NULL DEFAULT 0, summary BLOB,"
    " busy_by TEXT, busy_until REAL)",
    "CREATE TABLE IF NOT EXISTS session_turns ("
    " session INTEGER NOT NULL, turn INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (session, turn))",
    "CREATE TABLE IF NOT EXISTS session_values ("
    " session INTEGER NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (session, name))",
)


class SqliteSessionStore:
    """A :class:`~rillet.sessions.SessionStore` in a SQLite file (stdlib ``sqlite3``, WAL).

    Shares a file with :class:`~rillet.checkpoint.SqliteCheckpointStore` (both mark it as a
    rillet database; the checkpoint schema version is left to the checkpoint store). Safe
    between threads (a connection per thread) and processes (writers wait up to ``timeout``
    seconds). A busy mark is taken in one ``BEGIN IMMEDIATE`` transaction and uses wall-clock
    time, so its lease holds across processes.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.rows_read = 0
        # WAL with NORMAL sync: a commit is atomic and survives a process crash; only a power
        # cut may lose the last turns, never corrupt the file. FULL fsyncs each turn.
        self._file = SqliteFile(
            self.path,
            timeout,
            store="SqliteSessionStore",
            error=SessionError,
            wanted="a rillet database",
            pragmas=("PRAGMA synchronous = NORMAL",),
        )
        self._setup()

    def _setup(self) -> None:
        self._file.check()
        conn = self._file.connect()
        conn.execute("PRAGMA journal_mode = WAL")
        with self._file.write():
            for sql in _TABLES:
                conn.execute(sql)
            conn.execute(f"PRAGMA application_id = {_APP_ID}")

    def _key(self, conn: sqlite3.Connection, session_id: str, create: bool) -> int | None:
        row = conn.execute("SELECT key FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None and create:
            t = now()
            cur = conn.execute("INSERT INTO sessions (id, created_at, updated_at) VALUES (?, ?, ?)", (session_id, t, t))
            return cur.lastrowid
        return None if row is None else int(row[0])

    def acquire(self, session_id: str, owner: str, lease: float) -> None:
        with self._file.write() as conn:
            key = self._key(conn, session_id, create=True)
            by, until = conn.execute("SELECT busy_by, busy_until FROM sessions WHERE key = ?", (key,)).fetchone()
            t = now()
            if by is not None and by != owner and (until or 0.0) > t:
                raise busy_error(session_id, str(self.path), until - t)
            conn.execute("UPDATE sessions SET busy_by = ?, busy_until = ? WHERE key = ?", (owner, t + lease, key))

    def release(self, session_id: str, owner: str) -> None:
        self._file.connect().execute(
            "UPDATE sessions SET busy_by = NULL, busy_until = NULL WHERE id = ? AND busy_by = ?", (session_id, owner)
        )

    def head(self, session_id: str) -> SessionHead | None:
        conn = self._file.connect()
        row = conn.execute(
            "SELECT key, last_turn, summary_through, summary FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        values = conn.execute("SELECT name, data FROM session_values WHERE session = ?", (row[0],)).fetchall()
        return SessionHead(row[1], row[2], row[3], {k: bytes(v) for k, v in values})

    def turns(
        self, session_id: str, *, after: int = 0, before: int | None = None, limit: int | None = None
    ) -> builtins.list[tuple[int, bytes]]:
        conn = self._file.connect()
        key = self._key(conn, session_id, create=False)
        if key is None:
            return []
        rows = conn.execute(
            "SELECT turn, data FROM session_turns WHERE session = ? AND turn > ? AND turn < ? ORDER BY turn DESC LIMIT ?",
            (key, after, 2**62 if before is None else before, -1 if limit is None else limit),
        ).fetchall()
        self.rows_read += len(rows)
        return [(int(i), bytes(d)) for i, d in rows]

    def append(self, session_id: str, data: bytes, values: Mapping[str, bytes]) -> int:
        with self._file.write() as conn:
            key = self._key(conn, session_id, create=True)
            (turn,) = conn.execute("SELECT last_turn + 1 FROM sessions WHERE key = ?", (key,)).fetchone()
            conn.execute("INSERT INTO session_turns (session, turn, data) VALUES (?, ?, ?)", (key, turn, bytes(data)))
            conn.executemany(
                "INSERT INTO session_values (session, name, data) VALUES (?, ?, ?) "
                "ON CONFLICT(session, name) DO UPDATE SET data = excluded.data",
                [(key, k, bytes(v)) for k, v in values.items()],
            )
            conn.execute("UPDATE sessions SET last_turn = ?, updated_at = ? WHERE key = ?", (turn, now(), key))
        return int(turn)

    def set_summary(self, session_id: str, through: int, data: bytes) -> None:
        self._file.connect().execute(
            "UPDATE sessions SET summary = ?, summary_through = ? WHERE id = ?", (bytes(data), through, session_id)
        )

    def get(self, session_id: str) -> SessionData | None:
        head = self.head(session_id)
        return None if head is None else build_data(session_id, head, self.turns(session_id))

    def list(self) -> builtins.list[SessionInfo]:
        rows = (
            self._file.connect()
            .execute("SELECT id, last_turn, created_at, updated_at FROM sessions ORDER BY updated_at DESC")
            .fetchall()
        )
        return [SessionInfo(*r) for r in rows]

    def delete(self, session_id: str) -> bool:
        with self._file.write() as conn:
            key = self._key(conn, session_id, create=False)
            if key is not None:
                self._drop(conn, [key])
        return key is not None

    def prune(self, older_than: float) -> int:
        t = now()
        with self._file.write() as conn:
            keys = [
                r[0]
                for r in conn.execute(
                    "SELECT key FROM sessions WHERE updated_at < ? AND (busy_by IS NULL OR busy_until <= ?)",
                    (t - older_than, t),
                )
            ]
            self._drop(conn, keys)
        return len(keys)

    @staticmethod
    def _drop(conn: sqlite3.Connection, keys: builtins.list[int]) -> None:
        for table, column in (("session_turns", "session"), ("session_values", "session"), ("sessions", "key")):
            conn.executemany(f"DELETE FROM {table} WHERE {column} = ?", [(k,) for k in keys])

    def close(self) -> None:
        self._file.close()

    def __repr__(self) -> str:
        return f"SqliteSessionStore({str(self.path)!r})"
