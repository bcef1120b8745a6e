"""The SQLite file behind rillet's stores (checkpoints and sessions, which may share one file):
a connection per thread, and the check that refuses files that are not rillet databases."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

__all__ = ["APP_ID", "SqliteFile"]

APP_ID = 0x72696C6C  # "rill": marks the file as a rillet database


class SqliteFile:
    """``path`` opened for one store: ``store`` names it in errors, which are ``error``s saying
    to give a new file or ``wanted``; ``pragmas`` run on every new connection."""

    def __init__(
        self,
        path: Path,
        timeout: float,
        *,
        store: str,
        error: type[Exception],
        wanted: str,
        pragmas: Sequence[str] = (),
    ) -> None:
        self.path = path
        self.timeout = timeout
        self._store = store
        self._error = error
        self._wanted = wanted
        self._pragmas = pragmas
        self._local = threading.local()  # sqlite3 connections stay on the thread that made them

    def connect(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        import sqlite3  # imported on first use: `import rillet` stays light

        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
            except sqlite3.Error as e:
                raise self._error(f"{self._store}: cannot open {str(self.path)!r}: {e}") from e
            try:
                conn.execute("PRAGMA busy_timeout = %d" % int(self.timeout * 1000))
                for pragma in self._pragmas:
                    conn.execute(pragma)
            except sqlite3.DatabaseError as e:
                conn.close()
                raise self._not_sqlite(e) from e
            self._local.conn = conn
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection in one write transaction (the write lock taken first),
        committed when the block ends and rolled back if it raises. SQLite rolls a transaction
        back itself on some errors (a full disk, out of memory): a second ROLLBACK would then
        raise "no transaction is active" in place of the error that happened, so it is sent
        only while the transaction is still open."""
        conn = self.connect()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def check(self) -> tuple[int, int]:
        """``(application_id, user_version)`` of the file, after refusing one that is not a
        SQLite database or holds another application's tables."""
        import sqlite3  # imported on first use: `import rillet` stays light

        conn = self.connect()
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as e:
            raise self._not_sqlite(e) from e
        if tables and app_id != APP_ID:
            raise self._error(
                f"{self._store}: {str(self.path)!r} is a SQLite database of another application; "
                f"give the path of a new file or of {self._wanted}"
            )
        return app_id, version

    def _not_sqlite(self, e: Exception) -> Exception:
        return self._error(
            f"{self._store}: {str(self.path)!r} is not a SQLite database ({e}); "
            f"give the path of a new file or of {self._wanted}"
        )

    def close(self) -> None:
        """Closes this thread's connection (others close with their threads)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
