"""OpenAIChatModel: a :class:`rillet.models.ChatModel` for any server that speaks OpenAI's
chat-completions protocol (OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio...).

::

    from rillet.models.openai import OpenAIChatModel

    model = OpenAIChatModel("gpt-4o-mini")                        # OPENAI_API_KEY, OPENAI_BASE_URL
    local = OpenAIChatModel("qwen3:8b", base_url="http://127.0.0.1:11434/v1")   # Ollama

The streamed answer is read by :class:`rillet._native.ChatStreamParser` in Rust: response bytes in,
``Message`` chunks out, no Python code per token. HTTP goes through httpx (async), imported
when a model is first used, not by ``import rillet``. See docs/models.md for each server's
switches.
"""

from __future__ import annotations

import asyncio
import contextvars
import email.utils
import json
import logging
import os
import random
import re
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from rillet._native import (
    AgenticMessage,
    ChatStreamParser,
    Message,
    StreamReader,
    StreamWriter,
    ToolCall,
    concat_messages,
    parse_chat_completion,
    pipe,
)
from rillet.errors import RilletError
from rillet.models.errors import (
    AuthenticationError,
    ContextLengthError,
    IncompleteStreamError,
    InvalidRequestError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
    UnsupportedContentError,
)

if TYPE_CHECKING:
    import httpx

    from rillet.tools import ToolInfo

__all__ = [
    "DEFAULT_BASE_URL",
    "ChatStreamParser",
    "OpenAIChatModel",
    "message_to_openai",
    "messages_to_openai",
    "parse_chat_completion",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_log = logging.getLogger(__name__)

# Statuses worth another try: timeouts, conflicts, rate limits and server errors.
_RETRY_STATUSES = frozenset({408, 409, 429})
# A Retry-After longer than this is not waited for: the usual backoff applies instead.
_MAX_RETRY_AFTER = 60.0
# Waits between retries go through this, so tests can record them instead of sleeping.
_sleep = asyncio.sleep
# How often a running stream checks whether its reader was closed.
_WATCH_INTERVAL = 0.05

_CONTEXT_LENGTH = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|too many tokens|prompt is too long"
    r"|exceeds? the (model|maximum)|reduce the length",
    re.IGNORECASE,
)


class ChunkParser(Protocol):
    """What a model reads a stream with: bytes in, Message chunks out (the Rust parsers)."""

    def feed(self, data: bytes | bytearray) -> list[Message]: ...
    def finish(self) -> list[Message]: ...


def message_to_openai(message: Message) -> dict[str, Any]:
    """The chat-completions request form of ``message``.

    Assistant messages with tool calls send ``content: ""`` (not null; some servers refuse
    null) and every call's id, type and name; tool results send ``tool_call_id``. Reasoning
    text is not sent back (DeepSeek and OpenAI ask clients not to). A user message's parts
    go as they are (text, ``image_url``, ``file``), after its ``content`` text if it has both; a system or assistant message may hold
    text parts only, and a tool message's image and file parts are left out here (see
    :func:`messages_to_openai`, which sends them in a user message after the results).
    """
    d = message.to_dict()
    out: dict[str, Any] = {"role": d["role"], "content": d.get("content", "")}
    if message.role != "user" and any(p.type != "text" for p in message.user_input_multi_content):
        out["content"] = _text_of(message)
    elif "content_text" in d:  # both text and parts: the text goes first, not lost
        out["content"] = [{"type": "text", "text": d["content_text"]}, *d["content"]]
    if "name" in d:
        out["name"] = d["name"]
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": call.type or "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments or "{}"},
            }
            for call in message.tool_calls
        ]
    if message.role == "tool" or message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


