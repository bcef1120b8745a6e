"""The checkpoint log that step durability writes: append/read_log/prune on the in-memory and
SQLite stores, and the adapter's fallback for stores with only get/set (and delete)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rillet.checkpoint.adapter import StoreAdapter
from rillet.checkpoint.stores import InMemoryCheckpointStore, LogCheckpointStore, SqliteCheckpointStore
from support.plain_store import PlainStore


@pytest.fixture(params=["memory", "sqlite", "plain"])
def adapter(request: pytest.FixtureRequest, tmp_path: Path) -> StoreAdapter:
    kind = request.param
    makers: dict[str, Callable[[], Any]] = {
        "memory": InMemoryCheckpointStore,
        "sqlite": lambda: SqliteCheckpointStore(tmp_path / "c.db"),
        "plain": PlainStore,
    }
    store = makers[kind]()
    return StoreAdapter(store)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_append_adds_records_and_replaces_the_head(adapter: StoreAdapter) -> None:
    async def go() -> None:
        await adapter.append("x", [b"a", b"b"], b"h1")
        await adapter.append("x", [b"c"], b"h2")
        assert await adapter.get("x") == b"h2"
        assert await adapter.read_log("x") == [b"a", b"b", b"c"]
        assert await adapter.read_log("x", 2) == [b"c"]
        assert await adapter.read_log("absent") == []

    run(go())
    assert adapter.read_log_sync("x", 1) == [b"b", b"c"]
    assert adapter.get_sync("x") == b"h2"


def test_set_empties_the_log_and_delete_removes_everything(adapter: StoreAdapter) -> None:
    async def go() -> None:
        await adapter.append("x", [b"a", b"b"], b"h")
        await adapter.set("x", b"full")
        assert (await adapter.get("x"), await adapter.read_log("x")) == (b"full", [])
        await adapter.append("x", [b"z"], b"h")
        assert await adapter.read_log("x") == [b"z"]
        await adapter.delete_with_log("x")
        assert (await adapter.get("x"), await adapter.read_log("x")) == (None, [])

    run(go())
    if isinstance(adapter.store, PlainStore):
        assert adapter.store.data == {}  # no record left behind under its own key


def test_the_stores_implement_the_log_protocol(tmp_path: Path) -> None:
    assert isinstance(InMemoryCheckpointStore(), LogCheckpointStore)
    assert isinstance(SqliteCheckpointStore(tmp_path / "c.db"), LogCheckpointStore)
    assert not isinstance(PlainStore(), LogCheckpointStore)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_prune_by_count_and_by_age(kind: str, tmp_path: Path) -> None:
    store: Any = InMemoryCheckpointStore() if kind == "memory" else SqliteCheckpointStore(tmp_path / "c.db")
    for i in range(5):
        store.append(f"c{i}", [b"r" * 10], b"h")
        time.sleep(0.01)  # distinct write times
    assert store.prune(keep_last=2) == 3
    assert sorted(store.ids()) == ["c3", "c4"]
    assert store.read_log("c0") == []
    assert store.prune(older_than=3600) == 0
    old = time.time()
    time.sleep(1.0)  # the clock moves on
    new = time.time()
    store.set("new", b"n")
    written = time.time()
    # the cut half-way between the writes, however long they took: 0.5 s from either
    assert store.prune(older_than=time.time() - (old + new) / 2) == 2
    assert store.ids() == ["new"]
    entries = store.entries()
    assert [(e[0], e[1]) for e in entries] == [("new", 1)]
    assert new - 0.01 <= entries[0][2] <= written + 0.01  # when it was written (SQLite keeps milliseconds)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_entries_count_head_and_log_bytes(kind: str, tmp_path: Path) -> None:
    store: Any = InMemoryCheckpointStore() if kind == "memory" else SqliteCheckpointStore(tmp_path / "c.db")
    store.append("x", [b"a" * 100, b"b" * 50], b"h" * 10)
    assert [(e[0], e[1]) for e in store.entries()] == [("x", 160)]


def test_prune_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="older_than"):
        InMemoryCheckpointStore().prune(older_than=-1)
    with pytest.raises(ValueError, match="keep_last"):
        InMemoryCheckpointStore().prune(keep_last=-2)


def test_a_store_without_prune_says_so() -> None:
    with pytest.raises(TypeError, match="PlainStore cannot prune"):
        StoreAdapter(PlainStore()).prune_sync(keep_last=1)


def test_append_keeps_a_claim_and_set_clears_it(tmp_path: Path) -> None:
    from rillet.checkpoint import CheckpointClaimedError

    store = SqliteCheckpointStore(tmp_path / "c.db")
    store.append("x", [b"a"], b"h")
    assert store.claim("x", "o1") == b"h"
    store.append("x", [b"b"], b"h2")
    with pytest.raises(CheckpointClaimedError):
        store.claim("x", "o2")
    store.set("x", b"full")
    assert store.claim("x", "o2") == b"full"


def test_a_schema_2_database_gains_the_log_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE checkpoints (id TEXT PRIMARY KEY, data BLOB NOT NULL,"
        " updated_at REAL NOT NULL DEFAULT (julianday('now')), claimed_by TEXT, claimed_until REAL)"
    )
    conn.execute(f"PRAGMA application_id = {0x72696C6C}")
    conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO checkpoints (id, data) VALUES ('old', x'0102')")
    conn.commit()
    conn.close()
    store = SqliteCheckpointStore(path)
    assert store.get("old") == b"\x01\x02"
    store.append("old", [b"r"], b"h")
    assert store.read_log("old") == [b"r"]
