"""The flow wrapper (Eino's ``flowAgent``): what every agent run by a Runner is wrapped in.

It gives the agent its place in the run (run path ``parent + [name]``, address
``parent + ["agent:<name>"]``), fills ``agent_name`` and ``run_path`` on the events the agent
made itself, records those events in the session, and after the agent ends acts on the last
own event's action: a transfer runs the named sub-agent (or the parent) next.

An agent that is not the root of its run (a transfer target, a workflow child) ignores the input
it is given and rebuilds it from the run's root input and every recorded event; other agents'
messages are rewritten as user messages that start with ``For context:`` (Eino's format).

Layer: flow. May import rillet.tools and the layers under it (the import-linter contract in
pyproject.toml; docs/architecture.md); not checkpoints, the composition layer or anything above.
"""

from __future__ import annotations

import functools
import json
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, cast, runtime_checkable

from rillet._core.address import AGENT, AddressSegment
from rillet._core.interrupt import ResumeScope
from rillet._core.scope import OBSERVING, current_resume, entered
from rillet._native import AgenticMessage, FunctionCall, Message, ToolCall
from rillet.data.events import (
    AgentAction,
    AgentEvent,
    MessageVariant,
    copy_event,
    error_event,
    event_from_message,
    new_transfer_to_agent_action,
)
from rillet.data.run_config import BUDGET, RunBudget, RunConfig
from rillet.errors import Interrupted, TransferError
from rillet.run import observer
from rillet.run.agent import (
    Agent,
    AgentInput,
    BaseAgent,
    deferred_input,
    flow_wrapper_of,
    raw_events,
    remember_flow_wrapper,
    run_events,
    users,
)
from rillet.run.context import RunContext, Session, current_run, send_tool_gen_action
from rillet.tools import BaseTool, ToolArgumentsError, ToolInfo

__all__ = [
    "TRANSFER_TOOL_NAME",
    "FlowAgent",
    "HistoryEntry",
    "HistoryRewriter",
    "OnSubAgents",
    "TransferError",
    "set_sub_agents",
    "with_deterministic_transfer_to",
    "with_disallow_transfer_to_parent",
    "with_history_rewriter",
]

TRANSFER_TOOL_NAME = "transfer_to_agent"
_NOT_PENDING: list[Any] = []  # what a leg that logs no message in the message-only form holds instead (never added to)


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One message of the history an agent is rebuilt from: root input or a recorded event."""

    is_user_input: bool
    agent_name: str
    message: Message


HistoryRewriter = Callable[[list[HistoryEntry]], list[Message]]


@runtime_checkable
class OnSubAgents(Protocol):
    """What an agent implements to learn how it is wired into a transfer tree (Eino's
    ``OnSubAgents``): :func:`set_sub_agents` and :func:`with_disallow_transfer_to_parent` call
    these on an agent that has all three (ChatModelAgent uses them to offer the transfer tool)."""

    def on_set_sub_agents(self, sub_agents: list[Agent]) -> None:
        """``sub_agents`` were made this agent's children."""

    def on_set_as_sub_agent(self, parent: Agent) -> None:
        """This agent was made a child of ``parent``."""

    def on_disallow_transfer_to_parent(self) -> None:
        """This agent, as a sub-agent, may not transfer back to its parent."""


def rewrite_message(msg: Message | AgenticMessage, agent_name: str) -> Message:
    """Another agent's message as the user message a transferred-to agent sees (Eino's format);
    an AgenticMessage's as a user AgenticMessage of one text block (a run keeps one type)."""
    if type(msg) is AgenticMessage:
        return _rewrite_blocks(msg, agent_name)
    parts = ["For context:"]
    if msg.role == "assistant":
        if msg.content:
            parts.append(f" [{agent_name}] said: {msg.content}.")
        for call in msg.tool_calls:
            parts.append(
                f" [{agent_name}] called tool: `{call.function.name}` with arguments: {call.function.arguments}."
            )
    elif msg.role == "tool" and msg.content:
        parts.append(f" [{agent_name}] `{msg.tool_name}` tool returned result: {msg.content}.")
    return Message.user("".join(parts))


