"""Every checkpoint store passes tests/support/store_conformance.py: memory, SQLite, Redis and
PostgreSQL (the server ones on the session's loopback servers, tests/support/servers.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rillet.checkpoint import InMemoryCheckpointStore, SqliteCheckpointStore
from support.optional import need
from support.store_conformance import CHECKS, Check, Opener


@pytest.fixture
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    kind: str = request.param
    opened: list[Any] = []

    def track(store: Any) -> Any:
        opened.append(store)
        return store

    if kind == "memory":
        shared: dict[str, InMemoryCheckpointStore] = {}

        def open_store(claim_lease: float = 600.0) -> Any:
            store = shared.setdefault("store", InMemoryCheckpointStore(claim_lease=claim_lease))
            store.claim_lease = claim_lease
            return store
    elif kind == "sqlite":

        def open_store(claim_lease: float = 600.0) -> Any:
            return track(SqliteCheckpointStore(tmp_path / "c.db", claim_lease=claim_lease))
    elif kind == "redis":
        need("redis")
        url = request.getfixturevalue("redis_url")
        prefix = f"test:{uuid.uuid4().hex}:"  # each test its own keys

        def open_store(claim_lease: float = 600.0) -> Any:
            from rillet.checkpoint import RedisCheckpointStore

            return track(RedisCheckpointStore(url, prefix=prefix, claim_lease=claim_lease))
    else:
        psycopg = need("psycopg")
        url = request.getfixturevalue("postgres_url")
        schema = f"test_{uuid.uuid4().hex}"  # each test its own tables
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')

        def open_store(claim_lease: float = 600.0) -> Any:
            from rillet.checkpoint import PostgresCheckpointStore

            return track(PostgresCheckpointStore(url, schema=schema, claim_lease=claim_lease))

    yield open_store
    for store in opened:
        store.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("opener", ["memory", "sqlite", "redis", "postgres"], indirect=True)
@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
def test_store_conformance(opener: Opener, check: Check) -> None:
    check.run(opener)
