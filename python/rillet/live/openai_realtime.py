"""OpenAIRealtimeModel: a :class:`~rillet.live.LiveModel` over an OpenAI Realtime-compatible
websocket (text output; realtime input as audio frames).

The connection speaks the Realtime event protocol: ``session.update`` (instructions, tools,
no server turn detection: turns are ended by the caller), ``conversation.item.create`` for the
history, user messages and tool results, ``input_audio_buffer.append`` / ``commit`` for blobs,
``response.create`` to have the model answer and ``response.cancel`` when the user cuts in.
From the server it reads text deltas (``response.output_text.delta``, or the older
``response.text.delta``; audio transcripts likewise), function calls
(``response.output_item.done``) and ``response.done``. The ``websockets`` package (the
``realtime`` extra) is imported on first connect.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from rillet._native import FunctionCall, Message, ToolCall
from rillet.errors import AuthenticationError, ModelConnectionError, ModelError
from rillet.live.model import LiveResponse
from rillet.live.queue import Blob

if TYPE_CHECKING:
    from rillet.tools import ToolInfo

__all__ = ["OpenAIRealtimeModel", "RealtimeConnection"]

_TEXT_DELTAS = {
    "response.output_text.delta",
    "response.text.delta",
    "response.output_audio_transcript.delta",
    "response.audio_transcript.delta",
}


class OpenAIRealtimeModel:
    """Connects to ``base_url`` (``wss://api.openai.com/v1/realtime`` by default) with
    ``?model=<model>``, authenticated by ``api_key`` (default: ``OPENAI_API_KEY``; none sent
    when empty, for local servers). ``session`` is merged into the ``session.update`` sent
    first (voice, audio formats...); ``headers`` are added to the handshake."""

    def __init__(
        self,
        model: str = "gpt-realtime",
        *,
        api_key: str | None = None,
        base_url: str = "wss://api.openai.com/v1/realtime",
        headers: Mapping[str, str] | None = None,
        session: Mapping[str, Any] | None = None,
        open_timeout: float = 10.0,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"OpenAIRealtimeModel(model=...): expected a model name, got {model!r}")
        if not base_url.startswith(("ws://", "wss://")):
            raise ValueError(f"OpenAIRealtimeModel(base_url=...): expected a ws:// or wss:// URL, got {base_url!r}")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.base_url = base_url
        self.headers = dict(headers or {})
        self.session = dict(session or {})
        self.open_timeout = open_timeout

    async def connect(
        self, history: list[Message], *, tools: Sequence[ToolInfo] | None = None, **options: Any
    ) -> RealtimeConnection:
        """Opens the websocket, configures the session and sends ``history``."""
        from websockets.asyncio.client import connect  # optional dependency (the realtime extra)
        from websockets.exceptions import InvalidStatus, WebSocketException  # (the same)

        url = f"{self.base_url}?model={quote(self.model)}"
        headers = {**({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}), **self.headers}
        try:
            ws = await connect(url, additional_headers=headers, open_timeout=self.open_timeout, max_size=2**24)
        except InvalidStatus as e:
            status = e.response.status_code
            cls = AuthenticationError if status in (401, 403) else ModelConnectionError
            raise cls(f"realtime server refused the connection: HTTP {status}", status_code=status, base_url=url) from e
        except (OSError, TimeoutError, WebSocketException) as e:
            raise ModelConnectionError(f"cannot reach the realtime server at {url}: {e}", base_url=url) from e
        conn = RealtimeConnection(ws, url)
        try:
            await conn._start(history, tools or (), {**self.session, **options})
        except BaseException:
            await conn.close()
            raise
        return conn


def _history_items(messages: list[Message]) -> list[dict[str, Any]]:
    """Conversation items for the non-system messages (tool calls as function calls)."""
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "user":
            items.append(_user_item(m))
        elif m.role == "assistant":
            if m.content:
                items.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": m.content}]}
                )
            for c in m.tool_calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.function.name,
                        "arguments": c.function.arguments,
                    }
                )
        elif m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content})
    return items


def _user_item(m: Message) -> dict[str, Any]:
    parts = m.user_input_multi_content
    text = m.content or "".join(p.text or "" for p in parts)
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _event(raw: str | bytes, url: str) -> dict[str, Any]:
    """A server frame as its JSON event, else a ModelError naming what came."""
    try:
        event = json.loads(raw)
    except ValueError:
        event = None
    if not isinstance(event, dict):
        raise ModelError(f"the realtime server sent a frame that is not a JSON event: {raw[:200]!r}", base_url=url)
    return event


class RealtimeConnection:
    """One Realtime session (see :class:`OpenAIRealtimeModel`)."""

    def __init__(self, ws: Any, url: str) -> None:
        self._ws = ws
        self.url = url
        self.closed = False
        self._responding = False  # a response.create is out and its response.done not in
        self._pending = False  # user input not answered yet
        self._audio = False  # audio appended since the last commit
        self._calls: set[str] = set()  # tool calls whose results the model waits for

    async def _send(self, event: dict[str, Any]) -> None:
        from websockets.exceptions import ConnectionClosed  # optional dependency (the realtime extra)

        try:
            await self._ws.send(json.dumps(event))
        except ConnectionClosed as e:
            raise ModelConnectionError(f"the realtime connection closed: {e}", base_url=self.url) from e

    async def _start(self, history: list[Message], tools: Sequence[ToolInfo], session: dict[str, Any]) -> None:
        instructions = "\n\n".join(m.content for m in history if m.role == "system" and m.content)
        config: dict[str, Any] = {
            "type": "realtime",
            "output_modalities": ["text"],
            "audio": {"input": {"turn_detection": None}},
            "tools": [
                {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}
                for t in tools
            ],
        }
        if instructions:
            config["instructions"] = instructions
        await self._send({"type": "session.update", "session": {**config, **session}})
        for item in _history_items(history):
            await self._send({"type": "conversation.item.create", "item": item})

    async def _respond(self) -> None:
        self._pending = False
        self._responding = True
        await self._send({"type": "response.create"})

    async def _cut(self) -> None:
        if self._responding:  # once: more input before the cancelled response.done cancels nothing
            self._responding = False
            await self._send({"type": "response.cancel"})

    async def send_content(self, message: Message, *, partial: bool = False) -> None:
        if message.role == "tool":
            await self._send({"type": "conversation.item.create", "item": _history_items([message])[0]})
            self._calls.discard(message.tool_call_id)
            if not self._calls:  # every result of the round is in
                await self._respond()
            return
        await self._cut()
        await self._send({"type": "conversation.item.create", "item": _user_item(message)})
        self._pending = True
        if not partial:
            await self._respond()

    async def send_realtime(self, blob: Blob) -> None:
        await self._cut()
        await self._send({"type": "input_audio_buffer.append", "audio": base64.b64encode(blob.data).decode()})
        self._audio = self._pending = True

    async def send_activity_start(self) -> None:
        await self._cut()

    async def send_activity_end(self) -> None:
        if self._audio:
            self._audio = False
            await self._send({"type": "input_audio_buffer.commit"})
        if self._pending:
            await self._respond()

    async def receive(self) -> AsyncIterator[LiveResponse]:
        from websockets.exceptions import ConnectionClosedError  # optional dependency (the realtime extra)

        text: list[str] = []
        calls: list[ToolCall | dict[str, Any]] = []
        try:
            async for raw in self._ws:
                event = _event(raw, self.url)
                kind = event.get("type")
                if kind in _TEXT_DELTAS:
                    delta = event.get("delta", "")
                    text.append(delta)
                    yield LiveResponse(Message.assistant(delta), partial=True)
                elif kind == "response.output_item.done" and event.get("item", {}).get("type") == "function_call":
                    item = event["item"]
                    calls.append(
                        ToolCall(id=item["call_id"], function=FunctionCall(item["name"], item.get("arguments", "{}")))
                    )
                elif kind == "response.done":
                    for resp in self._done(event, "".join(text), calls):
                        yield resp
                    text, calls = [], []
                elif kind == "error":
                    err = event.get("error", {})
                    if err.get("code") == "response_cancel_not_active":  # the answer had just ended
                        continue
                    raise ModelError(
                        f"realtime server error: {err.get('message', raw)}",
                        code=err.get("code") or err.get("type"),
                        body=raw,
                        base_url=self.url,
                    )
        except ConnectionClosedError as e:
            if not self.closed:
                raise ModelConnectionError(f"the realtime connection was cut: {e}", base_url=self.url) from e

    def _done(self, event: dict[str, Any], text: str, calls: list[ToolCall | dict[str, Any]]) -> list[LiveResponse]:
        response = event.get("response", {})
        status = response.get("status")
        if status == "cancelled":  # (_cut cleared _responding; a newer response may be out already)
            return [LiveResponse(Message.assistant(text) if text else None, interrupted=True)]
        self._responding = False
        if status == "failed":
            raise ModelError(
                f"the realtime response failed: {response.get('status_details')}",
                body=json.dumps(event),
                base_url=self.url,
            )
        if calls:
            self._calls = {c.id for c in calls if isinstance(c, ToolCall)}
            return [LiveResponse(Message.assistant(text, tool_calls=calls))]
        out = [LiveResponse(Message.assistant(text))] if text else []
        return [*out, LiveResponse(turn_complete=True)]

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            await self._ws.close()
