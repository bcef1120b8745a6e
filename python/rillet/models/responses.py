"""OpenAIResponsesModel: a :class:`rillet.models.ChatModel` over OpenAI's Responses API
(``POST /responses``).

::

    from rillet.models.responses import OpenAIResponsesModel

    model = OpenAIResponsesModel("gpt-5-mini", reasoning={"effort": "low", "summary": "auto"})

It is :class:`~rillet.models.openai.OpenAIChatModel` with another endpoint and wire format:
the same httpx client per event loop, retries, backoff and typed errors. The streamed
``response.*`` events are read by :class:`rillet._native.ResponsesStreamParser` in Rust into
the same ``Message`` chunks as a chat completion. Reasoning items the model returns travel in
the assistant message's ``extra["openai_reasoning"]`` and are sent back with it on the next
turn, so a reasoning model keeps its reasoning across tool calls without server-side state.

Given a conversation of ``AgenticMessage``s (its last message decides), the blocks are sent
as input items and the reply comes back as blocks, one per part of each output item
(:func:`agentic_to_responses`, ``_ItemBlocks``; the table is in docs/agentic-message.md).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import re
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rillet._native import (
    AgenticMessage,
    ContentBlock,
    Message,
    ResponsesStreamParser,
    StreamReader,
    StreamWriter,
    concat_messages,
    parse_response,
    pipe,
)
from rillet.models.errors import ModelError
from rillet.models.openai import ChunkParser, OpenAIChatModel, as_response_format

if TYPE_CHECKING:
    import httpx

    from rillet.tools import ToolInfo

__all__ = [
    "REASONING_KEY",
    "OpenAIResponsesModel",
    "ResponsesStreamParser",
    "agentic_to_responses",
    "message_to_responses",
    "parse_response",
]

# Where a message keeps the reasoning items of its turn (written by the Rust parser).
REASONING_KEY = "openai_reasoning"


def _part(part: Mapping[str, Any]) -> dict[str, Any]:
    """A chat-completions content part (``ContentPart.to_dict()``) in the Responses form."""
    kind = part.get("type")
    if kind == "text":
        return {"type": "input_text", "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url") or {}
        return {"type": "input_image", "image_url": image.get("url", ""), "detail": image.get("detail") or "auto"}
    if kind == "file":
        return {"type": "input_file", **(part.get("file") or {})}
    raise ValueError(
        f"OpenAIResponsesModel: cannot send a content part of type {kind!r}; "
        "use text, image_url or file parts (rillet.ContentPart)"
    )


def _content(content: str | list[Mapping[str, Any]]) -> str | list[dict[str, Any]]:
    return content if isinstance(content, str) else [_part(p) for p in content]


def _reasoning_items(extra: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The reasoning items an assistant message carries, as input items."""
    items = (extra or {}).get(REASONING_KEY) or {}
    out: list[dict[str, Any]] = []
    for item_id, fields in items.items():
        item: dict[str, Any] = {"type": "reasoning", "id": item_id} if item_id else {"type": "reasoning"}
        item["summary"] = [{"type": "summary_text", "text": t} for t in (fields.get("summary") or {}).values()]
        if fields.get("encrypted_content"):
            item["encrypted_content"] = fields["encrypted_content"]
        out.append(item)
    return out


def message_to_responses(message: Message) -> list[dict[str, Any]]:
    """The Responses ``input`` items of ``message``.

    User and system messages are one message item (content parts become ``input_text``,
    ``input_image``, ``input_file``); an assistant message is its reasoning items, then its
    text, then one ``function_call`` item per tool call; a tool result is a
    ``function_call_output`` item.
    """
    d = message.to_dict()
    content = d.get("content", "")
    if "content_text" in d:  # both text and parts: the text goes first, not lost
        content = [{"type": "text", "text": d["content_text"]}, *content]
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": _content(content)}]
    if message.role != "assistant":
        return [{"role": message.role, "content": _content(content)}]
    items = _reasoning_items(message.extra)
    if content:
        items.append({"role": "assistant", "content": content})
    for call in message.tool_calls:
        item: dict[str, Any] = {
            "type": "function_call",
            "call_id": call.id,
            "name": call.function.name,
            "arguments": call.function.arguments or "{}",
        }
        item_id = (call.extra or {}).get("item_id")
        if item_id:
            item["id"] = item_id
        items.append(item)
    return items


