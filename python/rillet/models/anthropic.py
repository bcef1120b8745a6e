"""AnthropicChatModel: a :class:`rillet.models.ChatModel` over Anthropic's Messages API.

::

    from rillet.models.anthropic import AnthropicChatModel

    model = AnthropicChatModel("claude-sonnet-4-5")                  # ANTHROPIC_API_KEY

The streamed answer is read by :class:`rillet._native.AnthropicStreamParser` in Rust: response
bytes in, ``Message`` chunks out, no Python code per token. The HTTP path (connection pool per
event loop, retries with backoff and ``Retry-After``, typed errors, the stream pump) is
:class:`~rillet.models.openai.OpenAIChatModel`'s; this class changes the endpoint, the
headers, the request body and the parsers. See docs/models.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rillet._native import (
    AgenticMessage,
    AnthropicStreamParser,
    ContentBlock,
    Message,
    StreamReader,
    convert_stream,
    parse_anthropic_message,
)
from rillet.models.errors import ModelError, OverloadedError
from rillet.models.openai import OpenAIChatModel, retry_after_seconds

if TYPE_CHECKING:
    from rillet.tools import ToolInfo

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URL",
    "THINKING_KEY",
    "AnthropicChatModel",
    "AnthropicStreamParser",
    "content_part_to_anthropic",
    "parse_anthropic_message",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
# Where the parser keeps thinking signatures and redacted thinking (see rust/sse/anthropic.rs).
THINKING_KEY = "anthropic_thinking"
# A message's extra["cache_control"] marks its last content block as a prompt-cache breakpoint.
CACHE_KEY = "cache_control"


def _data_url(url: str) -> tuple[str, str] | None:
    """``(media type, base64 data)`` of a ``data:<mime>;base64,<data>`` URL, else None."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    media_type, _, encoding = head.partition(";")
    if not sep or encoding != "base64":
        raise ValueError(f"AnthropicChatModel: a data URL must be base64 ('data:<mime>;base64,...'), got {url[:40]!r}")
    return media_type, data


def content_part_to_anthropic(part: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages API block of one content part in its ``to_dict()`` form: text; an image
    by URL or as a base64 data URL; a file as a base64 document (PDF or other media type) or
    by the Files API's ``file_id``."""
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url") or {}
        url = image.get("url", "") if isinstance(image, Mapping) else str(image)
        inline = _data_url(url)
        if inline is None:
            return {"type": "image", "source": {"type": "url", "url": url}}
        return {"type": "image", "source": {"type": "base64", "media_type": inline[0], "data": inline[1]}}
    if kind == "file":
        file = part.get("file") or {}
        if file.get("file_id"):
            return {"type": "document", "source": {"type": "file", "file_id": file["file_id"]}}
        inline = _data_url(file.get("file_data", ""))
        if inline is None:
            raise ValueError("AnthropicChatModel: a file part needs file_data as a base64 data URL, or a file_id")
        block: dict[str, Any] = {
            "type": "document",
            "source": {"type": "base64", "media_type": inline[0], "data": inline[1]},
        }
        if file.get("filename"):
            block["title"] = file["filename"]
        return block
    raise ValueError(f"AnthropicChatModel: cannot send a content part of type {kind!r} (text, image_url or file)")


def _content_blocks(message: Message) -> list[dict[str, Any]]:
    """The message's text, then its parts, as blocks (no empty text block): a tool's result
    keeps its text beside its image, a user's question beside the picture."""
    text = [{"type": "text", "text": message.content}] if message.content else []
    return text + [content_part_to_anthropic(p.to_dict()) for p in message.user_input_multi_content]


def _thinking_blocks(message: Message) -> list[dict[str, Any]]:
    """An assistant message's thinking blocks, in their order, as the API needs them back:
    ``reasoning_content`` cut at each signed block's length, redacted blocks as they came."""
    entries = (message.extra or {}).get(THINKING_KEY)
    if not isinstance(entries, Mapping):
        return []
    blocks: list[dict[str, Any]] = []
    text, at = message.reasoning_content, 0
    for _, entry in sorted(entries.items(), key=lambda kv: int(kv[0])):
        if "redacted" in entry:
            blocks.append({"type": "redacted_thinking", "data": entry["redacted"]})
        else:
            chars = int(entry.get("chars", len(text) - at))
            blocks.append(
                {"type": "thinking", "thinking": text[at : at + chars], "signature": entry.get("signature", "")}
            )
            at += chars
    return blocks


def _tool_input(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except ValueError as e:
        raise ValueError(f"AnthropicChatModel: a tool call's arguments are not JSON ({e}): {arguments[:80]!r}") from e


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks = _thinking_blocks(message)
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.function.name, "input": _tool_input(c.function.arguments)}
        for c in message.tool_calls
    ]
    return blocks