def _rewrite_blocks(msg: AgenticMessage, agent_name: str) -> Message:
    """:func:`rewrite_message` of a block list: its text, tool calls and tool results, in order."""
    parts = ["For context:"]
    for b in msg.blocks:
        if b.kind == "text" and b.text and msg.role == "assistant":
            parts.append(f" [{agent_name}] said: {b.text}.")
        elif b.kind == "tool_call":
            parts.append(f" [{agent_name}] called tool: `{b.name}` with arguments: {b.arguments}.")
        elif b.kind == "tool_result" and b.text:
            parts.append(f" [{agent_name}] `{b.name}` tool returned result: {b.text}.")
    return cast(Message, AgenticMessage.user("".join(parts)))  # the history's type: a run keeps one


def gen_transfer_messages(dest_agent_name: str) -> tuple[Message, Message]:
    """The assistant tool call and tool result of a transfer to ``dest_agent_name``, as the
    transfer tool would have produced them (the arguments are the bare name, as in Eino)."""
    call_id = str(uuid.uuid4())
    call = ToolCall(index=0, id=call_id, function=FunctionCall(TRANSFER_TOOL_NAME, dest_agent_name))
    return (
        Message.assistant("", [call]),
        Message.tool_message(f"successfully transferred to agent [{dest_agent_name}]", call_id, TRANSFER_TOOL_NAME),
    )