# --- AgenticMessage: blocks to input items and output items to blocks ---------------------------
#
# Output items become blocks in their order: a message item one text (or refusal) block per
# content part; a reasoning item one reasoning block per summary part (and per reasoning_text
# part, marked extra["part"] = "content"), all with the item's id in extra["item_id"] and its
# encrypted content as the first block's signature; a function_call item a tool_call block
# (its item id in extra["item_id"]); an mcp_call item an mcp_tool_call block and, once it has
# an output or error, an mcp_tool_result block; any other item (web_search_call,
# file_search_call, code_interpreter_call, image_generation_call...) a server_tool_call block
# named after its type, whose arguments are the item's other fields as JSON, then a
# server_tool_result block holding its result fields, when it has any. Sent back, each group
# of blocks becomes the item it came from.

# The fields of a server-side tool item that are its result (the rest are its arguments).
_RESULT_FIELDS = ("results", "outputs", "result", "output", "error")
# Output item types that are not server-side tool calls.
_OWN_ITEMS = frozenset({"message", "reasoning", "function_call", "mcp_call"})


def _unsendable(i: int, kind: str, why: str) -> ValueError:
    article = "an" if kind[:1] in "aeiou" else "a"
    return ValueError(f"OpenAIResponsesModel: block {i} of an AgenticMessage is {article} {kind!r} block, {why}")


def _media_part(i: int, b: ContentBlock) -> dict[str, Any]:
    """An image or file block as an ``input_image`` / ``input_file`` content part."""
    if b.kind == "image":
        url = b.url or (f"data:{b.mime_type or 'image/png'};base64,{b.data}" if b.data else "")
        if not url:
            raise _unsendable(i, "image", "with neither url nor data; give one of them")
        return {"type": "input_image", "image_url": url, "detail": b.detail or "auto"}
    part: dict[str, Any] = {"type": "input_file"}
    if b.file_id:
        part["file_id"] = b.file_id
    elif b.data:
        part["file_data"] = f"data:{b.mime_type or 'application/octet-stream'};base64,{b.data}"
    elif b.url:
        part["file_url"] = b.url
    else:
        raise _unsendable(i, "file", "with no file_id, data or url; give one of them")
    if b.filename:
        part["filename"] = b.filename
    return part


def _server_item(i: int, call: ContentBlock, result: ContentBlock | None) -> dict[str, Any]:
    """The output item a server_tool_call block (and its result block) came from: its type
    and id, the fields its arguments and result hold (JSON objects), its status."""
    extra = call.extra or {}
    item: dict[str, Any] = {"type": extra.get("item_type") or f"{call.name}_call", "id": call.call_id}
    for what, source in (("arguments", call.arguments), ("result", result.text if result is not None else "")):
        try:
            fields = json.loads(source) if source else {}
        except ValueError:
            fields = None
        if not isinstance(fields, Mapping):
            raise _unsendable(
                i,
                "server_tool_call",
                f"whose {what} are not a JSON object ({source[:60]!r}); the Responses API takes a server-side "
                "tool's call back as the item it came as, whose fields the block's arguments and result hold",
            )
        item.update(fields)
    if extra.get("status"):
        item["status"] = extra["status"]
    return item


def _mcp_item(call: ContentBlock, result: ContentBlock | None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "mcp_call",
        "id": call.call_id,
        "server_label": call.server_label,
        "name": call.name,
        "arguments": call.arguments or "{}",
    }
    if result is not None:
        item["error" if result.is_error else "output"] = result.text
    status = (call.extra or {}).get("status")
    if status:
        item["status"] = status
    return item


