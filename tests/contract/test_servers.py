"""The test servers start on loopback and answer (tests/support/servers.py)."""

from __future__ import annotations

import socket
import subprocess
from urllib.parse import urlsplit

from support.servers import find_binary


def test_redis_answers_ping(redis_url: str) -> None:
    where = urlsplit(redis_url)
    assert where.hostname == "127.0.0.1"
    with socket.create_connection((where.hostname, where.port or 6379), timeout=5) as s:
        s.sendall(b"PING\r\n")
        assert s.recv(64) == b"+PONG\r\n"


def test_postgres_answers_a_query(postgres_url: str) -> None:
    psql = find_binary("psql", "/usr/lib/postgresql/*/bin/psql")
    assert psql, "psql is installed with PostgreSQL"
    out = subprocess.run([psql, postgres_url, "-tAc", "select 40 + 2"], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "42", out.stderr
