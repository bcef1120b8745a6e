"""Checkpoint stores: an in-memory dict and a SQLite file."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import sqlite3

from rillet.checkpoint.payload import CheckpointClaimedError, CheckpointError
from rillet.checkpoint.sqlite_file import APP_ID as _APP_ID
from rillet.checkpoint.sqlite_file import SqliteFile

__all__ = [
    "CheckpointStore",
    "ClaimingCheckpointStore",
    "InMemoryCheckpointStore",
    "LogCheckpointStore",
    "SqliteCheckpointStore",
]


@runtime_checkable
class CheckpointStore(Protocol):
    """Where the Runner keeps checkpoints: opaque bytes under a string id. Either method may
    be ``async``; :class:`~rillet.checkpoint.adapter.StoreAdapter` is the one place that
    calls them. Optional methods (each may be ``async`` too):

    * ``delete(id)``: called when a resumed run finishes well; without it the checkpoint stays.
    * ``claim`` and ``release``: see :class:`ClaimingCheckpointStore`. Without them a resume
      reads with ``get``, and two concurrent resumes of one id both run.
    """

    def get(self, checkpoint_id: str) -> bytes | None | Awaitable[bytes | None]: ...

    def set(self, checkpoint_id: str, data: bytes) -> None | Awaitable[None]: ...


@runtime_checkable
class ClaimingCheckpointStore(CheckpointStore, Protocol):
    """A :class:`CheckpointStore` whose resumes are exclusive. ``claim`` returns the checkpoint
    and marks it taken by ``owner`` in one atomic step, or raises
    :class:`~rillet.checkpoint.CheckpointClaimedError` while another owner's unexpired claim
    holds it; ``set`` and ``delete`` clear the claim, ``release`` clears it if ``owner`` still
    holds it. With them, two concurrent resumes of one id run it once."""

    def claim(self, checkpoint_id: str, owner: str) -> bytes | None | Awaitable[bytes | None]: ...

    def release(self, checkpoint_id: str, owner: str) -> None | Awaitable[None]: ...


@runtime_checkable
class LogCheckpointStore(CheckpointStore, Protocol):
    """A :class:`CheckpointStore` that also keeps an append-only log of records under each id,
    which ``Runner(durability="step")`` writes to: each record is written once, so the bytes a
    run writes grow linearly with its steps. ``get``/``set`` read and replace the *head*; ``set``
    also empties the log (and clears the claim), ``delete`` removes head, log and claim.

    * ``append(id, records, head)``: appends ``records`` to the log and replaces the head in one
      atomic step (creating the id if absent).
    * ``read_log(id, start=0)``: the log's records from index ``start``.
    * ``prune(older_than=None, keep_last=None)``: deletes whole checkpoints whose head was
      written more than ``older_than`` seconds ago, and/or all but the ``keep_last`` most
      recently written; returns how many it deleted.

    Stores without ``append`` and ``read_log`` still work in step mode: the adapter keeps each
    record under its own key (see :class:`~rillet.checkpoint.adapter.StoreAdapter`)."""

    def append(self, checkpoint_id: str, records: list[bytes], head: bytes) -> None | Awaitable[None]: ...

    def read_log(self, checkpoint_id: str, start: int = 0) -> list[bytes] | Awaitable[list[bytes]]: ...

    def prune(self, *, older_than: float | None = None, keep_last: int | None = None) -> int | Awaitable[int]: ...


def _check_prune(older_than: float | None, keep_last: int | None) -> None:
    if older_than is not None and older_than < 0:
        raise ValueError(f"prune(older_than={older_than!r}): give a number of seconds >= 0")
    if keep_last is not None and (not isinstance(keep_last, int) or keep_last < 0):
        raise ValueError(f"prune(keep_last={keep_last!r}): give a count >= 0")


def _to_prune(
    written: list[tuple[str, float]], older_than: float | None, keep_last: int | None, now: float
) -> list[str]:
    """The ids of ``written`` ((id, written at), any order) that pruning removes."""
    _check_prune(older_than, keep_last)
    newest_first = sorted(written, key=lambda w: w[1], reverse=True)
    gone = {i for i, _ in newest_first[keep_last:]} if keep_last is not None else set()
    if older_than is not None:
        gone.update(i for i, at in newest_first if at < now - older_than)
    return sorted(gone)


def claimed_error(checkpoint_id: str, where: str, seconds_left: float) -> CheckpointClaimedError:
    return CheckpointClaimedError(
        f"checkpoint[{checkpoint_id}] is already being resumed (claimed in {where}; the claim expires in "
        f"{max(seconds_left, 0.0):.0f} s if its holder died); nothing was run"
    )


class InMemoryCheckpointStore:
    """Checkpoints in a dict: for tests and single-process runs. ``claim_lease`` (seconds):
    how long a resume's claim holds if it is never released (see :class:`CheckpointStore`)."""

    def __init__(self, *, claim_lease: float = 600.0) -> None:
        self._data: dict[str, bytes] = {}
        self._logs: dict[str, list[bytes]] = {}
        self._written: dict[str, float] = {}  # id -> time.time() of the last head write
        self._claims: dict[str, tuple[str, float]] = {}  # id -> (owner, expiry on time.monotonic)
        self._lock = threading.Lock()
        self.claim_lease = claim_lease

    def get(self, checkpoint_id: str) -> bytes | None:
        with self._lock:
            return self._data.get(checkpoint_id)

    def set(self, checkpoint_id: str, data: bytes) -> None:
        with self._lock:
            self._data[checkpoint_id] = bytes(data)
            self._logs.pop(checkpoint_id, None)
            self._written[checkpoint_id] = time.time()
            self._claims.pop(checkpoint_id, None)

    def delete(self, checkpoint_id: str) -> None:
        with self._lock:
            self._drop(checkpoint_id)

    def _drop(self, checkpoint_id: str) -> None:
        self._data.pop(checkpoint_id, None)
        self._logs.pop(checkpoint_id, None)
        self._written.pop(checkpoint_id, None)
        self._claims.pop(checkpoint_id, None)

    def append(self, checkpoint_id: str, records: list[bytes], head: bytes) -> None:
        with self._lock:
            self._logs.setdefault(checkpoint_id, []).extend(bytes(r) for r in records)
            self._data[checkpoint_id] = bytes(head)
            self._written[checkpoint_id] = time.time()

    def read_log(self, checkpoint_id: str, start: int = 0) -> list[bytes]:
        with self._lock:
            return list(self._logs.get(checkpoint_id, ())[start:])

    def prune(self, *, older_than: float | None = None, keep_last: int | None = None) -> int:
        with self._lock:
            gone = _to_prune(list(self._written.items()), older_than, keep_last, time.time())
            for checkpoint_id in gone:
                self._drop(checkpoint_id)
            return len(gone)

    def ids(self) -> list[str]:
        """Every checkpoint id, most recently written first."""
        return [e[0] for e in self.entries()]

    def entries(self) -> list[tuple[str, int, float]]:
        """``(id, bytes of head and log, when its head was written as Unix time)``, most recently
        written first."""
        with self._lock:
            rows = [
                (i, len(d) + sum(map(len, self._logs.get(i, ()))), self._written.get(i, 0.0))
                for i, d in self._data.items()
            ]
        return sorted(rows, key=lambda r: r[2], reverse=True)

    def claim(self, checkpoint_id: str, owner: str) -> bytes | None:
        now = time.monotonic()
        with self._lock:
            data = self._data.get(checkpoint_id)
            if data is None:
                return None
            held = self._claims.get(checkpoint_id)
            if held is not None and held[0] != owner and held[1] > now:
                raise claimed_error(checkpoint_id, "this process", held[1] - now)
            self._claims[checkpoint_id] = (owner, now + self.claim_lease)
            return data

    def release(self, checkpoint_id: str, owner: str) -> None:
        with self._lock:
            held = self._claims.get(checkpoint_id)
            if held is not None and held[0] == owner:
                del self._claims[checkpoint_id]

    def __len__(self) -> int:
        return len(self._data)