def agentic_to_responses(message: AgenticMessage) -> list[dict[str, Any]]:
    """The Responses ``input`` items of an AgenticMessage's blocks, in their order.

    Consecutive text, image and file blocks (and, from the assistant, refusals) are one
    message item; reasoning blocks of one item id are one reasoning item (summary parts, the
    signature as ``encrypted_content``); a tool_call is a ``function_call`` item, a
    tool_result a ``function_call_output``; server-side and MCP tool blocks are the items
    they were read from. A block the API takes no input for raises ValueError.
    """
    items: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    assistant = message.role == "assistant"

    def flush() -> None:
        if parts:
            if assistant:
                items.append({"type": "message", "role": "assistant", "content": list(parts)})
            else:
                items.append({"role": message.role or "user", "content": list(parts)})
            parts.clear()

    blocks = message.blocks
    results = {
        (b.kind, b.call_id): b for b in blocks if b.kind in ("server_tool_result", "mcp_tool_result") and b.call_id
    }
    reasoning: dict[str, Any] | None = None  # the reasoning item being filled
    for i, b in enumerate(blocks):
        kind = b.kind
        extra = b.extra or {}
        if kind != "reasoning":
            reasoning = None
        if kind in ("text", "refusal", "image", "file"):
            if kind == "text" and assistant:
                parts.append({"type": "output_text", "text": b.text, "annotations": []})
            elif kind == "text":
                parts.append({"type": "input_text", "text": b.text})
            elif kind == "refusal":
                if not assistant:
                    raise _unsendable(i, kind, f"in a {message.role!r} message; refusals come from the assistant")
                parts.append({"type": "refusal", "refusal": b.text})
            else:
                if assistant:
                    raise _unsendable(
                        i,
                        kind,
                        "in an assistant message, where the Responses API takes text and refusals only; "
                        "put images and files in a user message",
                    )
                parts.append(_media_part(i, b))
            continue
        flush()
        if kind == "reasoning":
            item_id = extra.get("item_id") or ""
            if reasoning is None or not item_id or reasoning.get("id") != item_id:
                reasoning = {"type": "reasoning", "id": item_id} if item_id else {"type": "reasoning"}
                reasoning["summary"] = []
                items.append(reasoning)
            if b.text:
                if extra.get("part") == "content":
                    reasoning.setdefault("content", []).append({"type": "reasoning_text", "text": b.text})
                else:
                    reasoning["summary"].append({"type": "summary_text", "text": b.text})
            if b.signature and "encrypted_content" not in reasoning:
                reasoning["encrypted_content"] = b.signature
        elif kind == "tool_call":
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": b.call_id,
                "name": b.name,
                "arguments": b.arguments or "{}",
            }
            if extra.get("item_id"):
                call["id"] = extra["item_id"]
            items.append(call)
        elif kind == "tool_result":
            items.append({"type": "function_call_output", "call_id": b.call_id, "output": b.text})
        elif kind == "server_tool_call":
            items.append(_server_item(i, b, results.get(("server_tool_result", b.call_id))))
        elif kind == "mcp_tool_call":
            items.append(_mcp_item(b, results.get(("mcp_tool_result", b.call_id))))
        elif kind in ("server_tool_result", "mcp_tool_result"):
            call_kind = kind.replace("result", "call")
            if not any(c.kind == call_kind and c.call_id == b.call_id for c in blocks):
                raise _unsendable(
                    i,
                    kind,
                    f"whose {call_kind} block (call_id {b.call_id!r}) is not in the message; the Responses "
                    "API takes a server-side tool's result inside its call item: keep both blocks, or drop both",
                )
        else:
            raise _unsendable(
                i,
                kind,
                "which the Responses API takes no input item for (audio and video are not inputs); "
                "drop it from the conversation, or send a transcript as a text block",
            )
    flush()
    return items


class _Events:
    """The JSON events of a ``text/event-stream`` body, fed in pieces. Tolerant: the Rust
    parser reads the same bytes first and is the one that raises (limits, malformed events,
    server errors, truncation), so what it accepts is all this has to read."""

    __slots__ = ("_buf", "_data", "_event")
    _EOL = re.compile(rb"\r\n|\r|\n")

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[bytes] = []
        self._event = b""

    def feed(self, data: bytes | bytearray, *, final: bool = False) -> list[dict[str, Any]]:
        buf = self._buf + bytes(data)
        out: list[dict[str, Any]] = []
        at = 0
        for m in self._EOL.finditer(buf):
            if m.group() == b"\r" and m.end() == len(buf) and not final:
                break  # maybe the first half of \r\n
            self._line(buf[at : m.start()], out)
            at = m.end()
        self._buf = buf[at:]
        if final:
            if self._buf:
                self._line(self._buf, out)
                self._buf = b""
            self._line(b"", out)
        return out

    def _line(self, line: bytes, out: list[dict[str, Any]]) -> None:
        if not line:
            if self._data:
                try:
                    event = json.loads(b"\n".join(self._data))
                except ValueError:
                    event = None
                if isinstance(event, dict):
                    if not event.get("type") and self._event:
                        event["type"] = self._event.decode("utf-8", "replace")
                    out.append(event)
            self._data, self._event = [], b""
            return
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            self._data.append(value)
        elif field == b"event":
            self._event = value


