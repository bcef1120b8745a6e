"""A run inside a session: what the Runner loads before and appends after.

Kept apart from the Runner so that ``rillet.runner`` only calls :func:`open_run` /
:func:`resume_run` and :meth:`SessionRun.finish`.
"""

from __future__ import annotations

import contextvars
import inspect
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any

from rillet._core import scope
from rillet._core.workers import run_sync
from rillet._native import AgenticMessage, Message, StreamReader
from rillet.data import codec
from rillet.data.schema import aconcat_message_stream
from rillet.errors import SessionError
from rillet.flow import flow_of
from rillet.run.agent import AgentInput
from rillet.run.context import RunContext, Session
from rillet.run.run_handle import start_run
from rillet.sessions.policies import LastTurns, SessionPolicy, SummarizeOldest, TokenBudget
from rillet.sessions.protocol import SessionHead, SessionStore, decode_messages, encode_messages

__all__ = ["SessionRun", "TurnSession", "call_summarizer", "open_run", "resume_run"]

LEASE = 600.0  # seconds a busy mark holds if its run died without releasing it


@dataclass
class SessionRun:
    """One run's hold on a session: the history it loaded (``history``, the first messages
    of the run's input) and the values it started from (encoded), to write only changes."""

    store: SessionStore
    session_id: str
    policy: SessionPolicy | None
    owner: str
    history: list[Message] = field(default_factory=list)
    baseline: dict[str, bytes] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)

    def ref(self) -> dict[str, Any]:
        """What a checkpoint records of the session: its id and how many of the root input's
        messages are history (the rest is this run's own input)."""
        return {"id": self.session_id, "history": len(self.history)}

    def release(self) -> None:
        self.store.release(self.session_id, self.owner)

    def guard(self, events: object) -> None:
        """Releases the session when ``events`` (the run's generator) is dropped: a run
        abandoned before its generator started never reaches its ``finally``. Releasing
        twice is harmless: only this run's own mark is cleared."""
        weakref.finalize(events, self.store.release, self.session_id, self.owner)

    async def finish(self, new_input: list[Message], session: Session) -> None:
        """Appends the turn: ``new_input`` and the run's assistant and tool messages, and
        the values that differ from what the run started from."""
        messages = list(new_input) + await run_messages(session)
        with session.lock:
            current = dict(session.values)
        changed = {}
        for k, v in current.items():
            blob = codec.encode(v)
            if self.baseline.get(k) != blob:
                changed[k] = blob
        await run_sync(self.store.append, self.session_id, encode_messages(messages), changed)
        if isinstance(self.policy, SummarizeOldest):
            try:
                await self._summarize(self.policy)
            except Exception as e:  # the turn is saved; the next run tries again
                raise SessionError(
                    f"session[{self.session_id}]: the turn was saved, but summarising the oldest turns failed: "
                    f"{type(e).__name__}: {e}"
                ) from e

    async def _summarize(self, policy: SummarizeOldest) -> None:
        head = await run_sync(self.store.head, self.session_id)
        if head is None or head.last_turn - head.summary_through < policy.keep_turns + policy.every:
            return
        through = head.last_turn - policy.keep_turns
        rows = await run_sync(lambda: self.store.turns(self.session_id, after=head.summary_through, before=through + 1))
        old = decode_messages(head.summary) if head.summary is not None else []
        old += [m for _, data in sorted(rows) for m in decode_messages(data)]
        summary = await call_summarizer(policy.summarizer, old)
        await run_sync(self.store.set_summary, self.session_id, through, encode_messages([summary]))


@dataclass(eq=False)
class TurnSession(Session):
    """A session run's session: when the run's root ends and closes the streams no one read
    (:meth:`Session.close_streams`), it first keeps a reader of each, so that the turn can
    still be read whole afterwards (:func:`run_messages` takes them). :meth:`end` closes the
    readers no one took, and from then on nothing is kept: a turn that is not stored (its
    run was cancelled, failed or interrupted) must not hold its model's stream open."""

    kept: dict[int, StreamReader[Message]] = field(default_factory=dict, repr=False)
    ended: bool = field(default=False, repr=False)

    def close_streams(self) -> None:
        for ev in self.snapshot():
            mv = ev.message_output
            if mv is not None and mv.message is None and mv.message_stream is not None:
                with self.lock:  # (end() may come first: the flow's generator can be closed after the run's)
                    if not self.ended and id(ev) not in self.kept:
                        mv.message_stream, self.kept[id(ev)] = mv.message_stream.copy(2)
        super().close_streams()

    def end(self) -> None:
        """Ends the turn: closes the kept readers that storing it did not take, so that a
        producer (a model's HTTP response) learns that nobody reads the rest; streams closed
        after this are not kept. Calling it again does nothing."""
        with self.lock:
            self.ended = True
            kept, self.kept = self.kept, {}
        for reader in kept.values():
            reader.close()

    @classmethod
    def of(cls, session: Session) -> TurnSession:
        """``session`` (restored from a checkpoint) as a TurnSession: the same values and log."""
        out = cls(session.values)
        out.restore(session.snapshot(), list(session.stamps))
        return out