def messages_to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The ``messages`` of a chat-completions request.

    A tool message may carry image and file parts (a tool returned them), but the protocol's
    tool messages hold text only. As other frameworks do, the tool message then says where
    they went, and they follow in one user message after the last tool result of that turn
    (a user message between two tool results would split the turn, which servers refuse).
    """
    out: list[dict[str, Any]] = []
    attached: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Message):
            raise _not_a_message(i, m)
        if attached and m.role != "tool":
            out.append({"role": "user", "content": attached})
            attached = []
        wire = message_to_openai(m)
        media = [p for p in m.user_input_multi_content if p.type != "text"] if m.role == "tool" else []
        if media:
            what = f"tool call {m.tool_call_id}" + (f" ({m.tool_name})" if m.tool_name else "")
            wire["content"] = "\n".join(filter(None, [wire["content"], f"[{len(media)} attachment(s) follow]"]))
            attached.append({"type": "text", "text": f"Attachments of {what}:"})
            attached.extend(p.to_dict() for p in media)
        out.append(wire)
    if attached:
        out.append({"role": "user", "content": attached})
    return out


def _not_a_message(i: int, m: object) -> Exception:
    if isinstance(m, AgenticMessage):
        return UnsupportedContentError(
            f"chat completions (OpenAIChatModel) takes rillet.Message conversations, and message {i} is an "
            "AgenticMessage: convert each message with AgenticMessage.to_messages() (a message of several tool "
            "results becomes several), or use OpenAIResponsesModel or AnthropicChatModel, which answer "
            "AgenticMessage conversations with blocks"
        )
    return TypeError(f"message {i} is {type(m).__name__}, expected rillet.Message (e.g. Message.user('hi'))")


def _text_of(message: Message) -> str:
    """The text of a non-user message with image or file parts: its content and text parts
    (a tool message's other parts are sent by :func:`messages_to_openai`; the other roles
    cannot carry them)."""
    media = [p for p in message.user_input_multi_content if p.type != "text"]
    if message.role != "tool":
        raise UnsupportedContentError(
            f"a {message.role or 'role-less'} message holds a {media[0].type} part, which chat completions "
            "carries in user messages only: put images and files in a user message (Message.user([...]))"
        )
    texts = [p.text or "" for p in message.user_input_multi_content if p.type == "text"]
    if message.content:
        texts.insert(0, message.content)
    return "\n".join(texts)


def as_response_format(value: Any) -> Any:
    """A pydantic model class becomes a strict JSON-schema response format (its schema made
    strict: closed objects, every property required); dicts pass."""
    schema = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and callable(schema):
        from rillet.models.strict_schema import strict_json_schema  # only for pydantic output types

        return {
            "type": "json_schema",
            "json_schema": {"name": value.__name__, "schema": strict_json_schema(schema()), "strict": True},
        }
    return value


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's wait hint in seconds: ``retry-after-ms``, or ``Retry-After`` as seconds or
    an HTTP date."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_message(body: str) -> tuple[str, str | None]:
    """The error message (and code) in an error body, or the body itself."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:500] or "(empty body)", None
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or json.dumps(error)
        code = error.get("code") or error.get("type")
        return str(message), None if code is None else str(code)
    return str(error), None


