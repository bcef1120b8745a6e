"""The Runner: drives an agent tree for one run at a time and hands out its events.

``Runner(agent).query("hi")`` returns at once with an iterator of events. From plain sync code
the run goes to rillet's background event-loop thread and ``for ev in ...`` blocks (with the GIL
released) for each event; inside a running loop the run is a task on that loop and you iterate
with ``async for`` (a blocking ``for`` there raises an error that says so).

Interrupts: with ``checkpoint_store`` set and ``run(..., checkpoint_id=...)`` given, an
interrupted run is saved under that id *before* the interrupt event reaches you, and
``resume(checkpoint_id, targets={interrupt_id: data})`` continues it, here or in another
process. A resumed run that interrupts again overwrites the same checkpoint. A resume claims
its checkpoint first (stores with ``claim``), checks its checksum and that this Runner's agent
saved it; docs/interrupts.md ("Guarantees") says what that ensures and where it stops.

Steps: with ``Runner(durability="step")`` a run with a checkpoint id is also recorded after each
model call and tool round (an append to the checkpoint's log, :mod:`rillet.checkpoint.journal`),
and ``resume(checkpoint_id)`` continues a run that stopped part-way, replaying what it recorded
(docs/durability.md).

Layer: driving, beside rillet.prebuilt and rillet.middlewares (none imports another), with
:mod:`.artifacts` (the artifact services the Runner saves input blobs with). May import
rillet.chatmodel, rillet.sessions and the layers under them (the import-linter contract in
pyproject.toml; docs/architecture.md).
"""

from __future__ import annotations

import contextvars
import logging
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Literal, cast

from rillet._core import scope
from rillet._core.interrupt import InterruptInfo, ResumeScope
from rillet._native import AgenticMessage, Message
from rillet.checkpoint.adapter import StoreAdapter
from rillet.checkpoint.binding import agent_binding, check_binding
from rillet.checkpoint.journal import JOURNAL, Journal, StepHead, StepLog, read_log, read_step_head, step_head
from rillet.checkpoint.payload import (
    CheckpointCorruptError,
    CheckpointError,
    CheckpointNotFoundError,
    Loaded,
    dump,
    load,
    seal,
)
from rillet.checkpoint.stores import CheckpointStore
from rillet.data.events import AgentEvent, error_event, interrupt_signal
from rillet.data.run_config import BUDGET, RunBudget, RunConfig
from rillet.data.schema import MessageT
from rillet.errors import LiveNotSupportedError, RilletError, SessionError
from rillet.flow import flow_of
from rillet.live import LiveAgent, LiveContext, LiveRequestQueue, LiveSource
from rillet.run.agent import Agent, AgentInput
from rillet.run.context import RunContext, Session
from rillet.run.observer import RunObserver, observing
from rillet.run.plugin import Plugin, plugged_events, plugin_set
from rillet.run.run_handle import RunIterator, start_run
from rillet.runner.artifacts import ArtifactService, BlobSavingSource, save_message_blobs
from rillet.sessions import SessionPolicy, SessionStore
from rillet.sessions.session_run import SessionRun, TurnSession, open_run, resume_run

__all__ = ["Runner"]

_log = logging.getLogger(__name__)


def _agent_options(model_options: Mapping[str, Any] | None, options: Mapping[str, Any] | None) -> dict[str, Any]:
    out = dict(options or {})
    if model_options:
        out["model_options"] = dict(model_options)
    return out


_ROLES = ("system", "user", "assistant", "tool")
_DEFAULT_CONFIG = RunConfig()  # (frozen: one for every run given none)


