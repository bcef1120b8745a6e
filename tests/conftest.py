"""Session fixtures shared by many test files: the real servers of tests/support/servers.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.openai_server import FakeOpenAIServer
from support.servers import server_or_skip, start_postgres, start_redis


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A Redis 7 server on loopback for this test session (redis://127.0.0.1:<port>/0)."""
    yield from server_or_skip(start_redis)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server on loopback for this test session (postgresql://postgres@...)."""
    yield from server_or_skip(start_postgres)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    """A loopback OpenAI-compatible server (tests/support/openai_server.py) for one test module."""
    srv = FakeOpenAIServer()
    yield srv
    srv.close()
