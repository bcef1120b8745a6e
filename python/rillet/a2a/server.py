"""A rillet agent as an A2A server: :class:`RilletExecutor` (the a2a-sdk ``AgentExecutor``),
:func:`a2a_app` (its Starlette app), :class:`A2AServer` (served in-process on a port) and
:func:`serve_a2a` (served until Ctrl-C). docs/a2a.md states the mapping this module writes.

The A2A task id is the run's checkpoint id and the context id its session id, so a task that
asks for input (INPUT_REQUIRED) resumes from its checkpoint when the client answers on the
same task, in this process or, with a persistent checkpoint store, another one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import uuid
from collections.abc import AsyncIterator
from typing import Any

from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, Task, TaskState, TaskStatus
from a2a.utils.errors import UnsupportedOperationError

from rillet._native import Message, MessageAccumulator
from rillet.a2a.wire import data_of, interrupt_part, parts_text, tool_call_parts, tool_result_part, transfer_part
from rillet.checkpoint.stores import CheckpointStore, InMemoryCheckpointStore
from rillet.data.events import AgentEvent
from rillet.errors import CheckpointError
from rillet.run.agent import Agent
from rillet.runner import Runner
from rillet.sessions import InMemorySessionStore, SessionStore

__all__ = ["A2AServer", "RilletExecutor", "a2a_app", "agent_card", "serve_a2a"]

RPC_PATH = "/"


class RilletExecutor(AgentExecutor):
    """Runs ``agent`` for each A2A request with a Runner that saves interrupted tasks in
    ``checkpoint_store`` (by task id) and keeps conversations in ``session_store`` (by context
    id); both default to in-memory stores. ``streaming`` asks the agent's models to stream, so
    replies go out chunk by chunk."""

    def __init__(
        self,
        agent: Agent,
        *,
        checkpoint_store: CheckpointStore | None = None,
        session_store: SessionStore | None = None,
        streaming: bool = True,
    ) -> None:
        self.runner = Runner(
            agent,
            streaming=streaming,
            checkpoint_store=checkpoint_store if checkpoint_store is not None else InMemoryCheckpointStore(),
            session_store=session_store if session_store is not None else InMemorySessionStore(),
        )
        self._running: set[str] = set()  # the tasks whose runs are going on now
        self._canceled: set[str] = set()  # of those, the ones canceled: their events are dropped

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        out = _Publisher(TaskUpdater(event_queue, task_id, context_id), self._canceled)
        task = context.current_task
        incoming = list(context.message.parts) if context.message is not None else []
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            asked = [d for d in data_of(task.status.message.parts) if d.get("kind") == "interrupt"]
            targets, problem = _answers(incoming, asked)
            if problem:  # nothing runs: the same question again, with what was wrong
                await out.status(TaskState.TASK_STATE_INPUT_REQUIRED, [new_text_part(problem), *_reask(task)])
                return
            try:
                events = await self.runner.aresume(task_id, targets=targets)
            except CheckpointError as e:
                await out.status(TaskState.TASK_STATE_FAILED, [new_text_part(str(e))])
                return
            await out.status(TaskState.TASK_STATE_WORKING)
        elif task is not None:  # queued behind the task's run: a second run would restart it
            raise UnsupportedOperationError(
                message=f"task {task_id} is not waiting for input: a rillet agent reads a message on a task only "
                f"to answer its question (INPUT_REQUIRED); to go on talking, send a new message (no task id) in "
                f"context {context_id}"
            )
        else:
            history = [context.message] if context.message is not None else []
            submitted = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
            await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, status=submitted, history=history))
            await out.status(TaskState.TASK_STATE_WORKING)
            text = parts_text(incoming) or "\n".join(json.dumps(d) for d in data_of(incoming))
            events = self.runner.run([Message.user(text)], checkpoint_id=task_id, session_id=context_id)
        self._running.add(task_id)
        try:
            async with events:
                await out.publish(events)
        finally:
            self._running.discard(task_id)
            self._canceled.discard(task_id)  # cancel() marked it while this ran

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stops publishing the task's events (a2a-sdk then cancels ``execute``, which closes
        the run) and ends the task CANCELED."""
        task_id = context.task_id or ""
        if task_id in self._running:  # a task waiting for input has no run to stop (nor to forget it)
            self._canceled.add(task_id)
        await TaskUpdater(event_queue, task_id, context.context_id or "").cancel()


