"""ScriptedLiveModel: an offline :class:`~rillet.live.LiveModel` that answers each user turn
from a script, for tests and demos (the live twin of :class:`rillet.ScriptedModel`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rillet._native import Message
from rillet.errors import ScriptExhaustedError
from rillet.live.model import LiveResponse
from rillet.live.queue import Blob

if TYPE_CHECKING:
    from rillet.tools import ToolInfo

__all__ = ["LiveReply", "ScriptedLiveConnection", "ScriptedLiveModel"]


@dataclass(frozen=True, slots=True)
class LiveReply:
    """One scripted answer. ``stall_after=n`` makes it a long answer still being spoken: the
    model sends its first ``n`` chunks and goes on talking (the turn is not complete) until the
    user cuts in (activity start, new input); what was said comes back with ``interrupted``
    and the rest is never sent."""

    message: Message | str
    stall_after: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.message, (Message, str)):
            raise TypeError(f"LiveReply(message): expected a Message or a str, got {type(self.message).__name__}")
        if self.stall_after is not None and (not isinstance(self.stall_after, int) or self.stall_after < 0):
            raise ValueError(f"LiveReply(stall_after=...): expected an int >= 0 (chunks), got {self.stall_after!r}")


_END = object()


class ScriptedLiveModel:
    """Answers each completed user turn (a non-partial ``send_content``, or the
    ``send_activity_end`` after input) and each tool result with the next reply of
    ``replies`` (``Message``, ``str`` or :class:`LiveReply`): a text is sent as ``partial``
    chunks of ``chunk_size`` characters, then the whole message, then ``turn_complete``; a
    message with tool calls is sent whole. Replies are shared by every connection; one past
    the end raises :class:`~rillet.errors.ScriptExhaustedError` from ``receive``.
    ``connections`` keeps every connection, whose ``history``, ``tools`` and ``received``
    (``(kind, ...)`` tuples in order) say what the model was sent."""

    def __init__(self, replies: Iterable[Message | str | LiveReply], *, chunk_size: int = 4) -> None:
        if isinstance(replies, (str, Message, LiveReply)):
            replies = [replies]
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(f"chunk_size must be an int >= 1 (characters per chunk), got {chunk_size!r}")
        self._replies = tuple(r if isinstance(r, LiveReply) else LiveReply(r) for r in replies)
        self._n = 0
        self.chunk_size = chunk_size
        self.connections: list[ScriptedLiveConnection] = []

    async def connect(
        self, history: list[Message], *, tools: Sequence[ToolInfo] | None = None, **options: Any
    ) -> ScriptedLiveConnection:
        conn = ScriptedLiveConnection(self, history, tools or (), options)
        self.connections.append(conn)
        return conn

    def _next(self) -> LiveReply:
        if self._n >= len(self._replies):
            raise ScriptExhaustedError(
                f"ScriptedLiveModel: turn {self._n + 1} has no reply; the script has {len(self._replies)}"
            )
        self._n += 1
        return self._replies[self._n - 1]


class ScriptedLiveConnection:
    """One session of a :class:`ScriptedLiveModel` (see there)."""

    def __init__(
        self, model: ScriptedLiveModel, history: list[Message], tools: Sequence[ToolInfo], options: dict[str, Any]
    ) -> None:
        self.history = [m.copy() for m in history]
        self.tools = tuple(tools)
        self.options = dict(options)
        self.received: list[tuple[Any, ...]] = []
        self.closed = False
        self._model = model
        self._out: asyncio.Queue[object] = asyncio.Queue()
        self._pending = False  # input of the current user turn not answered yet
        self._in_flight: list[str] | None = None  # the chunks a stalled answer has said

    async def send_content(self, message: Message, *, partial: bool = False) -> None:
        if self.closed:
            return
        self.received.append(("content", message.copy(), partial))
        self._cut()
        if partial:
            self._pending = True
        else:
            self._answer()

    async def send_realtime(self, blob: Blob) -> None:
        if self.closed:
            return
        self.received.append(("blob", blob))
        self._cut()
        self._pending = True

    async def send_activity_start(self) -> None:
        if self.closed:
            return
        self.received.append(("activity_start",))
        self._cut()

    async def send_activity_end(self) -> None:
        if self.closed:
            return
        self.received.append(("activity_end",))
        if self._pending:
            self._answer()

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.received.append(("close",))
            self._out.put_nowait(_END)

    async def receive(self) -> AsyncIterator[LiveResponse]:
        while True:
            item = await self._out.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, LiveResponse)
            yield item

    def _cut(self) -> None:
        """The user cut in: a stalled answer stops where it is."""
        if self._in_flight is None:
            return
        said, self._in_flight = "".join(self._in_flight), None
        self._out.put_nowait(LiveResponse(Message.assistant(said) if said else None, interrupted=True))

    def _answer(self) -> None:
        self._pending = False
        try:
            reply = self._model._next()
        except ScriptExhaustedError as e:
            self._out.put_nowait(e)
            return
        msg = Message.assistant(reply.message) if isinstance(reply.message, str) else reply.message.copy()
        if not msg.role:
            msg.role = "assistant"
        if msg.tool_calls:
            self._out.put_nowait(LiveResponse(msg))
            return
        size = self._model.chunk_size
        text = msg.content
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        if reply.stall_after is not None:
            chunks = chunks[: reply.stall_after]
        for c in chunks:
            self._out.put_nowait(LiveResponse(Message.assistant(c), partial=True))
        if reply.stall_after is not None:
            self._in_flight = chunks
            return
        self._out.put_nowait(LiveResponse(msg))
        self._out.put_nowait(LiveResponse(turn_complete=True))