async def run_messages(session: Session) -> list[Message]:
    """The assistant and tool messages the run's events carried, in order: what the models
    saw of this run and a next turn's model needs (errors and actions are left out)."""
    kept = session.kept if isinstance(session, TurnSession) else {}
    out = []
    for ev in session.snapshot():
        mv = ev.message_output
        if ev.error is None and mv is not None and mv.role in ("assistant", "tool"):
            reader = kept.pop(id(ev), None)
            out.append(await aconcat_message_stream(reader) if reader is not None else await mv.aget_message())
    return out


def open_run(store: SessionStore, session_id: str, policy: SessionPolicy | None) -> SessionRun:
    """Marks the session busy (or raises :class:`~rillet.errors.SessionBusyError`) and loads
    what ``policy`` keeps of it."""
    _check_id(session_id)
    run = SessionRun(store, session_id, policy, uuid.uuid4().hex)
    store.acquire(session_id, run.owner, LEASE)
    try:
        head = store.head(session_id)
        if head is not None:
            run.history = _history(store, session_id, head, policy)
            run.baseline = dict(head.values)
            run.values = {k: codec.decode(v) for k, v in head.values.items()}
    except BaseException as e:
        run.release()
        if isinstance(e, codec.DecodeError):
            raise SessionError(
                f"session[{session_id}] in {store!r} holds a row rillet cannot read ({e}); "
                f"delete the session (store.delete({session_id!r})) or restore the store from a backup"
            ) from e
        raise
    return run


def resume_run(store: SessionStore, ref: dict[str, Any], policy: SessionPolicy | None) -> tuple[SessionRun, int]:
    """The hold of a resumed run on the session its checkpoint names, and how many of the
    checkpoint's input messages were history. The values to compare with are the session's
    current ones: a resumed run writes what it changed, after whatever ran in between."""
    session_id, n = str(ref["id"]), int(ref["history"])
    run = SessionRun(store, session_id, policy, uuid.uuid4().hex)
    store.acquire(session_id, run.owner, LEASE)
    try:
        head = store.head(session_id)
        run.baseline = dict(head.values) if head is not None else {}
    except BaseException:
        run.release()
        raise
    return run, n


def _check_id(session_id: object) -> None:
    if not isinstance(session_id, str) or not session_id:
        raise TypeError(f"session_id: expected a non-empty str, got {session_id!r}")


def _history(store: SessionStore, session_id: str, head: SessionHead, policy: SessionPolicy | None) -> list[Message]:
    summary = decode_messages(head.summary) if head.summary is not None else []
    after = head.summary_through
    if isinstance(policy, LastTurns):
        rows = store.turns(session_id, after=after, limit=policy.n)
    elif isinstance(policy, TokenBudget):
        rows = _within_budget(store, session_id, after, policy, sum(policy.counter(m) for m in summary))
    else:
        rows = store.turns(session_id, after=after)
    return summary + [m for _, data in sorted(rows) for m in decode_messages(data)]


def _within_budget(
    store: SessionStore, session_id: str, after: int, policy: TokenBudget, used: int
) -> list[tuple[int, bytes]]:
    kept: list[tuple[int, bytes]] = []
    before: int | None = None
    while True:
        rows = store.turns(session_id, after=after, before=before, limit=policy.batch)
        for i, data in rows:
            used += sum(policy.counter(m) for m in decode_messages(data))
            if used > policy.max_tokens:
                return kept
            kept.append((i, data))
        if len(rows) < policy.batch:
            return kept
        before = rows[-1][0]


async def call_summarizer(summarizer: Any, messages: list[Message], where: str = "SummarizeOldest") -> Message:
    """The summary of ``messages`` by ``summarizer`` (a function or an agent, see
    :class:`SummarizeOldest`): a text becomes one system message. ``where`` names the caller
    in errors (the summarisation middleware uses it too)."""
    if callable(getattr(summarizer, "run", None)) and hasattr(summarizer, "name"):
        out: Any = await _run_agent(summarizer, messages)
    else:
        out = summarizer(messages)
        if inspect.isawaitable(out):
            out = await out
    if isinstance(out, str):
        return Message.system(f"Summary of the earlier conversation:\n{out}")
    if isinstance(out, (Message, AgenticMessage)):
        return out  # type: ignore[return-value]  # (an AgenticMessage in a block-list session)
    raise TypeError(
        f"{where}: the summarizer returned {type(out).__name__}; return a str or a Message (or AgenticMessage)"
    )


async def _run_agent(agent: Any, messages: list[Message]) -> str:
    """``agent``'s summary of ``messages``, run in a run context of its own (its events go
    to its own session, not to the conversation's)."""
    text = "\n".join(f"{m.role}: {m.content or ''}" for m in messages if m.content)
    ctx = contextvars.copy_context()
    scope.install(ctx, RunContext(Session()))
    last = ""
    async for ev in start_run(flow_of(agent).events(AgentInput([Message.user(text)])), ctx):
        if ev.error is not None:
            raise ev.error
        mv = ev.message_output
        if mv is not None and mv.role == "assistant":
            last = (await mv.aget_message()).content or ""
    return last
