"""Cassettes: a run's model replies recorded once, replayed offline.

Recording goes through a Runner plugin's ``after_model`` hook, replaying through its
``before_model`` hook (which answers in the model's place, so the model is never called), so
any agent works, whatever its model. A cassette file is JSON beside the eval set
(``travel.evalset.json`` → ``travel.cassette.json``): per case, per run (attempt), per agent,
the replies in the order that agent asked for them, each with a digest of the request it
answered: a replay whose request differs, that asks for more replies or that leaves some unused
fails the run (the agent or the case changed since the recording).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from rillet._native import Message
from rillet.errors import CassetteError
from rillet.run.plugin import Plugin

if TYPE_CHECKING:
    from rillet.chatmodel import ModelContext
    from rillet.tools import ToolInfo

__all__ = ["Cassette", "CassetteError", "CassetteMode", "cassette_path"]

CassetteMode: TypeAlias = Literal["record", "replay"]

_Replies: TypeAlias = "dict[str, list[dict[str, Any]]]"  # agent name -> replies, in order


def cassette_path(eval_set_path: str | Path) -> Path:
    """Where the cassette of the eval set in ``eval_set_path`` is kept: beside it, named after it
    (``travel.evalset.json``, ``travel.json`` and ``travel.yaml`` → ``travel.cassette.json``;
    ``travel.v2.json`` → ``travel.v2.cassette.json``: only the suffixes go)."""
    path = Path(eval_set_path)
    stem = path.name
    for suffix in (".json", ".yaml", ".yml"):
        stem = stem.removesuffix(suffix)
    return path.with_name(f"{stem.removesuffix('.evalset')}.cassette.json")


def request_digest(messages: list[Message], tools: Sequence[ToolInfo] = ()) -> str:
    """A short fingerprint of a model request (its messages and the tools offered): the same
    request gives the same digest; a changed prompt, tool result, user input or tool another."""
    request = {"messages": [m.to_dict() for m in messages], "tools": [t.to_openai() for t in tools]}
    text = json.dumps(request, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _reply_of(entry: Any) -> tuple[dict[str, Any], str | None]:
    """A recorded entry's reply and request digest: ``{"request": digest, "reply": message}``,
    or (as first written) the reply's message alone, with no digest to compare."""
    if isinstance(entry, dict) and "reply" in entry:
        return entry["reply"], entry.get("request")
    return entry, None


def _check_runs(path: Path, runs: Any) -> None:
    """Raises :class:`CassetteError` unless ``runs`` has a cassette's shape, every reply an
    assistant message."""
    if not isinstance(runs, dict):
        raise CassetteError(f'{path}: not a cassette (expected {{"runs": {{case id: [...]}}}})')
    for case_id, attempts in runs.items():
        if not isinstance(attempts, list) or not all(isinstance(a, dict) for a in attempts):
            raise CassetteError(f"{path}: case {case_id!r}: expected a list of runs, each {{agent: [reply, ...]}}")
        for n, replies in enumerate(attempts):
            for agent, entries in replies.items():
                where = f"{path}: case {case_id!r}, run {n + 1}, agent {agent!r}"
                if not isinstance(entries, list):
                    raise CassetteError(f"{where}: expected a list of replies")
                for k, entry in enumerate(entries, 1):
                    reply, digest = _reply_of(entry)
                    try:
                        role = Message.from_dict(reply).role if isinstance(reply, dict) else None
                    except Exception as e:  # noqa: BLE001  # whatever the native parser says: the file is damaged
                        raise CassetteError(f"{where}: reply {k} is not a message: {e}") from None
                    if role != "assistant" or not (digest is None or isinstance(digest, str)):
                        raise CassetteError(f"{where}: reply {k} is not an assistant message: {_short(reply)}")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


