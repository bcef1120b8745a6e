"""Agent events (Eino's ``AgentEvent`` family): what a run hands its consumer, one at a time.

An event carries at most one of: output (a model or tool message, whole or streamed, or any
customized value), an action (exit, interrupt, transfer, break-loop, or a customized one) and an
error. ``agent_name`` and ``run_path`` are filled by the framework (the Runner and the flow
wrapper), never by agent code.

Streams are exclusive: a ``MessageVariant``'s ``message_stream`` belongs to whoever holds the
event. ``MessageVariant.get_message()`` drains it; the module function :func:`peek_message`
copies it first, so the event can still be read afterwards.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import GenericAlias
from typing import TYPE_CHECKING, Any, Literal, overload

from rillet._core.interrupt import InterruptInfo, InterruptSignal
from rillet._native import MessageAccumulator, StreamReader, concat_message_stream
from rillet.data._generic import MessageGeneric
from rillet.data.schema import MessageT, aconcat_message_stream

__all__ = [
    "AgentAction",
    "AgentEvent",
    "AgentOutput",
    "BreakLoopAction",
    "MessageVariant",
    "RunPath",
    "RunStep",
    "TransferToAgentAction",
    "aget_message",
    "apeek_message",
    "event_from_message",
    "get_message",
    "new_break_loop_action",
    "new_exit_action",
    "new_transfer_to_agent_action",
    "peek_message",
]

Role = Literal["assistant", "tool"]


@dataclass(frozen=True, slots=True)
class RunStep:
    """One agent on a run path. Immutable and owned by the framework."""

    agent_name: str

    def __str__(self) -> str:
        return self.agent_name


class RunPath(Sequence[RunStep]):
    """A run path: the steps from the run's root to an agent, an immutable sequence of
    :class:`RunStep` that compares equal to the tuple of the same steps (and hashes alike).

    Each path is its last step plus a link to the path before it, so extending a path costs
    O(1) and paths share their prefixes: a LoopAgent's path grows by one step an iteration,
    and its thousands of events would otherwise each hold their own copy (quadratic time and
    memory). ``len`` and ``path[-1]`` are O(1), other indexes O(log n) (jump pointers), and
    iteration and ``tuple(path)`` O(n)."""

    __slots__ = ("__weakref__", "_hash", "_jump", "_last", "_len", "_parent", "_step")

    _parent: RunPath | None
    _step: RunStep | None
    _len: int
    _jump: RunPath  # an ancestor a power-of-two-like distance up (Myers' skew-binary jumps)
    _hash: int | None
    _last: weakref.ref[RunPath] | None  # the path last made by extending this one

    def __new__(cls, steps: Iterable[RunStep] = ()) -> RunPath:
        if isinstance(steps, RunPath):
            return steps
        path = _EMPTY_PATH
        for step in steps:
            path = path._append(step)
        return path

    @classmethod
    def _root(cls) -> RunPath:
        root = object.__new__(cls)
        root._parent, root._step, root._len, root._jump, root._hash, root._last = None, None, 0, root, None, None
        return root

    def _append(self, step: RunStep) -> RunPath:
        """This path plus ``step``: the same object as the last time it was extended by an
        equal step (a workflow's next path is the one its child ran under), else a new one."""
        last = self._last() if self._last is not None else None
        if last is not None and (last._step is step or last._step == step):
            return last
        node = object.__new__(RunPath)
        node._parent, node._step, node._len, node._hash, node._last = self, step, self._len + 1, None, None
        j = self._jump
        node._jump = j._jump if self._len - j._len == j._len - j._jump._len else self
        self._last = weakref.ref(node)
        return node

    def _ancestor(self, depth: int) -> RunPath:
        node = self
        while node._len > depth:
            node = node._jump if node._jump._len >= depth else node._parent  # type: ignore[assignment]
        return node

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> RunStep: ...
    @overload
    def __getitem__(self, index: slice) -> RunPath: ...
    def __getitem__(self, index: int | slice) -> RunStep | RunPath:
        if isinstance(index, slice):
            start, stop, stride = index.indices(self._len)
            if start == 0 and stride == 1:
                return self._ancestor(max(stop, 0))  # a prefix: shared, not copied
            return RunPath(tuple(self)[index])
        i = index.__index__()
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("run path index out of range")
        step = self._ancestor(i + 1)._step
        assert step is not None
        return step

    def __reversed__(self) -> Iterator[RunStep]:
        node = self
        while node._step is not None:
            yield node._step
            node = node._parent  # type: ignore[assignment]

    def __iter__(self) -> Iterator[RunStep]:
        steps = list(self.__reversed__())
        steps.reverse()
        return iter(steps)

    def __contains__(self, value: object) -> bool:
        return any(step == value for step in self.__reversed__())

    def __add__(self, steps: Iterable[RunStep]) -> RunPath:
        """This path extended with ``steps`` (sharing this one)."""
        if not isinstance(steps, (tuple, list, RunPath)):
            return NotImplemented
        path = self
        for step in steps:
            path = path._append(step)
        return path

    def __radd__(self, other: tuple[RunStep, ...]) -> RunPath:
        if not isinstance(other, tuple):
            return NotImplemented
        return RunPath(other) + self

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, RunPath):
            if other._len != self._len:
                return False
            a, b = self, other
            while a is not b:  # up to the shared prefix
                if a._step != b._step:
                    return False
                a, b = a._parent, b._parent  # type: ignore[assignment]
            return True
        if isinstance(other, tuple):
            return len(other) == self._len and all(x == y for x, y in zip(reversed(other), self.__reversed__()))
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self))  # equal to the equal tuple's
        return self._hash

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (RunPath, (tuple(self),))


