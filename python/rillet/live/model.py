"""The live protocols: a bidirectional model connection (:class:`LiveModel`), the agents that
can run live (:class:`LiveAgent`) and what a live run hands them (:class:`LiveContext`).

A live model answers while the user keeps talking, as ADK's ``BaseLlmConnection``: the agent
sends the history once, then forwards the user's requests as they come and turns what the
model sends back (:class:`LiveResponse`) into events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rillet._native import Message
from rillet.live.queue import Blob, LiveRequest

if TYPE_CHECKING:
    from rillet.data.events import AgentEvent
    from rillet.run.agent import AgentInput
    from rillet.tools import BaseTool, ToolInfo

__all__ = [
    "LiveAgent",
    "LiveConnection",
    "LiveContext",
    "LiveModel",
    "LiveResponse",
    "LiveSource",
    "LiveStatus",
    "live_status",
]


@dataclass(frozen=True, slots=True)
class LiveResponse:
    """One thing a live model sends: a ``message`` (a chunk when ``partial``, else a whole
    message: the answer so far, or tool calls), and/or the end of its turn
    (``turn_complete``), or the news that the user cut in (``interrupted``, with what had
    been said in ``message``, if anything)."""

    message: Message | None = None
    partial: bool = False
    turn_complete: bool = False
    interrupted: bool = False


@runtime_checkable
class LiveConnection(Protocol):
    """One open live session with a model (see :meth:`LiveModel.connect`)."""

    async def send_content(self, message: Message, *, partial: bool = False) -> None:
        """A user message (``partial``: the turn goes on) or a tool result."""
        ...

    async def send_realtime(self, blob: Blob) -> None: ...

    async def send_activity_start(self) -> None: ...

    async def send_activity_end(self) -> None: ...

    def receive(self) -> AsyncIterator[LiveResponse]:
        """What the model sends, until the connection closes (an error is raised from here)."""
        ...

    async def close(self) -> None:
        """Closes the session; ``receive`` ends. Idempotent."""
        ...


@runtime_checkable
class LiveModel(Protocol):
    """A model with a bidirectional session: ``connect`` opens one, with the conversation so
    far (``history``, system message first if any) and the tools it may call."""

    async def connect(
        self, history: list[Message], *, tools: Sequence[ToolInfo] | None = None, **options: Any
    ) -> LiveConnection: ...


class LiveSource(Protocol):
    """Where a live agent takes the user's requests from (a :class:`LiveRequestQueue`)."""

    async def get(self) -> LiveRequest: ...

    def unget(self, request: LiveRequest) -> None:
        """Puts ``request`` back: the next ``get`` returns it."""
        ...


@dataclass(slots=True)
class LiveContext:
    """What a live run hands each live agent: the ``requests`` to take, the conversation
    ``history`` (every agent of the run appends what it saw and said, so the next agent of a
    sequence starts from it), the parent's ``run_path``, and ``extra_tools`` a parent offers
    (a SequentialAgent offers ``task_completed``, whose call ends its child's turn). A tool
    with ``ends_live_agent = True`` ends the agent that called it once its result is out."""

    requests: LiveSource
    history: list[Message] = field(default_factory=list)
    run_path: Sequence[Any] = ()
    extra_tools: tuple[BaseTool, ...] = ()
    closed: bool = False
    """Set by the agent that took the close request: the session is over."""


@runtime_checkable
class LiveAgent(Protocol):
    """An agent that can run live (ADK-Go's live capability, checked by
    :meth:`rillet.Runner.run_live`). ``run_live`` raises at once if this agent cannot run
    live as configured, else returns its events; they end when the requests close."""

    @property
    def name(self) -> str: ...

    def run_live(self, input: AgentInput, live: LiveContext, **options: Any) -> AsyncIterator[AgentEvent]: ...


@dataclass(frozen=True, slots=True)
class LiveStatus:
    """What a live event says besides its message, carried as its
    ``action.customized_action``: a ``partial`` chunk (the whole message follows), the end of
    the model's turn (``turn_complete``), or its answer cut by the user (``interrupted``)."""

    partial: bool = False
    turn_complete: bool = False
    interrupted: bool = False


def live_status(event: AgentEvent) -> LiveStatus | None:
    """The :class:`LiveStatus` of a live run's event (None for whole messages and tool events)."""
    action = event.action
    status = action.customized_action if action is not None else None
    return status if isinstance(status, LiveStatus) else None
