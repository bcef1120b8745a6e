"""The run context (Eino's ``ctx``), carried in :mod:`contextvars`.

A Runner run installs a :class:`RunContext`: the session (values shared by every agent of the
run, and the log of recorded events), the run path and the interrupt address. Agent bodies,
tools and callbacks reach it through the module functions below without passing anything
around. Outside a run the session functions are silent no-ops, as in Eino.

Sync tools run in worker threads with a copy of the caller's context, so they see the same
session; the session is guarded by a lock because those threads may write to it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rillet._core.address import Address, agent_segment
from rillet._core.interrupt import NOT_RESUMING, ResumePoint
from rillet._core.scope import RUN, TOOL_CALL, current_resume
from rillet.data import codec
from rillet.data.events import AgentEvent, AgentOutput, MessageVariant, RunPath, RunStep, extend_path
from rillet.data.run_config import BUDGET

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from rillet._native import ContentPart, Message
    from rillet.data.events import AgentAction
    from rillet.run.agent import AgentInput

__all__ = [
    "CALLBACK",
    "SESSION_STATE",
    "AgentRunHost",
    "InvocationEnded",
    "SessionState",
    "add_session_value",
    "add_session_values",
    "delete_run_local_value",
    "end_invocation",
    "get_run_local_value",
    "get_session_value",
    "get_session_values",
    "send_event",
    "send_tool_gen_action",
    "send_tool_parts",
    "set_run_local_value",
]


@dataclass(eq=False)
class Session:
    """State shared by every agent of one run: ``values`` and the recorded ``events``.

    A parallel workflow gives each child a *lane*: a session sharing ``values`` (and their
    lock) whose event log starts as a copy of the parent's; the lanes' new events are joined
    back in the order they were recorded (``stamps``) once every child has finished.
    """

    values: dict[str, Any] = field(default_factory=dict)
    events: list[AgentEvent] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    stamps: list[int] = field(default_factory=list, repr=False)
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)
    """What the framework derives from the log and keeps up to date as it grows."""
    pending: list[Any] | None = field(default=None, repr=False)
    """Plain assistant messages logged but not yet made events (see :meth:`pending_messages`):
    ``agent_name, run_path, message`` for each, flat."""
    branch: str | None = None
    """The ParallelAgent lane this session is (see :meth:`lane`), or None: the ``branch`` of
    the events made in it."""

    def pending_messages(self) -> list[Any]:
        """The list the flow appends ``agent_name, run_path, message`` to, for each plain
        assistant message its run's root says, in a run nothing saves: only the agents nested
        in that run read the log, so the messages become events when the log is next read or
        added to (:meth:`snapshot`, :meth:`lane`, :meth:`record`, :meth:`restore`). A whole
        event kept for the rest of a long run is four objects the garbage collector walks again
        and again; a message is one."""
        if self.pending is None:
            self.pending = []
        return self.pending

    def _settle(self) -> None:
        """Makes the pending messages events at the end of the log (under ``lock``). Whole
        triples only, removed as read: the flow appends on the event loop's thread without the
        lock, and list operations are atomic."""
        pending = self.pending
        if not pending:
            return
        n = len(pending) // 3 * 3
        items = pending[:n]
        del pending[:n]
        for i in range(0, n, 3):
            message = AgentOutput(MessageVariant(False, items[i + 2]))
            self.events.append(AgentEvent(items[i], items[i + 1], message, None, None, self.branch))
        self.stamps.extend([time.monotonic_ns()] * (n // 3))

    def record(self, event: AgentEvent) -> None:
        """Appends ``event`` to the log, stamped with the time it was recorded."""
        stamp = time.monotonic_ns()
        lock = self.lock
        lock.acquire()  # not `with`: this runs for every event, and two appends cannot raise
        if self.pending:
            self._settle()
        self.events.append(event)
        self.stamps.append(stamp)
        lock.release()

    def restore(self, events: Iterable[AgentEvent], stamps: Sequence[int] | None = None) -> None:
        """Appends ``events`` in one go, as when a checkpoint rebuilds a log: one lock, one
        stamp. They keep their order among themselves, come after what was recorded before and
        before what is recorded after; in a parallel join, lanes restored with equal stamps
        keep lane order. ``stamps`` (one per event, all earlier than now) restore a lane's
        place among its siblings' events (see :meth:`order`)."""
        events = list(events)
        if stamps is not None and len(stamps) != len(events):
            raise ValueError(f"a parallel lane was saved with {len(events)} events but {len(stamps)} stamps")
        with self.lock:
            self._settle()
            self.events.extend(events)
            self.stamps.extend([time.monotonic_ns()] * len(events) if stamps is None else stamps)

    def close_streams(self) -> None:
        """Closes the streams of recorded events no one read: at the end of a run, so that a
        producer (a model's HTTP response) learns that nobody will read the rest."""
        with self.lock:
            events = list(self.events)
        for ev in events:
            out = ev.output
            mv = out.message_output if out is not None else None
            if mv is not None and mv.message_stream is not None:
                mv.message_stream.close()

    def snapshot(self, start: int = 0) -> list[AgentEvent]:
        """A copy of the event log (from its ``start``-th event)."""
        with self.lock:
            self._settle()
            return self.events[start:]

    def lane(self, name: str | None = None) -> Session:
        """A session for one concurrent child: shared values, its own copy of the log; its
        branch is ``name`` after this session's branch (``"outer.a" + "." + name``)."""
        with self.lock:
            self._settle()
            lane = Session(self.values, list(self.events), self.lock, list(self.stamps))
        if name is not None:
            lane.branch = name if self.branch is None else f"{self.branch}.{name}"
        return lane

    @staticmethod
    def order(lanes: list[Session], base: int) -> list[list[int]]:
        """For each lane, the places its events beyond ``base`` take in the order :meth:`join`
        commits them in: what a checkpoint keeps of the stamps (clocks differ between processes)."""
        new = sorted((stamp, i, j) for i, lane in enumerate(lanes) for j, stamp in enumerate(lane.stamps[base:]))
        places: list[list[int]] = [[0] * (len(lane.stamps) - base) for lane in lanes]
        for place, (_, i, j) in enumerate(new):
            places[i][j] = place
        return places

    def join(self, lanes: list[Session], base: int) -> None:
        """Commits the events the ``lanes`` recorded beyond their first ``base`` (the length of
        this log when they were made), in recording order, after what this log gained meanwhile
        (its own agent went on while they ran)."""
        with self.lock:
            self._settle()
            new = sorted(
                (stamp, i, j, ev)
                for i, lane in enumerate(lanes)
                for j, (stamp, ev) in enumerate(zip(lane.stamps[base:], lane.events[base:], strict=True))
            )
            for stamp, _, _, ev in new:
                self.events.append(ev)
                self.stamps.append(stamp)