_EMPTY_PATH = RunPath._root()

# Internal: rillet's run context, observer, workflows and checkpoint writer extend paths one step
# at a time and find a path's parent in O(1); users write ``path + (step,)`` and ``path[:-1]``.
extend_path = RunPath._append
"""``extend_path(path, step)``: ``path`` plus ``step``, sharing ``path`` (RunPath's own O(1) step)."""


def parent_path(path: RunPath) -> RunPath | None:
    """The path ``path`` extends by its last step (None for the empty path), in O(1)."""
    return path._parent


@dataclass(slots=True)
class MessageVariant(MessageGeneric[MessageT]):
    """A message output: whole (``message``) or streamed (``message_stream`` of chunks).

    ``role`` is ``"assistant"`` for model output and ``"tool"`` for tool results;
    ``tool_name`` names the tool (the only way to know it before reading a stream).
    Generic over the message type: ``MessageVariant[AgenticMessage]`` holds block-list
    messages; plain ``MessageVariant`` means ``MessageVariant[Message]``.
    """

    if not TYPE_CHECKING:  # generic to a type checker only: see MessageGeneric
        __class_getitem__ = classmethod(GenericAlias)

    is_streaming: bool = False
    message: MessageT | None = None
    message_stream: StreamReader[MessageT] | None = None
    role: Role = "assistant"
    tool_name: str = ""

    def get_message(self) -> MessageT:
        """The whole message. Destructive for a stream: it is drained (in Rust), concatenated
        and kept, so later calls return the same message and the stream is gone.

        Raises the stream's error if it failed, and ``ValueError`` if it held no chunk."""
        if self.message is not None:
            return self.message
        if self.message_stream is None:
            raise ValueError("MessageVariant holds neither a message nor a stream")
        stream, self.message_stream = self.message_stream, None
        self.message = _concat_nonempty(stream)
        return self.message

    async def aget_message(self) -> MessageT:
        """``await`` twin of :meth:`get_message`, for use inside an event loop."""
        if self.message is not None:
            return self.message
        if self.message_stream is None:
            raise ValueError("MessageVariant holds neither a message nor a stream")
        stream, self.message_stream = self.message_stream, None
        msg: MessageT = await aconcat_message_stream(stream)  # type: ignore[assignment]  # the stream's own type
        if not msg.role and not msg.content and not msg.tool_calls:
            raise ValueError("no messages in MessageVariant.message_stream")
        self.message = msg
        return msg


def _concat_nonempty(stream: StreamReader[MessageT]) -> MessageT:
    acc: MessageAccumulator[Any] = MessageAccumulator()
    with stream:
        for chunk in stream:
            acc.push(chunk)
    if len(acc) == 0:
        raise ValueError("no messages in MessageVariant.message_stream")
    finished: MessageT = acc.finish()
    return finished