class FlowAgent(BaseAgent):
    """Wraps ``agent`` with run-path ownership, session recording and transfer.

    Build trees with :func:`set_sub_agents`; options with :func:`with_disallow_transfer_to_parent`
    and :func:`with_history_rewriter` (or the keywords here). ``skip_transfer_messages`` leaves
    transfer calls and their results out of the history the agent is rebuilt from.
    """

    _children_fixed = True  # set by set_sub_agents

    def __init__(
        self,
        agent: Agent,
        *,
        disallow_transfer_to_parent: bool = False,
        history_rewriter: HistoryRewriter | None = None,
        skip_transfer_messages: bool = False,
    ) -> None:
        if isinstance(agent, FlowAgent):
            raise TypeError("FlowAgent(agent): the agent is already a FlowAgent")
        super().__init__(agent.name, agent.description)
        self.agent = agent
        self._children: list[FlowAgent] = []
        self.parent: FlowAgent | None = None  # (sub_agents: BaseAgent's, read-only here)
        self.disallow_transfer_to_parent = disallow_transfer_to_parent
        self.history_rewriter = history_rewriter
        self.skip_transfer_messages = skip_transfer_messages

    def transfer_target(self, name: str) -> FlowAgent | None:
        """The agent a transfer to ``name`` reaches: a direct sub-agent in chat mode (the
        others are called as tools), else the parent if it has that name."""
        for sub in self._children:
            if sub.name == name and getattr(sub.agent, "mode", "chat") == "chat":
                return sub
        if self.parent is not None and self.parent.name == name:
            return self.parent
        return None

    def events(self, input: AgentInput | None, **options: Any) -> AsyncIterator[AgentEvent]:
        """The flow's events, in the calling code's run (or a fresh session when there is
        none); an exception becomes a final error event. ``input`` None (an agent that is not
        the root of its run) rebuilds the input from the run's history."""
        return self._chain(None, input, options, steady=False, keep_log=True)

    def events_in(self, parent: RunContext, input: AgentInput | None, **options: Any) -> AsyncIterator[AgentEvent]:
        """:meth:`events` as an agent run inside ``parent`` (a workflow's child, the inner
        run of an agent tool): what the consumer's code sees of the run scope between events
        is left as it is."""
        return self._chain(parent, input, options, steady=False, keep_log=True)

    def runner_events(self, input: AgentInput, keep_log: bool, /, **options: Any) -> AsyncIterator[AgentEvent]:
        """:meth:`events` for the Runner, whose own code consumes them (it reads no run
        context between events): each agent's run context is then set once, not around each
        event, and restored when it ends. ``keep_log`` False (a run that no checkpoint or
        session can save): events are recorded only if something in the run can read them
        (see :func:`_log_policy`)."""
        return self._chain(None, input, options, steady=True, keep_log=keep_log)

    def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        return self.events(input, **options)

    async def _chain(
        self, parent: RunContext | None, input: AgentInput | None, options: dict[str, Any], steady: bool, keep_log: bool
    ) -> AsyncIterator[AgentEvent]:
        """The pipeline every agent run by a Runner, a workflow or an agent tool goes through:
        the agent's events, stamped, recorded and observed by :class:`_Leg`, then those of the
        agent its last action transfers to (:meth:`_next`), and so on. The agents of a transfer
        chain run one after another in this one loop (a trampoline): the target takes the place
        of the agent that handed over, under its run path and address, instead of running
        inside it, so the thousandth transfer runs at the stack depth and cost of the first.

        ``steady`` (the Runner's path) sets each agent's run scope once for its whole run;
        otherwise it is set around each step, so that the consumer's code between events sees
        its own. Failures become a final error event; the run's root closes the session's
        unread streams when it ends."""
        root = parent if parent is not None else current_run()
        parent = root if root is not None else RunContext(Session())  # run on its own: a fresh session
        chain = _Chain(OBSERVING.get(), current_resume(), BUDGET.get() or RunConfig().budget(), options, keep_log)
        flow: FlowAgent | None = self
        try:
            while flow is not None:  # one agent of the chain a turn
                leg = await chain.start(flow, parent, input)
                if isinstance(leg, AgentEvent):  # it cannot run (a resume that finds no way down)
                    yield chain.observed(leg)
                    return
                if leg.events is not None:  # the agent runs (not only passing through to an interrupt below)
                    run, events = leg.run, leg.events
                    anext = events.__anext__ if steady else _stepping_in(run, events)
                    # the leg's rules (see _Leg), applied here, inline: this runs for every event
                    name, path, fills_all, seen = leg.name, leg.path, leg.fills_all, leg.seen
                    record, messages_only = leg.record, leg.messages_only
                    branch = run.session.branch  # a ParallelAgent's lane: its events say which
                    pending = leg.run.session.pending_messages() if messages_only else _NOT_PENDING
                    action: AgentAction | None = None
                    scope = entered(run) if steady else None
                    if scope is not None:
                        scope.__enter__()
                    try:
                        while True:
                            failed = False
                            try:
                                ev = await anext()
                            except StopAsyncIteration:
                                break
                            except (Exception, Interrupted) as e:
                                ev, failed = error_event(e), True  # errors are events: a run never raises
                            out = ev.output
                            mv = out.message_output if out is not None else None
                            if not ev.agent_name and (fills_all or not ev.run_path):
                                msg = mv.message if mv is not None else None  # author_of, inlined
                                ev.agent_name = (
                                    "user" if msg is not None and msg.role == "user" and users(msg) else name
                                )
                            own = ev.run_path
                            if not own:
                                ev.run_path = own = path
                            if branch is not None and ev.branch is None:
                                ev.branch = branch
                            if own is path or own == path:
                                action = ev.action
                                if (
                                    record is not None
                                    and (action is None or action.interrupted is None)
                                    and (mv is not None or not messages_only)
                                ):
                                    # a copy: the consumer reading a streamed message leaves the log its own stream
                                    if mv is not None and mv.message_stream is not None:
                                        record(copy_event(ev))
                                    elif mv is not None and messages_only:  # read only by agents nested in this run
                                        msg = mv.message
                                        if (
                                            msg is not None
                                            and action is None
                                            and ev.error is None
                                            and out is not None
                                            and out.customized_output is None
                                            and not mv.is_streaming
                                            and mv.role == "assistant"
                                            and not mv.tool_name
                                        ):  # a plain message: logged as one, made an event when read
                                            pending.append(ev.agent_name)
                                            pending.append(own)
                                            pending.append(msg)
                                        else:
                                            record(ev)
                                    else:  # copy_event, inlined for the event without a stream to split
                                        record(AgentEvent(ev.agent_name, own, out, action, ev.error, ev.branch))
                            if seen is not None:
                                seen[1] = observer.run_event(leg.obs, seen[0], ev) or seen[1]
                            yield ev
                            if failed:
                                return
                    finally:
                        leg.action = action
                        if scope is not None:
                            scope.__exit__()
                        with entered(run):
                            await events.aclose()  # type: ignore[attr-defined]
                after = chain.next(flow, leg)
                if isinstance(after, AgentEvent):  # a transfer that cannot be made: the run ends with it
                    yield chain.observed(after)
                    return
                parent, flow, input = leg.run, after, None
            if steady and chain.budget.ended is not None:  # the Runner's run was ended: its last event says so
                ended = chain.budget.ended
                if not ended.agent_name:  # ended before any agent ran (a plugin's on_run_start): the root's
                    ended = chain.budget.ended = replace(ended, agent_name=self.name)
                yield AgentEvent(ended.agent_name, (), None, AgentAction(customized_action=ended))
        except (Exception, Interrupted) as e:
            # the chain's own work failed (a history rewriter, an observer's bookkeeping)
            yield chain.observed(error_event(e, (flow or self).name))
        finally:
            chain.end()
            if root is not None and not root.run_path:  # the run's root: its session ends here
                root.session.close_streams()

    def _transferred_to(
        self, action: AgentAction | None, run: RunContext, budget: RunBudget
    ) -> FlowAgent | AgentEvent | None:
        """Where this agent's last own ``action`` leads once it has run: the agent to transfer
        to, an error event (no such agent, or a transfer past the run's ``max_transfers``), or
        None when the chain ends here (no transfer, an exit, an interrupt)."""
        if action is None or action.exit or action.interrupted is not None or budget.ended is not None:
            return None  # (ended: end_invocation, nothing else runs)
        transfer = action.transfer_to_agent
        if transfer is None:
            return None
        target = self.transfer_target(transfer.dest_agent_name)
        if target is None:
            return AgentEvent(
                agent_name=self.name,
                run_path=run.run_path,
                error=TransferError(
                    f"transfer failed: agent '{transfer.dest_agent_name}' not found when transferring from "
                    f"'{self.name}'{self._reachable()}"
                ),
            )
        refused = budget.transfer(self.name, target.name)
        if refused is not None:
            return AgentEvent(self.name, run.run_path, error=refused)
        return target

    def _reachable(self) -> str:
        """What a failed transfer could have reached, and how to wire it."""
        names = [s.name for s in self._children if getattr(s.agent, "mode", "chat") == "chat"]
        names += [self.parent.name] if self.parent is not None else []
        if names:
            return f"; it can transfer to: {', '.join(names)}"
        if self._children:
            return (
                f"; the sub-agents of {self.name!r} are called as tools (single_turn or task mode), not transferred to"
            )
        return (
            f"; {self.name!r} has no sub-agents in this run: give them with set_sub_agents({self.name}, [...]) "
            "and run the agent it returns"
        )

    def _resumed_below(self, run: RunContext, resume: ResumeScope) -> FlowAgent | AgentEvent | None:
        """In a resumed run whose interrupt lies deeper down, in the agent this one transferred
        to: that agent, which runs next in this one's place (or an error event when it cannot
        be found). None otherwise: this agent runs."""
        if run.point.was_interrupted or not (self._children or self.parent):
            return None
        if not resume.pending_below(run.address):
            return None
        segments = [AddressSegment.parse(p) for p in resume.next_points(run.address)]
        names = [seg.id for seg in segments if seg.kind == AGENT]
        if not self._children:  # a leaf: what lies below is its own, unless it handed back to its parent
            return self.parent if self.parent is not None and names == [self.parent.name] else None
        if len(names) != 1:
            what = (
                "no child agents leading to the interrupted agent were found"
                if not names
                else (f"interrupts lie under several agents ({', '.join(names)}): concurrent transfer is not supported")
            )
            return AgentEvent(self.name, run.run_path, error=TransferError(f"failed to resume {self.name!r}: {what}"))
        target = self.transfer_target(names[0])
        if target is None:
            return AgentEvent(
                self.name, run.run_path, error=TransferError(f"failed to resume: sub-agent '{names[0]}' not found")
            )
        return target

    async def _history_input(self, run: RunContext) -> AgentInput:
        """The input of an agent that is not the root: the root input plus every recorded
        event's message, others' messages rewritten (Eino's genAgentInput). The default
        rewriting is done when the agent reads the messages, from the history as it stood now:
        an agent that never reads them costs nothing per recorded event. A rewriter of the
        user's is called now, as in Eino."""
        root = run.root_input or AgentInput([])
        entries, n = await _history_entries(run.session, root, self.skip_transfer_messages)
        if self.history_rewriter is not None:
            return AgentInput(list(self.history_rewriter(entries[:n])), root.enable_streaming)
        view = _views_of(run.session, self.skip_transfer_messages, entries).setdefault(self.name, [])
        name = self.name
        return deferred_input(lambda: _rewritten(entries, n, view, name), root.enable_streaming)


