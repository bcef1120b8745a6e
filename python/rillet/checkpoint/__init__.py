"""Checkpoints of interrupted runs: the payload the Runner saves, and where it is kept.

A store is anything with ``get(id) -> bytes | None`` and ``set(id, data)`` (either may be
``async``); ``delete(id)`` is optional. :class:`InMemoryCheckpointStore` keeps them in a dict,
:class:`SqliteCheckpointStore` in a SQLite file that several threads and processes can share.
"""

from rillet.checkpoint.payload import CheckpointError, CheckpointNotFoundError
from rillet.checkpoint.stores import CheckpointStore, InMemoryCheckpointStore, SqliteCheckpointStore

__all__ = [
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointStore",
    "InMemoryCheckpointStore",
    "SqliteCheckpointStore",
]
