"""The dev UI's runs: each consumed on a thread of its own, its records kept and handed to
every browser that watches it (from the first record, so a late page misses nothing)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from rillet._native import Message
from rillet.agent import RunIterator
from rillet.checkpoint.stores import CheckpointStore
from rillet.runner import Runner
from rillet.web.wire import event_records

__all__ = ["Hub", "Run"]


class Run:
    """One run (or one resume) of the agent: its records, its status and who waits on it.
    ``status`` is ``running``, then ``done``, ``interrupted`` or ``error``."""

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

    def add(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.records.append(record)
            self._ended = record["type"] == "run_end"
            waiters, self._waiters = self._waiters, []
        for loop, ready in waiters:
            loop.call_soon_threadsafe(ready.set)

    async def since(self, start: int) -> list[dict[str, Any]]:
        """The records from number ``start`` on, waiting for one if there are none yet;
        empty once the run has ended and all were handed out."""
        while True:
            ready = asyncio.Event()
            with self._lock:
                if len(self.records) > start or self._ended:
                    return self.records[start:]
                self._waiters.append((asyncio.get_running_loop(), ready))
            await ready.wait()

    def consume(self, events: RunIterator, on_end: Callable[[Run], None]) -> None:
        """Reads the run's events into records (on the calling thread) until it ends."""
        seq = 0
        try:
            for ev in events:
                for record in event_records(ev, seq):
                    self._note(record)
                    self.add(record)
                seq += 1
                if ev.action is not None and ev.action.interrupted is not None:
                    self.status = "interrupted"
                elif ev.error is not None:
                    self.status = "error"
        except Exception as e:  # noqa: BLE001  (the UI shows why a run stopped instead of dying)
            self.add(
                {
                    "type": "event",
                    "seq": seq,
                    "agent": "",
                    "path": [],
                    "error": {"type": type(e).__name__, "message": str(e)},
                }
            )
            self.status = "error"
        with self._lock:
            if self.status == "running":
                self.status = "done"
        self.add({"type": "run_end", "run": self.id, "status": self.status, "checkpoint_id": self.checkpoint_id})
        on_end(self)

    def _note(self, record: dict[str, Any]) -> None:
        if record["type"] == "event":
            self._role = record.get("role")  # an open stream's event_end comes without it
        if record["type"] in ("event", "event_end") and not record.get("open"):
            if self._role == "assistant" and not record.get("tool_calls"):
                self.answer = record.get("content", "")


class Hub:
    """The agent, its Runner (streaming, saving interrupts to ``store``), the runs so far and
    the chat's history: each finished turn adds the question and the answer."""

    def __init__(self, agent: Any, store: CheckpointStore) -> None:
        self.store = store
        self.runner = Runner(agent, streaming=True, checkpoint_store=store)
        self.runs: dict[str, Run] = {}
        self.history: list[Message] = []
        self._questions: dict[str, str] = {}  # checkpoint id -> the question of its turn
        self._lock = threading.Lock()

    def start(self, text: str) -> Run:
        """Starts a turn of the chat on ``text``; its checkpoint id is the run's own."""
        checkpoint_id = "web-" + uuid.uuid4().hex[:12]
        run = Run(checkpoint_id, "run", text)
        with self._lock:
            history = list(self.history)
            self._questions[checkpoint_id] = text
        events = self.runner.run([*history, Message.user(text)], checkpoint_id=checkpoint_id)
        return self._launch(run, events)

    def resume(self, checkpoint_id: str, targets: Mapping[str, Any]) -> Run:
        """Resumes ``checkpoint_id`` with ``targets``; raises (nothing runs) if Runner.resume
        refuses it."""
        run = Run(checkpoint_id, "resume", ", ".join(f"{k}: {v}" for k, v in targets.items()))
        events = self.runner.resume(checkpoint_id, targets=dict(targets))
        return self._launch(run, events)

    def reset(self) -> None:
        with self._lock:
            self.history.clear()

    def stop(self) -> None:
        """Ends the event streams of the runs still going (status ``stopped``): the server is
        shutting down and must not wait for them (their threads die with the process)."""
        with self._lock:
            going = [r for r in self.runs.values() if r.status == "running"]
        for run in going:
            run.add({"type": "run_end", "run": run.id, "status": "stopped", "checkpoint_id": run.checkpoint_id})

    def _launch(self, run: Run, events: RunIterator) -> Run:
        with self._lock:
            self.runs[run.id] = run
        threading.Thread(
            target=run.consume, args=(events, self._ended), name=f"rillet-web-{run.id}", daemon=True
        ).start()
        return run

    def _ended(self, run: Run) -> None:
        if run.status != "done":
            return
        with self._lock:
            question = self._questions.pop(run.checkpoint_id, None)
            if question is not None:  # a turn of this chat (not a checkpoint saved elsewhere)
                self.history += [Message.user(question), Message.assistant(run.answer)]
