"""The mapping between rillet events and A2A parts, in both directions (docs/a2a.md states it).

Tool calls, tool results, transfers and interrupts travel as A2A data parts, each a JSON object
tagged by ``kind`` (one of :data:`KINDS`) and ``author`` (the rillet agent that produced it);
text travels as text parts. The server (:mod:`rillet.a2a.server`) writes these parts and the
remote agent (:mod:`rillet.a2a.remote`) reads them back, so both ends share this one module.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_text_part
from a2a.types import Message as A2AMessage
from a2a.types import Part, Role

from rillet._native import FunctionCall, Message, ToolCall

__all__ = [
    "KINDS",
    "data_of",
    "interrupt_part",
    "jsonable",
    "messages_to_parts",
    "parts_text",
    "tool_call_parts",
    "tool_result_part",
    "transfer_part",
    "user_message",
]

KINDS = ("tool_call", "tool_result", "transfer", "interrupt", "error")


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: pydantic models and dataclass-likes through their dump,
    anything else JSON cannot hold as its ``str``. Interrupt infos and answers cross the wire
    this way."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json")
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)


def _data(kind: str, author: str, **fields: Any) -> Part:
    return new_data_part({"kind": kind, "author": author, **fields})


def tool_call_parts(author: str, message: Message) -> list[Part]:
    """One data part per tool call of an assistant message."""
    return [
        _data("tool_call", author, id=c.id, name=c.function.name, arguments=c.function.arguments)
        for c in message.tool_calls
    ]


def tool_result_part(author: str, message: Message, tool_name: str) -> Part:
    return _data(
        "tool_result",
        author,
        tool_call_id=message.tool_call_id,
        name=tool_name or message.name,
        content=message.content,
    )


def transfer_part(author: str, dest: str) -> Part:
    return _data("transfer", author, to=dest)


def interrupt_part(author: str, interrupt_id: str, address: Iterable[str], info: Any) -> Part:
    return _data("interrupt", author, id=interrupt_id, address=list(address), info=jsonable(info))


def data_of(parts: Iterable[Part]) -> list[dict[str, Any]]:
    """The JSON objects of the data parts. Protobuf's Value holds every number as a double;
    whole ones are read back as ints, as JSON (which has one number type) would give them."""
    return [_ints(d) for d in get_data_parts(list(parts)) if isinstance(d, dict)]


def _ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def parts_text(parts: Iterable[Part], sep: str = "\n") -> str:
    """The text parts' texts, one a line (as a2a-sdk reads a message's text); an artifact's
    parts (its appended chunks) are joined with ``sep=""``."""
    return sep.join(p.text for p in parts if p.HasField("text"))


def tool_call_of(data: Mapping[str, Any], index: int) -> ToolCall:
    """A data part of kind ``tool_call`` as a rillet ToolCall."""
    return ToolCall(
        index=index,
        id=str(data.get("id", "")),
        function=FunctionCall(str(data.get("name", "")), str(data.get("arguments", ""))),
    )


def messages_to_parts(messages: Iterable[Message]) -> list[Part]:
    """Text parts for the messages' texts (what a remote agent is sent)."""
    return [new_text_part(m.content) for m in messages if m.content]


def user_message(parts: list[Part], *, message_id: str, task_id: str = "", context_id: str = "") -> A2AMessage:
    return A2AMessage(message_id=message_id, role=Role.ROLE_USER, parts=parts, task_id=task_id, context_id=context_id)
