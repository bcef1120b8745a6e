"""Cassettes: a run's model replies recorded once, replayed offline.

Recording goes through a Runner plugin's ``after_model`` hook, replaying through its
``before_model`` hook (which answers in the model's place, so the model is never called), so
any agent works, whatever its model. A cassette file is JSON beside the eval set
(``travel.evalset.json`` → ``travel.cassette.json``): per case, per run (attempt), per agent,
the replies in the order that agent asked for them.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from rillet._native import Message
from rillet.errors import CassetteError
from rillet.run.plugin import Plugin

if TYPE_CHECKING:
    from rillet.chatmodel import ModelContext

__all__ = ["Cassette", "CassetteError", "CassetteMode", "cassette_path"]

CassetteMode: TypeAlias = Literal["record", "replay"]

_Replies: TypeAlias = "dict[str, list[dict[str, Any]]]"  # agent name -> replies, in order


def cassette_path(eval_set_path: str | Path) -> Path:
    """Where the cassette of the eval set in ``eval_set_path`` is kept: beside it, named after it."""
    path = Path(eval_set_path)
    stem = path.name.split(".")[0]
    return path.with_name(f"{stem}.cassette.json")


class Cassette:
    """The recorded replies of an eval set's runs: ``{case id: [{agent: [reply, ...]}, ...]}``
    (one entry per attempt). :meth:`plugin` gives the Runner plugin of one run."""

    def __init__(self, runs: dict[str, list[_Replies]] | None = None) -> None:
        self.runs: dict[str, list[_Replies]] = runs if runs is not None else {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str | Path) -> Cassette:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CassetteError(f"no cassette at {path}: record one first (cassette='record')") from None
        except (OSError, json.JSONDecodeError) as e:
            raise CassetteError(f"{path}: cannot read the cassette: {e}") from e
        if not isinstance(data, dict) or not isinstance(data.get("runs"), dict):
            raise CassetteError(f'{path}: not a cassette (expected {{"runs": {{case id: [...]}}}})')
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
            return _Recorder(replies)
        recorded = self.runs.get(case_id) or []
        if not recorded:
            raise CassetteError(f"the cassette has no recording of case {case_id!r}: record it first")
        chosen = recorded[attempt] if attempt < len(recorded) and recorded[attempt] else recorded[0]
        return _Player(case_id, chosen)


class _Recorder(Plugin):
    def __init__(self, replies: _Replies) -> None:
        super().__init__("eval-cassette-recorder")
        self.replies = replies

    def after_model(self, ctx: ModelContext, reply: Message) -> None:
        self.replies.setdefault(ctx.agent_name, []).append(reply.to_dict())


class _Player(Plugin):
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
        self.next[ctx.agent_name] = n + 1
        return Message.from_dict(recorded[n])
