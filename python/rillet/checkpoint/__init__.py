"""Checkpoints of interrupted runs: the payload the Runner saves, and where it is kept.

A store is anything with ``get(id) -> bytes | None`` and ``set(id, data)`` (either may be
``async``); ``delete(id)``, ``claim(id, owner)`` and ``release(id, owner)`` are optional
(see :class:`CheckpointStore`). :class:`InMemoryCheckpointStore` keeps them in a dict,
:class:`SqliteCheckpointStore` in a SQLite file that several threads and processes can share.
"""

from rillet.checkpoint.binding import CheckpointAgentMismatchError
from rillet.checkpoint.payload import (
    CheckpointClaimedError,
    CheckpointCorruptError,
    CheckpointError,
    CheckpointNotFoundError,
)
from rillet.checkpoint.stores import CheckpointStore, InMemoryCheckpointStore, SqliteCheckpointStore

__all__ = [
    "CheckpointAgentMismatchError",
    "CheckpointClaimedError",
    "CheckpointCorruptError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointStore",
    "InMemoryCheckpointStore",
    "SqliteCheckpointStore",
]
