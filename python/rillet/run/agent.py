"""Agents: the ``Agent`` protocol, ``AgentInput`` and ``BaseAgent``.

An agent is an event-stream generator: ``agent.run(input)`` returns at once with an
:class:`RunIterator` of :class:`~rillet.data.events.AgentEvent` and does its work in a task. It never
raises: an exception in the agent's body becomes one error event that ends the stream.

Write an agent by subclassing :class:`BaseAgent` with an async generator ``_run``::

    class Greeter(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            yield event_from_message(Message.assistant("hello"))
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from types import GenericAlias
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from rillet._core.scope import PLUGINS
from rillet._native import AgenticMessage, Message
from rillet.data._generic import MessageGeneric
from rillet.data.event_pair import EventIterator
from rillet.data.events import AgentAction, AgentEvent, error_event, event_from_message
from rillet.data.run_config import BUDGET
from rillet.data.schema import MessageT
from rillet.errors import Interrupted
from rillet.run.context import CALLBACK, add_session_value, current_run, end_invocation
from rillet.run.plugin import Named, call_hook
from rillet.run.run_handle import RunBatches, RunIterator  # the consumer's end of a run: users import it here too
from rillet.run.run_handle import start_run as start_run  # a re-export as well

__all__ = [
    "Agent",
    "AgentCallback",
    "AgentInput",
    "BaseAgent",
    "CallbackContext",
    "RunBatches",
    "RunIterator",
    "StateDelta",
]


class AgentInput(MessageGeneric[MessageT]):
    """What an agent is asked: the conversation so far, and whether to stream if it can.
    Generic over the message type (``AgentInput[AgenticMessage]``); plain ``AgentInput``
    means ``AgentInput[Message]``."""

    __slots__ = ("_build", "_messages", "enable_streaming")
    if not TYPE_CHECKING:  # generic to a type checker only (rillet.data.schema.MessageGeneric)
        __class_getitem__ = classmethod(GenericAlias)
    __match_args__ = ("messages", "enable_streaming")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __init__(self, messages: list[MessageT] | None = None, enable_streaming: bool = False) -> None:
        self._messages: list[MessageT] | None = [] if messages is None else messages
        self._build: Callable[[], list[MessageT]] | None = None
        self.enable_streaming = enable_streaming

    @property
    def messages(self) -> list[MessageT]:
        """The conversation, oldest first."""
        messages = self._messages
        if messages is None:
            assert self._build is not None
            messages = self._messages = self._build()
            self._build = None
        return messages

    @messages.setter
    def messages(self, messages: list[MessageT]) -> None:
        self._messages, self._build = messages, None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentInput) or other.__class__ is not self.__class__:
            return NotImplemented
        return (self.messages, self.enable_streaming) == (other.messages, other.enable_streaming)

    def __repr__(self) -> str:
        return f"AgentInput(messages={self.messages!r}, enable_streaming={self.enable_streaming!r})"

    def __reduce__(self) -> tuple[type[AgentInput[Any]], tuple[list[MessageT], bool]]:
        return (AgentInput, (self.messages, self.enable_streaming))  # (copy and pickle: built first)


def deferred_input(build: Callable[[], list[Message]], enable_streaming: bool) -> AgentInput:
    """An input whose messages ``build()`` makes the first time they are read: a workflow
    child's history is the whole run so far, and a child that never reads it (a custom agent)
    must not pay for it on every one of a loop's thousands of rounds. Internal (the flow layer
    makes these)."""
    input = AgentInput(None, enable_streaming)
    input._messages, input._build = None, build
    return input


def _keep_dataclass_fields(cls: type) -> None:
    """Gives ``cls`` the fields of the dataclass it was (``messages``, ``enable_streaming``), so
    that ``dataclasses.replace(input, messages=...)`` (in a ``before_agent`` callback, say),
    ``fields``, ``asdict`` and ``is_dataclass`` work on it as they did: they read the fields
    through its attributes, so a deferred input is built first."""
    shadow = dataclasses.make_dataclass(
        cls.__name__,
        [("messages", list, dataclasses.field(default_factory=list)), ("enable_streaming", bool, False)],
    )
    cls.__dataclass_fields__ = shadow.__dataclass_fields__  # type: ignore[attr-defined]
    cls.__dataclass_params__ = shadow.__dataclass_params__  # type: ignore[attr-defined]


_keep_dataclass_fields(AgentInput)


@runtime_checkable
class Agent(Protocol[MessageT]):
    """Anything with a ``name``, a ``description`` and ``run(input, **options)`` returning
    an iterator of events at once. Generic over the message type, to a type checker:
    ``Agent[AgenticMessage]`` runs on block-list messages; plain ``Agent`` means
    ``Agent[Message]``."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def run(self, input: AgentInput[MessageT], **options: Any) -> EventIterator[AgentEvent[MessageT]]: ...


