"""Checkpointing a run after every step on a server: rillet's Redis and PostgreSQL stores
against LangGraph's PostgresSaver and SqliteSaver, on the same conversation.

The run: the user's question, then STEPS ReAct steps of benches/bench_checkpoint_store.py's
conversation (an assistant message with a tool call, then the tool's result). After every
step each side saves what it needs to resume there:

* **rillet**: ``append(id, records, head)``: the step's two messages, each encoded with
  ``rillet.codec`` (a record), and a small head (the step's number and the log's length).
  This is what ``durability="step"`` does: the log only grows by the new step.
* **langgraph**: ``put`` of a checkpoint whose ``messages`` channel holds the whole
  conversation so far (a new version each step, as ``add_messages`` makes), LangGraph's
  savers' default behaviour.

One round is a whole run under a new id (thread), then one load of it (rillet: ``get`` +
``read_log`` + decoding every record; LangGraph: ``get_tuple``). ``extra_info`` records the
bytes the run left in the store (rillet: ``entries()``; LangGraph: its checkpoint, metadata,
blob and write columns), which for rillet is also every byte it wrote.

Servers: REDIS_URL and DATABASE_URL if set, else a Redis and a PostgreSQL started on loopback
by tests/support/servers.py for the session.

Run: .venv/bin/python -m pytest benches/bench_server_stores.py --benchmark-only \
         --benchmark-columns=median,mean,rounds --benchmark-group-by=group
"""

from __future__ import annotations

import os
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_checkpoint_store import conversation, langchain_messages, rillet_session
from rillet import codec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.servers import start_postgres, start_redis

STEPS = 100  # 200 messages
ROUNDS = 5
IMPLS = ("rillet-redis", "rillet-postgres", "langgraph-postgres", "langgraph-sqlite")


@pytest.fixture(scope="module")
def redis_server() -> Iterator[str]:
    yield from _server("REDIS_URL", start_redis)


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[str]:
    yield from _server("DATABASE_URL", start_postgres)


def _server(variable: str, start: Any) -> Iterator[str]:
    if os.environ.get(variable):
        yield os.environ[variable]
        return
    try:
        server = start()
    except (RuntimeError, OSError) as e:
        pytest.skip(f"no server for this bench: {e}")
    try:
        yield server.url
    finally:
        server.stop()


class RilletSide:
    def __init__(self, store: Any, msgs: list[dict[str, Any]]) -> None:
        self.store = store
        session = rillet_session(msgs)
        self.records = [codec.encode(e.output.message_output.message) for e in session.events]
        self.id = ""

    def run(self) -> None:
        self.id = uuid.uuid4().hex
        for step in range(STEPS):
            head = codec.encode({"step": step, "log": 2 * step + 2})
            self.store.append(self.id, self.records[2 * step : 2 * step + 2], head)

    def load(self) -> int:
        assert self.store.get(self.id) is not None
        return len([codec.decode(r) for r in self.store.read_log(self.id)])

    def stored_bytes(self) -> int:
        return next(size for i, size, _ in self.store.entries() if i == self.id)


class LangGraphSide:
    def __init__(self, saver: Any, msgs: list[dict[str, Any]], stored_bytes: Any) -> None:
        self.saver = saver
        self.messages = langchain_messages(msgs)
        self.thread = ""
        self._stored_bytes = stored_bytes

    def run(self) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        self.thread = uuid.uuid4().hex
        config: Any = {"configurable": {"thread_id": self.thread, "checkpoint_ns": ""}}
        for step in range(STEPS):
            version = step + 2
            cp = empty_checkpoint()
            cp["channel_values"] = {"messages": self.messages[: 2 * step + 3]}
            cp["channel_versions"] = {"__start__": 1, "messages": version}
            cp["versions_seen"] = {"__input__": {}, "__start__": {"__start__": 1}, "agent": {"messages": version - 1}}
            metadata: Any = {"source": "loop", "step": step, "parents": {}}
            config = self.saver.put(config, cp, metadata, {"messages": version})

    def load(self) -> int:
        got = self.saver.get_tuple({"configurable": {"thread_id": self.thread, "checkpoint_ns": ""}})
        return len(got.checkpoint["channel_values"]["messages"]) - 1

    def stored_bytes(self) -> int:
        return int(self._stored_bytes(self.thread))


@pytest.fixture
def side(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    impl: str = request.param
    msgs = conversation()[: 2 * STEPS]
    if impl == "rillet-redis":
        from rillet.checkpoint import RedisCheckpointStore

        store: Any = RedisCheckpointStore(request.getfixturevalue("redis_server"), prefix=f"bench:{uuid.uuid4().hex}:")
        yield RilletSide(store, msgs)
        store.close()
    elif impl == "rillet-postgres":
        from rillet.checkpoint import PostgresCheckpointStore

        store = PostgresCheckpointStore(request.getfixturevalue("postgres_server"))
        yield RilletSide(store, msgs)
        store.close()
    elif impl == "langgraph-postgres":
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver

        url = request.getfixturevalue("postgres_server")
        with PostgresSaver.from_conn_string(url) as saver, psycopg.connect(url) as conn:
            saver.setup()

            def stored(thread: str) -> int:
                q = (
                    "SELECT (SELECT coalesce(sum(octet_length(checkpoint::text) + octet_length(metadata::text)), 0)"
                    " FROM checkpoints WHERE thread_id = %(t)s)"
                    " + (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_blobs WHERE thread_id = %(t)s)"
                    " + (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_writes WHERE thread_id = %(t)s)"
                )
                row = conn.execute(q, {"t": thread}).fetchone()
                assert row is not None
                return int(row[0])

            yield LangGraphSide(saver, msgs, stored)
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        db = sqlite3.connect(tmp_path / "langgraph.sqlite", check_same_thread=False)
        saver = SqliteSaver(db)
        saver.setup()

        def stored(thread: str) -> int:
            cp = db.execute(
                "SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints WHERE thread_id = ?",
                (thread,),
            ).fetchone()[0]
            writes = db.execute(
                "SELECT coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = ?", (thread,)
            ).fetchone()[0]
            return int(cp + writes)

        yield LangGraphSide(saver, msgs, stored)
        db.close()


@pytest.mark.parametrize("side", IMPLS, indirect=True)
def test_step_checkpoints_on_a_server(benchmark: Any, side: Any, request: pytest.FixtureRequest) -> None:
    impl = request.node.callspec.params["side"]
    side.run()
    assert side.load() == 2 * STEPS
    benchmark.group = f"a {STEPS}-step run saved after every step, then loaded"
    benchmark.extra_info.update(impl=impl, bytes=side.stored_bytes(), per=STEPS, unit="step")

    def run_and_load() -> None:
        side.run()
        side.load()

    benchmark.pedantic(run_and_load, rounds=ROUNDS, warmup_rounds=1)
