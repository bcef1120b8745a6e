"""RemoteA2AAgent: a local agent whose runs happen on a remote A2A agent (ADK-Go's remote agent).

A run sends the conversation's trailing user messages to the remote agent as a new A2A task and
turns what comes back into rillet events (docs/a2a.md has the table): artifact chunks into one
streamed message, data parts into tool-call, tool-result and (when allowed) transfer events,
INPUT_REQUIRED into a rillet interrupt whose resume answers the same remote task.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
from a2a.client import A2ACardResolver, A2AClientError, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import A2AError as ProtocolError

from rillet._native import Message, StreamWriter, pipe
from rillet.a2a.wire import data_of, jsonable, messages_to_parts, parts_text, tool_call_of, user_message
from rillet.data.events import AgentEvent, event_from_message, new_transfer_to_agent_action
from rillet.errors import A2ACardError, A2AError, A2ATimeoutError
from rillet.run.agent import AgentInput, BaseAgent
from rillet.run.context import add_session_value, get_session_value
from rillet.run.interrupts import get_interrupt_state, get_resume_context, stateful_interrupt_event

__all__ = ["BeforeRequestCallback", "RemoteA2AAgent"]

BeforeRequestCallback = Callable[
    [SendMessageRequest], "SendMessageRequest | None | Awaitable[SendMessageRequest | None]"
]
"""Called with each request before it is sent: edit it in place, or return a new one."""


_SSL: list[Any] = []


def _http(timeout: float, *, reads: bool = True) -> httpx.AsyncClient:
    """An httpx client for one run (clients belong to an event loop, runs may not share one),
    with one TLS context for all: building it is most of what a new client costs. ``reads``
    False leaves reads unbounded, for a run whose deadline bounds them instead."""
    if not _SSL:
        _SSL.append(httpx.create_ssl_context())
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout, read=timeout if reads else None), verify=_SSL[0])


def _origin(url: str) -> str:
    u = urlsplit(url)
    port = u.port or {"http": 80, "https": 443}.get(u.scheme, 0)
    return f"{u.scheme}://{(u.hostname or '').lower()}:{port}"


class RemoteA2AAgent(BaseAgent):
    """An agent that is really the A2A agent described by ``card_or_url`` (an ``AgentCard``,
    or the base URL its card is fetched from, ``<url>/.well-known/agent-card.json``).

    The run's ``enable_streaming`` (``Runner(streaming=True)``) picks the streaming call
    (SendStreamingMessage) over SendMessage. A card fetched from a URL must name a JSON-RPC
    interface on the same origin unless that origin is in ``allowed_origins``. Transfers the
    remote reports are dropped unless ``allow_transfer``; ``before_request_callbacks`` may edit
    each request. ``timeout`` is httpx's, for each HTTP request: seconds to connect, and of
    silence while reading or writing (a stream of updates never trips it); ``deadline`` bounds
    the whole remote call of a run (seconds, None: none), past which the run ends with
    :class:`~rillet.errors.A2ATimeoutError` and the remote task is cancelled. A SendMessage
    (not streaming) is answered only when the task ends: its wait is bounded by ``deadline``,
    not by ``timeout`` (by ``timeout`` when there is no deadline)."""

    def __init__(
        self,
        name: str,
        card_or_url: AgentCard | str,
        *,
        description: str = "",
        allowed_origins: Iterable[str] = (),
        before_request_callbacks: Iterable[BeforeRequestCallback] = (),
        allow_transfer: bool = False,
        timeout: float = 60.0,
        deadline: float | None = 600.0,
    ) -> None:
        for what, seconds in (("timeout", timeout), ("deadline", deadline)):
            if seconds is not None and not seconds > 0:
                raise ValueError(f"RemoteA2AAgent({name!r}, {what}={seconds!r}): give a positive number of seconds")
        if isinstance(card_or_url, str):
            if urlsplit(card_or_url).scheme not in ("http", "https"):
                raise ValueError(f"RemoteA2AAgent({name!r}): {card_or_url!r} is not an http(s) URL of an A2A agent")
            self._url, self._card = card_or_url, None
        elif isinstance(card_or_url, AgentCard):
            self._url, self._card = "", card_or_url
        else:
            raise TypeError(
                f"RemoteA2AAgent({name!r}): expected an AgentCard or the agent's URL, got {type(card_or_url).__name__}"
            )
        desc = description or (self._card.description if self._card is not None else "")
        super().__init__(name, desc or f"the remote A2A agent at {card_or_url!r}")
        self.allowed_origins = {_origin(o) for o in allowed_origins}
        self.before_request_callbacks: list[BeforeRequestCallback] = list(before_request_callbacks)
        self.allow_transfer = allow_transfer
        self.timeout, self.deadline = timeout, deadline

    @property
    def context_key(self) -> str:
        """The session value holding the context id of this agent's last remote task: the next
        run of the same session sends it, so the remote agent continues that conversation."""
        return f"a2a_context_id:{self.name}"

    async def card(self, http: httpx.AsyncClient | None = None) -> AgentCard:
        """The remote agent's card: the one given, or fetched once and checked (its JSON-RPC
        interface must be on the origin it came from, or in ``allowed_origins``)."""
        if self._card is not None:
            return self._card
        async with _http(self.timeout) if http is None else _borrowed(http) as client:
            try:
                card = await A2ACardResolver(client, self._url).get_agent_card()
            except Exception as e:
                raise A2ACardError(
                    f"remote agent {self.name!r}: cannot fetch the agent card from {self._url}: {e}"
                ) from e
        rpc = [i.url for i in card.supported_interfaces if i.protocol_binding == "JSONRPC"]
        if not rpc:
            raise A2ACardError(f"remote agent {self.name!r}: the card at {self._url} names no JSON-RPC interface")
        allowed = {_origin(self._url), *self.allowed_origins}
        foreign = [u for u in rpc if _origin(u) not in allowed]
        if foreign:
            raise A2ACardError(
                f"remote agent {self.name!r}: the card fetched from {self._url} points at {foreign[0]}, another origin; "
                f"pass allowed_origins=[{_origin(foreign[0])!r}] if you trust it"
            )
        self._card = card
        return card

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        saved = get_interrupt_state()
        reported: list[str] = []
        if saved.was_interrupted and isinstance(saved.state, dict):
            resume = get_resume_context()
            if not (resume.is_target and resume.has_data):  # not answered: ask again
                info = _info(self.name, saved.state["asked"], saved.state.get("question", ""))
                yield stateful_interrupt_event(info, saved.state)
                return
            request = _answer(saved.state, resume.data)
            reported = list(saved.state.get("artifacts", []))
        else:
            # the remote conversation this session had (the context id of its last task) goes on
            context_id = str(get_session_value(self.context_key, ""))
            message = user_message(_outgoing(input.messages), message_id=uuid.uuid4().hex, context_id=context_id)
            request = SendMessageRequest(message=message)
        for cb in self.before_request_callbacks:
            edited = cb(request)
            if inspect.isawaitable(edited):
                edited = await edited
            if edited is not None:
                request = edited
        deadline = _Deadline(self.deadline)
        # a SendMessage's answer is silent until the task ends: the deadline bounds that wait
        silent = not input.enable_streaming and self.deadline is not None
        async with _http(self.timeout, reads=not silent) as http:
            card: AgentCard | None = None
            reader = _Reader(self.name, self.allow_transfer, reported)
            try:
                card = await deadline.within(self.card(http))
                client = ClientFactory(ClientConfig(streaming=input.enable_streaming, httpx_client=http)).create(card)
            except A2ATimeoutError:
                raise self._late(card, reader, "") from None
            responses = client.send_message(request)
            try:
                while True:
                    try:
                        response = await deadline.within(anext(responses))
                    except StopAsyncIteration:
                        break
                    events = await reader.read(response)
                    if reader.context_id and reader.context_id != get_session_value(self.context_key):
                        add_session_value(self.context_key, reader.context_id)
                    for ev in events:
                        yield ev
                    if reader.done:
                        break
            except (asyncio.CancelledError, GeneratorExit):  # the local run was abandoned
                if reader.task_id and not reader.done:
                    await _cancel_remote(client, reader.task_id)
                raise
            except A2ATimeoutError:
                cancelled = await _cancel_remote(client, reader.task_id) if reader.task_id else ""
                raise self._late(card, reader, cancelled) from None
            except (A2AClientError, ProtocolError, httpx.HTTPError) as e:  # the connection, or the remote said no
                raise A2AError(f"remote agent {self.name!r} at {self._where(card)}: {type(e).__name__}: {e}") from e
            finally:
                reader.close()
                with contextlib.suppress(Exception):
                    await responses.aclose()  # type: ignore[attr-defined]  # an async generator
                await client.close()
        if not reader.done:
            raise A2AError(f"remote agent {self.name!r}: the task's stream ended before a final state")

    def _where(self, card: AgentCard | None) -> str:
        """The agent's JSON-RPC URL(s), for messages."""
        if card is None:
            return self._url
        return ", ".join(i.url for i in card.supported_interfaces if i.protocol_binding == "JSONRPC")

    def _late(self, card: AgentCard | None, reader: _Reader, cancelled: str) -> A2ATimeoutError:
        """The error of a run past its deadline; ``cancelled`` says how tasks/cancel went."""
        if not reader.task_id:
            what = "the remote had not named its task yet, so it could not be cancelled and may still be running there"
        elif cancelled == "":
            what = f"task {reader.task_id} was still running; cancelled it on the remote"
        else:
            what = f"task {reader.task_id} was still running; cancelling it on the remote failed: {cancelled}"
        return A2ATimeoutError(
            f"remote agent {self.name!r} at {self._where(card)}: no final answer within the deadline of "
            f"{self.deadline} s ({what}); RemoteA2AAgent(deadline=...) gives it longer (None: no deadline)"
        )