@dataclass(slots=True)
class _KeptHistory:
    """The history entries of a session's log, kept in the session as the log grows.
    ``entries[:handed]`` were handed out (as the list and a length) and are never changed in
    place: taking one back (a transfer call left out) starts a new list. ``views`` holds each
    agent's default rewrite of a prefix of ``entries`` (this list's: a new list starts none),
    extended when the agent reads its input: the thousandth agent of a transfer chain, or
    child of a LoopAgent, rewrites the messages recorded since the last, not the whole log."""

    root: AgentInput
    entries: list[HistoryEntry]
    read: int  # events of the log read
    last: AgentEvent  # the last of them, to notice a log changed under it
    handed: int
    views: dict[str, list[Message]]  # agent name -> entries[:len(view)] as that agent sees them


async def _history_entries(session: Session, root: AgentInput, skip_transfers: bool) -> tuple[list[HistoryEntry], int]:
    """The history entries of ``session``'s log after the root input: ``entries[:n]`` of the
    returned ``(entries, n)``, a list shared with later calls (read it, do not change it). The
    log only grows, so each call reads only the events recorded since the last and neither
    copies nor rescans the rest: a LoopAgent's thousandth child pays for one round, not 999."""
    key = ("history", skip_transfers)
    kept: _KeptHistory | None = session.cache.get(key)
    new = session.snapshot(kept.read - 1) if kept is not None and kept.root is root else []
    if kept is None or not new or new[0] is not kept.last:  # none kept, or the log changed under it: from the start
        entries, read, handed, new = [HistoryEntry(True, "", m) for m in root.messages], 0, 0, session.snapshot()
    else:
        entries, read, handed, new = kept.entries, kept.read, kept.handed, new[1:]
    skips = [skip_transfers and ev.action is not None and ev.action.transfer_to_agent is not None for ev in new]
    outputs = [_message_output(ev) for ev in new]
    # The streams first; nothing after them awaits, so no other reader comes between.
    messages = [await mv.aget_message() if mv is not None and not skip else None for mv, skip in zip(outputs, skips)]
    if kept is not None and entries is kept.entries and session.cache.get(key) is not kept:
        return await _history_entries(session, root, skip_transfers)  # another reader came first: read on from it
    for ev, mv, skip, msg in zip(new, outputs, skips, messages, strict=True):
        if skip:
            if mv is not None and mv.role == "tool" and len(entries) > len(root.messages):
                # the assistant message that called the transfer tool is left out too
                if len(entries) <= handed:
                    entries, handed = entries[:-1], 0  # handed out: a new list, the old one as it was
                else:
                    entries.pop()
        elif msg is not None:
            entries.append(HistoryEntry(False, ev.agent_name, msg))
    if new:
        views = kept.views if kept is not None and entries is kept.entries else {}
        session.cache[key] = _KeptHistory(root, entries, read + len(new), new[-1], len(entries), views)
    return entries, len(entries)