@dataclass(slots=True)
class AgentOutput(MessageGeneric[MessageT]):
    """What an event outputs: a message (``message_output``) and/or any ``customized_output``."""

    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(GenericAlias)

    message_output: MessageVariant[MessageT] | None = None
    customized_output: Any = None


@dataclass(frozen=True, slots=True)
class TransferToAgentAction:
    """Hand control to the agent named ``dest_agent_name`` (a sub-agent or the parent)."""

    dest_agent_name: str


@dataclass(slots=True)
class BreakLoopAction:
    """Stop the nearest enclosing ``LoopAgent``. The first loop that acts on it sets
    ``done`` so outer loops carry on; ``current_iterations`` is the loop's count then."""

    from_agent: str
    done: bool = False
    current_iterations: int = 0


@dataclass(slots=True)
class AgentAction:
    """A control-flow signal carried by an event. The framework interprets ``exit``,
    ``interrupted``, ``transfer_to_agent`` and ``break_loop``; ``customized_action`` is passed
    through untouched. ``state_delta`` (ADK's ``EventActions.state_delta``) tells the consumer
    which session values the event's agent wrote (``output_key``, agent callbacks): they are
    in the session already when the event goes out."""

    exit: bool = False
    interrupted: InterruptInfo | None = None
    transfer_to_agent: TransferToAgentAction | None = None
    break_loop: BreakLoopAction | None = None
    customized_action: Any = None
    state_delta: dict[str, Any] | None = None
    _signal: InterruptSignal | None = field(default=None, repr=False, compare=False)
    """The interrupt tree the Runner saves in the checkpoint (set with ``interrupted``).
    Private, like the unexported field Eino keeps beside ``Interrupted``: its shape is the
    checkpoint's business, and users read ``interrupted.interrupt_contexts`` instead."""


def interrupt_signal(action: AgentAction) -> InterruptSignal | None:
    """The interrupt tree ``action`` carries (None unless it interrupts): what the Runner
    saves in the checkpoint and a workflow or AgentTool wraps in its own interrupt. Internal:
    rillet's read-only access to :attr:`AgentAction._signal`, which users do not read."""
    return action._signal


def interrupt_action(info: InterruptInfo, signal: InterruptSignal) -> AgentAction:
    """An action that interrupts with ``info``, carrying ``signal`` (internal: made by
    the constructors in rillet.run.interrupts)."""
    return AgentAction(interrupted=info, _signal=signal)


def new_exit_action() -> AgentAction:
    """An action that ends the enclosing flow (no transfer; Sequential and Loop stop)."""
    return AgentAction(exit=True)


def new_transfer_to_agent_action(dest_agent_name: str) -> AgentAction:
    """An action that transfers control to the agent named ``dest_agent_name``."""
    return AgentAction(transfer_to_agent=TransferToAgentAction(dest_agent_name))


def new_break_loop_action(agent_name: str) -> AgentAction:
    """An action, sent by the agent ``agent_name``, that ends the nearest LoopAgent."""
    return AgentAction(break_loop=BreakLoopAction(agent_name))


@dataclass(slots=True)
class AgentEvent(MessageGeneric[MessageT]):
    """One event of a run. ``error`` set means the run (or that agent) failed: errors are
    events, ``run`` never raises. Generic over the message type (to a type checker only:
    nothing is checked at run time): ``AgentEvent[AgenticMessage]`` for a run on
    block-list messages; plain ``AgentEvent`` means ``AgentEvent[Message]``."""

    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(GenericAlias)

    agent_name: str = ""
    run_path: Sequence[RunStep] = ()
    """A :class:`RunPath` when the framework set it (a tuple in events restored from a
    checkpoint); both compare equal to the tuple of their steps."""
    output: AgentOutput[MessageT] | None = None
    action: AgentAction | None = None
    error: BaseException | None = None
    branch: str | None = None
    """The Parallel lane the event was made in (ADK's ``Event.branch``): ``"par.child"`` for
    an agent running as the child ``child`` of the ParallelAgent ``par``; a lane inside a
    lane adds to its name (``"outer.a.inner.x"``). None outside any ParallelAgent. Filled by
    the framework, like ``run_path``."""

    @property
    def message_output(self) -> MessageVariant[MessageT] | None:
        """Shortcut for ``event.output.message_output`` (None when there is none)."""
        out = self.output
        return None if out is None else out.message_output

    def __repr__(self) -> str:
        parts = [f"agent_name={self.agent_name!r}"]
        if self.run_path:
            parts.append("run_path=" + "/".join(s.agent_name for s in self.run_path))
        mv = self.message_output
        if mv is not None:
            what = "stream" if mv.is_streaming and mv.message is None else repr(mv.message)
            parts.append(f"{mv.role}{'[' + mv.tool_name + ']' if mv.tool_name else ''}={what}")
        if self.output is not None and self.output.customized_output is not None:
            parts.append(f"customized_output={self.output.customized_output!r}")
        if self.action is not None:
            parts.append(f"action={self.action!r}")
        if self.error is not None:
            parts.append(f"error={self.error!r}")
        if self.branch is not None:
            parts.append(f"branch={self.branch!r}")
        return f"AgentEvent({', '.join(parts)})"