def run_events(agent: Agent, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
    """The events of ``agent`` run on ``input``, in the calling task when the agent is a
    :class:`BaseAgent` (no extra task or channel), else through its ``run`` iterator."""
    if isinstance(agent, BaseAgent):
        return agent.events(input, **options)
    return _iterate_run(agent, input, **options)


def raw_events(agent: Agent, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent] | None:
    """``agent``'s own ``_run`` events as they come (no callbacks, no authors, exceptions
    raised) when it is a :class:`BaseAgent` without agent callbacks, else None. For a driver
    that fills authors with :func:`author_of` and turns an exception into
    :func:`~rillet.data.events.error_event` itself (the flow wrapper): one generator fewer per event."""
    if isinstance(agent, BaseAgent) and not (agent.before_agent_callbacks or agent.after_agent_callbacks):
        plugins = PLUGINS.get()
        if plugins is None or not (plugins.before_agent or plugins.after_agent):
            return agent._run(input, **options)
    return None


async def _iterate_run(agent: Agent, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
    it = agent.run(input, **options)
    try:
        async for ev in it:
            yield ev
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


def _ended() -> bool:
    """Whether the invocation was ended (:func:`rillet.end_invocation`)."""
    budget = BUDGET.get()
    return budget is not None and budget.ended is not None


class StateDelta(dict[str, Any]):
    """The session values an agent wrote (a before/after-agent callback, ``output_key``),
    carried as an event's ``action.state_delta`` (ADK's ``EventActions.state_delta``)."""


def carry_state_delta(out: list[AgentEvent], delta: StateDelta) -> None:
    """Puts ``delta`` on the last event of ``out`` (events not gone out yet), beside its
    action if it has one, or, when there is none (or it is an error or an interrupt), on an
    event of its own at the end."""
    last = out[-1] if out else None
    if last is None or last.error is not None or (last.action is not None and last.action.interrupted is not None):
        out.append(AgentEvent(action=AgentAction(state_delta=delta)))
        return
    action = last.action
    if action is None:
        last.action = AgentAction(state_delta=delta)
    else:  # a new action: the event's may be shared (a tool's send_tool_gen_action)
        merged = StateDelta(action.state_delta or {})
        merged.update(delta)
        last.action = dataclasses.replace(action, state_delta=merged)


class _CallbackState:
    """The session values as a callback sees them: writes go to the session at once and are
    remembered as the callback's state delta."""

    def __init__(self, delta: StateDelta) -> None:
        self._delta = delta

    def __getitem__(self, key: str) -> Any:
        run = current_run()
        if run is None:
            return self._delta[key]
        with run.session.lock:
            return run.session.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return self.get(key, _MISSING) is not _MISSING  # type: ignore[arg-type]

    def __setitem__(self, key: str, value: Any) -> None:
        add_session_value(key, value)
        self._delta[key] = value


_MISSING = object()


@dataclass(slots=True)
class CallbackContext:
    """What a before/after-agent callback gets: the agent's name, its input, and ``state``
    (read and write session values; writes become the callback event's state delta)."""

    agent_name: str
    input: AgentInput
    state: _CallbackState
    delta: StateDelta

    def end_invocation(self, reason: str | None = None) -> None:
        """Ends the whole run (:func:`rillet.end_invocation`): from a before-callback, the
        agent's body does not run."""
        end_invocation(reason)


AgentCallback = Callable[[CallbackContext], "Message | str | None | Awaitable[Message | str | None]"]


def _callbacks_list(fns: AgentCallback | Iterable[AgentCallback]) -> list[AgentCallback]:
    """One agent callback or several, as a list (one is taken as the model and tool callbacks
    take it, and as Google ADK Python's single ``before_agent_callback``)."""
    return [fns] if callable(fns) else list(fns)


def author_of(ev: AgentEvent, agent_name: str) -> str:
    """ADK's rule for an event without an author: user-role content is the user's, except a
    tool's result (an AgenticMessage run's results are user messages of ``tool_result``
    blocks; ADK's function responses are the agent's too). (It runs for nearly every event,
    so it reads fields, not properties; the flow inlines its first test.)"""
    out = ev.output
    mv = out.message_output if out is not None else None
    msg = mv.message if mv is not None else None
    return "user" if msg is not None and msg.role == "user" and users(msg) else agent_name


def users(msg: Message | AgenticMessage) -> bool:
    """Whether a user-role message is the user's own: a Message is; an AgenticMessage holding a
    ``tool_result`` block is a tool's result, the agent's."""
    return type(msg) is Message or not any(b.kind == "tool_result" for b in msg.blocks)


class BaseAgent:
    """Subclass and write ``async def _run(self, input, **options)`` as an async generator of
    events. ``run`` starts it as a task and returns at once; an exception raised by ``_run``
    becomes one error event, after which the stream ends.

    ``before_agent_callbacks`` and ``after_agent_callbacks`` wrap the whole agent call as in
    Google's ADK-Go: each gets a :class:`CallbackContext`; the first before-callback that
    returns content (a Message or text) ends the call with that content as an event (the body
    and the after-callbacks are skipped); session values a callback writes are reported in an
    event too (then the body runs). After-callbacks add one new event; they cannot take back
    what the agent said. A callback's exception becomes the call's error event. The Runner's
    plugins' ``before_agent`` / ``after_agent`` run first, the same way. Once the invocation
    is ended (:func:`rillet.end_invocation`), the body and the after-callbacks do not run.
    """

    records_own_events: ClassVar[bool] = False
    """True for an agent that records its children's events in the session itself (the
    workflow agents): the flow wrapper around it then records none of its events."""

    _children: Sequence[Any] = ()
    """The agents directly below, as this agent holds them (a workflow's and a flow wrapper's
    are flow wrappers): what :attr:`sub_agents` reads, unwrapped."""

    _children_fixed: ClassVar[bool] = False
    """True where the children are given at construction or by set_sub_agents (workflows,
    flow wrappers): ``sub_agents`` cannot be set."""

    runs_agents_in_its_run: ClassVar[bool] = True
    """Whether agents may run inside this agent's own run and rebuild their input from its
    messages in the session log (a custom agent driving ``FlowAgent(other).events(None)``
    may). False (ChatModelAgent: its agent tools run in a session of their own): a run that
    nothing can save (no checkpoint id, no session) and no transfer can read keeps no log of
    this agent's events."""

    def __init__(
        self,
        name: str = "",
        description: str = "",
        *,
        before_agent_callbacks: AgentCallback | Iterable[AgentCallback] = (),
        after_agent_callbacks: AgentCallback | Iterable[AgentCallback] = (),
    ) -> None:
        self._name = name
        self._description = description
        self.before_agent_callbacks: list[AgentCallback] = _callbacks_list(before_agent_callbacks)
        self.after_agent_callbacks: list[AgentCallback] = _callbacks_list(after_agent_callbacks)

    @property
    def name(self) -> str:
        """The agent's name: used in events, run paths, transfer and agent tools."""
        return self._name

    @property
    def description(self) -> str:
        """What the agent does: shown to agents that may transfer to it or call it as a tool."""
        return self._description

    @property
    def sub_agents(self) -> list[Agent]:
        """The agents directly below this one (ADK's ``sub_agents``), as you built them (not
        their flow wrappers), each once, in the order given: a workflow's children, the agents
        :func:`rillet.set_sub_agents` gave it, a custom agent's own. A new list each time:
        changing it changes nothing. An AgentTool is a tool, not a sub-agent."""
        return sub_agents_of(self)

    @sub_agents.setter
    def sub_agents(self, agents: Sequence[Agent]) -> None:
        """A custom agent names the agents it runs (for :meth:`find_agent`, the agent tree
        and checkpoints' agent fingerprint); workflows and transfer trees are set otherwise."""
        if self._children_fixed:
            raise AttributeError(
                f"{type(self).__name__} {self._name!r}: sub_agents is read-only; a workflow takes its children "
                "as sub_agents=[...] when made, and rillet.set_sub_agents(parent, [...]) sets transfer targets "
                "(and offers the model the transfer to them)"
            )
        self._children = list(agents)

    def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        raise NotImplementedError(f"{type(self).__name__} must define an async generator _run(input, **options)")

    async def events(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        """The agent's events in the calling task: what :meth:`run` hands out, without the task
        and channel between. For code that drives agents from inside a run (the Runner, the
        flow wrapper, workflows, agent tools): ``_run``'s events inside the agent callbacks,
        authors filled in, an exception turned into a final error event. Iterate it to the
        end or ``aclose()`` it."""
        name = self._name
        plugins = PLUGINS.get()
        try:
            if self.before_agent_callbacks or (plugins is not None and plugins.before_agent):
                first = plugins.before_agent if plugins is not None else ()
                content, ev = await self._callbacks(self.before_agent_callbacks, input, first)
                if ev is not None:
                    yield ev
                if content or _ended():
                    return
            async with contextlib.aclosing(self._run(input, **options)) as evs:  # type: ignore[type-var]
                async for ev in evs:
                    if not ev.agent_name:
                        ev.agent_name = author_of(ev, name)
                    yield ev
            if (self.after_agent_callbacks or (plugins is not None and plugins.after_agent)) and not _ended():
                first = plugins.after_agent if plugins is not None else ()
                _, ev = await self._callbacks(self.after_agent_callbacks, input, first)
                if ev is not None:
                    yield ev
        except (Exception, Interrupted) as e:  # errors are events: run never raises
            yield error_event(e)

    async def _callbacks(
        self, callbacks: list[AgentCallback], input: AgentInput, plugins: Sequence[Named] = ()
    ) -> tuple[bool, AgentEvent | None]:
        """Runs the plugins' hooks, then ``callbacks``, until one returns content; the event
        (content and/or state delta) is None when there is neither."""
        delta = StateDelta()
        ctx = CallbackContext(self._name, input, _CallbackState(delta), delta)
        content: Message | None = None
        result: Any = None
        for who, hook in plugins:
            result = await call_hook(f"agent {self._name!r}", who, hook, ctx)
            if result is not None:
                break
        if result is None:
            for cb in callbacks:
                token = CALLBACK.set(f"agent callback {getattr(cb, '__qualname__', repr(cb))}")
                try:
                    result = cb(ctx)
                    if inspect.isawaitable(result):
                        result = await result
                finally:
                    CALLBACK.reset(token)
                if result is not None:
                    break
        if result is not None:
            content = Message.assistant(result) if isinstance(result, str) else result
        if content is None and not delta:
            return False, None
        ev = event_from_message(content) if content is not None else AgentEvent()
        ev.agent_name = self._name
        if delta:
            ev.action = AgentAction(state_delta=delta)
        return content is not None, ev

    def run(self, input: AgentInput, **options: Any) -> RunIterator:
        """Starts the agent on ``input`` and returns its events at once."""
        return start_run(self.events(input, **options))

    def find_agent(self, name: str) -> Agent | None:
        """This agent if it is named ``name``, else :meth:`find_sub_agent` (ADK-Go's
        ``FindAgent``)."""
        return find_agent(self, name)

    def find_sub_agent(self, name: str) -> Agent | None:
        """The first agent named ``name`` below this one, depth-first in the order the
        sub-agents were given (transfer children, workflow children, delegated agents), or
        None. The agents returned are the ones you built, not their flow wrappers."""
        return find_sub_agent(self, name)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._name!r}>"


# --- the agent tree: find_agent / find_sub_agent ---------------------------------------------
# Found by duck typing, so that every agent kind takes part without this module knowing it: a
# ``sub_agents`` list (workflows, flow wrappers, DeepAgent), the flow wrapper set_sub_agents
# remembered on the agent, and a wrapper's ``agent`` of the same name (flow wrappers,
# deterministic transfer) whose children are the wrapper's.

# The flow wrapper that set_sub_agents (a with_* option, a Supervisor) made for an agent is kept
# on the agent, under one attribute that only the two functions below touch. The wrapper holds
# its agent, and must live as long as the agent does (a Runner given the bare agent runs it)
# without keeping it alive after: Python has no weak-keyed map whose value may refer to its key
# (a registry keyed by the agent would keep every wired agent for ever), so the agent holds it.
_FLOW_WRAPPER = "_rillet_flow"


def flow_wrapper_of(agent: object) -> Any:
    """The flow wrapper :func:`remember_flow_wrapper` kept for ``agent``, or None."""
    return getattr(agent, _FLOW_WRAPPER, None)


def remember_flow_wrapper(agent: object, wrapper: object) -> bool:
    """Keeps ``wrapper`` as the one to run ``agent`` with; False if ``agent`` takes no attributes."""
    try:
        setattr(agent, _FLOW_WRAPPER, wrapper)
    except AttributeError:
        return False
    return True


def _unwrapped(agent: Any) -> Any:
    """The agent a same-named wrapper (a flow wrapper, a deterministic transfer) wraps."""
    seen: set[int] = set()
    while id(agent) not in seen:
        seen.add(id(agent))
        inner = getattr(agent, "agent", None)
        if inner is None or getattr(inner, "name", None) != agent.name or not callable(getattr(inner, "run", None)):
            break
        agent = inner
    return agent


def declared_sub_agents(layer: Any) -> list[Any]:
    """The children ``layer`` itself holds (flow wrappers, for a workflow or a flow wrapper):
    a BaseAgent's own list, or the ``sub_agents`` list of an agent of another kind."""
    if isinstance(layer, BaseAgent):
        return list(layer._children)
    subs = getattr(layer, "sub_agents", None)
    return list(subs) if isinstance(subs, (list, tuple)) else []


def sub_agents_of(agent: Any) -> list[Agent]:
    """The direct sub-agents of ``agent``, unwrapped, each once, in the order given."""
    out: list[Agent] = []
    layers = [agent]
    inner = _unwrapped(agent)
    if inner is not agent:
        layers.append(inner)
    for layer in list(layers):
        flow = flow_wrapper_of(layer)
        if flow is not None and all(flow is not x for x in layers):
            layers.append(flow)
    for layer in layers:
        for sub in declared_sub_agents(layer):
            sub = _unwrapped(sub)
            if all(sub is not x for x in out):
                out.append(sub)
    return out


def find_agent(agent: Agent, name: str) -> Agent | None:
    """``agent`` if it is named ``name``, else :func:`find_sub_agent`."""
    return agent if agent.name == name else find_sub_agent(agent, name)


def find_sub_agent(agent: Agent, name: str, _seen: set[int] | None = None) -> Agent | None:
    """The first agent named ``name`` below ``agent``, depth-first, or None."""
    seen = _seen if _seen is not None else {id(agent)}
    for sub in sub_agents_of(agent):
        if id(sub) in seen:
            continue
        seen.add(id(sub))
        if sub.name == name:
            return sub
        found = find_sub_agent(sub, name, seen)
        if found is not None:
            return found
    return None