class _ItemBlocks:
    """Responses events in, AgenticMessage blocks out: one stream index per (output item,
    part), numbered in the order they first appear, so ``concat_messages`` merges the deltas
    of one part and keeps the parts in the response's order."""

    __slots__ = ("_first", "_indexes", "_streamed")

    def __init__(self) -> None:
        self._indexes: dict[tuple[Any, ...], int] = {}
        self._first: dict[int, int] = {}  # output index -> index of its first block
        self._streamed: set[tuple[Any, ...]] = set()  # parts whose text or arguments came as deltas

    def _at(self, key: tuple[Any, ...]) -> tuple[int, bool]:
        """The block index of ``key`` and whether it is new."""
        index = self._indexes.get(key)
        if index is not None:
            return index, False
        index = self._indexes[key] = len(self._indexes)
        self._first.setdefault(key[0], index)
        return index, True

    def on_event(self, event: Mapping[str, Any]) -> list[ContentBlock]:
        kind = event.get("type")
        at = event.get("output_index") or 0
        delta = event.get("delta") or ""
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            key = (at, "content", event.get("content_index") or 0)
            self._streamed.add(key)
            index, _ = self._at(key)
            if not delta:
                return []
            if kind == "response.output_text.delta":
                return [ContentBlock("text", text=delta, index=index)]
            return [ContentBlock("refusal", text=delta, index=index)]
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            part = "summary" if kind == "response.reasoning_summary_text.delta" else "content"
            key = (at, part, event.get("summary_index", event.get("content_index")) or 0)
            self._streamed.add(key)
            index, new = self._at(key)
            extra = self._reasoning_extra(event.get("item_id"), part) if new else None
            return [ContentBlock("reasoning", text=delta, index=index, extra=extra)]
        item = event.get("item")
        if kind == "response.output_item.added" and isinstance(item, Mapping):
            if item.get("type") == "function_call":
                return [self._call(at, item, item.get("arguments") or "")]
            if item.get("type") not in _OWN_ITEMS:
                self._at((at, "call"))  # its place, before what follows it
            return []
        if kind == "response.function_call_arguments.delta":
            self._streamed.add((at, "call"))
            index, _ = self._at((at, "call"))
            return [ContentBlock("tool_call", arguments=delta, index=index)] if delta else []
        if kind == "response.function_call_arguments.done":
            arguments = event.get("arguments") or ""
            if (at, "call") in self._streamed or not arguments:
                return []
            self._streamed.add((at, "call"))
            return [ContentBlock("tool_call", arguments=arguments, index=self._at((at, "call"))[0])]
        if kind == "response.output_item.done" and isinstance(item, Mapping):
            return self._item_done(at, item)
        return []

    @staticmethod
    def _reasoning_extra(item_id: Any, part: str) -> dict[str, Any] | None:
        extra: dict[str, Any] = {"item_id": item_id} if item_id else {}
        if part == "content":
            extra["part"] = "content"
        return extra or None

    def _call(self, at: int, item: Mapping[str, Any], arguments: str) -> ContentBlock:
        index, new = self._at((at, "call"))
        if arguments:
            self._streamed.add((at, "call"))
        if not new:
            return ContentBlock("tool_call", arguments=arguments, index=index)
        extra = {"item_id": item["id"]} if item.get("id") else None
        return ContentBlock(
            "tool_call",
            call_id=item.get("call_id") or f"call_{at}",
            name=item.get("name") or "",
            arguments=arguments,
            index=index,
            extra=extra,
        )

    def _item_done(self, at: int, item: Mapping[str, Any]) -> list[ContentBlock]:
        kind = item.get("type")
        out: list[ContentBlock] = []
        if kind == "message":
            for n, part in enumerate(item.get("content") or ()):
                key = (at, "content", n)
                if key in self._streamed:
                    continue
                refusal = part.get("type") == "refusal"
                text = part.get("refusal" if refusal else "text") or ""
                out.append(ContentBlock("refusal" if refusal else "text", text=text, index=self._at(key)[0]))
        elif kind == "reasoning":
            for part_kind, parts in (("summary", item.get("summary")), ("content", item.get("content"))):
                for n, part in enumerate(parts or ()):
                    key = (at, part_kind, n)
                    if key in self._streamed:
                        continue
                    index, new = self._at(key)
                    extra = self._reasoning_extra(item.get("id"), part_kind) if new else None
                    out.append(ContentBlock("reasoning", text=part.get("text") or "", index=index, extra=extra))
            first = self._first.get(at)
            signature = item.get("encrypted_content") or ""
            if first is None:  # nothing of it yet: one block keeps its id (and signature)
                index, _ = self._at((at, "summary", 0))
                out.append(
                    ContentBlock(
                        "reasoning", signature=signature, index=index, extra=self._reasoning_extra(item.get("id"), "")
                    )
                )
            elif signature:
                out.append(ContentBlock("reasoning", signature=signature, index=first))
        elif kind == "function_call":
            call: tuple[Any, ...] = (at, "call")
            if call not in self._indexes:
                out.append(self._call(at, item, item.get("arguments") or ""))
            elif call not in self._streamed and item.get("arguments"):
                out.append(self._call(at, item, item["arguments"]))
        elif kind == "mcp_call":
            status = {"status": item["status"]} if item.get("status") else None
            out.append(
                ContentBlock(
                    "mcp_tool_call",
                    server_label=item.get("server_label") or "",
                    call_id=item.get("id") or "",
                    name=item.get("name") or "",
                    arguments=item.get("arguments") or "",
                    index=self._at((at, "call"))[0],
                    extra=status,
                )
            )
            if item.get("output") is not None or item.get("error") is not None:
                error = item.get("error")
                out.append(
                    ContentBlock(
                        "mcp_tool_result",
                        server_label=item.get("server_label") or "",
                        call_id=item.get("id") or "",
                        name=item.get("name") or "",
                        text=str(error if error is not None else item.get("output")),
                        is_error=error is not None,
                        index=self._at((at, "result"))[0],
                    )
                )
        elif isinstance(kind, str) and kind:
            out += self._server_blocks(at, kind, item)
        return out

    def _server_blocks(self, at: int, kind: str, item: Mapping[str, Any]) -> list[ContentBlock]:
        name = kind[: -len("_call")] if kind.endswith("_call") else kind
        extra: dict[str, Any] = {}
        if name == kind:
            extra["item_type"] = kind
        if item.get("status"):
            extra["status"] = item["status"]
        skip = {"id", "type", "status", *_RESULT_FIELDS}
        arguments = {k: v for k, v in item.items() if k not in skip}
        result = {k: item[k] for k in _RESULT_FIELDS if k in item}
        call_id = item.get("id") or ""
        out = [
            ContentBlock(
                "server_tool_call",
                call_id=call_id,
                name=name,
                arguments=json.dumps(arguments, ensure_ascii=False) if arguments else "",
                index=self._at((at, "call"))[0],
                extra=extra or None,
            )
        ]
        if result:
            out.append(
                ContentBlock(
                    "server_tool_result",
                    call_id=call_id,
                    name=name,
                    text=json.dumps(result, ensure_ascii=False),
                    index=self._at((at, "result"))[0],
                )
            )
        return out


