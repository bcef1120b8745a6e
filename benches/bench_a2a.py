"""Events per second through A2A on loopback: rillet at both ends against a2a-sdk at both ends.

Run: .venv/bin/python -m pytest benches/bench_a2a.py --benchmark-only
(or ``python benches/bench_a2a.py`` for events per second of each, measured in one run).

One round is one task whose reply is ``N`` text chunks, streamed from server to client:

* ``rillet``: a ChatModelAgent on a ScriptedModel (``N`` chunks) served by ``A2AServer``
  (``RilletExecutor`` inside a2a-sdk's JSON-RPC routes and uvicorn), called by a
  ``RemoteA2AAgent`` run by a ``Runner(streaming=True)``; the round ends when the streamed
  message's ``N`` chunks are read.
* ``a2a-sdk``: an ``AgentExecutor`` written with a2a-sdk alone that publishes the same task
  (SUBMITTED, WORKING, ``N`` artifact chunks, COMPLETED) behind the same routes and uvicorn,
  called by a2a-sdk's client; the round ends when the ``N`` artifact updates are read.

Both sides send the same events over the same HTTP stack, so the difference is rillet's cost
at both ends (the run, the mapping, the remote agent's events and stream).
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

pytest.importorskip("a2a", reason="the a2a extra is not installed")

import uvicorn
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import Message, Part, Role, SendMessageRequest, Task, TaskState, TaskStatus
from rillet import ChatModelAgent, Runner, ScriptedModel
from rillet.a2a import A2AServer, RemoteA2AAgent, agent_card
from starlette.applications import Starlette

N = 200  # chunks per task
CHUNK = "abcd"


class PlainExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        up = TaskUpdater(event_queue, task_id, context_id)
        await event_queue.enqueue_event(
            Task(id=task_id, context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
        )
        await up.start_work()
        for i in range(N):
            await up.add_artifact([new_text_part(CHUNK)], "a1", append=i > 0, last_chunk=i == N - 1)
        await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


@asynccontextmanager
async def plain_server() -> AsyncIterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    agent = ChatModelAgent("plain", description="streams", model=ScriptedModel([]))  # only its card is used
    card = agent_card(agent, url + "/")
    handler = DefaultRequestHandler(agent_executor=PlainExecutor(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:  # noqa: ASYNC110  # uvicorn sets a flag, no event
            await asyncio.sleep(0.01)
        yield url
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 5)


def rillet_agent() -> ChatModelAgent:
    model = ScriptedModel(lambda messages, tools: CHUNK * N, chunk_size=len(CHUNK), record=False)
    return ChatModelAgent("streamer", description="streams", model=model)


@asynccontextmanager
async def rillet_round() -> AsyncIterator[Callable[[], Awaitable[int]]]:
    async with A2AServer(rillet_agent()) as server:
        runner = Runner(RemoteA2AAgent("streamer", server.url), streaming=True)

        async def one() -> int:
            chunks = 0
            async for ev in runner.query("go"):
                mv = ev.message_output
                if mv is not None and mv.message_stream is not None:
                    async for _ in mv.message_stream:
                        chunks += 1
            return chunks

        yield one


@asynccontextmanager
async def plain_round() -> AsyncIterator[Callable[[], Awaitable[int]]]:
    async with plain_server() as url:
        client = await ClientFactory(ClientConfig(streaming=True)).create_from_url(url)

        async def one() -> int:
            msg = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text="go")])
            chunks = 0
            async for r in client.send_message(SendMessageRequest(message=msg)):
                chunks += r.HasField("artifact_update")
            return chunks

        try:
            yield one
        finally:
            await client.close()


ROUNDS = {"rillet": rillet_round, "a2a-sdk": plain_round}


@pytest.mark.parametrize("impl", list(ROUNDS))
def test_a2a_stream(benchmark: Any, impl: str) -> None:
    loop = asyncio.new_event_loop()
    benchmark.group = f"a2a stream ({N} chunks)"
    benchmark.extra_info.update({"impl": impl, "per": N})
    try:
        ctx = ROUNDS[impl]()
        one = loop.run_until_complete(ctx.__aenter__())
        try:
            got = benchmark.pedantic(lambda: loop.run_until_complete(one()), rounds=15, warmup_rounds=2)
            assert got == N
        finally:
            loop.run_until_complete(ctx.__aexit__(None, None, None))
    finally:
        loop.close()


async def _measure(rounds: int = 15) -> dict[str, float]:
    out = {}
    for impl, make in ROUNDS.items():
        async with make() as one:
            for _ in range(2):
                await one()
            times = []
            for _ in range(rounds):
                t = time.perf_counter()
                assert await one() == N
                times.append(time.perf_counter() - t)
        out[impl] = N / statistics.median(times)
    return out


if __name__ == "__main__":
    rates = asyncio.run(_measure())
    for impl, rate in rates.items():
        print(f"{impl:<8} {rate:10,.0f} events/s  ({N} chunks a task, median of 15 tasks)")
    print(f"rillet / a2a-sdk: {rates['rillet'] / rates['a2a-sdk']:.2f}")