def _answers(parts: list[Part], asked: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The resume targets a client's answer names, or what is wrong with it. The answer is a
    data part ``{interrupt id: value}``; a text alone answers when one interrupt is open."""
    ids = [str(a.get("id")) for a in asked]
    given: dict[str, Any] = {}
    for d in data_of(parts):
        given.update(d)
    if not given:
        text = parts_text(parts)
        if len(ids) == 1 and text:
            return {ids[0]: text}, ""
        return {}, f"answer with a data part {{interrupt id: value}}; the open interrupts are {ids}"
    unknown = [k for k in given if k not in ids]
    if unknown:
        return {}, f"{unknown} are not open interrupts of this task; they are {ids}"
    return given, ""


def _reask(task: Any) -> list[Part]:
    return [p for p in task.status.message.parts if p.HasField("data")]


class _Publisher:
    """Writes one run's events as A2A task updates (the mapping of docs/a2a.md)."""

    def __init__(self, updater: TaskUpdater, canceled: set[str]) -> None:
        self.updater = updater
        self.canceled = canceled

    @property
    def live(self) -> bool:
        return self.updater.task_id not in self.canceled

    async def status(self, state: TaskState, parts: list[Part] | None = None) -> None:
        if not self.live:
            return
        message = self.updater.new_agent_message(parts) if parts else None
        await self.updater.update_status(state, message)

    async def publish(self, events: AsyncIterator[AgentEvent]) -> None:
        async for ev in events:
            if not self.live:
                return
            if ev.error is not None:
                err = ev.error
                detail = {"kind": "error", "author": ev.agent_name, "type": type(err).__name__, "message": str(err)}
                await self.status(TaskState.TASK_STATE_FAILED, [new_text_part(str(err)), new_data_part(detail)])
                return
            mv = ev.message_output
            if mv is not None:
                await self._message(ev.agent_name, mv.role, mv.tool_name, mv.message, mv.message_stream)
            action = ev.action
            if action is not None and action.transfer_to_agent is not None:
                await self.status(
                    TaskState.TASK_STATE_WORKING,
                    [transfer_part(ev.agent_name, action.transfer_to_agent.dest_agent_name)],
                )
            if action is not None and action.interrupted is not None:
                parts = [
                    interrupt_part(ev.agent_name, c.id, c.address, c.info)
                    for c in action.interrupted.interrupt_contexts
                ]
                await self.status(TaskState.TASK_STATE_INPUT_REQUIRED, parts)
                return
        await self.status(TaskState.TASK_STATE_COMPLETED)

    async def _message(self, author: str, role: str, tool_name: str, message: Message | None, stream: Any) -> None:
        if role == "tool":
            whole = message if message is not None else await _concat(stream)
            await self.status(TaskState.TASK_STATE_WORKING, [tool_result_part(author, whole, tool_name)])
            return
        if message is not None:
            if message.content:
                await self._artifact(uuid.uuid4().hex, message.content, append=False, last=True)
        else:
            message = await self._stream(stream)
        if message.tool_calls:
            await self.status(TaskState.TASK_STATE_WORKING, tool_call_parts(author, message))

    async def _stream(self, stream: Any) -> Message:
        """Sends the stream's text as chunks of one artifact: each chunk is held until the
        next arrives, so the last one carries ``last_chunk`` and no text is sent twice."""
        artifact_id = uuid.uuid4().hex
        acc = MessageAccumulator()
        held: str | None = None
        sent = False
        async with stream:
            async for chunk in stream:
                acc.push(chunk)
                if not chunk.content:
                    continue
                if held is not None:
                    await self._artifact(artifact_id, held, append=sent, last=False)
                    sent = True
                held = chunk.content
        if held is not None:
            await self._artifact(artifact_id, held, append=sent, last=True)
        return acc.finish() if len(acc) else Message.assistant("")

    async def _artifact(self, artifact_id: str, text: str, *, append: bool, last: bool) -> None:
        if self.live:
            await self.updater.add_artifact([new_text_part(text)], artifact_id, append=append, last_chunk=last)


async def _concat(stream: Any) -> Message:
    acc = MessageAccumulator()
    async with stream:
        async for chunk in stream:
            acc.push(chunk)
    return acc.finish()


def agent_card(agent: Agent, url: str, *, streaming: bool = True, version: str = "1.0.0") -> AgentCard:
    """The agent card :func:`a2a_app` serves for ``agent`` at ``url`` (JSON-RPC). The server
    always offers SendStreamingMessage; whether the agent's models stream is ``a2a_app``'s
    ``streaming``, not the card's."""
    return AgentCard(
        name=agent.name,
        description=agent.description or agent.name,
        version=version,
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(id=agent.name, name=agent.name, description=agent.description or agent.name, tags=["rillet"])
        ],
    )