def _views_of(session: Session, skip_transfers: bool, entries: list[HistoryEntry]) -> dict[str, list[Message]]:
    """The agents' default rewrites of ``entries`` kept in ``session`` (new ones for a list
    not kept there: a history without any recorded event)."""
    kept: _KeptHistory | None = session.cache.get(("history", skip_transfers))
    return kept.views if kept is not None and kept.entries is entries else {}


def _rewritten(entries: list[HistoryEntry], n: int, view: list[Message], agent_name: str) -> list[Message]:
    """``entries[:n]`` as ``agent_name`` sees them by default (a new list): its own messages
    and the user's as they are, the others' rewritten as context; ``view`` (that agent's kept
    rewrite of a prefix of ``entries``) is extended to ``n`` first."""
    for e in entries[len(view) : n]:
        view.append(
            e.message if e.is_user_input or e.agent_name == agent_name else rewrite_message(e.message, e.agent_name)
        )
    return view[:n]


def _message_output(ev: AgentEvent) -> MessageVariant | None:
    out = ev.output
    return out.message_output if out is not None else None


def _stepping_in(run: RunContext, events: AsyncIterator[AgentEvent]) -> Callable[[], Awaitable[AgentEvent]]:
    """``events.__anext__`` with ``run`` entered around each step (and the caller's scope
    back in place while the event is handed on)."""
    anext = events.__anext__
    scope = entered(run)

    async def step() -> AgentEvent:
        scope.__enter__()
        try:
            return await anext()
        finally:
            scope.__exit__()

    return step


