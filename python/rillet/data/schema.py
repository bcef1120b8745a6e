"""Messages and streams (Eino's ``schema`` package), backed by ``rillet._native``.

* :class:`Message` and its parts; :class:`AgenticMessage` (Eino's block-list message) and
  its :class:`ContentBlock`; :func:`concat_messages` and :class:`MessageAccumulator` join
  streamed chunks of either with Eino's rules (see ``docs`` and the docstrings).
* :func:`pipe` makes a ``(StreamReader, StreamWriter)``; :func:`stream_from_list`,
  :func:`merge_streams`, :func:`merge_named_streams`, :func:`convert_stream` and
  ``reader.copy(n)`` build readers from readers; :func:`concat_message_stream` drains one.

The data structures, the blocking paths and the per-chunk work are in Rust. This module adds
the asyncio halves, which park a future in the stream and await it.

Mutability: a :class:`Message` is mutable (``msg.content = "..."`` works) and safe to share
between threads. Its parts (``ToolCall``, ``FunctionCall``, ``ResponseMeta``, ``Usage``,
``ContentPart``) are immutable values, and the container attributes read back as read-only
views (``tool_calls`` and ``user_input_multi_content`` tuples, ``extra`` a read-only
mapping), so an in-place edit raises: assign the attribute to change it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal, overload

from rillet._native import (
    EMPTY,
    NO_VALUE,
    AgenticMessage,
    ContentBlock,
    ContentPart,
    FunctionCall,
    Message,
    MessageAccumulator,
    ResponseMeta,
    SourceEOF,
    StreamReader,
    StreamWriter,
    ToolCall,
    Usage,
    concat_message_stream,
    concat_messages,
    convert_stream,
    merge_named_streams,
    merge_streams,
    pipe,
    stream_from_list,
)
from rillet.errors import ConcatError, MessageConversionError, StreamEOF

if TYPE_CHECKING:
    # The default makes a plain `AgentEvent` mean `AgentEvent[Message]` to a type checker;
    # at run time the TypeVar is typing's (Python 3.11 has no defaults), and costs nothing.
    from typing_extensions import TypeVar

    MessageT = TypeVar("MessageT", bound=Message | AgenticMessage, default=Message)
else:
    from typing import TypeVar

    MessageT = TypeVar("MessageT", bound=Message | AgenticMessage)

AnyMessage = Message | AgenticMessage
"""Either message type: the closed union the agent, event and runner types are generic over."""

__all__ = [
    "NO_VALUE",
    "AgenticMessage",
    "AnyMessage",
    "ConcatError",
    "ContentBlock",
    "ContentPart",
    "FunctionCall",
    "Message",
    "MessageAccumulator",
    "MessageConversionError",
    "MessageT",
    "ResponseMeta",
    "SourceEOF",
    "StreamEOF",
    "StreamReader",
    "StreamWriter",
    "ToolCall",
    "Usage",
    "aconcat_message_stream",
    "concat_message_stream",
    "concat_messages",
    "convert_stream",
    "merge_named_streams",
    "merge_streams",
    "pipe",
    "stream_from_list",
]


async def _wait(subscribe: Any) -> None:
    """Parks a future with ``subscribe(fut, loop)`` and awaits it, unless told to retry now.

    Wakeups are level-triggered: the caller polls again after every wakeup. A waiter left
    behind by a cancelled task is harmless; firing it later does nothing.
    """
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    if subscribe(fut, loop):
        await fut


async def _arecv(reader: StreamReader[Any]) -> Any:
    while True:
        item = reader._poll()
        if item is not EMPTY:
            return item
        await _wait(reader._subscribe)


async def _anext(reader: StreamReader[Any]) -> Any:
    try:
        return await _arecv(reader)
    except StreamEOF:
        raise StopAsyncIteration from None


async def _asend(writer: StreamWriter[Any], item: Any, is_error: bool) -> bool:
    while True:
        done = writer._try_send(item, is_error)
        if done is not EMPTY:
            return bool(done)
        await _wait(writer._subscribe_space)


async def _aenter(obj: Any) -> Any:
    """``async with reader:`` (the reader itself)."""
    return obj


async def _aexit(obj: StreamReader[Any]) -> None:
    """Leaving ``async with reader:`` closes the reader."""
    obj.close()


@overload
async def aconcat_message_stream(
    reader: StreamReader[AgenticMessage], *, usage: Literal["max", "sum", "last"] = "max"
) -> AgenticMessage: ...
@overload
async def aconcat_message_stream(
    reader: StreamReader[Any], *, usage: Literal["max", "sum", "last"] = "max"
) -> Message: ...
async def aconcat_message_stream(reader: StreamReader[Any], *, usage: Literal["max", "sum", "last"] = "max") -> Any:
    """``await`` twin of :func:`concat_message_stream`: drains ``reader`` without blocking
    the loop, handing every batch of ready chunks to Rust in one call.

    ``usage`` combines the usage counters of the chunks as in :func:`concat_messages`
    ("max", the default, "sum" or "last"). The first error item is raised; the reader is
    closed in every case. A stream of AgenticMessage chunks gives an AgenticMessage.
    """
    acc: MessageAccumulator[Any] = MessageAccumulator(usage=usage)
    try:
        while not reader._drain_into(acc):
            await _wait(reader._subscribe)
    finally:
        reader.close()
    return acc.finish()