def _tool_result(message: Message) -> dict[str, Any]:
    blocks = _content_blocks(message)
    only_text = all(b["type"] == "text" for b in blocks)
    content: Any = "\n".join(b["text"] for b in blocks) if only_text else blocks
    return {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": content}


# --- AgenticMessage: blocks to the API's blocks and back, without going through Message ----------


def _agentic_to_anthropic(message: AgenticMessage) -> list[dict[str, Any]]:
    """An AgenticMessage's blocks as the API's content blocks, in their order: reasoning with
    its signature (or redacted, from ``extra["redacted"]``), text, images, tool calls and
    tool results. A kind the Messages API has no input block for raises ValueError."""
    out: list[dict[str, Any]] = []
    for i, b in enumerate(message.blocks):
        kind = b.kind
        if kind == "reasoning":
            redacted = (b.extra or {}).get("redacted")
            if redacted is not None:
                out.append({"type": "redacted_thinking", "data": redacted})
            else:
                out.append({"type": "thinking", "thinking": b.text, "signature": b.signature})
        elif kind == "text":
            out.append({"type": "text", "text": b.text})
        elif kind == "tool_call":
            out.append({"type": "tool_use", "id": b.call_id, "name": b.name, "input": _tool_input(b.arguments)})
        elif kind == "tool_result":
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": b.call_id, "content": b.text}
            if b.is_error:
                result["is_error"] = True
            out.append(result)
        elif kind == "image":
            url = b.url or (f"data:{b.mime_type};base64,{b.data}" if b.data else "")
            out.append(content_part_to_anthropic({"type": "image_url", "image_url": {"url": url}}))
        else:
            raise ValueError(
                f"AnthropicChatModel: block {i} of an AgenticMessage is a {kind!r} block, which the Messages "
                "API takes no input block for; drop it from the conversation"
            )
    return out


def _is_agentic(messages: Sequence[Any]) -> bool:
    """A conversation of AgenticMessages (its last message decides): replies come as blocks."""
    return bool(messages) and type(messages[-1]) is AgenticMessage


class _BlockChunks:
    """Turns the parser's Message chunks of one reply into AgenticMessage chunks, one stream
    index per content block: the API streams its blocks one after another, so a new block
    starts where the kind of content changes (or a new tool call, or a redacted block
    starts); a thinking block's signature, sent when the block stops, joins that block."""

    __slots__ = ("_index", "_key")

    def __init__(self) -> None:
        self._index = -1
        self._key: Any = None

    def _at(self, key: Any, fresh: bool = False) -> int:
        if fresh or key != self._key:
            self._index += 1
            self._key = key
        return self._index

    def __call__(self, chunk: Message) -> AgenticMessage:
        blocks: list[ContentBlock] = []
        if chunk.reasoning_content:
            blocks.append(ContentBlock.reasoning(chunk.reasoning_content, index=self._at("reasoning")))
        if chunk.content:
            blocks.append(ContentBlock.from_text(chunk.content, index=self._at("text")))
        for call in chunk.tool_calls:
            at = self._at(("call", call.index))
            blocks.append(ContentBlock.tool_call(call.id, call.function.name, call.function.arguments, index=at))
        extra = dict(chunk.extra or {})
        thinking = extra.pop(THINKING_KEY, None)
        for _, entry in sorted((thinking or {}).items(), key=lambda kv: int(kv[0])):
            if "redacted" in entry:
                at = self._at(("redacted", id(entry)), fresh=True)
                blocks.append(ContentBlock("reasoning", index=at, extra={"redacted": entry["redacted"]}))
            else:  # the signature of the thinking block that just stopped
                blocks.append(ContentBlock.reasoning(signature=entry.get("signature", ""), index=self._at("reasoning")))
        return AgenticMessage(chunk.role, blocks, response_meta=chunk.response_meta, extra=extra or None)


def _whole_to_agentic(message: Message) -> AgenticMessage:
    """A whole reply as blocks: its thinking blocks (signed or redacted), text, tool calls."""
    blocks = [
        ContentBlock("reasoning", extra={"redacted": t["data"]})
        if t["type"] == "redacted_thinking"
        else ContentBlock.reasoning(t["thinking"], signature=t["signature"])
        for t in _thinking_blocks(message)
    ]
    if message.reasoning_content and not blocks:
        blocks.append(ContentBlock.reasoning(message.reasoning_content))
    if message.content:
        blocks.append(ContentBlock.from_text(message.content))
    blocks += [ContentBlock.tool_call(c.id, c.function.name, c.function.arguments) for c in message.tool_calls]
    extra = {k: v for k, v in (message.extra or {}).items() if k != THINKING_KEY}
    return AgenticMessage(message.role, blocks, response_meta=message.response_meta, extra=extra or None)


def messages_to_anthropic(
    messages: Sequence[Message | AgenticMessage],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system blocks, messages)`` of the request. System messages become the system
    prompt; tool results become ``tool_result`` blocks of a user turn; consecutive turns of
    one role are merged (the results of parallel tool calls go back in one user turn).
    AgenticMessages map block by block (:func:`_agentic_to_anthropic`)."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for m in messages:
        if type(m) is AgenticMessage:
            blocks = _agentic_to_anthropic(m)
            if m.role == "system":
                system += blocks
                continue
            role = "assistant" if m.role == "assistant" else "user"
            if blocks:
                if turns and turns[-1]["role"] == role:
                    turns[-1]["content"] += blocks
                else:
                    turns.append({"role": role, "content": blocks})
            continue
        assert isinstance(m, Message)
        if m.role == "system":
            blocks = _content_blocks(m)
            _mark_cache(m, blocks)
            system += blocks
            continue
        if m.role == "assistant":
            role, blocks = "assistant", _assistant_blocks(m)
        elif m.role == "tool" or m.tool_call_id:
            role, blocks = "user", [_tool_result(m)]
        else:
            role, blocks = "user", _content_blocks(m)
        _mark_cache(m, blocks)
        if not blocks:
            continue  # the API refuses empty turns
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += blocks
        else:
            turns.append({"role": role, "content": blocks})
    return system, turns


def _mark_cache(message: Message, blocks: list[dict[str, Any]]) -> None:
    marker = (message.extra or {}).get(CACHE_KEY)
    if marker and blocks:
        blocks[-1] = {**blocks[-1], "cache_control": dict(marker)}


def _tool_choice(choice: Any, parallel: Any) -> dict[str, Any] | None:
    """OpenAI-style ``tool_choice`` ("auto", "required", "none", a tool name, or
    ``{"type": "function", "function": {"name": ...}}``) or the API's own dict."""
    out: dict[str, Any] | None
    if choice is None:
        out = None
    elif isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name") if choice.get("type") == "function" else None
        out = {"type": "tool", "name": name} if name else dict(choice)
    elif choice in ("auto", "none"):
        out = {"type": choice}
    elif choice in ("required", "any"):
        out = {"type": "any"}
    else:
        out = {"type": "tool", "name": str(choice)}
    if parallel is False:
        out = {"type": "auto", **(out or {}), "disable_parallel_tool_use": True}
    return out


class AnthropicChatModel(OpenAIChatModel):
    """A chat model served over Anthropic's Messages API, streaming or not.

    Args:
        model: the model name (``"claude-sonnet-4-5"``...).
        base_url: the API host, before ``/v1/messages``; default ``ANTHROPIC_BASE_URL``, else
            Anthropic's.
        api_key: sent as ``x-api-key``; default ``ANTHROPIC_API_KEY``.
        headers: extra HTTP headers for every request (``anthropic-beta``...; an
            ``anthropic-version`` given here replaces the default ``2023-06-01``).
        max_tokens: the reply's token limit (the API requires one).
        timeout, max_retries, max_sse_line_bytes, max_sse_event_bytes: as for
            :class:`~rillet.models.openai.OpenAIChatModel`; retries cover timeouts, failed
            connections, HTTP 408, 409, 429, 5xx and 529 (overloaded), honouring ``Retry-After``.
        **default_params: request parameters for every call (``temperature``, ``top_p``,
            ``top_k``, ``stop`` or ``stop_sequences``, ``tool_choice``,
            ``parallel_tool_calls``, ``thinking``, ``metadata``...). Options given to
            ``generate``/``stream`` override them.

    An HTTP 529 after the retries raises :class:`~rillet.models.errors.OverloadedError` (a
    ``ServerError``). Prompt caching: a message whose ``extra`` has
    ``"cache_control": {"type": "ephemeral"}`` sends it on its last content block.
    """

    _api_key_env = "ANTHROPIC_API_KEY"
    _path = "/v1/messages"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        timeout: float = 60.0,
        max_retries: int = 2,
        headers: Mapping[str, str] | None = None,
        max_sse_line_bytes: int = 4 << 20,
        max_sse_event_bytes: int = 16 << 20,
        **default_params: Any,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"AnthropicChatModel: model must be a non-empty str, got {model!r}")
        if max_retries < 0:
            raise ValueError(f"AnthropicChatModel: max_retries must be >= 0, got {max_retries}")
        if type(max_tokens) is not int or max_tokens < 1:
            raise ValueError(f"AnthropicChatModel: max_tokens must be a positive int, got {max_tokens!r}")
        super().__init__(
            model,
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL,
            api_key=api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY"),
            timeout=timeout,
            max_retries=max_retries,
            headers={"anthropic-version": ANTHROPIC_VERSION, **(headers or {})},
            max_sse_line_bytes=max_sse_line_bytes,
            max_sse_event_bytes=max_sse_event_bytes,
            supports_response_format=False,
            **default_params,
        )
        self.max_tokens = max_tokens

    def __repr__(self) -> str:
        return f"AnthropicChatModel({self.model!r}, base_url={self.base_url!r})"

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
        system, turns = messages_to_anthropic(messages)
        body: dict[str, Any] = {
            "model": params.pop("model", None) or self.model,
            "max_tokens": params.pop("max_tokens", None) or self.max_tokens,
        }
        if system:
            body["system"] = system
        body["messages"] = turns
        choice = _tool_choice(params.pop("tool_choice", None), params.pop("parallel_tool_calls", None))
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
            if choice is not None:
                body["tool_choice"] = choice
        if "stop" in params:
            stop = params.pop("stop")
            params.setdefault("stop_sequences", [stop] if isinstance(stop, str) else stop)
        params.pop("stream", None)
        body.update((k, v) for k, v in params.items() if v is not None)
        if stream:
            body["stream"] = True
        return body

    # --- the hooks of OpenAIChatModel's HTTP path -----------------------------------------------

    def _auth_headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key} if self.api_key else {}

    def _status_error(self, status: int, text: str, headers: Mapping[str, str], tries: int, model: str) -> ModelError:
        err = super()._status_error(status, text, headers, tries, model)
        if status != 529:
            return err
        overloaded = OverloadedError(
            f"{self._endpoint()} is overloaded (HTTP 529) after {tries} tries. Try again later, "
            "raise max_retries, or fall back to another model",
            status_code=status,
            base_url=self.base_url,
            body=text,
            code=err.code,
        )
        overloaded.retry_after = retry_after_seconds(headers)
        return overloaded

    # --- AgenticMessage conversations: replies as blocks ---------------------------------

    async def generate(
        self, messages: list[Message], *, tools: Sequence[ToolInfo] | None = None, **options: Any
    ) -> Message:
        """The reply; given AgenticMessages (the last message decides), an AgenticMessage whose
        reasoning blocks keep their signatures (docs/models.md)."""
        reply = await super().generate(messages, tools=tools, **options)
        if _is_agentic(messages):
            return _whole_to_agentic(reply)  # type: ignore[return-value]  # the conversation's type
        return reply

    async def stream(
        self, messages: list[Message], *, tools: Sequence[ToolInfo] | None = None, **options: Any
    ) -> StreamReader[Message]:
        """The reply's chunks; given AgenticMessages, AgenticMessage chunks, one stream index
        per content block, which ``concat_messages`` joins into the blocks of the reply."""
        reader = await super().stream(messages, tools=tools, **options)
        if _is_agentic(messages):
            return convert_stream(reader, _BlockChunks())  # type: ignore[arg-type]  # chunks of the conversation's type
        return reader

    def _parse_whole(self, body: bytes) -> Message:
        return parse_anthropic_message(body)

    def _stream_parser(self) -> AnthropicStreamParser:
        return AnthropicStreamParser(
            max_sse_line_bytes=self.max_sse_line_bytes, max_sse_event_bytes=self.max_sse_event_bytes
        )