class RunContext:
    """Where the running code sits: its session, run path and interrupt address, and, in a
    resumed run, what it gets back (``point``). ``host``, the one field that changes, is the
    agent run going on in this context (see :func:`host_agent_run`). Immutable otherwise.

    A child's address is its parent's plus one segment, built on first use: the agents of a
    transfer chain nest, and copying the whole chain's address for every hop would make the
    ten-thousandth transfer cost ten thousand times the first, for an address that only an
    interrupt, a resume, a step record or an observer reads."""

    __slots__ = ("_address", "_up", "host", "point", "root_input", "run_path", "session")

    session: Session
    run_path: RunPath
    root_input: AgentInput | None
    point: ResumePoint
    host: AgentRunHost | None
    _address: Address | None  # None until built from _up
    _up: tuple[RunContext, str] | None  # the parent and this context's agent name, until then

    def __init__(
        self,
        session: Session,
        run_path: Iterable[RunStep] = (),
        address: Address = (),
        root_input: AgentInput | None = None,
        point: ResumePoint = NOT_RESUMING,
        host: AgentRunHost | None = None,
    ) -> None:
        init = object.__setattr__  # (immutable: __setattr__ refuses)
        init(self, "session", session)
        init(self, "run_path", RunPath(run_path))  # a tuple from a caller: shared from here on
        init(self, "_address", address)
        init(self, "_up", None)
        init(self, "root_input", root_input)
        init(self, "point", point)
        init(self, "host", host)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"RunContext is immutable: cannot set {name!r}")

    def __repr__(self) -> str:
        return f"RunContext(run_path={self.run_path!r}, address={self.address!r}, point={self.point!r})"

    @property
    def address(self) -> Address:
        """The interrupt address: the run's root agent down to this one (a tuple of segments)."""
        address = self._address
        if address is None:  # built once, walking up to the nearest context that has its own
            segments, node = [], self
            while node._address is None:
                assert node._up is not None
                node, name = node._up
                segments.append(agent_segment(name))
            segments.reverse()
            address = (*node._address, *segments)
            object.__setattr__(self, "_address", address)
            object.__setattr__(self, "_up", None)
        return address

    def with_root_input(self, root_input: AgentInput) -> RunContext:
        """This context with the run's ``root_input`` (set by the run's root agent)."""
        return RunContext(self.session, self.run_path, self.address, root_input, self.point, self.host)

    def child(self, agent_name: str) -> RunContext:
        """The context of an agent named ``agent_name`` running under this one. In a resumed
        run, entering the address takes that address's saved state and resume data."""
        path = extend_path(self.run_path, RunStep(agent_name))
        resume = current_resume()
        if resume is not None:
            address = (*self.address, agent_segment(agent_name))
            return RunContext(self.session, path, address, self.root_input, resume.enter(address))
        child = RunContext(self.session, path, (), self.root_input)
        object.__setattr__(child, "_address", None)
        object.__setattr__(child, "_up", (self, agent_name))
        return child


