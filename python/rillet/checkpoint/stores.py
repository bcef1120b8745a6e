"""Checkpoint stores: an in-memory dict and a SQLite file."""

from __future__ import annotations

import threading
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import sqlite3

from rillet.checkpoint.payload import CheckpointError

__all__ = ["CheckpointStore", "InMemoryCheckpointStore", "SqliteCheckpointStore"]


@runtime_checkable
class CheckpointStore(Protocol):
    """Where the Runner keeps checkpoints: opaque bytes under a string id. Either method may
    be ``async``. ``delete(id)`` is optional."""

    def get(self, checkpoint_id: str) -> bytes | None | Awaitable[bytes | None]: ...

    def set(self, checkpoint_id: str, data: bytes) -> None | Awaitable[None]: ...


class InMemoryCheckpointStore:
    """Checkpoints in a dict: for tests and single-process runs."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def get(self, checkpoint_id: str) -> bytes | None:
        with self._lock:
            return self._data.get(checkpoint_id)

    def set(self, checkpoint_id: str, data: bytes) -> None:
        with self._lock:
            self._data[checkpoint_id] = bytes(data)

    def delete(self, checkpoint_id: str) -> None:
        with self._lock:
            self._data.pop(checkpoint_id, None)

    def __len__(self) -> int:
        return len(self._data)


_SCHEMA_VERSION = 1
_APP_ID = 0x72696C6C  # "rill": marks the file as a rillet checkpoint database


class SqliteCheckpointStore:
    """Checkpoints in a SQLite database file (stdlib ``sqlite3``, WAL journal).

    Each ``set`` is one atomic upsert, so a process killed while writing leaves the last
    committed checkpoint intact. Safe to share between threads (a connection per thread) and
    between processes (SQLite's locking; writers wait up to ``timeout`` seconds). The schema is
    versioned; a file that is not a rillet checkpoint database is refused with a clear error.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._local = threading.local()
        self._setup()

    def _connect(self) -> sqlite3.Connection:
        import sqlite3  # imported on first use: `import rillet` stays light

        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
            except sqlite3.Error as e:
                raise CheckpointError(f"SqliteCheckpointStore: cannot open {str(self.path)!r}: {e}") from e
            conn.execute("PRAGMA busy_timeout = %d" % int(self.timeout * 1000))
            self._local.conn = conn
        return conn

    def _setup(self) -> None:
        import sqlite3

        conn = self._connect()
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as e:
            raise CheckpointError(
                f"SqliteCheckpointStore: {str(self.path)!r} is not a SQLite database ({e}); "
                "give the path of a new file or of a rillet checkpoint database"
            ) from e
        if tables and app_id != _APP_ID:
            raise CheckpointError(
                f"SqliteCheckpointStore: {str(self.path)!r} is a SQLite database of another application; "
                "give the path of a new file or of a rillet checkpoint database"
            )
        if app_id == _APP_ID and version > _SCHEMA_VERSION:
            raise CheckpointError(
                f"SqliteCheckpointStore: {str(self.path)!r} has schema version {version}, newer than this rillet "
                f"reads ({_SCHEMA_VERSION}); upgrade rillet"
            )
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS checkpoints ("
                " id TEXT PRIMARY KEY, data BLOB NOT NULL,"
                " updated_at REAL NOT NULL DEFAULT (julianday('now')))"
            )
            conn.execute(f"PRAGMA application_id = {_APP_ID}")
            conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def get(self, checkpoint_id: str) -> bytes | None:
        row = self._connect().execute("SELECT data FROM checkpoints WHERE id = ?", (checkpoint_id,)).fetchone()
        return None if row is None else bytes(row[0])

    def set(self, checkpoint_id: str, data: bytes) -> None:
        self._connect().execute(
            "INSERT INTO checkpoints (id, data) VALUES (?, ?) "
            "ON CONFLICT(id) DO UPDATE SET data = excluded.data, updated_at = julianday('now')",
            (checkpoint_id, bytes(data)),
        )

    def delete(self, checkpoint_id: str) -> None:
        self._connect().execute("DELETE FROM checkpoints WHERE id = ?", (checkpoint_id,))

    def ids(self) -> list[str]:
        """Every checkpoint id, most recently written first."""
        rows = self._connect().execute("SELECT id FROM checkpoints ORDER BY updated_at DESC").fetchall()
        return [r[0] for r in rows]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __repr__(self) -> str:
        return f"SqliteCheckpointStore({str(self.path)!r})"