class _AgenticStreamParser:
    """A Responses stream as AgenticMessage chunks. The Rust parser reads the bytes first:
    it enforces the line and event limits and raises what the Message path raises
    (malformed events, ``response.failed``, a stream cut short), and its last chunk's
    ``response_meta`` (finish reason, usage) ends this stream too; the blocks come from the
    same events, read here with their output and part indexes."""

    __slots__ = ("_blocks", "_events", "_native", "_role_sent")

    def __init__(self, native: ResponsesStreamParser) -> None:
        self._native = native
        self._events = _Events()
        self._blocks = _ItemBlocks()
        self._role_sent = False

    def feed(self, data: bytes | bytearray) -> list[AgenticMessage]:
        return self._chunks(self._native.feed(data), self._events.feed(data))

    def finish(self) -> list[AgenticMessage]:
        return self._chunks(self._native.finish(), self._events.feed(b"", final=True))

    def _chunks(self, native: list[Message], events: list[dict[str, Any]]) -> list[AgenticMessage]:
        out: list[AgenticMessage] = []
        for event in events:
            blocks = self._blocks.on_event(event)
            if blocks:
                out.append(self._chunk(blocks))
        for chunk in native:
            if chunk.response_meta is not None:
                out.append(self._chunk([], chunk.response_meta))
        return out

    def _chunk(self, blocks: list[ContentBlock], meta: Any = None) -> AgenticMessage:
        role = "" if self._role_sent else "assistant"
        self._role_sent = True
        return AgenticMessage(role, blocks, response_meta=meta)