def current_run() -> RunContext | None:
    """The run context of the calling code, or None outside a run."""
    return RUN.get()  # type: ignore[return-value]  # rillet only ever sets RunContexts in it


def add_session_value(key: str, value: Any) -> None:
    """Stores ``value`` under ``key`` in the run's session (visible to every agent of the run,
    saved in checkpoints). Does nothing outside a run."""
    run = current_run()
    if run is not None:
        with run.session.lock:
            run.session.values[key] = value


def add_session_values(values: Mapping[str, Any]) -> None:
    """Stores every item of ``values`` in the run's session. Does nothing outside a run."""
    run = current_run()
    if run is not None:
        with run.session.lock:
            run.session.values.update(values)


def get_session_value(key: str, default: Any = None) -> Any:
    """The session value under ``key``, or ``default`` when it is absent or outside a run."""
    run = current_run()
    if run is None:
        return default
    with run.session.lock:
        return run.session.values.get(key, default)


def get_session_values() -> dict[str, Any]:
    """A copy of all session values ({} outside a run)."""
    run = current_run()
    if run is None:
        return {}
    with run.session.lock:
        return dict(run.session.values)


class SessionState(MutableMapping[str, Any]):
    """The run's session values as a mapping (Google ADK's ``ctx.state``): what a model or
    tool callback reads and writes through its context's ``state``. Reads and writes go to
    the session of the run the code is called in, as :func:`get_session_value` and
    :func:`add_session_value` do; outside a run it is empty and a write is a RuntimeError."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        run = current_run()
        if run is None:
            raise KeyError(key)
        with run.session.lock:
            return run.session.values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if current_run() is None:
            raise RuntimeError(f"state[{key!r}] = ... outside a run: there is no session to write to")
        add_session_value(key, value)

    def __delitem__(self, key: str) -> None:
        run = current_run()
        if run is None:
            raise KeyError(key)
        with run.session.lock:
            del run.session.values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(get_session_values())  # a copy: another agent may write meanwhile

    def __len__(self) -> int:
        return len(get_session_values())

    def to_dict(self) -> dict[str, Any]:
        """A copy of every value."""
        return get_session_values()

    def __repr__(self) -> str:
        return f"SessionState({self.to_dict()!r})"


SESSION_STATE = SessionState()


@dataclass(eq=False, slots=True)
class ToolCallScope:
    """The tool call being executed: set by ChatModelAgent around each call. ``state`` is the
    calling agent's conversation, ``streaming`` its run's mode, ``emit`` (when the agent
    forwards internal events) hands an event to the agent's output; ``parts`` are the image
    and file parts the call's result carries (:func:`send_tool_parts`)."""

    tool_name: str
    call_id: str
    action: AgentAction | None = None
    state: list[Message] | None = None
    streaming: bool = False
    emit: Callable[[AgentEvent], None] | None = None
    point: ResumePoint = NOT_RESUMING
    parts: tuple[ContentPart, ...] = ()


def current_tool_call() -> ToolCallScope | None:
    """The tool call the calling code runs in, or None."""
    return TOOL_CALL.get()  # type: ignore[return-value]  # rillet only ever sets ToolCallScopes in it


def send_tool_gen_action(action: AgentAction) -> None:
    """Attaches ``action`` (exit, transfer, break-loop, customized) to the event of the tool
    call that is running. The last call wins. Only valid inside a tool that a ChatModelAgent
    is executing."""
    scope = current_tool_call()
    if scope is None:
        raise RuntimeError(
            "send_tool_gen_action() was called outside a tool call: call it from inside a tool "
            "that a ChatModelAgent is running"
        )
    scope.action = action


def send_tool_parts(*parts: ContentPart) -> None:
    """Adds image or file parts (:class:`rillet.ContentPart`) to the result of the tool call
    that is running: its tool message carries them in ``user_input_multi_content``, next to
    the result text, and the model receives them (how each API carries them: docs/models.md).
    A function tool does this for you when it returns a ContentPart or a list of str and
    ContentPart items. Only valid inside a tool that a ChatModelAgent is executing."""
    scope = current_tool_call()
    if scope is None:
        raise RuntimeError(
            "send_tool_parts() was called outside a tool call: call it from inside a tool that a ChatModelAgent is running"
        )
    scope.parts = (*scope.parts, *parts)


