"""Checkpoint stores of every flavour (sync, async, awaitable-returning, minimal) through the one
StoreAdapter the Runner uses."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from rillet import ChatModelAgent, FunctionCall, Message, Runner, ScriptedModel, ToolCall, tool
from rillet.checkpoint import (
    CheckpointStore,
    ClaimingCheckpointStore,
    InMemoryCheckpointStore,
    SqliteCheckpointStore,
    StoreAdapter,
)
from rillet.run.interrupts import get_resume_context, interrupt


@tool
def ask() -> str:
    """Asks a person first."""
    is_target, _, data = get_resume_context()
    if not is_target:
        raise interrupt("ok?")
    return f"answer: {data}"


def agent() -> ChatModelAgent:
    call = ToolCall(id="c1", function=FunctionCall("ask", json.dumps({})))
    return ChatModelAgent("a", model=ScriptedModel([Message.assistant("", [call]), "done"]), tools=[ask])


class AsyncStore:
    """Every method a coroutine function, claims included."""

    def __init__(self) -> None:
        self.inner = InMemoryCheckpointStore()
        self.calls: list[str] = []

    async def get(self, checkpoint_id: str) -> bytes | None:
        self.calls.append("get")
        return self.inner.get(checkpoint_id)

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        self.calls.append("set")
        self.inner.set(checkpoint_id, data)

    async def delete(self, checkpoint_id: str) -> None:
        self.calls.append("delete")
        self.inner.delete(checkpoint_id)

    async def claim(self, checkpoint_id: str, owner: str) -> bytes | None:
        self.calls.append("claim")
        return self.inner.claim(checkpoint_id, owner)

    async def release(self, checkpoint_id: str, owner: str) -> None:
        self.calls.append("release")
        self.inner.release(checkpoint_id, owner)


class AwaitableStore:
    """Plain methods that return awaitables (a wrapper around an async client, say); no delete,
    no claim."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def get(self, checkpoint_id: str) -> Any:
        async def got() -> bytes | None:
            return self.data.get(checkpoint_id)

        return got()

    def set(self, checkpoint_id: str, data: bytes) -> Any:
        async def put() -> None:
            self.data[checkpoint_id] = data

        return put()


def interrupt_id(runner: Runner, checkpoint_id: str) -> str:
    events = list(runner.query("go", checkpoint_id=checkpoint_id))
    (ev,) = [e for e in events if e.action is not None and e.action.interrupted is not None]
    return ev.action.interrupted.interrupt_contexts[0].id


def text(events: list[Any]) -> list[str]:
    return [e.message_output.message.content for e in events if e.message_output is not None]


def test_an_async_store_saves_claims_and_deletes_through_a_sync_resume() -> None:
    store = AsyncStore()
    runner = Runner(agent(), checkpoint_store=store)
    iid = interrupt_id(runner, "c")
    events = list(runner.resume("c", targets={iid: "yes"}))
    assert [e.error for e in events if e.error is not None] == []
    assert "answer: yes" in text(events)
    assert store.calls == ["set", "claim", "delete"]
    assert len(store.inner) == 0


def test_an_async_store_through_aresume() -> None:
    async def main() -> list[Any]:
        runner = Runner(agent(), checkpoint_store=AsyncStore())
        iid = None
        async for ev in runner.query("go", checkpoint_id="c"):
            if ev.action is not None and ev.action.interrupted is not None:
                iid = ev.action.interrupted.interrupt_contexts[0].id
        assert iid is not None
        return [ev async for ev in await runner.aresume("c", targets={iid: "yes"})]

    assert "answer: yes" in text(asyncio.run(main()))


def test_a_sync_resume_inside_a_loop_refuses_an_async_store_and_says_what_to_use() -> None:
    store = AsyncStore()
    runner = Runner(agent(), checkpoint_store=store)
    iid = interrupt_id(runner, "c")

    async def main() -> None:
        with pytest.raises(RuntimeError, match="aresume"):
            runner.resume("c", targets={iid: "yes"})

    asyncio.run(main())
    assert len(store.inner) == 1  # nothing ran; the checkpoint is kept


def test_a_store_returning_awaitables_without_delete_or_claim_still_resumes() -> None:
    store = AwaitableStore()
    runner = Runner(agent(), checkpoint_store=store)
    iid = interrupt_id(runner, "c")
    assert "answer: yes" in text(list(runner.resume("c", targets={iid: "yes"})))
    assert "c" in store.data  # no delete: the checkpoint stays


def test_the_adapter_falls_back_for_missing_optional_methods() -> None:
    adapter = StoreAdapter(AwaitableStore())
    assert not adapter.claims and not adapter.deletes

    async def main() -> tuple[bytes | None, bytes | None]:
        await adapter.set("x", b"data")
        await adapter.delete("x")  # no delete: nothing happens
        await adapter.release("x", "me")  # no claim: nothing to release
        return await adapter.claim("x", "me"), await adapter.get("nope")

    assert asyncio.run(main()) == (b"data", None)
    assert adapter.claim_sync("x", "me") == b"data"


def test_the_builtin_stores_satisfy_the_protocols(tmp_path: Any) -> None:
    sqlite = SqliteCheckpointStore(tmp_path / "c.db")
    for store in (InMemoryCheckpointStore(), sqlite):
        assert isinstance(store, CheckpointStore)
        assert isinstance(store, ClaimingCheckpointStore)
        assert StoreAdapter(store).claims
    sqlite.close()
    assert isinstance(AwaitableStore(), CheckpointStore)
    assert not isinstance(AwaitableStore(), ClaimingCheckpointStore)


@pytest.mark.parametrize("bad", [object(), {"get": 1}, InMemoryCheckpointStore])
def test_a_runner_refuses_what_is_not_a_store_at_once(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"get\(id\) and set\(id, data\)"):
        Runner(agent(), checkpoint_store=bad)
