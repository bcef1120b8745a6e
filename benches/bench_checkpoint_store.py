"""Saving and loading the checkpoint of a 1,000-event run: rillet's SqliteCheckpointStore
against LangGraph's SqliteSaver, in one run.

The run: a user asks, then 500 ReAct steps, each an assistant message with one tool call
(JSON arguments; usage and finish reason on every assistant message; text on every other one)
and the tool's result (a paragraph). Both sides hold the same conversation, each the way its
framework keeps it:

* **rillet**: a ``Session`` with 1,000 events recorded through ``Session.record(
  event_from_message(...))`` (agent name and run path filled, as the flow wrapper does),
  interrupted at a tool of the last step; saved with ``rillet.checkpoint.payload.dump`` +
  ``SqliteCheckpointStore.set``, loaded with ``get`` + ``payload.load`` (which rebuilds the
  session and its events).
* **langgraph**: a checkpoint whose ``channel_values["messages"]`` holds the user's
  ``HumanMessage`` and 1,000 ``AIMessage`` (``tool_calls``, ``usage_metadata``) /
  ``ToolMessage`` objects, each with the id LangGraph's ``add_messages`` gives a message;
  saved with ``SqliteSaver.put``, loaded with ``SqliteSaver.get_tuple``.

Each store writes a file in its own temporary directory with the library's default settings
(both put the database in WAL mode), and every save
overwrites the same checkpoint id, so the file does not grow. Groups: "save+load" (one save
then one load per round, the target), and "save" and "load" alone. ``extra_info`` records
the bytes stored (the checkpoint's blobs: rillet's ``data``; LangGraph's ``checkpoint`` +
``metadata`` + pending writes) and the database file's size after one save.

Run: .venv/bin/python -m pytest benches/bench_checkpoint_store.py --benchmark-only \
         --benchmark-columns=median,mean,rounds --benchmark-group-by=group
Instruction counts: .venv/bin/python benches/checkpoint_store_callgrind.py
"""

from __future__ import annotations

import asyncio
import gc
import json
import random
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rillet import AgentInput, FunctionCall, Message, ResponseMeta, RunStep, ToolCall, Usage, event_from_message
from rillet.checkpoint import SqliteCheckpointStore
from rillet.checkpoint.payload import dump, load
from rillet.run.context import Session
from rillet.run.interrupts import InterruptSignal

STEPS = 500  # one assistant message + one tool result each: 1,000 events
AGENT = "assistant"
QUESTION = "Find the three cheapest refundable flights to Lisbon next week and hold the best one."
TOOLS = ("search_flights", "lookup_fare_rules", "hold_booking")
WORDS = (
    "flight fare refundable Lisbon departs arrives economy seat window aisle baggage "
    "included change fee none 检索 结果 ✓ price EUR total carrier TAP direct stop"
).split()
ROUNDS = {"rillet": 40, "langgraph": 15}
WARMUP = 2


def conversation() -> list[dict[str, Any]]:
    """The 1,000 messages as plain data, shared by both sides (deterministic)."""
    rng = random.Random(7)
    out: list[dict[str, Any]] = []
    for i in range(STEPS):
        call_id = f"call_{i:04d}_{rng.getrandbits(40):010x}"
        out.append(
            {
                "kind": "ai",
                "content": " ".join(rng.choice(WORDS) for _ in range(12)) if i % 2 else "",
                "tool": TOOLS[i % len(TOOLS)],
                "args": {"query": " ".join(rng.choice(WORDS) for _ in range(4)), "limit": rng.randint(1, 20)},
                "call_id": call_id,
                "usage": (rng.randint(200, 8000), rng.randint(10, 300)),
            }
        )
        out.append(
            {
                "kind": "tool",
                "content": " ".join(rng.choice(WORDS) for _ in range(40)),
                "tool": TOOLS[i % len(TOOLS)],
                "call_id": call_id,
            }
        )
    return out


# --- rillet -------------------------------------------------------------------------------


def rillet_session(msgs: list[dict[str, Any]]) -> Session:
    session = Session()
    path = (RunStep(AGENT),)
    for m in msgs:
        if m["kind"] == "ai":
            inp, outp = m["usage"]
            call = ToolCall(id=m["call_id"], function=FunctionCall(m["tool"], json.dumps(m["args"])))
            msg = Message(
                role="assistant",
                content=m["content"],
                tool_calls=[call],
                response_meta=ResponseMeta("tool_calls", Usage(inp, outp, inp + outp)),
            )
            ev = event_from_message(msg)
        else:
            ev = event_from_message(
                Message.tool_message(m["content"], m["call_id"], m["tool"]), role="tool", tool_name=m["tool"]
            )
        ev.agent_name, ev.run_path = AGENT, path
        session.record(ev)
    return session