_SCHEMA_VERSION = 3  # 2: claimed_by and claimed_until (resume claims); 3: checkpoint_log (step records)


class SqliteCheckpointStore:
    """Checkpoints in a SQLite database file (stdlib ``sqlite3``, WAL journal).

    Each ``set`` is one atomic upsert, so a process killed while writing leaves the last
    committed checkpoint intact. Safe to share between threads (a connection per thread) and
    between processes (SQLite's locking; writers wait up to ``timeout`` seconds). The schema is
    versioned; a file that is not a rillet checkpoint database is refused with a clear error.

    ``claim`` takes a checkpoint for one resume in one ``BEGIN IMMEDIATE`` transaction; a claim
    never released (its process died) expires after ``claim_lease`` seconds of wall-clock time,
    so it should be longer than your longest resumed run.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0, claim_lease: float = 600.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.claim_lease = claim_lease
        self._file = SqliteFile(
            self.path,
            timeout,
            store="SqliteCheckpointStore",
            error=CheckpointError,
            wanted="a rillet checkpoint database",
        )
        self._setup()

    def _setup(self) -> None:
        app_id, version = self._file.check()
        conn = self._file.connect()
        if app_id == _APP_ID and version > _SCHEMA_VERSION:
            raise CheckpointError(
                f"SqliteCheckpointStore: {str(self.path)!r} has schema version {version}, newer than this rillet "
                f"reads ({_SCHEMA_VERSION}); upgrade rillet"
            )
        conn.execute("PRAGMA journal_mode = WAL")
        with self._file.write():
            conn.execute(
                "CREATE TABLE IF NOT EXISTS checkpoints ("
                " id TEXT PRIMARY KEY, data BLOB NOT NULL,"
                " updated_at REAL NOT NULL DEFAULT (julianday('now')),"
                " claimed_by TEXT, claimed_until REAL)"
            )
            columns = {r[1] for r in conn.execute("PRAGMA table_info(checkpoints)")}
            for column, kind in (("claimed_by", "TEXT"), ("claimed_until", "REAL")):
                if column not in columns:  # a schema-1 file: add the claim columns
                    conn.execute(f"ALTER TABLE checkpoints ADD COLUMN {column} {kind}")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS checkpoint_log ("
                " id TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,"
                " PRIMARY KEY (id, seq)) WITHOUT ROWID"
            )
            conn.execute(f"PRAGMA application_id = {_APP_ID}")
            conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    def _blob(self, checkpoint_id: str, value: object) -> bytes:
        if isinstance(value, bytes):
            return value
        raise CheckpointError(
            f"checkpoint[{checkpoint_id}] in {str(self.path)!r}: the data column holds {type(value).__name__}, "
            "not a BLOB; this row was not written by rillet's SqliteCheckpointStore"
        )

    def get(self, checkpoint_id: str) -> bytes | None:
        row = self._file.connect().execute("SELECT data FROM checkpoints WHERE id = ?", (checkpoint_id,)).fetchone()
        return None if row is None else self._blob(checkpoint_id, row[0])

    def set(self, checkpoint_id: str, data: bytes) -> None:
        with self._file.write() as conn:
            conn.execute("DELETE FROM checkpoint_log WHERE id = ?", (checkpoint_id,))
            conn.execute(
                "INSERT INTO checkpoints (id, data) VALUES (?, ?) "
                "ON CONFLICT(id) DO UPDATE SET data = excluded.data, updated_at = julianday('now'),"
                " claimed_by = NULL, claimed_until = NULL",
                (checkpoint_id, bytes(data)),
            )

    def append(self, checkpoint_id: str, records: list[bytes], head: bytes) -> None:
        with self._file.write() as conn:
            (n,) = conn.execute(
                "SELECT coalesce(max(seq) + 1, 0) FROM checkpoint_log WHERE id = ?", (checkpoint_id,)
            ).fetchone()
            conn.executemany(
                "INSERT INTO checkpoint_log (id, seq, data) VALUES (?, ?, ?)",
                [(checkpoint_id, n + k, bytes(r)) for k, r in enumerate(records)],
            )
            conn.execute(  # the claim stays: a resumed run appends while it holds it
                "INSERT INTO checkpoints (id, data) VALUES (?, ?) "
                "ON CONFLICT(id) DO UPDATE SET data = excluded.data, updated_at = julianday('now')",
                (checkpoint_id, bytes(head)),
            )

    def read_log(self, checkpoint_id: str, start: int = 0) -> list[bytes]:
        rows = self._file.connect().execute(
            "SELECT data FROM checkpoint_log WHERE id = ? AND seq >= ? ORDER BY seq", (checkpoint_id, start)
        )
        return [self._blob(checkpoint_id, r[0]) for r in rows.fetchall()]

    def prune(self, *, older_than: float | None = None, keep_last: int | None = None) -> int:
        with self._file.write() as conn:
            rows = conn.execute("SELECT id, (updated_at - 2440587.5) * 86400.0 FROM checkpoints").fetchall()
            gone = _to_prune([(r[0], float(r[1])) for r in rows], older_than, keep_last, time.time())
            for checkpoint_id in gone:
                self._delete(conn, checkpoint_id)
        return len(gone)

    @staticmethod
    def _delete(conn: sqlite3.Connection, checkpoint_id: str) -> None:
        conn.execute("DELETE FROM checkpoint_log WHERE id = ?", (checkpoint_id,))
        conn.execute("DELETE FROM checkpoints WHERE id = ?", (checkpoint_id,))

    def claim(self, checkpoint_id: str, owner: str) -> bytes | None:
        with self._file.write() as conn:  # the write lock first: no other claim reads in between
            row = conn.execute(
                "SELECT data, claimed_by, claimed_until FROM checkpoints WHERE id = ?", (checkpoint_id,)
            ).fetchone()
            now = time.time()
            if row is not None and row[1] is not None and row[1] != owner and (row[2] or 0.0) > now:
                raise claimed_error(checkpoint_id, str(self.path), row[2] - now)
            if row is not None:
                self._blob(checkpoint_id, row[0])
                conn.execute(
                    "UPDATE checkpoints SET claimed_by = ?, claimed_until = ? WHERE id = ?",
                    (owner, now + self.claim_lease, checkpoint_id),
                )
        return None if row is None else bytes(row[0])

    def release(self, checkpoint_id: str, owner: str) -> None:
        self._file.connect().execute(
            "UPDATE checkpoints SET claimed_by = NULL, claimed_until = NULL WHERE id = ? AND claimed_by = ?",
            (checkpoint_id, owner),
        )

    def delete(self, checkpoint_id: str) -> None:
        with self._file.write() as conn:
            self._delete(conn, checkpoint_id)

    def ids(self) -> list[str]:
        """Every checkpoint id, most recently written first."""
        rows = self._file.connect().execute("SELECT id FROM checkpoints ORDER BY updated_at DESC").fetchall()
        return [r[0] for r in rows]

    def entries(self) -> list[tuple[str, int, float]]:
        """``(id, size in bytes of head and log, when it was written as Unix time)`` of every
        checkpoint, most recently written first (what ``rillet inspect --db FILE`` lists)."""
        rows = self._file.connect().execute(
            "SELECT id, length(data) + coalesce((SELECT sum(length(l.data)) FROM checkpoint_log l WHERE l.id = c.id), 0),"
            " (updated_at - 2440587.5) * 86400.0 FROM checkpoints c ORDER BY updated_at DESC"
        )
        return [(r[0], int(r[1]), float(r[2])) for r in rows.fetchall()]

    def close(self) -> None:
        self._file.close()

    def __repr__(self) -> str:
        return f"SqliteCheckpointStore({str(self.path)!r})"