class _Leg:
    """One agent's run in a chain, and what the pipeline (:meth:`FlowAgent._chain`) needs to
    apply its rules to the agent's events: each gets an author (ADK's rule: user-role content is
    the user's) and the
    agent's run path when it has none; the agent's own events are recorded in the session when
    something can read them (``record``, see :func:`_log_policy`), the last one's action is kept
    for the transfer (``action``), and observers are told (``seen``). ``events`` None: the agent does not run, the chain passes ``through`` it to the
    agent it transferred to before an interrupt."""

    __slots__ = (
        "action", "events", "fills_all", "messages_only", "name", "obs", "path", "record", "run", "seen", "through",
    )  # fmt: skip

    def __init__(
        self,
        run: RunContext,
        events: AsyncIterator[AgentEvent] | None,
        fills_all: bool = False,
        record: Callable[[AgentEvent], None] | None = None,
        messages_only: bool = False,
        obs: Any = None,
        seen: list[Any] | None = None,
        through: FlowAgent | None = None,
    ) -> None:
        self.run = run
        self.events = events
        self.name = run.run_path[-1].agent_name
        self.path = run.run_path
        self.fills_all = fills_all  # the agent's bare _run: even its nested events may lack an author
        self.record = record
        self.messages_only = messages_only  # only the events with a message are recorded
        self.obs = obs
        self.seen = seen  # [RunInfo, first error] when the run has observers
        self.through = through
        self.action: AgentAction | None = None


class _Chain:
    """What a transfer chain shares from agent to agent: the run's observers, resume and
    budget, the agents' options, and the observer runs it opened (closed when it ends)."""

    __slots__ = ("budget", "keep_log", "obs", "opened", "options", "resume")

    def __init__(
        self, obs: Any, resume: ResumeScope | None, budget: RunBudget, options: dict[str, Any], keep_log: bool
    ) -> None:
        self.obs = obs
        self.resume = resume
        self.budget = budget
        self.options = options
        self.keep_log = keep_log
        self.opened: list[list[Any]] = []  # [info, error] of each agent run told to the observers

    async def start(self, flow: FlowAgent, parent: RunContext, input: AgentInput | None) -> _Leg | AgentEvent:
        """``flow``'s run under ``parent``: its events and their rules, or the agent a resume
        passes through to, or the error event of a resume that finds no way down."""
        seen: list[Any] | None = None
        if self.obs is not None:
            messages = input.messages if input is not None else ()
            seen = [observer.run_start(self.obs, flow.name, messages, parent), None]
            self.opened.append(seen)
        run = parent.child(flow.name)
        if run.root_input is None:
            run = run.with_root_input(input if input is not None else AgentInput([]))
        after = flow._resumed_below(run, self.resume) if self.resume is not None else None
        if isinstance(after, AgentEvent):
            return after
        if after is not None:
            return _Leg(run, None, through=after)
        if input is None:
            input = await flow._history_input(run)
        inner = flow.agent
        raw = raw_events(inner, input, **self.options)
        events = raw if raw is not None else run_events(inner, input, **self.options)
        keep = _log_policy(flow, self.keep_log)
        record = run.session.record if keep else None
        return _Leg(run, events, raw is not None, record, keep == "messages", self.obs, seen)

    def next(self, flow: FlowAgent, leg: _Leg) -> FlowAgent | AgentEvent | None:
        """The transfer path: the agent that runs after ``leg`` (its transfer's target, or
        the one a resume passes through to), an error event (no such agent, or a transfer
        past the run's ``max_transfers``), or None when the chain ends here."""
        if leg.through is not None:
            return leg.through
        return flow._transferred_to(leg.action, leg.run, self.budget)

    def observed(self, ev: AgentEvent) -> AgentEvent:
        """``ev``, the last event of the chain, told to the observers of the agent run last opened."""
        if self.opened:
            seen = self.opened[-1]
            seen[1] = observer.run_event(self.obs, seen[0], ev) or seen[1]
        return ev

    def end(self) -> None:
        for info, error in reversed(self.opened):  # inner runs end first, as they nest
            observer.run_end(self.obs, info, error)