def _input_messages(messages: Any) -> list[Message]:
    """``run()``'s input as a list of Messages: one Message (or dict) is a list of one, and
    OpenAI-style dicts are read with ``Message.from_dict``."""
    if isinstance(messages, str):
        raise TypeError("Runner.run(messages) takes a list of Messages; for a text, use runner.query(text)")
    if isinstance(messages, (Message, AgenticMessage, dict)):
        messages = [messages]
    elif not isinstance(messages, Iterable):
        raise TypeError(f"Runner.run(messages): expected a list of rillet.Message, got {type(messages).__name__}")
    out: list[Message] = []
    for i, m in enumerate(messages):
        if isinstance(m, dict):
            role = m.get("role")
            if role not in _ROLES:
                raise ValueError(
                    f"Runner.run(messages): item {i} is a dict with role {role!r}; "
                    f"a message dict needs a role among {', '.join(_ROLES)}"
                )
            m = Message.from_dict(m)
        elif not isinstance(m, (Message, AgenticMessage)):
            raise TypeError(
                f"Runner.run(messages): item {i} is {type(m).__name__}, expected rillet.Message or AgenticMessage "
                "(or an OpenAI-style dict such as {'role': 'user', 'content': '...'})"
            )
        if out and type(m) is not type(out[0]):
            raise TypeError(
                f"Runner.run(messages): item {i} ({type(m).__name__}) and item 0 ({type(out[0]).__name__}) differ; "
                "a run takes one message type (convert with AgenticMessage.from_message(m) or am.to_message())"
            )
        out.append(m)
    return out


_SESSION_METHODS = ("acquire", "release", "head", "turns", "append", "get")


def _checked_session_store(store: SessionStore | None) -> SessionStore | None:
    """``store``, refused at once if it is a class or lacks the SessionStore methods (as
    ``checkpoint_store`` is), rather than failing obscurely at the first session run."""
    if store is None:
        return None
    if isinstance(store, type):  # what users pass by mistake
        raise TypeError(f"session_store: got the class {store.__name__} (pass an instance: {store.__name__}(...))")
    missing = [m for m in _SESSION_METHODS if not callable(getattr(store, m, None))]
    if missing:
        raise TypeError(
            f"session_store: {type(store).__name__} has no {', '.join(missing)}; pass a session store such as "
            "InMemorySessionStore() or SqliteSessionStore(path) (see rillet.SessionStore)"
        )
    return store


def _checked_observers(observers: Any) -> list[Any]:
    """``observers`` as a list, refused at once when it is one observer, or holds a class,
    instead of every callback failing later on a logger the user may not watch."""
    if not isinstance(observers, Iterable) or hasattr(observers, "on_run_start"):
        raise TypeError(f"observers: expected a list of observers, got {type(observers).__name__} (pass [observer])")
    out = list(observers)
    for o in out:
        if isinstance(o, type):
            raise TypeError(f"observers: got the class {o.__name__} (pass an instance: {o.__name__}())")
    observing(out)  # the missing-method check, now rather than at the first run
    return out


def _history(history: list[Message], msgs: list[Message]) -> list[Message]:
    """A session's history for a run on ``msgs``: a summary snapshot is a system Message; in a
    block-list run it becomes an AgenticMessage, as the turns are (one run, one type)."""
    if msgs and isinstance(msgs[0], AgenticMessage) and any(type(m) is Message for m in history):
        return [cast(Message, AgenticMessage.from_message(m)) if type(m) is Message else m for m in history]
    return history