class RilletSide:
    """A run's checkpoint through rillet.checkpoint: dump + SqliteCheckpointStore."""

    def __init__(self, directory: Path, msgs: list[dict[str, Any]]) -> None:
        self.root_input = AgentInput([Message.user(QUESTION)], False)
        self.session = rillet_session(msgs)
        last = msgs[-1]
        self.signal = InterruptSignal(
            str(uuid.uuid4()),
            (f"agent:{AGENT}", f"tool:{last['tool']}:{last['call_id']}"),
            info={"reason": "approve the booking"},
        )
        self.path = directory / "rillet.sqlite"
        self.store = SqliteCheckpointStore(self.path)
        self.loop = asyncio.new_event_loop()
        self.id = "run-1"

    def save(self) -> None:
        self.store.set(self.id, self.loop.run_until_complete(dump(self.root_input, self.session, self.signal)))

    def load(self) -> Any:
        data = self.store.get(self.id)
        assert data is not None
        return load(data, self.id)

    def check(self, loaded: Any) -> None:
        events = loaded.session.events
        assert len(events) == 2 * STEPS
        for i in (0, 1, 2 * STEPS - 1):
            assert events[i].output.message_output.message == self.session.events[i].output.message_output.message
            assert events[i].run_path == self.session.events[i].run_path

    def blob_bytes(self) -> int:
        with sqlite3.connect(self.path) as conn:
            return int(conn.execute("SELECT sum(length(data)) FROM checkpoints").fetchone()[0])

    def close(self) -> None:
        self.store.close()
        self.loop.close()


# --- LangGraph ------------------------------------------------------------------------------


def langchain_messages(msgs: list[dict[str, Any]]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    rng = random.Random(11)

    def new_id() -> str:  # what add_messages gives a message without an id
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    out: list[Any] = [HumanMessage(content=QUESTION, id=new_id())]
    for m in msgs:
        if m["kind"] == "ai":
            inp, outp = m["usage"]
            out.append(
                AIMessage(
                    content=m["content"],
                    id=new_id(),
                    tool_calls=[{"name": m["tool"], "args": m["args"], "id": m["call_id"], "type": "tool_call"}],
                    usage_metadata={"input_tokens": inp, "output_tokens": outp, "total_tokens": inp + outp},
                    response_metadata={"finish_reason": "tool_calls"},
                )
            )
        else:
            out.append(ToolMessage(content=m["content"], tool_call_id=m["call_id"], name=m["tool"], id=new_id()))
    return out


class LangGraphSide:
    """The same state as a LangGraph checkpoint through SqliteSaver."""

    def __init__(self, directory: Path, msgs: list[dict[str, Any]]) -> None:
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.path = directory / "langgraph.sqlite"
        self.conn = sqlite3.connect(self.path, check_same_thread=False)
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()
        messages = langchain_messages(msgs)
        cp = empty_checkpoint()
        cp["channel_values"] = {"messages": messages}
        cp["channel_versions"] = {"__start__": 1, "messages": len(messages) + 1}
        cp["versions_seen"] = {"__input__": {}, "__start__": {"__start__": 1}, "agent": {"messages": len(messages)}}
        self.checkpoint = cp
        self.metadata = {"source": "loop", "step": len(messages), "parents": {}}
        self.config = {"configurable": {"thread_id": "run-1", "checkpoint_ns": ""}}
        self.saved: Any = None
        self.n_messages = len(messages)

    def save(self) -> None:
        self.saved = self.saver.put(self.config, self.checkpoint, self.metadata, {"messages": self.n_messages + 1})

    def load(self) -> Any:
        return self.saver.get_tuple(self.saved)

    def check(self, loaded: Any) -> None:
        got = loaded.checkpoint["channel_values"]["messages"]
        assert len(got) == self.n_messages
        want = self.checkpoint["channel_values"]["messages"]
        for i in (1, 2, self.n_messages - 1):
            assert got[i] == want[i]

    def blob_bytes(self) -> int:
        with sqlite3.connect(self.path) as conn:
            cp = conn.execute(
                "SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints"
            ).fetchone()[0]
            writes = conn.execute("SELECT coalesce(sum(length(value)), 0) FROM writes").fetchone()[0]
        return int(cp + writes)

    def close(self) -> None:
        self.conn.close()


SIDES: dict[str, Callable[[Path, list[dict[str, Any]]], Any]] = {"rillet": RilletSide, "langgraph": LangGraphSide}


def file_bytes(directory: Path) -> int:
    """Bytes on disk of every file in ``directory`` (database, journal or WAL)."""
    return sum(p.stat().st_size for p in directory.iterdir())


def one_save_sizes(impl: str, directory: Path, msgs: list[dict[str, Any]]) -> tuple[int, int]:
    """(blob bytes, file bytes) after one save into a fresh file, the store closed."""
    side = SIDES[impl](directory, msgs)
    side.save()
    blobs = side.blob_bytes()
    side.close()
    return blobs, file_bytes(directory)


OPS = ("save+load", "save", "load")


@pytest.mark.parametrize("impl", list(SIDES))
@pytest.mark.parametrize("op", OPS)
def test_checkpoint_store(benchmark: Any, tmp_path: Path, impl: str, op: str) -> None:
    msgs = conversation()
    (tmp_path / "sizes").mkdir()
    (tmp_path / "bench").mkdir()
    blobs, on_disk = one_save_sizes(impl, tmp_path / "sizes", msgs)
    side = SIDES[impl](tmp_path / "bench", msgs)
    try:
        side.save()
        side.check(side.load())
        benchmark.group = f"checkpoint of a 1,000-event run: {op}"
        benchmark.extra_info.update(impl=impl, bytes=blobs, file_bytes=on_disk)

        def save_load() -> None:
            side.save()
            side.load()

        target = {"save+load": save_load, "save": side.save, "load": side.load}[op]

        def setup() -> tuple[tuple[()], dict[str, Any]]:
            gc.collect()
            return (), {}

        benchmark.pedantic(target, setup=setup, rounds=ROUNDS[impl], warmup_rounds=WARMUP)
    finally:
        side.close()
