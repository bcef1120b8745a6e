"""The dev UI's runs: each consumed on a thread of its own, its records kept and handed to
every browser that watches it (from the first record, so a late page misses nothing). A run
whose last watching page goes away before it ends is cancelled, as closing a chat tab stops
its turn in other agent dev UIs; one that is paused at an interrupt has ended (its checkpoint
is saved) and stays resumable."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from rillet._native import Message, StreamReader
from rillet.checkpoint.journal import decode_records, step_head
from rillet.checkpoint.payload import load
from rillet.checkpoint.stores import CheckpointStore
from rillet.data.events import AgentEvent
from rillet.run.run_handle import RunIterator, close_and_wait
from rillet.runner import Runner
from rillet.sessions import SessionStore
from rillet.sessions.protocol import encode_messages
from rillet.web.calls import CallLog, error_kind
from rillet.web.wire import event_records, jsonable

__all__ = ["Hub", "Run"]


_STOP_WAIT = 2.0  # seconds the runs a stopping server closes may take to end (within uvicorn's grace)


def _new_session() -> str:
    return "chat-" + uuid.uuid4().hex[:12]


class Run:
    """One run (or one resume) of the agent: its records, its status and who waits on it.
    ``status`` is ``running``, then ``done``, ``interrupted``, ``error`` or ``cancelled``."""

    def __init__(self, checkpoint_id: str, kind: str, text: str) -> None:
        self.id = uuid.uuid4().hex[:12]
        self.checkpoint_id = checkpoint_id
        self.records: list[dict[str, Any]] = [{"type": "run_start", "run": self.id, "kind": kind, "text": text}]
        self.status = "running"
        self.answer = ""  # the text of the last assistant message without tool calls
        self._role: str | None = None  # the role of the latest event
        self._ended = False  # the run_end record is in
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._events: RunIterator | None = None  # while it is consumed: what cancel() closes
        self._stream: StreamReader[Message] | None = None  # the message being read, ditto
        self._watchers = 0  # pages reading its records now
        self.calls = CallLog(self.add)  # its model and tool calls, as records
        self.queued = False  # a chat turn waiting for the one before it to end
        self.finished = threading.Event()  # its run_end record is in

    def add(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.records.append(record)
            self._ended = self._ended or record["type"] == "run_end"  # a call's end may come after it
            waiters, self._waiters = self._waiters, []
        for loop, ready in waiters:
            loop.call_soon_threadsafe(ready.set)
        if record["type"] == "run_end":
            self.finished.set()

    async def since(self, start: int) -> list[dict[str, Any]]:
        """The records from number ``start`` on, waiting for one if there are none yet;
        empty once the run has ended and all were handed out."""
        while True:
            ready = asyncio.Event()
            with self._lock:
                if len(self.records) > start or self._ended:
                    return self.records[start:]
                waiter = (asyncio.get_running_loop(), ready)
                self._waiters.append(waiter)
            try:
                await ready.wait()
            finally:  # a page that left: add() must not wake its loop, which may be closed by then
                with self._lock:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)

    def watch(self) -> None:
        """A page starts reading the records."""
        with self._lock:
            self._watchers += 1

    def leave(self) -> None:
        """A page stops reading; if it was the last and the run is still going, the run is
        cancelled: nobody is left to see it, or to answer what it asks."""
        with self._lock:
            self._watchers -= 1
            if self._watchers > 0:
                return
        self.cancel()

    def cancel(self) -> None:
        """Cancels the run if it is still going: its task is cancelled (the tool or model call
        in flight sees CancelledError) and its record stream ends with status ``cancelled``."""
        with self._lock:
            if self.queued and self.status == "running":  # not started: it never will
                self.status = "cancelled"
                events = None
            elif self._events is None or self.status in ("interrupted", "cancelled", "stopped"):
                return  # ended, or its checkpoint is saved: what is left of it only hands that out
            else:
                self.status = "cancelled"
                events, stream = self._events, self._stream
        if events is None:
            self.add({"type": "run_end", "run": self.id, "status": "cancelled", "checkpoint_id": self.checkpoint_id})
            return
        events.close()
        if stream is not None:  # a message being read: its producer need not be the run's task
            stream.close()

    def stop(self) -> RunIterator | None:
        """The server is stopping: if the run is still going, its status becomes ``stopped``
        and its message stream is closed; its events are returned for the caller to close
        (:func:`rillet.run.run_handle.close_and_wait`: a resume's claim is released before the process
        exits), who then ends its record stream with :meth:`stopped`."""
        with self._lock:
            if self.status != "running":
                return None
            self.status = "stopped"
            events, stream = self._events, self._stream
        if stream is not None:
            stream.close()
        return events

    def stopped(self) -> None:
        """The run_end record of a run :meth:`stop` stopped (after the ends of its calls)."""
        self.calls.end_open("cancelled")
        self.add({"type": "run_end", "run": self.id, "status": "stopped", "checkpoint_id": self.checkpoint_id})

    def dequeue(self) -> bool:
        """The turn before it ended: whether this queued turn is still to run (not cancelled
        or stopped meanwhile)."""
        with self._lock:
            self.queued = False
            return self.status == "running"

    def failed_to_start(self, e: Exception) -> None:
        """Ends a run that could not start (its session could not be read), saying why."""
        self._failed(e, 0)
        self.add({"type": "run_end", "run": self.id, "status": self.status, "checkpoint_id": self.checkpoint_id})

    def launch(self, events: RunIterator, on_end: Callable[[Run], None]) -> None:
        """Consumes ``events`` on a thread of its own; ``on_end(run)`` once the run ended."""
        self._events = events  # before any page can watch: cancel() needs it
        threading.Thread(target=self._consume, args=(events, on_end), name=f"rillet-web-{self.id}", daemon=True).start()

    def _consume(self, events: RunIterator, on_end: Callable[[Run], None]) -> None:
        """Reads the run's events into records until it ends, or until :meth:`cancel` closes
        ``events``."""
        seq = 0
        try:
            for ev in events:
                self._take(ev)  # before its records: a page that leaves once it saw them
                for record in event_records(ev, seq):  # must not cancel a saved interrupt
                    self.calls.annotate(record)
                    self._note(record)
                    self.add(record)
                seq += 1
        except Exception as e:  # noqa: BLE001  (the UI shows why a run stopped instead of dying)
            self._failed(e, seq)
        with self._lock:
            self._events = None
            if self.status == "running":
                self.status = "done"
            cut = self.status in ("cancelled", "stopped")
        if cut:  # the calls it cut short, before its end: a page shows none of them still running
            self.calls.end_open("cancelled")
        try:
            on_end(self)  # first: a page reloads the sessions when it sees run_end, and must find the turn
        finally:
            if self.status != "stopped":  # stop() sent its run_end
                self.add(
                    {"type": "run_end", "run": self.id, "status": self.status, "checkpoint_id": self.checkpoint_id}
                )

    def _failed(self, e: Exception, seq: int) -> None:
        with self._lock:
            if self.status in ("cancelled", "stopped"):  # what closing its events raised: not a failure
                return
            self.status = "error"
        self.add(
            {
                "type": "event",
                "seq": seq,
                "agent": "",
                "path": [],
                "error": {"type": type(e).__name__, "message": str(e), "kind": error_kind(e)},
            }
        )

    def _take(self, ev: AgentEvent) -> None:
        """Notes what ``ev`` tells of the run's status, and the stream of its message that is
        read next, which cancel() closes (or closes it now: the run is cancelled already)."""
        mv = ev.message_output
        stream = mv.message_stream if mv is not None and mv.message is None else None
        with self._lock:
            self._stream = stream
            cancelled = self.status in ("cancelled", "stopped")
            if not cancelled and ev.action is not None and ev.action.interrupted is not None:
                self.status = "interrupted"
            elif not cancelled and ev.error is not None:
                self.status = "error"
        if cancelled and stream is not None:
            stream.close()

    def _note(self, record: dict[str, Any]) -> None:
        if record["type"] == "event":
            self._role = record.get("role")  # an open stream's event_end comes without it
        if record["type"] in ("event", "event_end") and not record.get("open"):
            if self._role == "assistant" and not record.get("tool_calls"):
                self.answer = record.get("content", "")


def _sync(result: Any) -> None:
    """Waits for a store method that may be async (called here off the event loop)."""
    if inspect.isawaitable(result):
        asyncio.run(result)  # type: ignore[arg-type]


class _Recording:
    """The checkpoint store as the Runner sees it under step durability: every step record
    appended is also kept in ``logs`` (a finished run's log is deleted from the store, and the
    UI forks from it later)."""

    def __init__(self, store: CheckpointStore, logs: dict[str, list[bytes]]) -> None:
        self._store = store
        self._logs = logs
        self._lock = threading.Lock()

    def append(self, checkpoint_id: str, records: list[bytes], head: bytes) -> Any:
        with self._lock:
            self._logs.setdefault(checkpoint_id, []).extend(bytes(r) for r in records)
        return self._store.append(checkpoint_id, records, head)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _text(message: Any) -> str:
    if isinstance(message, Message):
        calls = ", ".join(f"{c.function.name}({c.function.arguments})" for c in message.tool_calls)
        return (message.content or "") + (f" → {calls}" if calls else "")
    return repr(message)


def _step(index: int, record: list[Any]) -> dict[str, Any]:
    """One step record, as the page lists it."""
    kind = record[0]
    out: dict[str, Any] = {"index": index, "kind": kind}
    if kind == "start":
        messages = record[1].get("root_input", {}).get("messages", []) if isinstance(record[1], dict) else []
        out["summary"] = "input: " + (_text(messages[-1]) if messages else "")
    elif kind == "resume":
        out["summary"] = "resume of " + str(record[1]) + " with " + json.dumps(jsonable(record[2]))
    elif kind == "model":
        out.update(agent=str(record[1]), iteration=record[2], summary=_text(record[3]))
    elif kind == "tools":
        results = [_text(item[1]) for item in record[3]] if isinstance(record[3], list) else []
        out.update(agent=str(record[1]), iteration=record[2], summary="; ".join(results))
    return out


class Hub:
    """The agent, its Runners (streaming, saving interrupts to ``store``), the runs so far and
    the chat: a session of ``sessions``, whose turns (each question and its final answer) are
    the history of the next run, and whose values seed it. New chat starts another session;
    any session of the store, the UI's or one a program saved, can be opened and continued."""

    def __init__(
        self, agent: Any, store: CheckpointStore, sessions: SessionStore, durability: str = "interrupt"
    ) -> None:
        self.agent = agent
        self.store = store
        self.durability = durability
        self.logs: dict[str, list[bytes]] = {}  # checkpoint id -> its step records, kept after the run ends
        self._recording: Any = _Recording(store, self.logs) if durability == "step" else store
        self.sessions = sessions
        self.session_id = _new_session()
        self.runs: dict[str, Run] = {}
        self._questions: dict[str, tuple[str, str]] = {}  # checkpoint id -> its turn's session and question
        self._lock = threading.Lock()
        self._chat_from = 0  # the first run of the current chat (New chat starts another)
        self._last_turn: dict[str, Run] = {}  # session id -> its latest chat turn (the next waits for it)

    def start(self, text: str) -> Run:
        """Starts a turn of the chat on ``text`` in the current session; its checkpoint id is
        the run's own. While the session's previous turn is still going, it waits for it (a
        message sent before the last answer ended), queued: its history then holds that turn."""
        checkpoint_id = "web-" + uuid.uuid4().hex[:12]
        run = Run(checkpoint_id, "run", text)
        with self._lock:
            session_id = self.session_id
            self._questions[checkpoint_id] = (session_id, text)
            run.records[0]["session"] = session_id
            before = self._last_turn.get(session_id)
            self._last_turn[session_id] = run
            run.queued = before is not None and not before.finished.is_set()
            if run.queued:
                self.runs[run.id] = run  # listed (running) while it waits
        if run.queued:
            assert before is not None
            threading.Thread(
                target=self._after, args=(before, run, text), name=f"rillet-web-{run.id}-queued", daemon=True
            ).start()
            return run
        return self._launch(run, self._turn(run, text))

    def _after(self, before: Run, run: Run, text: str) -> None:
        """Starts the queued turn ``run`` once ``before`` has ended (and been stored)."""
        before.finished.wait()
        if not run.dequeue():
            return
        try:
            events = self._turn(run, text)
        except Exception as e:  # noqa: BLE001  (the page is told why, as for a run that failed)
            run.failed_to_start(e)
            return
        self._launch(run, events)

    def _turn(self, run: Run, text: str) -> RunIterator:
        """The run of a chat turn: its session's turns so far as history, its values as seed."""
        data = self.sessions.get(run.records[0]["session"])
        history: list[Message] = []
        values: dict[str, Any] = {}
        if data is not None:
            history = list(data.summary) + [m for t in data.turns if t.index > data.summary_through for m in t.messages]
            values = dict(data.values)
        return self._runner(run).run(
            [*history, Message.user(text)], checkpoint_id=run.checkpoint_id, session_values=values
        )

    def open(self, session_id: str | None) -> str:
        """Makes ``session_id`` the chat (None: a new, empty one); the next turn continues it."""
        with self._lock:
            self.session_id = session_id if session_id is not None else _new_session()
            self._chat_from = len(self.runs)
            return self.session_id

    def resume(self, checkpoint_id: str, targets: Mapping[str, Any]) -> Run:
        """Resumes ``checkpoint_id`` with ``targets``; raises (nothing runs) if Runner.resume
        refuses it."""
        run = Run(checkpoint_id, "resume", ", ".join(f"{k}: {v}" for k, v in targets.items()))
        run.records[0]["decisions"] = self._decisions(checkpoint_id, targets)
        # a session's run (rillet run --session, a program's session_store) resumes into its
        # session, whose turn the Runner then appends; the chat's own turns have none
        events = self._runner(run, sessions=True).resume(checkpoint_id, targets=dict(targets))
        return self._launch(run, events)

    def _decisions(self, checkpoint_id: str, targets: Mapping[str, Any]) -> list[dict[str, Any]]:
        """What a resume answers, for the timeline: each interrupt's id, its address (where the
        checkpoint says; empty if it cannot be read) and the answer (for an approval:
        ``decision`` with its ``reason`` or edited ``arguments``)."""
        try:
            data = self.store.get(checkpoint_id)
            addresses = load(bytes(data), checkpoint_id).addresses if isinstance(data, bytes) else {}
        except Exception:  # noqa: BLE001  (the resume says what is wrong with it; this is only a label)
            addresses = {}
        return [
            {"interrupt": iid, "address": list(addresses.get(iid, ())), "answer": jsonable(answer)}
            for iid, answer in targets.items()
        ]

    def _runner(self, run: Run, *, sessions: bool = False) -> Runner:
        """A Runner for ``run``, reporting its calls to ``run.calls``; with the session store
        if ``sessions`` (a resume: its checkpoint may be a session's run)."""
        calls = run.calls
        return Runner(
            self.agent,
            streaming=True,
            checkpoint_store=self._recording,
            session_store=self.sessions if sessions else None,
            durability="step" if self.durability == "step" else "interrupt",
            observers=[calls],
            plugins=[calls.plugin],
        )

    def reset(self) -> None:
        """New chat: a new session (a reloaded page shows the runs of this chat only)."""
        self.open(None)

    def listing(self) -> list[dict[str, Any]]:
        """The runs of the current chat, in the order they started: what a reloaded page
        replays (each from its first record)."""
        with self._lock:
            runs = list(self.runs.values())[self._chat_from :]
        return [
            {
                "run": r.id,
                "kind": r.records[0]["kind"],
                "text": r.records[0]["text"],
                "status": r.status,
                "checkpoint_id": r.checkpoint_id,
                "events": f"/api/runs/{r.id}/events",
            }
            for r in runs
        ]

    def stop(self) -> None:
        """Ends the event streams of the runs still going (status ``stopped``): the server is
        shutting down and must not wait for them to finish. Each is closed, and given a few
        seconds to let go of what it holds: a resume's claim on its checkpoint, which would
        otherwise refuse every resume of it after a restart until the claim's lease ran out."""
        with self._lock:
            going = [r for r in self.runs.values() if r.status == "running"]
        stopping = [(run, run.stop()) for run in going]
        try:
            close_and_wait([events for _, events in stopping if events is not None], _STOP_WAIT)
        finally:  # then the pages hear it: after the records of the calls it cut short
            for run, _ in stopping:
                run.stopped()

    def steps(self, run_id: str) -> list[dict[str, Any]] | None:
        """The step records of run ``run_id``'s checkpoint (``durability="step"``), each
        summarised; None for an unknown run."""
        run = self.runs.get(run_id)
        if run is None:
            return None
        with self._lock:
            blobs = list(self.logs.get(run.checkpoint_id, ()))
        return [_step(k, r) for k, r in enumerate(decode_records(blobs, run.checkpoint_id))]

    def fork(self, run_id: str, count: int) -> Run:
        """A new run from the first ``count`` step records of run ``run_id``'s checkpoint: the
        recorded model and tool calls are replayed (not made again), then the run goes on live.
        All of them: a replay of the whole run. Raises LookupError / ValueError."""
        run = self.runs.get(run_id)
        with self._lock:
            blobs = list(self.logs.get(run.checkpoint_id, ())) if run is not None else []
        if run is None or not blobs:
            raise LookupError(f"run {run_id!r} has no step record (serve with durability='step', --durability step)")
        if not 1 <= count <= len(blobs):
            raise ValueError(f"run {run_id!r} recorded {len(blobs)} steps: fork from 1 to {len(blobs)} of them")
        fork_id = "fork-" + uuid.uuid4().hex[:12]
        _sync(self._recording.append(fork_id, blobs[:count], step_head(count)))
        what = "replay" if count == len(blobs) else "fork"
        forked = Run(fork_id, what, f"{what} of run {run_id} from step {count - 1}")
        forked.records[0].update(source=run_id, step=count - 1)
        return self._launch(forked, self._runner(forked).resume(fork_id))

    def _launch(self, run: Run, events: RunIterator) -> Run:
        with self._lock:
            self.runs[run.id] = run
        run.launch(events, self._ended)
        return run

    def _ended(self, run: Run) -> None:
        """A run ended: a finished turn of a chat (not a checkpoint saved elsewhere) is appended
        to its session."""
        if run.status != "done":
            return
        with self._lock:
            turn = self._questions.pop(run.checkpoint_id, None)
        if turn is not None:
            session_id, question = turn
            messages = [Message.user(question), Message.assistant(run.answer)]
            self.sessions.append(session_id, encode_messages(messages), {})
