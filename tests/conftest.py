"""Session fixtures shared by many test files: the real servers of tests/servers.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from servers import server_or_skip, start_postgres, start_redis


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A Redis 7 server on loopback for this test session (redis://127.0.0.1:<port>/0)."""
    yield from server_or_skip(start_redis)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server on loopback for this test session (postgresql://postgres@...)."""
    yield from server_or_skip(start_postgres)