def _whole_to_agentic(body: bytes) -> AgenticMessage:
    """A whole Response body as one AgenticMessage: the Rust parser raises what it raises for
    a Message and gives the finish reason and usage; the blocks come from the output items,
    as a stream of them would give them."""
    meta = parse_response(body).response_meta
    data = json.loads(body)
    output = (data.get("output") if isinstance(data, Mapping) else None) or []
    state = _ItemBlocks()
    blocks: list[ContentBlock] = []
    for at, item in enumerate(output):
        if isinstance(item, Mapping):
            blocks += state.on_event({"type": "response.output_item.done", "output_index": at, "item": item})
    whole = concat_messages([AgenticMessage("assistant", blocks, response_meta=meta)])
    assert isinstance(whole, AgenticMessage)
    return whole


def _input_items(messages: Sequence[Message | AgenticMessage]) -> list[dict[str, Any]]:
    """The request's ``input``: each message's items, a Message's or an AgenticMessage's."""
    items: list[dict[str, Any]] = []
    for m in messages:
        items += agentic_to_responses(m) if isinstance(m, AgenticMessage) else message_to_responses(m)
    return items


def _is_agentic(messages: Sequence[Any]) -> bool:
    """A conversation of AgenticMessages (its last message decides): replies come as blocks."""
    return bool(messages) and type(messages[-1]) is AgenticMessage


def _tool(tool: ToolInfo) -> dict[str, Any]:
    """A tool in the Responses form: the chat-completions function, flattened, and not
    strict unless it says so (the Responses API's default is strict, which refuses a schema
    with optional properties; chat completions' is not, and rillet's schemas are not made
    strict)."""
    spec = tool.to_openai()
    return {"type": "function", "strict": False, **spec["function"]}


def _tool_choice(choice: Any) -> Any:
    """``{"type": "function", "function": {"name": n}}`` (chat completions) becomes
    ``{"type": "function", "name": n}``; strings pass."""
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def _text_format(value: Any) -> dict[str, Any]:
    """A ``response_format`` (pydantic class or chat-completions dict) as ``text.format``."""
    fmt = as_response_format(value)
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema" and "json_schema" in fmt:
        return {"type": "json_schema", **fmt["json_schema"]}
    return dict(fmt)