class Runner:
    """Runs ``agent`` (wrapped in the flow wrapper, which fills ``agent_name`` and ``run_path``
    and records the session's events). ``streaming=True`` asks models to stream their output;
    ``checkpoint_store`` is where interrupted runs are saved (see
    :mod:`rillet.checkpoint`); ``session_store`` where ``run(..., session_id=...)`` keeps
    conversations, and ``session_policy`` what of one a run loads (see :mod:`rillet.sessions`);
    ``observers`` are told what every agent of each run does (see :class:`rillet.RunObserver`);
    ``plugins`` (:class:`rillet.Plugin` instances, in order) see and may change every agent's,
    model's and tool's call of each run and each event it hands out, before the agents' own
    callbacks (docs/plugins.md; not applied to live runs);
    ``artifact_service`` keeps input blobs when a run's :class:`RunConfig` asks (see
    :mod:`rillet.runner.artifacts`). :meth:`run_live` runs a live agent (docs/live.md).

    ``durability`` says when a run with a ``checkpoint_id`` is saved: ``"interrupt"`` (the
    default, Eino's) only when it interrupts; ``"step"`` also after every model call and every
    tool round, appended to the checkpoint's log, so that :meth:`resume` continues a run whose
    process died, replaying the calls it finished instead of making them again (see
    docs/durability.md)."""

    def __init__(
        self,
        agent: Agent,
        *,
        streaming: bool = False,
        checkpoint_store: CheckpointStore | None = None,
        session_store: SessionStore | None = None,
        session_policy: SessionPolicy | None = None,
        observers: Sequence[RunObserver] = (),
        plugins: Sequence[Plugin] = (),
        artifact_service: ArtifactService | None = None,
        durability: Literal["interrupt", "step"] = "interrupt",
    ) -> None:
        if durability not in ("interrupt", "step"):
            raise ValueError(f'Runner(durability={durability!r}): give "interrupt" (save at interrupts) or "step"')
        if isinstance(agent, type) or not (callable(getattr(agent, "run", None)) and hasattr(agent, "name")):
            raise TypeError(
                f"Runner(agent): expected an agent (name, description and run(input)), got {type(agent).__name__}"
            )
        self.agent = agent
        self.streaming = streaming
        self.checkpoint_store = checkpoint_store
        self.session_store = _checked_session_store(session_store)
        self.session_policy = session_policy
        self.observers = _checked_observers(observers)
        self._plugins = plugin_set(plugins)
        self.durability = durability
        self._adapter = StoreAdapter(checkpoint_store) if checkpoint_store is not None else None
        self._flow = flow_of(agent)
        self.artifact_service = artifact_service

    def run(
        self,
        messages: Iterable[MessageT | dict[str, Any]] | MessageT,
        *,
        checkpoint_id: str | None = None,
        session_id: str | None = None,
        session_values: Mapping[str, Any] | None = None,
        model_options: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        run_config: RunConfig | None = None,
    ) -> RunIterator[MessageT]:
        """Starts a run on ``messages`` (Messages, OpenAI-style message dicts, or one
        Message; :meth:`query` takes a text) and returns its events at once. ``session_values``
        seed the session every agent of the run shares; with ``checkpoint_id`` an interrupt
        is saved to the checkpoint store under that id. ``model_options`` go to every model
        call (``temperature=...``); ``options`` are keyword options for every agent's run.
        With ``session_id`` the run continues that session of ``session_store``: its history
        comes before ``messages`` and its values under ``session_values``; raises
        :class:`~rillet.errors.SessionBusyError` at once if another run holds it. ``run_config``
        (:class:`RunConfig`) sets the streaming mode, whether input blobs are saved as
        artifacts (under ``session_id``, or a new id, as ``input_<run>_<n>``), and the run's
        limits on model calls and transfers (``max_llm_calls``, ``max_transfers``)."""
        options = _agent_options(model_options, options)
        msgs = _input_messages(messages)
        config = self._config(run_config)
        if config.save_input_blobs_as_artifacts:  # their blobs become names: in copies, not the caller's messages
            msgs = [m.copy() for m in msgs]
        if checkpoint_id is not None and self.checkpoint_store is None:
            raise ValueError(
                "Runner.run(checkpoint_id=...): the Runner has no checkpoint_store to save to; "
                "pass Runner(agent, checkpoint_store=InMemoryCheckpointStore()) or a SqliteCheckpointStore"
            )
        seed = dict(session_values) if session_values else {}  # a bad argument fails before the session is taken
        steps = self.durability == "step" and checkpoint_id is not None
        if steps and session_id is not None:
            raise ValueError(
                'Runner.run(session_id=..., checkpoint_id=...): durability="step" does not record session runs yet; '
                'use durability="interrupt" for a session run'
            )
        srun = open_run(self._sessions(), session_id, self.session_policy) if session_id is not None else None
        session = TurnSession({**srun.values, **seed}) if srun is not None else Session(seed)
        root_input = AgentInput(
            _history(srun.history, msgs) + msgs if srun is not None else msgs, config.streaming(self.streaming)
        )
        ctx = contextvars.copy_context()
        scope.install(ctx, RunContext(session), observing=observing(self.observers), plugins=self._plugins)
        budget = _install_budget(ctx, config.budget())
        journal: Journal | None = None
        first: list[Any] | None = None
        if steps:
            assert checkpoint_id is not None
            journal = self._journal(checkpoint_id, ctx, session)
            start = {
                "root_input": _input_record(root_input),
                "session_values": seed,
                "agent": agent_binding(self.agent),
                "limits": budget.limits(),
            }
            first = ["start", start]
        events = self._events(root_input, checkpoint_id is not None or srun is not None, options)
        if config.save_input_blobs_as_artifacts and self.artifact_service is not None:
            events = _saving_blobs(self.artifact_service, session_id, msgs, events)
        if checkpoint_id is None and srun is None:  # nothing to save: hand the flow's events straight out
            return start_run(events, ctx)  # type: ignore[return-value]  # events of the input's message type
        forward = self._forward(
            events, root_input, session, checkpoint_id, budget, srun=srun, new_input=msgs, journal=journal, first=first
        )
        return _session_run(forward, ctx, srun)  # type: ignore[return-value]

    @property
    def plugins(self) -> tuple[Plugin, ...]:
        """The plugins, in order (fixed when the Runner is made: their hooks are collected then)."""
        return self._plugins.plugins if self._plugins is not None else ()

    def _events(self, root_input: AgentInput, keep_log: bool, options: dict[str, Any]) -> AsyncIterator[AgentEvent]:
        """The run's events: the flow's, through the plugins' run and event hooks if any."""
        events = self._flow.runner_events(root_input, keep_log, **options)
        if self._plugins is not None:
            events = plugged_events(self._plugins, self._flow.name, root_input, events)
        return events

    def _config(self, run_config: RunConfig | None) -> RunConfig:
        if run_config is None:
            return _DEFAULT_CONFIG
        if not isinstance(run_config, RunConfig):
            raise TypeError(f"run_config: expected a rillet.RunConfig, got {type(run_config).__name__}")
        if run_config.save_input_blobs_as_artifacts and self.artifact_service is None:
            raise ValueError(
                "RunConfig(save_input_blobs_as_artifacts=True): the Runner has no artifact_service to save to; "
                "pass Runner(agent, artifact_service=InMemoryArtifactService()) or a FileArtifactService(path)"
            )
        return run_config

    def run_live(
        self,
        messages: Iterable[Message | dict[str, Any]] | Message = (),
        *,
        queue: LiveRequestQueue,
        session_id: str | None = None,
        session_values: Mapping[str, Any] | None = None,
        model_options: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        run_config: RunConfig | None = None,
    ) -> RunIterator:
        """Starts a live (bidirectional) run and returns its events at once, while the caller
        keeps sending on ``queue`` (:class:`~rillet.live.LiveRequestQueue`); the events end
        after ``queue.close()``. ``messages`` are the conversation before the session. The
        agent must be a :class:`~rillet.live.LiveAgent` (a ChatModelAgent with ``live_model``,
        or a SequentialAgent of them): else :class:`~rillet.errors.LiveNotSupportedError` is
        raised here. With ``RunConfig(save_input_blobs_as_artifacts=True)`` each realtime blob
        is saved as the artifact ``live_<run>_<n>`` of ``session_id`` (or of a new id) before
        the agent takes it. Live runs do not load or save ``session_store`` conversations."""
        if not isinstance(queue, LiveRequestQueue):
            raise TypeError(
                f"Runner.run_live(queue=...): expected a rillet.LiveRequestQueue(), got {type(queue).__name__}"
            )
        agent = self._flow.agent  # (a tree built with set_sub_agents: its root agent)
        if not isinstance(agent, LiveAgent):
            raise LiveNotSupportedError(
                f"Runner.run_live: agent {agent.name!r} ({type(agent).__name__}) cannot run live: it has no "
                "run_live(input, live); use a ChatModelAgent with live_model=... (or a SequentialAgent of them), "
                "or give the agent a run_live method (see rillet.live.LiveAgent)"
            )
        options = _agent_options(model_options, options)
        msgs = _input_messages(messages)
        config = self._config(run_config)
        requests: LiveSource = queue
        if config.save_input_blobs_as_artifacts and self.artifact_service is not None:
            run_id = uuid.uuid4().hex[:12]
            requests = BlobSavingSource(queue, self.artifact_service, session_id or run_id, f"live_{run_id}")
        live = LiveContext(requests)
        ctx = contextvars.copy_context()
        seed = dict(session_values) if session_values else {}
        scope.install(ctx, RunContext(Session(seed)), observing=observing(self.observers))
        _install_budget(ctx, config.budget())
        events = ctx.run(agent.run_live, AgentInput(msgs, config.streaming(self.streaming)), live, **options)
        return start_run(_errors_as_events(events, agent.name), ctx)

    def _journal(
        self, checkpoint_id: str, ctx: contextvars.Context, session: Session, log: StepLog | None = None
    ) -> Journal:
        """The step record of a run under ``checkpoint_id`` (replaying ``log``), current in
        ``ctx``, tracking ``session``'s values (what replayed tools stored comes back)."""
        store = self._store()

        async def write(blobs: list[bytes], head: bytes) -> None:
            await store.append(checkpoint_id, blobs, head)

        journal = Journal(write, log, session.values)
        ctx.run(JOURNAL.set, journal)
        return journal

    def _sessions(self, what: str = "Runner.run(session_id=...)") -> SessionStore:
        if self.session_store is None:
            raise ValueError(
                f"{what}: the Runner has no session_store; "
                "pass Runner(agent, session_store=InMemorySessionStore()) or a SqliteSessionStore"
            )
        return self.session_store

    def query(self, text: str, **kwargs: Any) -> RunIterator:
        """``run([Message.user(text)], ...)``."""
        return self.run([Message.user(text)], **kwargs)

    # --- resume -------------------------------------------------------------------------

    def resume(
        self,
        checkpoint_id: str,
        *,
        targets: Mapping[str, Any] | None = None,
        session_values: Mapping[str, Any] | None = None,
        model_options: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        run_config: RunConfig | None = None,
    ) -> RunIterator[Any]:
        """Continues the run saved under ``checkpoint_id`` (its events carry the message type
        the run was saved with, Message or AgenticMessage: a type checker is not told which).
        ``targets`` maps interrupt ids to the data each interrupted point gets back; without
        it every interrupt point is
        re-entered and decides for itself (an untargeted tool interrupts again). Raises at
        once if the checkpoint cannot be loaded, fails its checksum, was saved by another
        agent tree (:class:`CheckpointAgentMismatchError`) or is being resumed elsewhere
        (:class:`CheckpointClaimedError`, with a store that has ``claim``); then nothing runs
        and the checkpoint is kept. When the resumed run finishes without interrupting again
        or failing, the checkpoint is deleted (if the store can), so a finished run cannot be
        resumed, and its side effects repeated, by mistake. The resumed run counts its model
        calls and transfers from zero against the limits the run was saved with, or those of
        ``run_config`` (a :class:`RunConfig` of limits only: the streaming mode is the
        checkpoint's)."""
        store = self._store()
        agent_options = _agent_options(model_options, options)  # a bad argument fails before claiming
        config = _resume_config(run_config)
        owner = uuid.uuid4().hex
        data = store.claim_sync(checkpoint_id, owner)
        try:  # until the run owns the claim, a failure releases it
            head = read_step_head(data, checkpoint_id) if data is not None else None
            records = store.read_log_sync(checkpoint_id) if head is not None else []
            return self._resume_claimed(
                checkpoint_id, data, head, records, owner, targets, session_values, agent_options, config
            )
        except BaseException:
            if data is not None:
                store.release_sync(checkpoint_id, owner)
            raise

    async def aresume(
        self,
        checkpoint_id: str,
        *,
        targets: Mapping[str, Any] | None = None,
        session_values: Mapping[str, Any] | None = None,
        model_options: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        run_config: RunConfig | None = None,
    ) -> RunIterator[Any]:
        """``await`` twin of :meth:`resume`, for async code: the store's methods are awaited
        if async, and run on rillet's worker threads if not."""
        store = self._store()
        agent_options = _agent_options(model_options, options)  # a bad argument fails before claiming
        config = _resume_config(run_config)
        owner = uuid.uuid4().hex
        data = await store.claim(checkpoint_id, owner)
        try:  # until the run owns the claim, a failure releases it
            head = read_step_head(data, checkpoint_id) if data is not None else None
            records = await store.read_log(checkpoint_id) if head is not None else []
            return self._resume_claimed(
                checkpoint_id, data, head, records, owner, targets, session_values, agent_options, config
            )
        except BaseException:
            if data is not None:
                await store.release(checkpoint_id, owner)
            raise

    def _resume_claimed(
        self,
        checkpoint_id: str,
        data: bytes | None,
        head: StepHead | None,
        records: list[bytes],
        owner: str,
        targets: Mapping[str, Any] | None,
        session_values: Mapping[str, Any] | None,
        agent_options: dict[str, Any],
        config: RunConfig | None,
    ) -> RunIterator:
        """What :meth:`resume` and :meth:`aresume` do once the checkpoint is claimed: a step
        log's run (``head`` read from it, ``records`` its log) or a whole checkpoint's."""
        if head is not None:
            log = read_log(head, records, checkpoint_id)
            return self._resume_steps(checkpoint_id, log, owner, targets, session_values, agent_options, config)
        loaded = self._check(checkpoint_id, data, targets)
        assert data is not None
        return self._resume(checkpoint_id, loaded, owner, targets, session_values, agent_options, data, config)

    def _store(self) -> StoreAdapter:
        """The checkpoint store, seen through :class:`StoreAdapter` (built again if
        ``checkpoint_store`` was reassigned)."""
        store = self.checkpoint_store
        if store is None:
            raise CheckpointError(
                "failed to resume: the Runner has no checkpoint_store; "
                "create it as Runner(agent, checkpoint_store=...) with the store the run was saved in"
            )
        if self._adapter is None or self._adapter.store is not store:
            self._adapter = StoreAdapter(store)
        return self._adapter

    def _check(self, checkpoint_id: str, data: bytes | None, targets: Mapping[str, Any] | None) -> Loaded:
        """The checkpoint, loaded and checked against ``targets`` and this Runner's agent."""
        if data is None:
            raise CheckpointNotFoundError(f"checkpoint[{checkpoint_id}] not exist")
        loaded: Loaded = load(data, checkpoint_id)
        check_binding(loaded.agent, self.agent, checkpoint_id)
        _log.debug("loaded checkpoint %s (%d bytes)", checkpoint_id, len(data))
        if targets is not None:
            unknown = [t for t in targets if t not in loaded.addresses]
            if unknown:
                raise CheckpointError(
                    f"resume targets {unknown} are not interrupts of checkpoint[{checkpoint_id}]; "
                    f"its interrupt ids are {sorted(loaded.addresses)}"
                )
        return loaded

    def _resume_steps(
        self,
        checkpoint_id: str,
        log: StepLog,
        owner: str,
        targets: Mapping[str, Any] | None,
        session_values: Mapping[str, Any] | None,
        options: dict[str, Any],
        config: RunConfig | None,
    ) -> RunIterator:
        """Continues a step run that did not finish: from its start (or the interrupt it
        resumed), replaying the model calls and tool rounds its log recorded, against the
        limits it started with (or ``config``'s)."""
        records = log.records
        if targets is not None:
            raise CheckpointError(
                f"checkpoint[{checkpoint_id}] is the step record of a run that did not finish; resume it without "
                "targets (it replays what it recorded, including the targets it was resumed with)"
            )
        if not records or records[0][0] not in ("start", "resume"):
            raise CheckpointCorruptError(
                f"checkpoint[{checkpoint_id}]: its step log does not begin with the run's start; "
                "records are missing (was it written by another program?)"
            )
        if records[0][0] == "resume":
            _, blob, saved = records[0]
            loaded = self._check(checkpoint_id, blob, saved)
            return self._resume(checkpoint_id, loaded, owner, saved, session_values, options, blob, config, log)
        start = records[0][1]
        check_binding(start.get("agent"), self.agent, checkpoint_id)
        root = start["root_input"]
        root_input = AgentInput(list(root["messages"]), bool(root["enable_streaming"]))
        session = Session({**start["session_values"], **(session_values or {})})
        ctx = contextvars.copy_context()
        scope.install(ctx, RunContext(session), observing=observing(self.observers), plugins=self._plugins)
        budget = _install_budget(ctx, config.budget() if config is not None else RunBudget.of(start.get("limits")))
        journal = self._journal(checkpoint_id, ctx, session, log)
        events = self._events(root_input, True, options)
        forward = self._forward(
            events, root_input, session, checkpoint_id, budget, resumed=True, owner=owner, journal=journal
        )
        return _session_run(forward, ctx, None)

    def _resume(
        self,
        checkpoint_id: str,
        loaded: Loaded,
        owner: str,
        targets: Mapping[str, Any] | None,
        session_values: Mapping[str, Any] | None,
        options: dict[str, Any],
        blob: bytes,
        config: RunConfig | None,
        log: StepLog | None = None,
    ) -> RunIterator:
        session = loaded.session
        if session_values:
            session.values.update(session_values)
        srun, new_input = None, None
        if loaded.session_ref is not None:  # the run belongs to a session: resume into it
            srun, n = resume_run(
                self._sessions(f"Runner.resume(): checkpoint[{checkpoint_id}] belongs to a session"),
                loaded.session_ref,
                self.session_policy,
            )
            new_input = loaded.root_input.messages[n:]
            session = TurnSession.of(session)
        ctx = contextvars.copy_context()
        resume = ResumeScope(loaded.addresses, loaded.states, targets)
        scope.install(ctx, RunContext(session), resume, observing(self.observers), self._plugins)
        budget = _install_budget(ctx, config.budget() if config is not None else RunBudget.of(loaded.limits))
        journal: Journal | None = None
        first: list[Any] | None = None
        if log is not None or (self.durability == "step" and srun is None):
            journal = self._journal(checkpoint_id, ctx, session, log)
            if log is None:  # the log starts with what this resume starts from
                first = ["resume", blob, dict(targets) if targets is not None else None]
        events = self._events(loaded.root_input, True, options)
        forward = self._forward(
            events,
            loaded.root_input,
            session,
            checkpoint_id,
            budget,
            resumed=True,
            owner=owner,
            srun=srun,
            new_input=new_input,
            journal=journal,
            first=first,
        )
        return _session_run(forward, ctx, srun)

    # --- the forwarder --------------------------------------------------------------------

    async def _forward(
        self,
        events: AsyncIterator[AgentEvent],
        root_input: AgentInput,
        session: Session,
        checkpoint_id: str | None,
        budget: RunBudget,
        resumed: bool = False,
        owner: str | None = None,
        srun: SessionRun | None = None,
        new_input: list[Message] | None = None,
        journal: Journal | None = None,
        first: list[Any] | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """Forwards the run's events; on an interrupt, saves the checkpoint first (an error
        event precedes the interrupt event if saving fails). A resumed run that ends well
        deletes its checkpoint; one that fails, or is abandoned, releases its claim on it
        (``owner``) so that it can be resumed again. Store calls go through :class:`StoreAdapter`.
        The checkpoint keeps the run's limits (``budget``) for its resume. A session run
        (``srun``) that ends well appends its turn (``new_input`` and what the
        run said); an interrupted one leaves that to its resume; either way its hold ends.
        A step run (``journal``) first writes ``first`` (its start) to the log; when it ends
        well, its checkpoint is deleted, when it fails, kept for a resume to retry."""
        store = self._store() if checkpoint_id is not None else None
        # True while this resume holds a claim that no set() or delete() has cleared
        holding = resumed and owner is not None and store is not None and store.claims
        seen_interrupt = failed = False
        try:
            if first is not None and store is not None and checkpoint_id is not None and journal is not None:
                try:
                    if not resumed:  # a new run: whatever was under this id goes
                        await store.set(checkpoint_id, step_head(0))
                    await journal.add(first)
                except Exception as e:
                    err = CheckpointError(f"failed to start the step record of checkpoint[{checkpoint_id}]: {e}")
                    err.__cause__ = e
                    yield AgentEvent(error=err)
                    return
            async for ev in events:
                action = ev.action
                signal = interrupt_signal(action) if action is not None else None
                if action is None or signal is None:
                    failed = failed or ev.error is not None
                    yield ev
                    continue
                if seen_interrupt:
                    yield AgentEvent(
                        ev.agent_name, ev.run_path, error=RilletError("a second interrupt in one run was dropped")
                    )
                    continue
                seen_interrupt = True
                data = action.interrupted.data if action.interrupted is not None else None
                action.interrupted = InterruptInfo(data, signal.contexts())
                if store is not None and checkpoint_id is not None:
                    try:
                        ref = srun.ref() if srun is not None else None
                        binding = agent_binding(self.agent)
                        blob = seal(
                            await dump(
                                root_input, session, signal, data, binding, session_ref=ref, limits=budget.limits()
                            )
                        )
                        await store.set(checkpoint_id, blob)
                        _log.debug("saved checkpoint %s (%d bytes)", checkpoint_id, len(blob))
                        holding = False  # set() cleared the claim: resumable again
                    except Exception as e:  # the user still sees the interrupt, after the error
                        err = CheckpointError(f"failed to save checkpoint[{checkpoint_id}]: {e}")
                        err.__cause__ = e
                        yield AgentEvent(ev.agent_name, ev.run_path, error=err)
                yield ev
            if (
                (resumed or journal is not None)
                and not seen_interrupt
                and not failed
                and store is not None
                and store.deletes
                and checkpoint_id is not None
            ):
                holding = False  # the run is done: even if delete fails, do not offer it again
                try:
                    await (store.delete_with_log if journal is not None else store.delete)(checkpoint_id)
                except Exception as e:
                    yield AgentEvent(
                        error=CheckpointError(f"the run finished but deleting checkpoint[{checkpoint_id}] failed: {e}")
                    )
            if srun is not None and not seen_interrupt and not failed:
                try:
                    await srun.finish(new_input or [], session)
                except SessionError as e:
                    yield AgentEvent(error=e)
                except Exception as e:
                    lost = SessionError(f"the run finished but saving it to session[{srun.session_id}] failed: {e}")
                    lost.__cause__ = e
                    yield AgentEvent(error=lost)
        finally:
            if srun is not None:
                srun.release()
            if isinstance(session, TurnSession):
                session.end()  # the readers kept for a turn that was not stored (cancelled, failed, interrupted)
            if holding and store is not None and checkpoint_id is not None and owner is not None:
                try:
                    await store.release(checkpoint_id, owner)
                except Exception:
                    pass

    def __repr__(self) -> str:
        return f"Runner({self.agent!r}, streaming={self.streaming})"


async def _saving_blobs(
    service: ArtifactService, session_id: str | None, msgs: list[Message], events: AsyncIterator[AgentEvent]
) -> AsyncIterator[AgentEvent]:
    """``events``, after the input messages' blobs are saved (the agent has not read them
    yet: the flow's generator starts at the first event)."""
    run_id = uuid.uuid4().hex[:12]
    try:
        await save_message_blobs(service, session_id or run_id, f"input_{run_id}", msgs)
    except Exception as e:
        await events.aclose()  # type: ignore[attr-defined]
        yield error_event(e)
        return
    async for ev in events:
        yield ev


async def _errors_as_events(events: AsyncIterator[AgentEvent], name: str) -> AsyncIterator[AgentEvent]:
    """A live run's events; an exception of its agents ends them as an error event."""
    try:
        async for ev in events:
            yield ev
    except Exception as e:
        yield error_event(e, name)
    finally:
        await events.aclose()  # type: ignore[attr-defined]


def _install_budget(ctx: contextvars.Context, budget: RunBudget) -> RunBudget:
    """Makes ``budget`` the one every agent of the run started in ``ctx`` counts against."""
    ctx.run(BUDGET.set, budget)
    return budget


def _resume_config(run_config: RunConfig | None) -> RunConfig | None:
    """``resume(run_config=...)``, checked: only its limits apply to a resumed run."""
    if run_config is None:
        return None
    if not isinstance(run_config, RunConfig):
        raise TypeError(f"run_config: expected a rillet.RunConfig, got {type(run_config).__name__}")
    if run_config.streaming_mode is not None or run_config.save_input_blobs_as_artifacts:
        raise ValueError(
            "Runner.resume(run_config=...): a resumed run takes its streaming mode and input from the checkpoint; "
            "give a RunConfig of limits only, e.g. RunConfig(max_llm_calls=1000, max_transfers=200)"
        )
    return run_config


def _input_record(root_input: AgentInput) -> dict[str, Any]:
    return {"messages": list(root_input.messages), "enable_streaming": root_input.enable_streaming}


def _session_run(forward: AsyncIterator[AgentEvent], ctx: contextvars.Context, srun: SessionRun | None) -> RunIterator:
    """Starts the run; a session run's session is freed when its generator is dropped before
    it started, and at once when its iterator is closed or dropped (a consumer that stops early
    can start the next turn straight away: the cancelled task ends later, on its loop)."""
    if srun is None:
        return start_run(forward, ctx)
    srun.guard(forward)
    return start_run(forward, ctx, on_close=srun.release)
