"""The checkpoint browser's data: the store's checkpoints (id, size, age) and one decoded
with rillet's payload decoder, as JSON for the page."""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

from rillet.checkpoint.journal import read_step_head
from rillet.checkpoint.payload import load
from rillet.checkpoint.stores import CheckpointStore, InMemoryCheckpointStore, SqliteCheckpointStore
from rillet.errors import CheckpointError
from rillet.web.wire import event_records, jsonable

__all__ = ["MemoryStore", "decoded", "listing"]


class MemoryStore(InMemoryCheckpointStore):
    """The in-memory store (no ``--db``), remembering when each checkpoint was written so
    that the browser can list them."""

    def __init__(self) -> None:
        super().__init__()
        self._written: dict[str, float] = {}
        self._times = threading.Lock()

    def set(self, checkpoint_id: str, data: bytes) -> None:
        super().set(checkpoint_id, data)
        with self._times:
            self._written[checkpoint_id] = time.time()

    def delete(self, checkpoint_id: str) -> None:
        super().delete(checkpoint_id)
        with self._times:
            self._written.pop(checkpoint_id, None)

    def rows(self) -> list[tuple[str, int, float]]:
        with self._times:
            written = sorted(self._written.items(), key=lambda kv: -kv[1])
        return [(cid, len(self.get(cid) or b""), at) for cid, at in written if self.get(cid) is not None]


def _sqlite_rows(store: SqliteCheckpointStore) -> list[tuple[str, int, float]]:
    # read-only and separate from the store's connections: listing never takes a write lock
    with sqlite3.connect(f"file:{store.path}?mode=ro", uri=True, timeout=store.timeout) as conn:
        rows = conn.execute(
            "SELECT id, length(data), (updated_at - 2440587.5) * 86400.0 FROM checkpoints ORDER BY updated_at DESC"
        ).fetchall()
    return [(str(r[0]), int(r[1]), float(r[2])) for r in rows]


def listing(store: CheckpointStore) -> list[dict[str, Any]]:
    """The store's checkpoints, newest first: id, size in bytes and age in seconds."""
    if isinstance(store, MemoryStore):
        rows = store.rows()
    elif isinstance(store, SqliteCheckpointStore):
        rows = _sqlite_rows(store)
    else:
        ids = getattr(store, "ids", None)
        rows = [(cid, -1, time.time()) for cid in (ids() if callable(ids) else [])]
    now = time.time()
    return [{"id": cid, "size": size, "age": max(now - at, 0.0)} for cid, size, at in rows]


def decoded(store: CheckpointStore, checkpoint_id: str) -> dict[str, Any] | None:
    """Checkpoint ``checkpoint_id`` decoded (checked first, as a resume would): the agent
    that saved it, its input, session values, events and interrupts (id, address, state; a
    point no other extends is a root cause, the one to answer). None if it does not exist;
    raises the decoder's error for bytes that are not a sound checkpoint, and CheckpointError
    saying how to continue a step record."""
    data = store.get(checkpoint_id)
    if data is None:
        return None
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"checkpoint[{checkpoint_id}]: the store returned {type(data).__name__}, not bytes")
    if read_step_head(bytes(data), checkpoint_id) is not None:  # no payload: a log of steps
        from rillet.cli.prompt import resume_command  # rillet.cli loads its commands: only for this message

        where = (
            "continue it with: " + resume_command(checkpoint_id, str(store.path), "MODULE:ATTRIBUTE")
            if isinstance(store, SqliteCheckpointStore)
            else "its run, if it is still going in this server, continues it"
        )
        raise CheckpointError(
            f"checkpoint[{checkpoint_id}] is the step record of a run that did not finish "
            f'(Runner(durability="step")), which the browser does not decode; {where}'
        )
    loaded = load(bytes(data), checkpoint_id)
    events: list[dict[str, Any]] = []
    for i, ev in enumerate(loaded.session.snapshot()):
        records = list(event_records(ev, i))
        head = dict(records[0])
        if head.pop("open", False):
            head.update({k: v for k, v in records[-1].items() if k not in ("type", "seq")})
        events.append(head)
    addresses = loaded.addresses
    interrupts = [
        {
            "id": iid,
            "address": list(addr),
            "info": jsonable(loaded.infos.get(iid)),
            "state": jsonable(loaded.states.get(iid)),
            "root_cause": not any(len(o) > len(addr) and o[: len(addr)] == addr for o in addresses.values()),
        }
        for iid, addr in addresses.items()
    ]
    return {
        "id": checkpoint_id,
        "size": len(data),
        "agent": jsonable(loaded.agent),
        "input": [m.to_dict() for m in loaded.root_input.messages],
        "streaming": loaded.root_input.enable_streaming,
        "session_values": jsonable(loaded.session.values),
        "events": events,
        "interrupts": interrupts,
        "info": jsonable(loaded.info),
        "session": jsonable(loaded.session_ref),
    }