class OpenAIResponsesModel(OpenAIChatModel):
    """A chat model served over OpenAI's Responses API, streaming or not.

    Args:
        model: the model name (``"gpt-5-mini"``, ``"o4-mini"``, ``"gpt-4.1"``...).
        base_url: the API root, ending before ``/responses``; default ``OPENAI_BASE_URL``,
            else OpenAI's.
        api_key, timeout, max_retries, headers, max_sse_line_bytes, max_sse_event_bytes,
        supports_response_format: as for :class:`~rillet.models.openai.OpenAIChatModel`.
        **default_params: request parameters for every call (``reasoning``, ``store``,
            ``include``, ``instructions``, ``temperature``, ``max_output_tokens``,
            ``tool_choice``, ``parallel_tool_calls``, ``text``...). Options given to
            ``generate``/``stream`` override them.

    The whole conversation is sent each call (no ``previous_response_id``). Chat-completions
    spellings are translated: ``max_tokens`` to ``max_output_tokens``, ``response_format``
    to ``text.format``, a ``tool_choice`` naming a function to the flat form. With
    ``store=False`` the request asks for ``reasoning.encrypted_content``, so reasoning
    items can be sent back without the server keeping them. A conversation of
    AgenticMessages is answered with AgenticMessages (whole, or chunks with block indexes).
    """

    _path = "/responses"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        headers: Mapping[str, str] | None = None,
        max_sse_line_bytes: int = 4 << 20,
        max_sse_event_bytes: int = 16 << 20,
        supports_response_format: bool = True,
        **default_params: Any,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            include_usage=False,  # the Responses API always reports usage
            think_tags=False,
            headers=headers,
            max_sse_line_bytes=max_sse_line_bytes,
            max_sse_event_bytes=max_sse_event_bytes,
            supports_response_format=supports_response_format,
            **default_params,
        )
        # The streamed responses of AgenticMessage conversations (read as blocks).
        self._agentic: weakref.WeakSet[httpx.Response] = weakref.WeakSet()

    def request_body(
        self,
        messages: Sequence[Message | AgenticMessage],
        tools: Sequence[ToolInfo] | None,
        options: Mapping[str, Any],
        *,
        stream: bool,
    ) -> dict[str, Any]:
        """The JSON body sent for one call (public to inspect what a call would send)."""
        params = {**self.default_params, **options}
        body: dict[str, Any] = {
            "model": params.pop("model", None) or self.model,
            "input": _input_items(messages),
        }
        if tools:
            body["tools"] = [_tool(t) for t in tools]
            if "tool_choice" in params:
                params["tool_choice"] = _tool_choice(params["tool_choice"])
        else:
            params.pop("tool_choice", None)
            params.pop("parallel_tool_calls", None)
        for spelling in ("max_tokens", "max_completion_tokens"):  # chat completions' two names
            if spelling in params:
                params.setdefault("max_output_tokens", params.pop(spelling))
        if params.get("response_format") is not None:
            params["text"] = {**(params.get("text") or {}), "format": _text_format(params["response_format"])}
        params.pop("response_format", None)
        if params.get("store") is False:
            include = list(params.get("include") or [])
            if "reasoning.encrypted_content" not in include:
                include.append("reasoning.encrypted_content")
            params["include"] = include
        params.pop("stream_options", None)
        body.update((k, v) for k, v in params.items() if v is not None)
        if stream:
            body["stream"] = True
        else:
            body.pop("stream", None)
        return body

    # --- AgenticMessage conversations: replies as blocks ---------------------------------

    async def generate(
        self, messages: list[Message], *, tools: Sequence[ToolInfo] | None = None, **options: Any
    ) -> Message:
        """The reply; given AgenticMessages (the last message decides), an AgenticMessage whose
        blocks follow the response's output items (docs/agentic-message.md)."""
        if not _is_agentic(messages):
            return await super().generate(messages, tools=tools, **options)
        body = self.request_body(messages, tools, options, stream=False)
        response = await self._post(body, stream=False)
        try:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                # A server (or proxy) that streams whatever was asked: read the stream whole.
                parser = self._agentic_parser()
                whole = concat_messages([*parser.feed(response.content), *parser.finish()])
            else:
                whole = _whole_to_agentic(response.content)
        except ModelError as e:
            e.base_url = self.base_url
            raise
        return whole  # type: ignore[return-value]  # the conversation's type

    async def stream(
        self, messages: list[Message], *, tools: Sequence[ToolInfo] | None = None, **options: Any
    ) -> StreamReader[Message]:
        """The reply's chunks; given AgenticMessages, AgenticMessage chunks whose blocks carry
        one stream index per output item part, which ``concat_messages`` joins into the
        blocks of the reply."""
        if not _is_agentic(messages):
            return await super().stream(messages, tools=tools, **options)
        body = self.request_body(messages, tools, options, stream=True)
        response = await self._post(body, stream=True)
        self._agentic.add(response)
        reader, writer = pipe()
        # As OpenAIChatModel.stream: a fresh context, so the pump keeps no run alive.
        task = asyncio.get_running_loop().create_task(self._pump(response, writer), context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return reader

    async def _read_into(self, response: httpx.Response, writer: StreamWriter[Message]) -> None:
        if response not in self._agentic:
            return await super()._read_into(response, writer)
        out: StreamWriter[Any] = writer
        if response.headers.get("content-type", "").startswith("application/json"):
            # The server ignored stream=true and sent a whole response: one chunk.
            out.send(_whole_to_agentic(await response.aread()))
            return None
        parser = self._agentic_parser()
        async for data in response.aiter_bytes():
            for chunk in parser.feed(data):
                out.send(chunk)
            if writer.reader_closed:
                return None
        for chunk in parser.finish():
            out.send(chunk)
        return None

    def _agentic_parser(self) -> _AgenticStreamParser:
        return _AgenticStreamParser(
            ResponsesStreamParser(
                max_sse_line_bytes=self.max_sse_line_bytes, max_sse_event_bytes=self.max_sse_event_bytes
            )
        )

    def _parse_whole(self, body: bytes) -> Message:
        return parse_response(body)

    def _stream_parser(self) -> ChunkParser:
        return ResponsesStreamParser(
            max_sse_line_bytes=self.max_sse_line_bytes, max_sse_event_bytes=self.max_sse_event_bytes
        )