def error_event(error: BaseException, agent_name: str = "", run_path: Sequence[RunStep] = ()) -> AgentEvent:
    """The one event an exception raised by agent code becomes (errors are events: a run
    never raises); it is the last event of the stream it ends."""
    return AgentEvent(agent_name, run_path, None, None, error)


def event_from_message(
    message: MessageT | None,
    stream: StreamReader[MessageT] | None = None,
    role: Role = "assistant",
    tool_name: str = "",
) -> AgentEvent[MessageT]:
    """An event whose output is ``message``, or ``stream`` when one is given (then it is a
    streaming event). No agent name, run path or action: the framework adds those."""
    # positional arguments: this runs twice per ReAct step
    return AgentEvent("", (), AgentOutput(MessageVariant(stream is not None, message, stream, role, tool_name), None))


def _split_for_reading(event: AgentEvent[MessageT]) -> tuple[MessageT | None, StreamReader[MessageT] | None]:
    """(the whole message, None), or (None, a copy of the stream to read; the event keeps the
    other copy)."""
    mv = event.message_output
    if mv is None or mv.message is not None or mv.message_stream is None:
        return (mv.message if mv is not None else None), None
    keep, read = mv.message_stream.copy(2)
    mv.message_stream = keep
    return None, read


def peek_message(event: AgentEvent[MessageT]) -> MessageT | None:
    """The event's message, without consuming it: a stream is copied, one copy goes back into
    the event and the other is concatenated. None when the event has no message output.
    (:meth:`MessageVariant.get_message` instead drains the stream.)"""
    message, read = _split_for_reading(event)
    return concat_message_stream(read) if read is not None else message  # type: ignore[return-value]


async def apeek_message(event: AgentEvent[MessageT]) -> MessageT | None:
    """``await`` twin of :func:`peek_message`, for use inside an event loop."""
    message, read = _split_for_reading(event)
    return await aconcat_message_stream(read) if read is not None else message  # type: ignore[return-value]


def _renamed(old: str, new: str) -> None:
    warnings.warn(
        f"rillet.{old}(event) is deprecated: use rillet.{new}(event) (same behaviour: it does not "
        "consume the event's stream, unlike MessageVariant.get_message())",
        DeprecationWarning,
        stacklevel=3,
    )


def get_message(event: AgentEvent[MessageT]) -> MessageT | None:
    """Deprecated alias of :func:`peek_message`: the name read as if it drained the event, like
    :meth:`MessageVariant.get_message`, which it does not."""
    _renamed("get_message", "peek_message")
    return peek_message(event)


async def aget_message(event: AgentEvent[MessageT]) -> MessageT | None:
    """Deprecated alias of :func:`apeek_message`."""
    _renamed("aget_message", "apeek_message")
    return await apeek_message(event)


def copy_event(event: AgentEvent[MessageT]) -> AgentEvent[MessageT]:
    """A new event sharing everything but the stream, which is split with ``copy(2)``: the
    original keeps one half and the copy gets the other. Used wherever an event fans out."""
    out = event.output
    if out is not None and out.message_output is not None and out.message_output.message_stream is not None:
        mv = out.message_output
        keep, give = mv.message_stream.copy(2)  # type: ignore[union-attr]
        mv.message_stream = keep
        out = AgentOutput(
            MessageVariant(mv.is_streaming, mv.message, give, mv.role, mv.tool_name),
            out.customized_output,
        )
    return AgentEvent(event.agent_name, event.run_path, out, event.action, event.error, event.branch)