def _log_policy(flow: FlowAgent, keep_log: bool) -> str:
    """Which of ``flow``'s own events are recorded in the session: ``"all"``, ``"messages"``
    or ``""`` (none). The log is read by a checkpoint or a session (``keep_log``), a
    transfer's target, and an agent run inside this one's run with input None, which rebuilds
    its input from the messages only; an agent that runs none (ChatModelAgent) and cannot
    transfer needs no log in a run nothing saves. A workflow records its children's itself."""
    inner = flow.agent
    if isinstance(inner, BaseAgent) and inner.records_own_events:
        return ""
    if keep_log or flow._children or flow.parent is not None:
        return "all"
    return "messages" if getattr(inner, "runs_agents_in_its_run", True) else ""


# Each adopted agent's parent, by the agent's id (agents need not be hashable): weak both ways, so
# that neither an agent nor its parent is kept alive by being here; an entry goes with its agent.
_parents: dict[int, tuple[weakref.ref[Agent], weakref.ref[Agent]]] = {}


def _forget_parent(key: int, ref: weakref.ref[Agent]) -> None:
    entry = _parents.get(key)
    if entry is not None and entry[0] is ref:  # not a later agent's that took the id
        del _parents[key]


def parent_of(agent: Agent) -> Agent | None:
    """The agent :func:`adopt` made ``agent``'s parent, while both live; else None."""
    entry = _parents.get(id(agent))
    return entry[1]() if entry is not None and entry[0]() is agent else None


def adopt(child: Agent, parent: Agent, who: str) -> None:
    """Marks ``child`` as belonging to ``parent``; an agent has one parent (a transfer tree
    or a workflow), as in Eino, so that wiring one tree never rewires another."""
    current = parent_of(child)
    if current is not None and current is not parent:
        raise ValueError(
            f"{who}: agent {child.name!r} already belongs to {current.name!r}; an agent can have one parent: "
            "make a second agent for the second place"
        )
    key = id(child)
    try:
        _parents[key] = (weakref.ref(child, functools.partial(_forget_parent, key)), weakref.ref(parent))
    except TypeError:  # an object that cannot be weakly referenced: not tracked
        pass


def flow_of(agent: Agent) -> FlowAgent:
    """The flow wrapper to run ``agent`` with: ``agent`` itself if it is one, else the wrapper
    that :func:`set_sub_agents` (or a ``with_*`` option) made for it, so that running the
    original agent keeps its sub-agents; else a new, plain wrapper."""
    if isinstance(agent, FlowAgent):
        return agent
    known = flow_wrapper_of(agent)
    if isinstance(known, FlowAgent) and known.agent is agent:
        return known
    return FlowAgent(agent)


def _flow(agent: Agent) -> FlowAgent:
    """``flow_of(agent)``, remembered for later :func:`flow_of` calls (an object that takes
    no attributes: run the returned wrapper)."""
    flow = flow_of(agent)
    remember_flow_wrapper(flow.agent, flow)
    return flow


def set_sub_agents(agent: Agent, sub_agents: Sequence[Agent]) -> FlowAgent:
    """Makes ``sub_agents`` the children of ``agent``: it may transfer to them, and they to it
    (unless made with :func:`with_disallow_transfer_to_parent`). Returns the parent's flow
    wrapper; a Runner (or AgentTool) given ``agent`` itself runs that same wrapper."""
    parent = _flow(agent)
    if parent._children:
        raise ValueError(f"set_sub_agents: the sub-agents of {parent.name!r} are already set")
    children = [_flow(a) for a in sub_agents]
    names = [parent.name] + [c.name for c in children]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(
            f"set_sub_agents: agent names must be unique among a parent and its children; repeated: {sorted(dup)}"
        )
    delegated = [c.name for c in children if getattr(c.agent, "mode", "chat") != "chat"]
    if delegated and not isinstance(parent.agent, OnSubAgents):
        raise ValueError(
            f"set_sub_agents: {sorted(delegated)} are in single_turn or task mode (called as tools), but "
            f"{parent.name!r} is a {type(parent.agent).__name__}, which has no tools to offer them; make the parent "
            "a ChatModelAgent or the sub-agents mode='chat'"
        )
    for c in children:
        adopt(c.agent, parent.agent, "set_sub_agents")
        if c.parent is not None:
            raise ValueError(f"set_sub_agents: {c.name!r} already has a parent, {c.parent.name!r}")
    if isinstance(parent.agent, OnSubAgents):
        parent.agent.on_set_sub_agents([c.agent for c in children])
    for c in children:
        c.parent = parent
        if isinstance(c.agent, OnSubAgents):
            c.agent.on_set_as_sub_agent(parent.agent)
            if c.disallow_transfer_to_parent:
                c.agent.on_disallow_transfer_to_parent()
    parent._children = children
    return parent


