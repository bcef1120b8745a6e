"""The ReAct loop's state: the record a run carries from step to step, the state of the tool
round in progress, and what an interrupted round saves in the checkpoint.

A step is an async function ``step(deps, loop) -> next step | None`` (``deps``: what the run
takes from its agent, :class:`~rillet.chatmodel.deps.ReactDeps`): it does one piece of work (call the model, read its streamed reply, run or collect tool calls, end the round,
finish), appends the events it produces to ``loop.out`` (the agent yields them before the
next step runs) and returns the step that comes next, or None when the run is over.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from rillet._core.loop import Inbox
from rillet._core.scope import OBSERVING, Observers
from rillet._native import AgenticMessage, Message, StreamReader, ToolCall
from rillet.chatmodel.config import ModelContext
from rillet.checkpoint.state import checkpoint_state
from rillet.data.events import AgentEvent
from rillet.data.run_config import BUDGET, RunBudget
from rillet.errors import Interrupted

if TYPE_CHECKING:
    from rillet.chatmodel.deps import ReactDeps
    from rillet.checkpoint.journal import AgentSteps
    from rillet.tools import ToolInfo

__all__ = ["ReactLoop", "Round", "RoundState", "Step", "run_typed"]

Step = Callable[["ReactDeps", "ReactLoop"], Awaitable["Step | None"]]


@checkpoint_state("rillet.chatmodel.round")
@dataclass(frozen=True, slots=True)
class RoundState:
    """What an interrupted tool round saves: the conversation up to the tool-call message, the
    results of the calls that completed (by position in the call list: ids may repeat or be
    empty), the loop's counters, the records of a held return-directly event that carried
    an action (an exit or transfer the resumed round must still deliver), and the run-local
    values (:func:`rillet.set_run_local_value`), if any."""

    LEGACY_KIND = "rillet.chatmodel.round"

    messages: tuple[Message, ...]
    completed: dict[int, Message]
    remaining: int
    iteration: int
    final: list[Any] | None = None
    locals: dict[str, Any] | None = None

    @classmethod
    def from_legacy(cls, saved: dict[str, Any]) -> RoundState:
        """The dict form checkpoints held before this class existed."""
        completed = {int(k): v for k, v in saved["completed"].items()}
        return cls(
            tuple(saved["messages"]), completed, int(saved["remaining"]), int(saved["iteration"]), saved.get("final")
        )


@dataclass(slots=True)
class Round:
    """The tool round in progress: the calls of the last model message and how far they got."""

    calls: Sequence[ToolCall]
    direct: int  # the position of the return-directly call (its event is held to the end), -1 if none
    results: dict[int, Message]
    pending: list[tuple[int, ToolCall]] = field(default_factory=list)
    saved_final: list[Any] | None = None
    next: int = 0  # the next pending call to run, when they run inline
    signals: list[Interrupted] = field(default_factory=list)
    final: AgentEvent | None = None
    futures: dict[int, asyncio.Future[Message]] = field(default_factory=dict)  # streaming tools' results
    tasks: dict[asyncio.Task[Any], int] = field(default_factory=dict)  # concurrent calls -> position
    inbox: Inbox[tuple[str, Any]] | None = None
    left: int = 0  # concurrent calls not finished yet
    known: frozenset[int] = frozenset()  # results saved or recorded already: not recorded again

    def cancel(self) -> None:
        for t in self.tasks:
            # a run dropped with its loop closed is finalized later by the garbage collector:
            # a task of a closed loop never runs again, and cancelling it would raise
            if not t.get_loop().is_closed():
                t.cancel()


@dataclass(slots=True)
class ReactLoop:
    """One run's state: the conversation, the model-call budget, the current round and the
    events the last step produced."""

    messages: list[Message]
    remaining: int  # model calls left
    iteration: int  # model calls made
    streaming: bool
    model_options: dict[str, Any]
    out: list[AgentEvent] = field(default_factory=list)
    mctx: ModelContext | None = None
    reply: StreamReader[Message] | Message | None = None  # the model's reply, between two steps
    round: Round | None = None
    joining: tuple[ToolCall, asyncio.Future[Message]] | None = None  # a streaming tool's result, one-call round
    resumed: RoundState | None = None  # the saved round to rerun first
    final_text: str = ""
    value: Any = None  # the validated answer of an agent with an output_type
    failures: int = 0  # replies that failed the output_type
    observing: Observers | None = field(default_factory=OBSERVING.get)  # read once a run: zero cost without
    budget: RunBudget | None = field(default_factory=BUDGET.get)  # the Runner run's limits (max_llm_calls)
    tools: list[ToolInfo] | None = None  # the tools offered, once a middleware rewrote them
    locals: dict[str, Any] | None = None  # the run-local values
    input_messages: list[Message] | None = None  # what the input guardrails check (a new run)
    guard_retries: int = 0  # answers an output guardrail sent back to the model
    evloop: asyncio.AbstractEventLoop | None = None  # where the run runs (send_event from a thread)
    thread: int = 0
    steps: AgentSteps | None = None  # the step record (Runner(durability="step")), else None
    output_stored: bool = False  # the answer is in the session under output_key (store_output)
    agentic: bool = False  # the conversation is AgenticMessages: tool results join as tool_result blocks

    # --- the agent run's host (rillet.run.context.AgentRunHost): send_event, run-local values ---

    def hosted(self) -> ReactLoop:
        """Notes where the run runs, for :meth:`send_event` from a tool's worker thread."""
        self.evloop = asyncio.get_running_loop()
        self.thread = threading.get_ident()
        return self

    def send_event(self, event: AgentEvent) -> None:
        if threading.get_ident() != self.thread and self.evloop is not None and not _runs_here(self.evloop):
            self.evloop.call_soon_threadsafe(self._send, event)  # after what the thread sent before
        else:
            self._send(event)

    def _send(self, event: AgentEvent) -> None:
        rnd = self.round
        if rnd is not None and rnd.inbox is not None:  # concurrent tool calls: out with their events
            rnd.inbox.put_nowait(("event", event))
        else:  # out after the step that sends it, before the step's own later events
            self.out.append(event)

    def run_locals(self) -> dict[str, Any]:
        if self.locals is None:
            self.locals = {}
        return self.locals

    def close(self) -> None:
        """Stops the round's calls that still run (the run ended or was dropped)."""
        if self.round is not None:
            self.round.cancel()


def _runs_here(evloop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``evloop`` runs on this thread now: a loop's turns may run on different threads
    (Temporal's workflow loop does, and it has no ``call_soon_threadsafe``)."""
    try:
        return asyncio.get_running_loop() is evloop
    except RuntimeError:  # no loop runs on this thread (a tool's worker thread)
        return False


def run_typed(loop: ReactLoop, msg: Message | AgenticMessage) -> Message:
    """``msg`` (one the agent or a callback made) in the conversation's message type: a
    block-list run keeps one type (a tool message becomes a user message of one tool_result
    block; a Message that cannot hold an AgenticMessage raises MessageConversionError). Typed
    as Message, as the loop is: it carries an AgenticMessage the same way."""
    if loop.messages and type(msg) is not type(loop.messages[0]):
        msg = AgenticMessage.from_message(msg) if type(msg) is Message else msg.to_message()
    return cast(Message, msg)
