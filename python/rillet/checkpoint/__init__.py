"""Checkpoints of interrupted runs: the payload the Runner saves, and where it is kept.

A store is anything with ``get(id) -> bytes | None`` and ``set(id, data)`` (either may be
``async``); ``delete(id)`` is optional, and so are ``claim(id, owner)`` and ``release(id, owner)``
(see :class:`CheckpointStore` and :class:`ClaimingCheckpointStore`); :class:`StoreAdapter` is
how rillet calls any of them. ``Runner(durability="step")`` also appends to a log per id
(:class:`LogCheckpointStore`, with a fallback for stores that lack it; docs/durability.md). :class:`InMemoryCheckpointStore` keeps them in a dict,
:class:`SqliteCheckpointStore` in a SQLite file that several threads and processes can share,
:class:`RedisCheckpointStore` and :class:`PostgresCheckpointStore` on a server that processes on
several machines can share (the ``redis`` and ``postgres`` extras, imported when first used).

Layer: checkpoints, with :mod:`.state` (the saved states of agents). May import rillet.flow and the
layers under it (the import-linter contract in pyproject.toml; docs/architecture.md); not the
composition layer or anything above. Inside, a second contract keeps an order: binding, adapter and
the server stores over stores and journal, over payload and state, over sqlite_file and remote.
"""

from rillet.checkpoint.adapter import StoreAdapter
from rillet.checkpoint.binding import CheckpointAgentMismatchError
from rillet.checkpoint.payload import (
    CheckpointClaimedError,
    CheckpointCorruptError,
    CheckpointError,
    CheckpointNotFoundError,
)
from rillet.checkpoint.postgres_store import PostgresCheckpointStore
from rillet.checkpoint.redis_store import RedisCheckpointStore
from rillet.checkpoint.stores import (
    CheckpointStore,
    ClaimingCheckpointStore,
    InMemoryCheckpointStore,
    LogCheckpointStore,
    SqliteCheckpointStore,
)

__all__ = [
    "CheckpointAgentMismatchError",
    "CheckpointClaimedError",
    "CheckpointCorruptError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointStore",
    "ClaimingCheckpointStore",
    "InMemoryCheckpointStore",
    "LogCheckpointStore",
    "PostgresCheckpointStore",
    "RedisCheckpointStore",
    "SqliteCheckpointStore",
    "StoreAdapter",
]
