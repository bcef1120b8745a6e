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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rillet._native import Message, ResponsesStreamParser, parse_response
from rillet.models.openai import ChunkParser, OpenAIChatModel, as_response_format

if TYPE_CHECKING:
    from rillet.tools import ToolInfo

__all__ = [
    "REASONING_KEY",
    "OpenAIResponsesModel",
    "ResponsesStreamParser",
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
    items can be sent back without the server keeping them.
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
            "input": [item for m in messages for item in message_to_responses(m)],
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

    def _parse_whole(self, body: bytes) -> Message:
        return parse_response(body)

    def _stream_parser(self) -> ChunkParser:
        return ResponsesStreamParser(
            max_sse_line_bytes=self.max_sse_line_bytes, max_sse_event_bytes=self.max_sse_event_bytes
        )
