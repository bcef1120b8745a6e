"""Checkpoints in PostgreSQL (psycopg 3), with a versioned schema that migrates itself.

Two tables in ``schema``: ``rillet_checkpoints`` (one row per id: the head, when it was last
written, the log's length and size, the resume claim) and ``rillet_checkpoint_log`` (one row per
log record, deleted with its checkpoint). ``rillet_schema_versions`` records which migrations ran;
they run under an advisory lock, so processes starting together migrate once. Times are the
server's clock, so the claims of processes on several machines agree on when a lease ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from rillet.checkpoint.remote import check_prune, redacted, unreachable
from rillet.checkpoint.stores import claimed_error
from rillet.errors import CheckpointError

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresCheckpointStore"]

_COMPONENT = "checkpoints"
_NOW = "extract(epoch from clock_timestamp())::float8"
_LOCK_KEY = 0x72696C6C  # "rill": the advisory lock held while migrating

# Migration n (1-based) brings the schema from version n - 1 to n. {s} is the schema, quoted.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE {s}.rillet_checkpoints (id text PRIMARY KEY, head bytea NOT NULL,"
        " written_at float8 NOT NULL, log_count bigint NOT NULL DEFAULT 0, log_bytes bigint NOT NULL DEFAULT 0,"
        " claimed_by text, claimed_until float8)",
        "CREATE INDEX rillet_checkpoints_written_at ON {s}.rillet_checkpoints (written_at)",
        "CREATE TABLE {s}.rillet_checkpoint_log (id text NOT NULL REFERENCES {s}.rillet_checkpoints (id)"
        " ON DELETE CASCADE, seq bigint NOT NULL, record bytea NOT NULL, PRIMARY KEY (id, seq))",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)


class PostgresCheckpointStore:
    """Checkpoints in PostgreSQL, shared by every process that reaches the server.

    ``url`` is a libpq connection string or URL (``postgresql://user:password@host:port/db``);
    the tables live in ``schema`` (which must exist; ``public`` by default) and are created or
    migrated on first use. ``claim`` takes a checkpoint for one resume atomically (a row lock); a
    claim never released (its process died) expires after ``claim_lease`` seconds of the
    server's clock. The methods are plain (blocking) functions: the Runner calls them on its
    worker threads; one store holds one connection, used by one thread at a time.

    Needs the ``postgres`` extra (``pip install 'rillet[postgres]'``).
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = "public",
        claim_lease: float = 600.0,
        connect_timeout: float = 5.0,
    ) -> None:
        import psycopg  # the optional `postgres` extra, imported only by those who use this store
        from psycopg import sql  # part of psycopg: quoting the schema's name

        self.url = url
        self.schema = schema
        self.claim_lease = claim_lease
        self.connect_timeout = connect_timeout
        self._psycopg = psycopg
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        quoted = sql.Identifier(schema).as_string()
        self._t = f"{quoted}.rillet_checkpoints"
        self._log = f"{quoted}.rillet_checkpoint_log"
        self._migrate(quoted)

    # --- the connection --------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is None or conn.closed:
            try:
                conn = self._psycopg.connect(
                    self.url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
                )
            except self._psycopg.OperationalError as e:
                raise unreachable("PostgresCheckpointStore", self.url, e, "PostgreSQL") from e
            self._conn = conn
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor in one transaction, this store's connection held by this thread meanwhile."""
        with self._lock, ExitStack() as stack:
            conn = self._begin(stack)
            try:
                yield stack.enter_context(conn.cursor())
                stack.close()  # COMMIT, or ROLLBACK after an error in the block
            except self._psycopg.OperationalError as e:
                if not conn.broken:
                    raise
                self._conn = None  # the next call reconnects
                raise unreachable("PostgresCheckpointStore", self.url, e, "PostgreSQL") from e

    def _begin(self, stack: ExitStack) -> psycopg.Connection[Any]:
        """The connection, in a new transaction. A connection found dead at BEGIN (the server
        restarted, or dropped it while idle) is replaced once: nothing was sent on it yet."""
        for attempt in (1, 2):
            conn = self._connect()
            try:
                stack.enter_context(conn.transaction())
                return conn
            except self._psycopg.OperationalError as e:
                if not conn.broken:
                    raise
                self._conn = None
                if attempt == 2:
                    raise unreachable("PostgresCheckpointStore", self.url, e, "PostgreSQL") from e
        raise AssertionError("unreachable")

    def _migrate(self, quoted: str) -> None:
        with self._transaction() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {quoted}.rillet_schema_versions (component text PRIMARY KEY, version int NOT NULL)"
            )
            cur.execute(f"SELECT version FROM {quoted}.rillet_schema_versions WHERE component = %s", (_COMPONENT,))
            row = cur.fetchone()
            version = 0 if row is None else int(row[0])
            if version > SCHEMA_VERSION:
                raise CheckpointError(
                    f"PostgresCheckpointStore: the tables in schema {self.schema!r} at {redacted(self.url)} have "
                    f"version {version}, newer than this rillet reads ({SCHEMA_VERSION}); upgrade rillet"
                )
            for statements in _MIGRATIONS[version:]:
                for statement in statements:
                    cur.execute(statement.format(s=quoted).encode())
            cur.execute(
                f"INSERT INTO {quoted}.rillet_schema_versions VALUES (%s, %s)"
                " ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                (_COMPONENT, SCHEMA_VERSION),
            )

    # --- the protocol ----------------------------------------------------------------------

    def get(self, checkpoint_id: str) -> bytes | None:
        with self._transaction() as cur:
            cur.execute(f"SELECT head FROM {self._t} WHERE id = %s", (checkpoint_id,))
            row = cur.fetchone()
        return None if row is None else bytes(row[0])

    def set(self, checkpoint_id: str, data: bytes) -> None:
        """Replaces the head, empties the log and clears the claim."""
        with self._transaction() as cur:
            cur.execute(
                f"INSERT INTO {self._t} (id, head, written_at) VALUES (%s, %s, {_NOW}) ON CONFLICT (id) DO UPDATE"
                " SET head = excluded.head, written_at = excluded.written_at, log_count = 0, log_bytes = 0,"
                " claimed_by = NULL, claimed_until = NULL",
                (checkpoint_id, bytes(data)),
            )
            cur.execute(f"DELETE FROM {self._log} WHERE id = %s", (checkpoint_id,))

    def delete(self, checkpoint_id: str) -> None:
        with self._transaction() as cur:
            cur.execute(f"DELETE FROM {self._t} WHERE id = %s", (checkpoint_id,))

    def claim(self, checkpoint_id: str, owner: str) -> bytes | None:
        with self._transaction() as cur:
            cur.execute(
                f"SELECT head, claimed_by, claimed_until, {_NOW} FROM {self._t} WHERE id = %s FOR UPDATE",
                (checkpoint_id,),
            )
            row = cur.fetchone()
            if row is None:
                return None
            head, held_by, until, now = row
            if held_by is not None and held_by != owner and (until or 0.0) > now:
                raise claimed_error(checkpoint_id, f"PostgreSQL at {redacted(self.url)}", until - now)
            cur.execute(
                f"UPDATE {self._t} SET claimed_by = %s, claimed_until = %s WHERE id = %s",
                (owner, now + self.claim_lease, checkpoint_id),
            )
        return bytes(head)

    def release(self, checkpoint_id: str, owner: str) -> None:
        with self._transaction() as cur:
            cur.execute(
                f"UPDATE {self._t} SET claimed_by = NULL, claimed_until = NULL WHERE id = %s AND claimed_by = %s",
                (checkpoint_id, owner),
            )

    def append(self, checkpoint_id: str, records: Sequence[bytes], head: bytes) -> None:
        """Appends ``records`` to the log and replaces the head, in one transaction."""
        records = [bytes(r) for r in records]
        size = sum(map(len, records))
        with self._transaction() as cur:
            # The upsert locks the row: concurrent appends to one id number their records in turn.
            cur.execute(
                f"INSERT INTO {self._t} AS t (id, head, written_at, log_count, log_bytes)"
                f" VALUES (%s, %s, {_NOW}, %s, %s) ON CONFLICT (id) DO UPDATE SET head = excluded.head,"
                " written_at = excluded.written_at, log_count = t.log_count + excluded.log_count,"
                " log_bytes = t.log_bytes + excluded.log_bytes RETURNING log_count",
                (checkpoint_id, bytes(head), len(records), size),
            )
            row = cur.fetchone()
            assert row is not None
            first = int(row[0]) - len(records)
            if records:
                with cur.copy(f"COPY {self._log} (id, seq, record) FROM STDIN") as copy:
                    for seq, record in enumerate(records, first):
                        copy.write_row((checkpoint_id, seq, record))

    def read_log(self, checkpoint_id: str, start: int = 0) -> list[bytes]:
        """The log's records from index ``start``."""
        if start < 0:
            raise ValueError(f"read_log: start must be 0 or more, got {start}")
        with self._transaction() as cur:
            cur.execute(
                f"SELECT record FROM {self._log} WHERE id = %s AND seq >= %s ORDER BY seq", (checkpoint_id, start)
            )
            return [bytes(r[0]) for r in cur.fetchall()]

    def prune(self, *, older_than: float | None = None, keep_last: int | None = None) -> int:
        """Deletes the checkpoints last written more than ``older_than`` seconds ago, and all but
        the ``keep_last`` most recently written; returns how many it deleted."""
        check_prune(older_than, keep_last)
        gone = 0
        with self._transaction() as cur:
            if older_than is not None:
                cur.execute(f"DELETE FROM {self._t} WHERE written_at < {_NOW} - %s", (float(older_than),))
                gone += cur.rowcount
            if keep_last is not None:
                cur.execute(
                    f"DELETE FROM {self._t} WHERE id IN"
                    f" (SELECT id FROM {self._t} ORDER BY written_at DESC, id OFFSET %s)",
                    (keep_last,),
                )
                gone += cur.rowcount
        return gone

    def ids(self) -> list[str]:
        """Every checkpoint id, most recently written first."""
        return [i for i, _, _ in self.entries()]

    def entries(self) -> list[tuple[str, int, float]]:
        """``(id, size in bytes of head and log, when it was last written as Unix time)`` of every
        checkpoint, most recently written first."""
        with self._transaction() as cur:
            cur.execute(
                f"SELECT id, octet_length(head) + log_bytes, written_at FROM {self._t} ORDER BY written_at DESC, id"
            )
            return [(r[0], int(r[1]), float(r[2])) for r in cur.fetchall()]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"PostgresCheckpointStore({redacted(self.url)!r}, schema={self.schema!r})"
