"""ScriptedModel: an offline chat model that answers from a script (a public test double).

Script the replies an agent's model should give, run the agent, then look at what the model
was sent::

    from rillet import FunctionCall, Message, ScriptedModel, ToolCall

    add = ToolCall(id="call_1", function=FunctionCall("add", '{"a": 2, "b": 3}'))
    model = ScriptedModel([Message.assistant(tool_calls=[add]), "2 + 3 = 5"])
    # hand `model` to an agent (ChatModelAgent(..., model=model)) and run it; then:
    assert model.call_count == 2
    assert model.calls[1].messages[-1].content == "5"  # the tool's result went back

Replies are ``Message`` objects or strings (assistant text), given in order, one per call to
``generate`` or ``stream``; or one callable ``(messages, tools) -> Message | str`` (plain or
``async``) that answers every call. See docs/testing.md.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from rillet._native import (
    AgenticMessage,
    ContentBlock,
    FunctionCall,
    Message,
    StreamReader,
    StreamWriter,
    ToolCall,
    pipe,
    stream_from_list,
)
from rillet.errors import RilletError, ScriptExhaustedError
from rillet.models.base import ModelCall

if TYPE_CHECKING:
    from rillet.tools import ToolInfo

__all__ = ["ReplyFunction", "ScriptExhaustedError", "ScriptedModel", "split_agentic_message", "split_message"]

Reply: TypeAlias = "Message | AgenticMessage | str"
ReplyFunction: TypeAlias = "Callable[[list[Message], tuple[ToolInfo, ...]], Reply | Awaitable[Reply]]"


class ScriptedModel:
    """A :class:`rillet.ChatModel` that returns scripted replies, for tests and demos.

    ``replies`` is either a list of replies, returned in order, one per call (``generate``
    and ``stream`` share the script), or one callable ``(messages, tools) -> Message | str``,
    plain or ``async``, called for every call with the messages and the tuple of
    ``ToolInfo`` offered. A reply is a ``Message``, an ``AgenticMessage`` (for an agent that
    runs on block-list messages; streamed, block ``i`` goes out at index ``i``) or a ``str``
    (assistant text).

    Every reply comes back as a fresh copy with role ``"assistant"`` when it had none. Tool
    calls are numbered by their position (``index=0, 1, ...``), as a streaming provider
    numbers them, so ``generate`` and the concatenated ``stream`` give the same message; a
    tool call whose ``index`` is set to anything else is refused with ``ValueError``.
    ``response_meta`` is returned as scripted: no finish reason or usage is invented.

    ``stream`` splits a reply into chunks that :func:`rillet.concat_messages` joins back into
    exactly the reply (see :meth:`stream`). With ``delay > 0`` a task sends the chunks with
    ``delay`` seconds between them, so tokens visibly arrive; ``generate`` never waits.

    Calling past the end of a list script raises :class:`ScriptExhaustedError`. Every call is
    counted (``call_count``) and, unless ``record=False``, recorded in ``calls`` as a
    :class:`rillet.ModelCall` (messages copied at call time); a call that exhausts the script
    is recorded too. ``reset()`` rewinds the script and forgets the calls. Concurrent calls,
    from tasks or threads, each take a distinct reply.

    ``supports_response_format`` (default True) is what a ChatModelAgent with an
    ``output_type`` reads: True, it passes ``response_format=<the pydantic class>`` (recorded
    in ``calls[i].options``; the script answers as written); False, it offers the
    final-answer tool instead, as for a model without structured outputs.

    ``record=False`` skips copying the messages of every call, whose cost grows with the
    conversation: meant for benchmarks.
    """

    __slots__ = (
        "_chunk_size",
        "_chunks",
        "_fn",
        "_lock",
        "_n",
        "_replies",
        "_tasks",
        "calls",
        "delay",
        "name",
        "record",
        "supports_response_format",
    )

    def __init__(
        self,
        replies: Iterable[Reply] | ReplyFunction,
        *,
        chunk_size: int = 4,
        delay: float = 0.0,
        name: str = "scripted",
        record: bool = True,
        supports_response_format: bool = True,
    ) -> None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(f"chunk_size must be an int >= 1 (characters per chunk), got {chunk_size!r}")
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not (math.isfinite(delay) and delay >= 0):
            raise ValueError(f"delay must be a finite number of seconds >= 0, got {delay!r}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        self.name = name
        self._chunk_size = chunk_size
        self.delay = float(delay)
        self.record = bool(record)
        self.supports_response_format = bool(supports_response_format)
        self._fn: ReplyFunction | None = None
        self._replies: tuple[Message, ...] = ()
        if isinstance(replies, (str, Message)):
            raise TypeError(
                f"replies must be a list of Messages or strings, or a callable; got one "
                f"{type(replies).__name__} (wrap it in a list: ScriptedModel([reply]))"
            )
        if callable(replies):
            self._fn = replies
        else:
            try:
                items = list(replies)
            except TypeError:
                raise TypeError(
                    f"replies must be a list of Messages or strings, or a callable "
                    f"(messages, tools) -> Message | str; got {type(replies).__name__}"
                ) from None
            where = f"ScriptedModel {name!r}: reply"
            self._replies = tuple(_prepare(r, f"{where} {i}") for i, r in enumerate(items))
        # Each reply's chunks, split on its first stream and copied for every stream.
        self._chunks: list[list[Message] | None] = [None] * len(self._replies)
        self._lock = threading.Lock()
        self._n = 0
        self.calls: list[ModelCall] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        script = "callable" if self._fn is not None else f"{len(self._replies)} replies"
        return f"ScriptedModel({self.name!r}, {script}, calls={self._n})"

    @property
    def chunk_size(self) -> int:
        """Characters per content, reasoning or tool-argument chunk when streaming."""
        return self._chunk_size

    @property
    def call_count(self) -> int:
        """How many calls ``generate`` and ``stream`` received since creation or ``reset()``."""
        return self._n

    @property
    def replies(self) -> tuple[Message, ...]:
        """The scripted replies as prepared (empty for a callable script). Do not mutate."""
        return self._replies

    def reset(self) -> None:
        """Rewinds the script to its first reply and forgets the recorded calls."""
        with self._lock:
            self._n = 0
            self.calls = []

    async def generate(
        self,
        messages: list[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Any,
    ) -> Message:
        """Returns the next reply (a fresh copy); raises ``ScriptExhaustedError`` past the end."""
        n = self._take(messages, tools, options, False)
        if self._fn is None:
            return self._replies[n - 1].copy()
        return await self._call_fn(messages, tools, n)

    async def stream(
        self,
        messages: list[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Any,
    ) -> StreamReader[Message]:
        """Returns a ``StreamReader`` of the next reply's chunks.

        Chunk by chunk: the reasoning, then the content, each in pieces of ``chunk_size``
        characters; then each tool call, whose first delta carries its index, id, type and
        name with the first piece of its arguments and whose further deltas carry the index
        and the next pieces. The first chunk also carries the role, ``name``,
        ``tool_call_id``, ``tool_name``, ``extra`` and any ``user_input_multi_content``;
        the last one carries ``response_meta`` (finish reason and usage). A reply with
        nothing to split is one chunk. Errors (an exhausted script, a failing callable) are
        raised here, before any chunk.
        """
        n = self._take(messages, tools, options, True)
        if self._fn is None:
            split = self._chunks[n - 1]
            if split is None:
                split = self._chunks[n - 1] = _split(self._replies[n - 1], self._chunk_size)
            chunks = [chunk.copy() for chunk in split]
        else:
            chunks = _split(await self._call_fn(messages, tools, n), self._chunk_size)
        if self.delay > 0:
            return self._paced(chunks)
        return stream_from_list(chunks)

    def _take(
        self,
        messages: list[Message],
        tools: Sequence[ToolInfo] | None,
        options: dict[str, Any],
        streaming: bool,
    ) -> int:
        """Counts and records one call; returns its number (1 for the first)."""
        call = None
        if self.record:
            copies = tuple([m.copy() for m in messages])
            call = ModelCall(copies, tuple(tools) if tools else (), options, streaming)
        with self._lock:
            self._n += 1
            n = self._n
            if call is not None:
                self.calls.append(call)
        if self._fn is None and n > len(self._replies):
            raise ScriptExhaustedError(
                f"ScriptedModel {self.name!r} has {len(self._replies)} scripted "
                f"{'reply' if len(self._replies) == 1 else 'replies'}; call {n} asked for another "
                f"(script one more reply, or call reset() between runs)"
            )
        return n

    async def _call_fn(self, messages: list[Message], tools: Sequence[ToolInfo] | None, n: int) -> Message:
        assert self._fn is not None
        out: Any = self._fn(messages, tuple(tools) if tools else ())
        if inspect.isawaitable(out):
            out = await out
        return _prepare(out, f"ScriptedModel {self.name!r}: the reply function's answer to call {n}")

    def _paced(self, chunks: list[Message]) -> StreamReader[Message]:
        reader, writer = pipe()
        task = asyncio.get_running_loop().create_task(_send_paced(writer, chunks, self.delay, self.name))
        self._tasks.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._tasks.discard)
        return reader


def _prepare(reply: object, where: str) -> Message:
    """A fresh copy of ``reply`` as an assistant message with positional tool-call indexes
    (an AgenticMessage is copied as it is: its blocks are numbered when it is streamed)."""
    if isinstance(reply, str):
        return Message.assistant(reply)
    if type(reply) is AgenticMessage:
        agentic = reply.copy()
        if not agentic.role:
            agentic.role = "assistant"
        return agentic  # type: ignore[return-value]  # the script holds either message type
    if not isinstance(reply, Message):
        raise TypeError(
            f"{where} has type {type(reply).__name__}; a reply must be a Message, an AgenticMessage or a str"
        )
    msg = reply.copy()
    if not msg.role:
        msg.role = "assistant"
    calls = msg.tool_calls
    if calls and any(tc.index != i for i, tc in enumerate(calls)):
        numbered = []
        for i, tc in enumerate(calls):
            if tc.index is not None and tc.index != i:
                raise ValueError(
                    f"{where}: tool call {i} has index {tc.index}; ScriptedModel numbers tool "
                    f"calls by their position in the reply (leave index unset or set it to {i})"
                )
            numbered.append(ToolCall(i, tc.id, tc.type, tc.function, tc.extra))
        msg.tool_calls = tuple(numbered)
    return msg


def _split(reply: Any, chunk_size: int) -> list[Any]:
    if type(reply) is AgenticMessage:
        return split_agentic_message(reply, chunk_size)
    return split_message(reply, chunk_size)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def split_agentic_message(reply: AgenticMessage, chunk_size: int) -> list[AgenticMessage]:
    """The chunks of an AgenticMessage reply: block ``i`` streams at index ``i``, its text,
    reasoning text, tool-call arguments or tool-result content in pieces of ``chunk_size``
    characters (the identity fields and the signature on the first piece); the first chunk
    carries the role, name and extra, the last the response_meta.
    ``rillet.concat_messages(split_agentic_message(m, n))`` is ``m``."""
    chunks = []
    for i, block in enumerate(reply.blocks):
        d = block.to_dict()
        grow = "arguments" if block.kind.endswith("tool_call") else "text" if block.kind in _GROWING else ""
        pieces = _pieces(d.pop(grow, ""), chunk_size) if grow else []
        d["index"] = i
        first = ContentBlock.from_dict({**d, grow: pieces[0]} if pieces else d)
        chunks.append(AgenticMessage(blocks=[first]))
        chunks += [
            AgenticMessage(blocks=[ContentBlock.from_dict({"type": block.kind, "index": i, grow: p})])
            for p in pieces[1:]
        ]
    if not chunks:
        chunks.append(AgenticMessage())
    chunks[0].role, chunks[0].name, chunks[0].extra = reply.role, reply.name, reply.extra
    chunks[-1].response_meta = reply.response_meta
    return chunks


_GROWING = frozenset({"text", "reasoning", "refusal", "tool_result", "server_tool_result", "mcp_tool_result"})


def split_message(reply: Message, chunk_size: int) -> list[Message]:
    """Splits ``reply`` into the chunks :meth:`ScriptedModel.stream` sends (see there).

    ``rillet.concat_messages(split_message(m, n)) == m`` holds for a message whose tool
    calls are numbered by position (as ScriptedModel's replies are) and whose
    ``user_input_multi_content`` has no two text parts side by side (concatenation merges
    those).
    """
    deltas: list[dict[str, Any]] = [{"reasoning_content": p} for p in _pieces(reply.reasoning_content, chunk_size)]
    deltas += [{"content": p} for p in _pieces(reply.content, chunk_size)]
    for i, tc in enumerate(reply.tool_calls):
        fn = tc.function
        args = _pieces(fn.arguments, chunk_size) or [""]
        first = ToolCall(i, tc.id, tc.type, FunctionCall(fn.name, args[0]), tc.extra)
        deltas.append({"tool_calls": [first]})
        deltas += [{"tool_calls": [ToolCall(i, "", "", FunctionCall("", p))]} for p in args[1:]]
    if not deltas:
        deltas.append({})
    head = deltas[0]
    for field in ("role", "name", "tool_call_id", "tool_name"):
        value = getattr(reply, field)
        if value:
            head[field] = value
    if reply.extra is not None:
        head["extra"] = reply.extra
    parts = reply.user_input_multi_content
    if parts:
        head["user_input_multi_content"] = parts
    if reply.response_meta is not None:
        deltas[-1]["response_meta"] = reply.response_meta
    return [Message(**delta) for delta in deltas]


async def _send_paced(writer: StreamWriter[Message], chunks: list[Message], delay: float, name: str) -> None:
    """Sends ``chunks`` with ``delay`` seconds between them; stops when the reader is gone."""
    sent = 0
    try:
        for chunk in chunks:
            if sent:
                await asyncio.sleep(delay)
            writer.send(chunk)
            sent += 1
            if writer.reader_closed:
                return
    except asyncio.CancelledError:
        # A truncated stream must not look complete to its reader.
        where = f"ScriptedModel {name!r}"
        writer.send_error(RilletError(f"{where}: stream cancelled after {sent} of {len(chunks)} chunks"))
        raise
    finally:
        writer.close()