def with_disallow_transfer_to_parent(agent: Agent) -> FlowAgent:
    """``agent`` wrapped so that, as a sub-agent, it cannot transfer back to its parent."""
    flow = _flow(agent)
    flow.disallow_transfer_to_parent = True
    if flow.parent is not None and isinstance(flow.agent, OnSubAgents):
        flow.agent.on_disallow_transfer_to_parent()
    return flow


def with_history_rewriter(agent: Agent, rewriter: HistoryRewriter) -> FlowAgent:
    """``agent`` wrapped so that, as a sub-agent, its input is ``rewriter(entries)``."""
    flow = _flow(agent)
    flow.history_rewriter = rewriter
    return flow


class DeterministicTransferAgent(BaseAgent):
    """Runs ``agent``, then, unless it ended with an interrupt or exit, transfers to each of
    ``to_agent_names`` in order, with the same tool call and result messages the transfer
    tool makes."""

    def __init__(self, agent: Agent, to_agent_names: Iterable[str]) -> None:
        super().__init__(agent.name, agent.description)
        self.agent = agent
        self.to_agent_names = list(to_agent_names)

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        last: AgentEvent | None = None
        async for ev in run_events(self.agent, input, **options):
            last = ev
            yield ev
        if last is not None and last.action is not None and (last.action.exit or last.action.interrupted):
            return
        if last is not None and last.error is not None:
            return
        agentic = bool(input.messages) and isinstance(input.messages[0], AgenticMessage)
        for name in self.to_agent_names:
            call, result = gen_transfer_messages(name)
            if agentic:  # a block-list run keeps its type: the result is a user tool_result message
                call, result = AgenticMessage.from_message(call), AgenticMessage.from_message(result)  # type: ignore[assignment]
            yield event_from_message(call)
            ev = event_from_message(result, role="tool", tool_name=TRANSFER_TOOL_NAME)
            ev.action = new_transfer_to_agent_action(name)
            yield ev


def with_deterministic_transfer_to(agent: Agent, to_agent_names: Iterable[str]) -> DeterministicTransferAgent:
    """``agent`` that always transfers to ``to_agent_names`` when it finishes normally."""
    return DeterministicTransferAgent(agent, to_agent_names)


def transfer_instruction(agents: Sequence[Agent]) -> str:
    """What a ChatModelAgent that can transfer is told about the agents it may hand over to."""
    lines = ["You can hand the conversation over to one of these agents:"]
    for a in agents:
        lines.append(f"- Agent name: {a.name}\n  Agent description: {a.description}")
    lines.append(
        "If you are the best one to answer, answer yourself. Otherwise call the "
        f"`{TRANSFER_TOOL_NAME}` tool with the agent's name and output nothing but that call."
    )
    return "\n".join(lines)


class TransferToAgentTool(BaseTool):
    """The ``transfer_to_agent`` tool: its result text is Eino's, and it attaches the transfer
    action to its event."""

    info = ToolInfo(
        TRANSFER_TOOL_NAME,
        "Hands the conversation over to another agent.",
        {
            "type": "object",
            "properties": {"agent_name": {"type": "string", "description": "The name of the agent to hand over to."}},
            "required": ["agent_name"],
        },
    )

    async def invoke(self, arguments: str) -> str:
        try:
            data = json.loads(arguments or "{}")
        except ValueError as e:
            raise ToolArgumentsError(TRANSFER_TOOL_NAME, [f"arguments are not valid JSON: {e}"]) from None
        name = data.get("agent_name") if isinstance(data, dict) else None
        if not isinstance(name, str) or not name:
            raise ToolArgumentsError(TRANSFER_TOOL_NAME, ["argument 'agent_name': a non-empty string is required"])
        send_tool_gen_action(new_transfer_to_agent_action(name))
        return f"successfully transferred to agent [{name}]"


def transfer_tool() -> TransferToAgentTool:
    """A new ``transfer_to_agent`` tool."""
    return TransferToAgentTool()