_T = TypeVar("_T")


class _Deadline:
    """One run's bound on the whole remote call, applied to each wait for the remote (not
    across the run's ``yield``s, where it would cancel the consumer's task instead)."""

    def __init__(self, seconds: float | None) -> None:
        self.at = None if seconds is None else asyncio.get_running_loop().time() + seconds

    async def within(self, waiting: Awaitable[_T]) -> _T:
        """``await waiting``, or A2ATimeoutError once the deadline has passed (the run
        replaces it with one that says what became of the task)."""
        bound = asyncio.timeout_at(self.at)
        try:
            async with bound:
                return await waiting
        except TimeoutError:
            if bound.expired():
                raise A2ATimeoutError("the deadline passed") from None
            raise


async def _cancel_remote(client: Any, task_id: str) -> str:
    """Asks the remote to cancel a task this run no longer waits for; best effort, briefly:
    the local run is ending either way. Returns why it failed, or "" when it did not."""
    try:
        await asyncio.wait_for(client.cancel_task(CancelTaskRequest(id=task_id)), 2)
    except Exception as e:  # noqa: BLE001  # reported, not raised: the run ends anyway
        return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    return ""


class _borrowed:
    """A caller's httpx client for ``async with``, left open."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def __aenter__(self) -> httpx.AsyncClient:
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        return None


def _outgoing(messages: list[Message]) -> list[Any]:
    """The trailing user messages (what was said since the last reply), else the last one."""
    tail: list[Message] = []
    for m in reversed(messages):
        if m.role != "user":
            break
        tail.insert(0, m)
    parts = messages_to_parts(tail or messages[-1:])
    if not parts:
        raise A2AError("RemoteA2AAgent: there is no text to send (the input has no user message with text)")
    return parts


def _info(name: str, asked: list[dict[str, Any]], question: str = "") -> dict[str, Any]:
    """A remote question's interrupt info: its interrupt parts, and its text when it has one
    (a server that asks in words, with no interrupt parts)."""
    return {"remote_agent": name, "interrupts": asked, **({"question": question} if question else {})}


def _answer(state: dict[str, Any], data: Any) -> SendMessageRequest:
    """The resume data as the answer on the remote task: ``{remote interrupt id: value}``, or
    one value for a task that asked one thing."""
    ids = [str(a.get("id")) for a in state["asked"]]
    if not ids:  # the remote asked in words: the answer goes back as a text (or its data)
        part = new_data_part(jsonable(data)) if isinstance(data, dict) else new_text_part(str(data))
        message = user_message(
            [part], message_id=uuid.uuid4().hex, task_id=state["task_id"], context_id=state["context_id"]
        )
        return SendMessageRequest(message=message)
    if not (isinstance(data, dict) and data and set(data) <= set(ids)):
        if len(ids) != 1:
            raise A2AError(
                f"the remote task asked {len(ids)} things; resume with {{remote interrupt id: value}} for ids {ids}"
            )
        data = {ids[0]: data}
    message = user_message(
        [new_data_part(jsonable(data))],
        message_id=uuid.uuid4().hex,
        task_id=state["task_id"],
        context_id=state["context_id"],
    )
    return SendMessageRequest(message=message)


class _Reader:
    """Turns one task's A2A stream responses into rillet events."""

    def __init__(self, name: str, allow_transfer: bool, reported: Iterable[str] = ()) -> None:
        self.name = name
        # the task's artifacts already turned into events (by this run, or the one that asked)
        self.reported = dict.fromkeys(reported)
        self.allow_transfer = allow_transfer
        self.task_id = self.context_id = ""
        self.open: dict[str, StreamWriter[Any]] = {}
        self.streamed: dict[str, str] = {}  # the text each open stream has carried
        self.replied = False  # the task sent its reply as artifacts
        self.done = False

    async def read(self, response: StreamResponse) -> list[AgentEvent]:
        if response.HasField("task"):
            return self._task(response.task)
        if response.HasField("artifact_update"):
            chunk = response.artifact_update
            return await self._chunk(
                chunk.artifact.artifact_id, parts_text(chunk.artifact.parts, sep=""), chunk.append, chunk.last_chunk
            )
        if response.HasField("status_update"):
            update = response.status_update
            self.task_id, self.context_id = update.task_id, update.context_id
            return self._status(update.status)
        if response.HasField("message"):  # a direct reply, no task
            self.done = True
            return [event_from_message(Message.assistant(parts_text(response.message.parts)))]
        return []

    def _task(self, task: Task) -> list[AgentEvent]:
        """A whole task: the first event of a stream, or the one answer of SendMessage (then
        its history holds the tool calls and results, before the artifacts' replies)."""
        self.task_id, self.context_id = task.id, task.context_id
        out: list[AgentEvent] = []
        # only what answered the last user message: on a resumed task, what came before the
        # answer was reported by the run that asked
        users = [i for i, m in enumerate(task.history) if m.role == Role.ROLE_USER]
        for m in task.history[users[-1] + 1 if users else 0 :]:
            if m.role == Role.ROLE_AGENT:
                out += self._data(data_of(m.parts))
        for a in task.artifacts:
            if a.artifact_id in self.reported:
                continue
            self.reported[a.artifact_id] = None
            text = parts_text(a.parts, sep="")  # an artifact's parts are its appended chunks
            if text:
                self.replied = True
                out.append(event_from_message(Message.assistant(text)))
        return out + self._status(task.status)

    async def _chunk(self, artifact_id: str, text: str, append: bool, last: bool) -> list[AgentEvent]:
        self.replied = self.replied or bool(text)
        self.reported[artifact_id] = None
        writer = self.open.get(artifact_id)
        if not append and last:
            if writer is None:  # a whole message
                return [event_from_message(Message.assistant(text))]
            return await self._snapshot(artifact_id, writer, text)
        out = []
        if writer is None:
            reader, writer = pipe()
            self.open[artifact_id] = writer
            self.streamed[artifact_id] = ""
            out.append(event_from_message(None, reader))
        if text:
            self.streamed[artifact_id] += text
            await writer.asend(Message.assistant(text))
        if last:
            self._end(artifact_id)
        return out

    async def _snapshot(self, artifact_id: str, writer: StreamWriter[Any], text: str) -> list[AgentEvent]:
        """A whole artifact closing the chunks of the same id (ADK-Go's servers send one): it
        replaces them, so only what it adds goes on the stream; one that says something else
        ends the stream and comes as a message of its own."""
        sent = self.streamed[artifact_id]
        if text.startswith(sent):
            if text[len(sent) :]:
                await writer.asend(Message.assistant(text[len(sent) :]))
            self._end(artifact_id)
            return []
        self._end(artifact_id)
        return [event_from_message(Message.assistant(text))]

    def _end(self, artifact_id: str) -> None:
        self.open.pop(artifact_id).close()
        del self.streamed[artifact_id]

    def _status(self, status: TaskStatus) -> list[AgentEvent]:
        state = status.state
        data = data_of(status.message.parts) if status.HasField("message") else []
        text = parts_text(status.message.parts) if status.HasField("message") else ""
        if state in (TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_COMPLETED):
            for artifact_id in list(self.open):  # a stream the server never marked last ends here
                self._end(artifact_id)
        if state == TaskState.TASK_STATE_INPUT_REQUIRED:
            self.done = True
            asked = [d for d in data if d.get("kind") == "interrupt"]
            keep = {
                "task_id": self.task_id,
                "context_id": self.context_id,
                "asked": asked,
                "question": text,
                "artifacts": list(self.reported),
            }
            return [stateful_interrupt_event(_info(self.name, asked, text), keep)]
        if state in (TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED, TaskState.TASK_STATE_CANCELED):
            self.done = True
            what = TaskState.Name(state).removeprefix("TASK_STATE_").lower()
            raise A2AError(f"remote agent {self.name!r}: task {self.task_id} {what}" + (f": {text}" if text else ""))
        if state == TaskState.TASK_STATE_COMPLETED:
            self.done = True
            # a reply in the final status counts when no artifact carried one; after artifacts
            # it repeats them (the duplicate some servers send), and progress notes in WORKING
            # statuses are not replies
            if text and not self.replied:
                return [*self._data(data), event_from_message(Message.assistant(text))]
        return self._data(data)

    def _data(self, data: list[dict[str, Any]]) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        calls = [d for d in data if d.get("kind") == "tool_call"]
        if calls:
            out.append(event_from_message(Message.assistant("", [tool_call_of(c, i) for i, c in enumerate(calls)])))
        for d in data:
            kind = d.get("kind")
            if kind == "tool_result":
                name = str(d.get("name", ""))
                msg = Message.tool_message(str(d.get("content", "")), str(d.get("tool_call_id", "")), name)
                out.append(event_from_message(msg, role="tool", tool_name=name))
            elif kind == "transfer" and self.allow_transfer:
                out.append(AgentEvent(action=new_transfer_to_agent_action(str(d.get("to", "")))))
        return out

    def close(self) -> None:
        """Ends streams the task left open (it failed or was dropped mid-message)."""
        for writer in self.open.values():
            writer.send_error(A2AError(f"remote agent {self.name!r}: the message stream was cut off"))
            writer.close()
        self.open.clear()
        self.streamed.clear()