class OpenAIChatModel:
    """A chat model served over OpenAI's chat-completions API, streaming or not.

    Args:
        model: the model name the server knows (``"gpt-4o-mini"``, ``"llama3.1:8b"``...).
        base_url: the API root, ending before ``/chat/completions``; default
            ``OPENAI_BASE_URL``, else OpenAI's.
        api_key: sent as a bearer token; default ``OPENAI_API_KEY``. Local servers need none.
        timeout: seconds allowed to connect, and between two reads of a response.
        max_retries: more tries after a timeout, a failed connection, HTTP 408, 409, 429 or
            5xx, with exponential backoff and jitter, honouring ``Retry-After``.
        include_usage: ask a streamed answer for its token usage
            (``stream_options.include_usage``); turn off for servers that reject it.
        think_tags: move ``<think>...</think>`` text out of the content into
            ``reasoning_content`` (models served without a reasoning parser).
        headers: extra HTTP headers for every request.
        max_sse_line_bytes, max_sse_event_bytes: the longest line of a streamed answer, and
            the most data one of its events may carry (default 4 MiB and 16 MiB); over either,
            the stream fails with :class:`~rillet.models.errors.StreamLimitError` before the
            bytes are buffered, so a server cannot make the client hold an endless line.
        supports_response_format: whether the server takes a strict JSON-schema
            ``response_format`` (OpenAI's structured outputs); a ChatModelAgent with an
            ``output_type`` uses it when True, else it offers a final-answer tool.
        **default_params: request parameters for every call (``temperature``, ``top_p``,
            ``max_tokens``, ``stop``, ``seed``, ``tool_choice``, ``parallel_tool_calls``,
            ``response_format``...). Options given to ``generate``/``stream`` override them.

    ``response_format`` may be a pydantic model class (a strict JSON schema is sent) or the
    protocol's dict. ``tool_choice`` and ``parallel_tool_calls`` are sent only with tools.
    The client keeps one connection pool per event loop; ``aclose()`` closes the current
    loop's.
    """

    # The endpoint under base_url; a subclass speaking another OpenAI API changes it.
    _path = "/chat/completions"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        include_usage: bool = True,
        think_tags: bool = True,
        headers: Mapping[str, str] | None = None,
        max_sse_line_bytes: int = 4 << 20,
        max_sse_event_bytes: int = 16 << 20,
        supports_response_format: bool = True,
        **default_params: Any,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"{type(self).__name__}: model must be a non-empty str, got {model!r}")
        if max_retries < 0:
            raise ValueError(f"{type(self).__name__}: max_retries must be >= 0, got {max_retries}")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = timeout
        self.max_retries = max_retries
        self.include_usage = include_usage
        self.think_tags = think_tags
        self.headers = dict(headers or {})
        for keyword, limit in (
            ("max_sse_line_bytes", max_sse_line_bytes),
            ("max_sse_event_bytes", max_sse_event_bytes),
        ):
            if type(limit) is not int or limit < 1:  # a negative one would fail as an unnamed OverflowError
                raise ValueError(f"{type(self).__name__}: {keyword} must be positive (an int, in bytes), got {limit!r}")
        self.max_sse_line_bytes = max_sse_line_bytes
        self.max_sse_event_bytes = max_sse_event_bytes
        self._stream_parser()  # checks the limits now rather than at the first stream
        self.default_params = default_params
        self.supports_response_format = bool(supports_response_format)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._tasks: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"

    # --- the ChatModel protocol -----------------------------------------------------------

    async def generate(
        self,
        messages: list[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Any,
    ) -> Message:
        """Returns the model's whole reply to ``messages``.

        Raises a :class:`~rillet.models.errors.ModelError` subclass the caller can act on:
        authentication, model not found, invalid request or context length, rate limit or
        server error after the retries, timeout, connection.
        """
        body = self.request_body(messages, tools, options, stream=False)
        response = await self._post(body, stream=False)
        try:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                # A server (or proxy) that streams whatever was asked: read the stream whole.
                parser = self._stream_parser()
                return _set_call_indexes(
                    concat_messages([*parser.feed(response.content), *parser.finish()]), indexed=False
                )
            return self._parse_whole(response.content)
        except ModelError as e:
            e.base_url = self.base_url
            raise

    async def stream(
        self,
        messages: list[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Any,
    ) -> StreamReader[Message]:
        """Starts the reply to ``messages``; returns a ``StreamReader`` of ``Message`` chunks.

        Request errors raise here, as for :meth:`generate`. Once the stream has started, a
        malformed chunk, an error sent by the server, a dropped connection or a read timeout
        is one error item on the stream (the reader raises it), after the chunks before it.
        Closing the reader closes the HTTP response.
        """
        body = self.request_body(messages, tools, options, stream=True)
        response = await self._post(body, stream=True)
        reader, writer = pipe()
        loop = asyncio.get_running_loop()
        # A fresh context: the pump must not keep the caller's run context (and the stream
        # copies its session records) alive, or an abandoned run would hold the HTTP stream.
        task = loop.create_task(self._pump(response, writer), context=contextvars.Context())
        self._tasks.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._tasks.discard)
        return reader

    async def aclose(self) -> None:
        """Closes the connection pool of the running event loop (a new one opens on demand)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    # --- request --------------------------------------------------------------------------

    def request_body(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolInfo] | None,
        options: Mapping[str, Any],
        *,
        stream: bool,
    ) -> dict[str, Any]:
        """The JSON body sent for one call (public to inspect what a call would send)."""
        params = {**self.default_params, **options}
        body: dict[str, Any] = {
            "model": params.pop("model", None) or self.model,
            "messages": messages_to_openai(messages),
        }
        if tools:
            body["tools"] = [t.to_openai() for t in tools]
        else:
            # Chat Completions refuses these without tools.
            params.pop("tool_choice", None)
            params.pop("parallel_tool_calls", None)
        if "response_format" in params:
            params["response_format"] = as_response_format(params["response_format"])
        body.update((k, v) for k, v in params.items() if v is not None)
        if stream:
            body["stream"] = True
            if self.include_usage:
                body["stream_options"] = {"include_usage": True, **body.get("stream_options", {})}
        else:
            body.pop("stream", None)
            body.pop("stream_options", None)
        return body

    def _client(self) -> httpx.AsyncClient:
        import httpx  # imported on first use: `import rillet` does not load httpx

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            headers = {"Accept": "application/json", **self.headers, **self._auth_headers()}
            client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), headers=headers)
            self._clients[loop] = client
        return client

    # The hooks a model over another protocol overrides (AnthropicChatModel).
    _api_key_env = "OPENAI_API_KEY"

    def _endpoint(self) -> str:
        return f"{self.base_url}{self._path}"

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after <= _MAX_RETRY_AFTER:
            return retry_after
        base: float = min(8.0, 0.5 * 2**attempt)
        return base * (1.0 - 0.25 * random.random())

    async def _post(self, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        """Sends ``body``, retrying what is worth retrying; returns a 2xx response (its body
        not yet read when ``stream``)."""
        import httpx  # imported on first use: `import rillet` does not load httpx

        client = self._client()
        url = self._endpoint()
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        attempt = 0
        while True:
            request = client.build_request("POST", url, content=content, headers={"Content-Type": "application/json"})
            try:
                response = await client.send(request, stream=stream)
            except httpx.TransportError as e:  # timeouts included
                if attempt < self.max_retries:
                    wait = self._backoff(attempt, None)
                    _log.info(
                        "%s: %s, retry %d of %d in %.2f s", url, type(e).__name__, attempt + 1, self.max_retries, wait
                    )
                    await _sleep(wait)
                    attempt += 1
                    continue
                raise self._transport_error(e, url, attempt + 1) from e
            if response.status_code < 400:
                return response
            try:
                text = (await response.aread()).decode("utf-8", "replace")
            finally:
                await response.aclose()
            status = response.status_code
            if (status in _RETRY_STATUSES or status >= 500) and attempt < self.max_retries:
                wait = self._backoff(attempt, retry_after_seconds(response.headers))
                _log.info("%s: HTTP %d, retry %d of %d in %.2f s", url, status, attempt + 1, self.max_retries, wait)
                await _sleep(wait)
                attempt += 1
                continue
            raise self._status_error(status, text, response.headers, attempt + 1, body["model"])

    def _transport_error(self, e: Exception, url: str, tries: int) -> ModelError:
        import httpx  # imported on first use: `import rillet` does not load httpx

        if isinstance(e, httpx.TimeoutException):
            return ModelTimeoutError(
                f"{url} did not answer within {self.timeout}s ({type(e).__name__}), "
                f"after {tries} tries; raise timeout= or check the server",
                base_url=self.base_url,
            )
        return ModelConnectionError(
            f"cannot reach {url} ({type(e).__name__}: {e}) after {tries} tries; "
            "check base_url and that the server is running",
            base_url=self.base_url,
        )

    def _status_error(self, status: int, text: str, headers: Mapping[str, str], tries: int, model: str) -> ModelError:
        message, code = _server_message(text)
        where = self._endpoint()
        info: dict[str, Any] = {"status_code": status, "base_url": self.base_url, "body": text, "code": code}
        if status in (401, 403):
            key = "an API key" if self.api_key else "no API key"
            return AuthenticationError(
                f"{where} refused the credentials (HTTP {status}; sent {key}): {message}. "
                f"Set {self._api_key_env} or pass api_key=, and check base_url",
                **info,
            )
        if status == 404:
            return ModelNotFoundError(
                f"HTTP 404 from {where} for model {model!r}: {message}. Check that the server "
                "serves this model (pulled, loaded) and that base_url is the API root (often .../v1)",
                **info,
            )
        if status in (400, 413, 422):
            if code == "context_length_exceeded" or _CONTEXT_LENGTH.search(message):
                return ContextLengthError(
                    f"the conversation does not fit model {model!r}'s context window "
                    f"(HTTP {status} from {where}): {message}",
                    **info,
                )
            return InvalidRequestError(f"{where} refused the request (HTTP {status}): {message}", **info)
        if status == 429:
            err = RateLimitError(
                f"rate limited by {where} (HTTP 429) after {tries} tries: {message}. "
                "Wait, lower the request rate, or raise max_retries",
                **info,
            )
            err.retry_after = retry_after_seconds(headers)
            return err
        if status >= 500:
            return ServerError(f"{where} failed (HTTP {status}) after {tries} tries: {message}", **info)
        return ModelError(f"{where} answered HTTP {status}: {message}", **info)

    # --- streaming ------------------------------------------------------------------------

    async def _pump(self, response: httpx.Response, writer: StreamWriter[Message]) -> None:
        """Reads the response into ``writer`` until it ends, fails, or the reader closes."""
        watcher = asyncio.get_running_loop().create_task(_watch(writer, asyncio.current_task()))
        try:
            await self._read_into(response, writer)
        except asyncio.CancelledError:
            if not writer.reader_closed:
                writer.send_error(ModelConnectionError("the stream was cancelled", base_url=self.base_url))
            raise
        except RilletError as e:
            if isinstance(e, ModelError):
                e.base_url = self.base_url
            writer.send_error(e)
        except Exception as e:  # noqa: BLE001  (every failure must reach the reader)
            writer.send_error(self._stream_error(e))
        finally:
            watcher.cancel()
            writer.close()
            await response.aclose()

    async def _read_into(self, response: httpx.Response, writer: StreamWriter[Message]) -> None:
        content_type = response.headers.get("content-type", "")
        if content_type.startswith("application/json"):
            # The server ignored stream=true and sent a whole response: one chunk.
            whole = self._parse_whole(await response.aread())
            writer.send(_set_call_indexes(whole, indexed=True))
            return
        parser = self._stream_parser()
        async for data in response.aiter_bytes():
            for chunk in parser.feed(data):
                writer.send(chunk)
            if writer.reader_closed:
                return
        for chunk in parser.finish():
            writer.send(chunk)

    def _parse_whole(self, body: bytes) -> Message:
        """A whole (non-streamed) response body as one message."""
        return parse_chat_completion(body, think_tags=self.think_tags)

    def _stream_parser(self) -> ChunkParser:
        return ChatStreamParser(
            think_tags=self.think_tags,
            max_sse_line_bytes=self.max_sse_line_bytes,
            max_sse_event_bytes=self.max_sse_event_bytes,
        )

    def _stream_error(self, e: Exception) -> Exception:
        import httpx  # imported on first use: `import rillet` does not load httpx

        if isinstance(e, httpx.TimeoutException):
            return ModelTimeoutError(
                f"{self.base_url} sent nothing for {self.timeout}s in the middle of a stream; "
                "raise timeout= or check the server",
                base_url=self.base_url,
            )
        if isinstance(e, httpx.TransportError):
            return IncompleteStreamError(
                f"the connection to {self.base_url} was cut in the middle of a stream ({type(e).__name__}: {e})",
                base_url=self.base_url,
            )
        return e


def _set_call_indexes(message: Message, *, indexed: bool) -> Message:
    """Numbers ``message``'s tool calls 0, 1, ... (a stream chunk's shape), or clears their
    indexes (a whole message's shape)."""
    if message.tool_calls:
        message.tool_calls = [
            ToolCall(i if indexed else None, c.id, c.type, c.function, c.extra)
            for i, c in enumerate(message.tool_calls)
        ]
    return message


async def _watch(writer: StreamWriter[Message], pump: asyncio.Task[Any] | None) -> None:
    """Cancels ``pump`` when the stream's reader is closed, so the HTTP response closes even
    while the server is silent."""
    while pump is not None and not pump.done():
        if writer.reader_closed:
            pump.cancel()
            return
        await asyncio.sleep(_WATCH_INTERVAL)