# --- the running agent: send_event and run-local values ------------------------------------


class AgentRunHost(Protocol):
    """What an agent run (a ChatModelAgent's) offers the code running in it: an event sink
    and the run-local values it saves in its checkpoints."""

    def send_event(self, event: AgentEvent) -> None: ...

    def run_locals(self) -> dict[str, Any]: ...


# An agent run is kept on its run context (one per agent run, made by the flow wrapper), not
# in a registry: hooks and tools reach it through the run context they already run in, and a
# run that is dropped unfinished leaves nothing behind.


def host_agent_run(run: RunContext, host: AgentRunHost | None) -> AgentRunHost | None:
    """Makes ``host`` the agent run of ``run``; returns the one it replaces, to be put back
    with another call when the run ends."""
    previous = run.host
    object.__setattr__(run, "host", host)  # (frozen: nothing else of a run context changes)
    return previous


def _host(what: str) -> AgentRunHost:
    run = current_run()
    host = run.host if run is not None else None
    if host is None:
        raise RuntimeError(
            f"{what}() was called outside a ChatModelAgent run: call it from a middleware hook or a tool "
            "while the agent runs"
        )
    return host


def send_event(event: AgentEvent) -> None:
    """Emits ``event`` into the running agent's event stream, after the events it has already
    produced (its author and run path are filled in like the agent's own). Callable from
    middleware hooks and tools, sync or async, while a ChatModelAgent runs."""
    _host("send_event").send_event(event)


def set_run_local_value(key: str, value: Any) -> None:
    """Stores ``value`` under ``key`` for the rest of this agent run (not shared with other
    runs or agents), saved with the run's checkpoint so a resumed run sees it: the value must
    be encodable by :mod:`rillet.codec` (register your own classes with ``register_type``)."""
    try:
        codec.encode(value)
    except Exception as e:
        raise TypeError(
            f"set_run_local_value({key!r}, ...): the value ({type(value).__name__}) cannot be saved in a "
            f"checkpoint: {e}. Register its class with rillet.codec.register_type, or keep it elsewhere "
            "(a session value does not need encoding until the run is checkpointed)"
        ) from e
    _host("set_run_local_value").run_locals()[key] = value


def get_run_local_value(key: str, default: Any = None) -> Any:
    """The run-local value under ``key``, or ``default``."""
    return _host("get_run_local_value").run_locals().get(key, default)


def delete_run_local_value(key: str) -> None:
    """Removes the run-local value under ``key`` (nothing if absent)."""
    _host("delete_run_local_value").run_locals().pop(key, None)


# --- ending the invocation -------------------------------------------------------------------

CALLBACK: ContextVar[str | None] = ContextVar("rillet_callback", default=None)
"""The callback or plugin hook running now (who :func:`end_invocation` names), set around
each call of one; None elsewhere."""


@dataclass(frozen=True, slots=True)
class InvocationEnded:
    """The ``action.customized_action`` of the last event of a run that
    :func:`end_invocation` ended: the agent it was called in, the tool call and the callback
    or plugin hook it was called from (None when it was not), and the reason given."""

    agent_name: str
    tool_name: str | None = None
    callback: str | None = None
    reason: str | None = None


codec.register_type(InvocationEnded, "rillet.invocation_ended")  # events are kept in sessions and checkpoints


def end_invocation(reason: str | None = None) -> None:
    """Ends the whole Runner run cleanly: the step under way finishes (the tool round, the
    model call and its callbacks), then nothing else runs (no model call, tool round,
    transfer or workflow child, in this agent or any agent around it, across agent tools),
    and the run's stream ends with an event whose ``action.customized_action`` is an
    :class:`InvocationEnded`. Not an error and not an interrupt: no checkpoint is saved.
    Callable from tools (sync ones on their worker thread too), callbacks, middleware hooks
    and plugins. The first call counts; later ones change nothing."""
    budget = BUDGET.get()
    if budget is None:
        raise RuntimeError(
            "end_invocation() was called outside a Runner run: call it from a tool, a callback or a plugin "
            "of an agent run by rillet.Runner"
        )
    if budget.ended is not None:
        return
    run = current_run()
    path = run.run_path if run is not None else None
    scope = current_tool_call()
    budget.ended = InvocationEnded(
        path[-1].agent_name if path else "",
        scope.tool_name if scope is not None else None,
        CALLBACK.get(),
        reason,
    )
