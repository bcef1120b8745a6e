"""What the Redis and PostgreSQL checkpoint stores do beyond the conformance suite: errors that
name the server and the fix, key and table layout, schema migrations, refused arguments."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from rillet.checkpoint import CheckpointError
from support.optional import need
from support.servers import free_port, start_redis


@pytest.fixture
def prefix() -> str:
    return f"test:{uuid.uuid4().hex}:"


@pytest.fixture
def schema(postgres_url: str) -> Iterator[str]:
    psycopg = need("psycopg")
    name = f"test_{uuid.uuid4().hex}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    yield name


def redis_store(*args: Any, **kwargs: Any) -> Any:
    need("redis")
    from rillet.checkpoint import RedisCheckpointStore

    return RedisCheckpointStore(*args, **kwargs)


def postgres_store(*args: Any, **kwargs: Any) -> Any:
    need("psycopg")
    from rillet.checkpoint import PostgresCheckpointStore

    return PostgresCheckpointStore(*args, **kwargs)


# --- unreachable servers -----------------------------------------------------------------------


def test_an_unreachable_redis_is_named_with_the_fix_and_no_password() -> None:
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    with pytest.raises(CheckpointError) as caught:
        redis_store(url, connect_timeout=2)
    message = str(caught.value)
    assert message.startswith(
        f"RedisCheckpointStore: cannot reach Redis at redis://:***@127.0.0.1:{url.split(':')[-1]}"
    )
    assert message.endswith("start Redis there, or pass the URL of a running server")
    assert "hunter2" not in message


def test_an_unreachable_postgres_is_named_with_the_fix_and_no_password() -> None:
    url = f"postgresql://app:hunter2@127.0.0.1:{free_port()}/app"
    with pytest.raises(CheckpointError) as caught:
        postgres_store(url, connect_timeout=2)
    message = str(caught.value)
    assert message.startswith(f"PostgresCheckpointStore: cannot reach PostgreSQL at {url.replace('hunter2', '***')}")
    assert message.endswith("start PostgreSQL there, or pass the URL of a running server")
    assert "hunter2" not in message


@pytest.mark.parametrize(
    "url",
    [
        "host=127.0.0.1 port={port} user=app password=hunter2 dbname=app",  # a libpq string, as the docs allow
        "host=127.0.0.1 port={port} password = 'hunter2 x' dbname=app",
        "postgresql://app@127.0.0.1:{port}/app?password=hunter2",  # libpq reads a password from the query too
    ],
)
def test_a_postgres_password_in_a_libpq_string_or_query_is_hidden(url: str) -> None:
    url = url.format(port=free_port())
    with pytest.raises(CheckpointError) as caught:
        postgres_store(url, connect_timeout=2)
    message = str(caught.value)
    assert "hunter2" not in message and "password=***" in message.replace(" = ", "=")
    assert "cannot reach PostgreSQL at " in message


@pytest.mark.slow
def test_a_redis_that_goes_away_later_gives_the_same_error() -> None:
    need("redis")
    server = start_redis()
    try:
        store = redis_store(server.url)
        store.set("c", b"head")
    finally:
        server.stop()
    with pytest.raises(CheckpointError, match=r"cannot reach Redis at redis://127\.0\.0\.1:\d+/0 .*start Redis there"):
        store.get("c")


def test_a_postgres_connection_dropped_while_idle_is_replaced(postgres_url: str, schema: str) -> None:
    store = postgres_store(postgres_url, schema=schema)
    store.set("c", b"head")
    with need("psycopg").connect(postgres_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (store._conn.info.backend_pid,))
    assert store.get("c") == b"head"


# --- Redis: the client and the keys ------------------------------------------------------------


def test_redis_keys_stay_under_the_prefix(redis_url: str, prefix: str) -> None:
    store = redis_store(redis_url, prefix=prefix)
    store.set("a", b"head")
    store.append("b", [b"r0", b"r1"], b"head")
    store.claim("a", "worker-1")
    import redis

    client = redis.Redis.from_url(redis_url)
    assert sorted(k.decode() for k in client.scan_iter(match=f"{prefix}*")) == [
        f"{prefix}head:a",
        f"{prefix}head:b",
        f"{prefix}index",
        f"{prefix}log:b",
    ]
    store.delete("a")
    store.delete("b")
    assert list(client.scan_iter(match=f"{prefix}*")) == []


def test_a_redis_append_retried_after_a_lost_reply_lands_once(redis_url: str, prefix: str) -> None:
    """redis-py resends a command whose connection failed; if the script had run, the resent
    one (same token) must not append again."""
    store = redis_store(redis_url, prefix=prefix)
    sent: list[dict[str, Any]] = []
    script = store._append

    def send_twice(**kwargs: Any) -> Any:
        sent.append(kwargs)
        script(**kwargs)
        return script(**kwargs)  # the retry

    store._append = send_twice
    store.append("c", [b"r0", b"r1"], b"h1")
    store.append("c", [b"r2"], b"h2")
    assert (store.read_log("c"), store.get("c")) == ([b"r0", b"r1", b"r2"], b"h2")
    assert [size for _, size, _ in store.entries()] == [2 + 6]
    assert len(sent) == 2


def test_redis_takes_a_ready_client_but_not_one_that_decodes(redis_url: str, prefix: str) -> None:
    redis = need("redis")
    store = redis_store(client=redis.Redis.from_url(redis_url), prefix=prefix)
    store.set("c", b"\xff\x00")
    assert store.get("c") == b"\xff\x00"
    assert repr(store).startswith("RedisCheckpointStore('redis://127.0.0.1:")
    with pytest.raises(CheckpointError, match="make the client without decode_responses=True"):
        redis_store(client=redis.Redis.from_url(redis_url, decode_responses=True))


# --- PostgreSQL: the schema ----------------------------------------------------------------------


def test_postgres_records_its_schema_version_and_migrates_once(postgres_url: str, schema: str) -> None:
    psycopg = need("psycopg")
    stores = [postgres_store(postgres_url, schema=schema) for _ in range(2)]  # the second finds it done
    stores[0].set("c", b"head")
    assert stores[1].get("c") == b"head"
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(f'SELECT component, version FROM "{schema}".rillet_schema_versions').fetchall()
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1", (schema,)).fetchall()
    assert rows == [("checkpoints", 1)]
    assert [t for (t,) in tables] == ["rillet_checkpoint_log", "rillet_checkpoints", "rillet_schema_versions"]


def test_postgres_refuses_tables_of_a_newer_rillet(postgres_url: str, schema: str) -> None:
    postgres_store(postgres_url, schema=schema)
    with need("psycopg").connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'UPDATE "{schema}".rillet_schema_versions SET version = 99')
    with pytest.raises(CheckpointError, match=r"have version 99, newer than this rillet reads \(1\); upgrade rillet"):
        postgres_store(postgres_url, schema=schema)


def test_postgres_schemas_keep_their_checkpoints_apart(postgres_url: str, schema: str) -> None:
    other = f"{schema}_b"
    with need("psycopg").connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{other}"')
    a, b = postgres_store(postgres_url, schema=schema), postgres_store(postgres_url, schema=other)
    a.set("c", b"in a")
    assert (b.get("c"), b.ids(), a.ids()) == (None, [], ["c"])


def test_postgres_in_a_missing_schema_says_so(postgres_url: str) -> None:
    need("psycopg")
    with pytest.raises(Exception, match='schema "no_such_schema" does not exist'):
        postgres_store(postgres_url, schema="no_such_schema")


# --- arguments -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_prune_and_read_log_refuse_nonsense(request: pytest.FixtureRequest, kind: str) -> None:
    if kind == "redis":
        store = redis_store(request.getfixturevalue("redis_url"), prefix=request.getfixturevalue("prefix"))
    else:
        store = postgres_store(request.getfixturevalue("postgres_url"), schema=request.getfixturevalue("schema"))
    with pytest.raises(ValueError, match="prune: keep_last must be a whole number, 0 or more, got -1"):
        store.prune(keep_last=-1)
    with pytest.raises(ValueError, match="prune: older_than must be a number of seconds, 0 or more, got 'old'"):
        store.prune(older_than="old")
    with pytest.raises(ValueError, match="read_log: start must be 0 or more, got -2"):
        store.read_log("c", -2)
    assert store.prune() == 0