def a2a_app(
    agent: Agent,
    url: str,
    *,
    checkpoint_store: CheckpointStore | None = None,
    session_store: SessionStore | None = None,
    streaming: bool = True,
    card: AgentCard | None = None,
) -> Any:
    """A Starlette app serving ``agent`` over A2A JSON-RPC at ``url`` (the card at
    ``/.well-known/agent-card.json``): mount it, or serve it with any ASGI server."""
    from starlette.applications import Starlette  # the rillet[a2a] extra (a2a-sdk's http-server)

    card = card if card is not None else agent_card(agent, url)
    executor = RilletExecutor(
        agent, checkpoint_store=checkpoint_store, session_store=session_store, streaming=streaming
    )
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url=RPC_PATH)]
    return Starlette(routes=routes)


class A2AServer:
    """``agent`` served over A2A on ``host:port`` in the running event loop, for
    ``async with``: ``port=0`` picks a free port; ``url`` is the base URL (card and JSON-RPC)
    once entered. Leaving the block stops the server."""

    def __init__(self, agent: Agent, *, host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
        self.agent = agent
        self.host = host
        self.port = port
        self.options = options
        self.url = ""
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> A2AServer:
        import uvicorn  # the rillet[a2a] extra, needed only to serve

        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{host}:{self.port}"
        app = a2a_app(self.agent, self.url + RPC_PATH, **self.options)
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():  # it failed to start: raise its error here
                await self._task
                raise RuntimeError(f"the A2A server on {self.url} stopped at startup")
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(self._task, 5)


def serve_a2a(
    agent: Agent,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    public_url: str | None = None,
    **options: Any,
) -> None:
    """Serves ``agent`` over A2A until Ctrl-C. ``public_url`` is the URL clients reach it by
    (in its card), ``http://host:port/`` by default; ``options`` go to :func:`a2a_app`
    (``checkpoint_store``, ``session_store``, ``streaming``, ``card``). A wildcard ``host``
    (``0.0.0.0``, ``::``) needs ``public_url``: no client can reach the address it names."""
    if public_url is None and host in ("0.0.0.0", "::", ""):
        raise ValueError(
            f"serve_a2a: host {host!r} listens on every interface, so it is not a URL clients can reach; pass "
            f"public_url='http://<the name clients use>:{port}/' for the agent card"
        )
    import uvicorn  # the rillet[a2a] extra, needed only to serve

    url = public_url or f"http://{host}:{port}{RPC_PATH}"
    app = a2a_app(agent, url, **options)
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(app, host=host, port=port, log_level="warning")