class Cassette:
    """The recorded replies of an eval set's runs: ``{case id: [{agent: [entry, ...]}, ...]}``
    (one entry per attempt; an entry is ``{"request": digest, "reply": message}``).
    :meth:`plugin` gives the Runner plugin of one run."""

    def __init__(self, runs: dict[str, list[_Replies]] | None = None) -> None:
        self.runs: dict[str, list[_Replies]] = runs if runs is not None else {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str | Path) -> Cassette:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CassetteError(
                f"no cassette at {path}: record one first (cassette='record', or rillet eval ... --cassette record)"
            ) from None
        except (OSError, ValueError) as e:  # ValueError: bad JSON, or not UTF-8
            raise CassetteError(f"{path}: cannot read the cassette: {e}") from e
        if not isinstance(data, dict):
            raise CassetteError(f'{path}: not a cassette (expected {{"runs": {{case id: [...]}}}})')
        _check_runs(path, data.get("runs"))
        return cls(data["runs"])

    def save(self, path: str | Path) -> None:
        text = json.dumps({"runs": self.runs}, ensure_ascii=False, indent=1, sort_keys=True)
        Path(path).write_text(text + "\n", encoding="utf-8")

    def plugin(self, case_id: str, attempt: int, mode: CassetteMode) -> Plugin:
        """The plugin that records the run ``attempt`` of case ``case_id`` into this cassette, or
        replays it (the attempt's own recording, else the case's first)."""
        if mode == "record":
            replies: _Replies = {}
            with self._lock:
                runs = self.runs.setdefault(case_id, [])
                runs.extend({} for _ in range(attempt + 1 - len(runs)))
                runs[attempt] = replies
            return Recorder(replies)
        recorded = self.runs.get(case_id) or []
        if not recorded:
            raise CassetteError(f"the cassette has no recording of case {case_id!r}: record it first")
        chosen = recorded[attempt] if attempt < len(recorded) and recorded[attempt] else recorded[0]
        return Player(case_id, chosen)


class Recorder(Plugin):
    """Records one run's model replies, each with its request's digest (:meth:`Cassette.plugin`)."""

    def __init__(self, replies: _Replies) -> None:
        super().__init__("eval-cassette-recorder")
        self.replies = replies
        self.asked: dict[str, str] = {}

    def before_model(self, ctx: ModelContext) -> None:
        self.asked[ctx.agent_name] = request_digest(ctx.messages, ctx.tools)

    def after_model(self, ctx: ModelContext, reply: Message) -> None:
        entry = {"request": self.asked.pop(ctx.agent_name, None), "reply": reply.to_dict()}
        self.replies.setdefault(ctx.agent_name, []).append(entry)


class Player(Plugin):
    """Replays one run's recorded replies in the model's place (:meth:`Cassette.plugin`)."""

    def __init__(self, case_id: str, replies: _Replies) -> None:
        super().__init__("eval-cassette-player")
        self.case_id = case_id
        self.replies = replies
        self.next: dict[str, int] = {}

    def before_model(self, ctx: ModelContext) -> Message:
        n = self.next.get(ctx.agent_name, 0)
        recorded = self.replies.get(ctx.agent_name, [])
        if n >= len(recorded):
            raise CassetteError(
                f"the cassette of case {self.case_id!r} has {len(recorded)} replies of agent {ctx.agent_name!r}; "
                f"call {n + 1} asked for another (record the case again after changing the agent)"
            )
        reply, digest = _reply_of(recorded[n])
        if digest is not None and digest != request_digest(ctx.messages, ctx.tools):
            last = ctx.messages[-1] if ctx.messages else None
            said = f" (its last message: {last.role} {_short(last.content)})" if last is not None else ""
            raise CassetteError(
                f"the cassette of case {self.case_id!r} does not fit call {n + 1} of agent {ctx.agent_name!r}: "
                f"the request differs from the one recorded{said}; the agent, its prompt, a tool's result or the "
                f"case changed since: record the case again"
            )
        self.next[ctx.agent_name] = n + 1
        return Message.from_dict(reply)

    def unused(self) -> list[str]:
        """What the run left of the recording: ``N replies of agent A`` for each agent that asked
        for fewer replies than were recorded (the agent or the case changed since)."""
        return [
            f"{len(replies) - self.next.get(agent, 0)} of {len(replies)} replies of agent {agent!r}"
            for agent, replies in self.replies.items()
            if self.next.get(agent, 0) < len(replies)
        ]
