"""The step record of ``Runner(durability="step")``: what a run's model calls and tool rounds
returned, appended to the checkpoint's log as they finish, so that a run resumed after its
process died replays them instead of calling the model or the tools again.

A step checkpoint is a small *head* (:func:`step_head`: ``b"RSH"``, a version byte, a CRC-32
and the record count) and a log of sealed codec records (see :func:`~rillet.checkpoint.payload.seal`):

* ``["start", {messages, enable_streaming, session_values, agent}]``: a new run's input (first);
* ``["resume", checkpoint, targets]``: or a resume of an interrupt checkpoint (first);
* ``["model", agent, iteration, message]``: a model call's reply (``[..., message, True]``: a
  ``before_model`` callback's response, no model call made);
* ``["tools", agent, iteration, [[position, message, event records or None], ...], values]``:
  results of a tool round's calls (an event that carried an action, such as a transfer, kept as
  its records), and the session values that changed since the last record (a map, or None):
  a replayed call does not run, so what it stored in the session comes back from here.

``agent`` is the agent's key: where it runs, by position, and how many times it started there
before (``#n``), so a loop's rounds keep apart. An agent run by a tool call (an AgentTool's) is
keyed under that call's place in the run: its caller's key, the model call the round follows and
the call's position in it (``agent:outer#0/tool:inner@2.0/agent:inner#0``), never under the call
id the model sent, which some models reuse across rounds (and a replayed round does not start
the agents its calls ran, so counting starts by address would give a later call an earlier one's
record). Logs of version 1 keyed them by address and start count; they are still read that way.
Each record is written once: the bytes a run writes grow with its steps, not with the square of
them.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any, NamedTuple

from rillet._core.address import Address, tool_segment
from rillet._native import AgenticMessage, Message
from rillet.checkpoint.payload import CheckpointCorruptError, seal, unseal
from rillet.data import codec
from rillet.errors import CheckpointError, EncodeError

__all__ = [
    "JOURNAL",
    "STEP_CALL",
    "AgentSteps",
    "Journal",
    "StepHead",
    "StepLog",
    "decode_records",
    "read_log",
    "read_step_head",
    "step_head",
]

_HEAD_MAGIC = b"RSH"
_HEAD_VERSION = 2  # 2: agents run by a tool call keyed by the call's position; 1: by address and start count
_HEAD_READS = (1, 2)
_HEAD_SIZE = 16


class StepHead(NamedTuple):
    """A step head as read: the version its log was written in and its record count."""

    version: int
    length: int  # the records in its log


class StepLog(NamedTuple):
    """A step run's log as read back: its records (the start first) and its head's version."""

    records: list[list[Any]]
    version: int


ToolResult = tuple[Message, list[Any] | None]  # a call's result message, its event's records if it had an action


def step_head(count: int, version: int = _HEAD_VERSION) -> bytes:
    """The head of a step checkpoint whose log holds ``count`` records (16 bytes)."""
    body = bytes([version]) + count.to_bytes(8, "big")
    return _HEAD_MAGIC + zlib.crc32(body).to_bytes(4, "big") + body


def read_step_head(data: bytes, checkpoint_id: str) -> StepHead | None:
    """The version and record count of a step head, or None when ``data`` is another checkpoint."""
    if data[:3] != _HEAD_MAGIC:
        return None
    body = data[7:]
    if len(data) != _HEAD_SIZE or zlib.crc32(body) != int.from_bytes(data[3:7], "big"):
        raise CheckpointCorruptError(
            f"checkpoint[{checkpoint_id}] has a damaged step head ({len(data)} bytes, checksum wrong); "
            "it was altered after rillet saved it"
        )
    if body[0] not in _HEAD_READS:
        raise CheckpointCorruptError(
            f"checkpoint[{checkpoint_id}] is a step record of version {body[0]}, written by a newer rillet; "
            f"this one reads versions {', '.join(map(str, _HEAD_READS))}: resume it with the rillet that wrote it"
        )
    return StepHead(body[0], int.from_bytes(body[1:], "big"))


def encode_record(record: list[Any]) -> bytes:
    return seal(codec.encode(record))


def decode_records(blobs: Sequence[bytes], checkpoint_id: str, count: int | None = None) -> list[list[Any]]:
    """The log's records, each checked against its checksum, and their number against ``count``
    (the head's): a log that lost records would replay less and make finished calls again."""
    if count is not None and len(blobs) != count:
        raise CheckpointCorruptError(
            f"checkpoint[{checkpoint_id}]: its step head counts {count} records but its log holds {len(blobs)}; "
            "records were lost or added by something else (or the run is still appending: resume only a run "
            "whose process has stopped)"
        )
    out = []
    for k, blob in enumerate(blobs):
        record = codec.decode(unseal(bytes(blob), checkpoint_id))
        least = _KINDS.get(record[0]) if isinstance(record, list) and record and isinstance(record[0], str) else None
        if least is None or len(record) < least:
            raise CheckpointCorruptError(
                f"checkpoint[{checkpoint_id}]: record {k} of its log is not a step record; "
                "the log was written by something else"
            )
        out.append(record)
    return out


def read_log(head: StepHead, blobs: Sequence[bytes], checkpoint_id: str) -> StepLog:
    """The log under ``head``, checked (:func:`decode_records`); a log of version 1 that the
    keys of its version cannot replay right (:func:`_check_version_1`) is refused."""
    records = decode_records(blobs, checkpoint_id, head.length)
    if head.version == 1:
        _check_version_1(records, checkpoint_id)
    return StepLog(records, head.version)


def _check_version_1(records: list[list[Any]], checkpoint_id: str) -> None:
    """Version 1 keyed an agent run by a tool call under the call's id and its start count
    there. Where an agent's model sent one call id more than once and that call ran agents,
    the replay of an earlier round (which starts nothing) would give a later call the earlier
    call's records: such a log is refused rather than replayed wrong."""
    sent: dict[str, int] = {}  # a call's address segment text -> times the model asked for it
    for record in records:
        if record[0] == "model" and isinstance(record[3], Message):
            where = record[1].rpartition("#")[0]
            for c in record[3].tool_calls:
                seg = f"{where}/{tool_segment(c.function.name, c.id)}/"
                sent[seg] = sent.get(seg, 0) + 1
    reused = [seg for seg, n in sent.items() if n > 1]
    keys = {r[1] for r in records if r[0] in ("model", "tools")}
    clash = next((seg for seg in reused if any(k.startswith(seg) for k in keys)), None)
    if clash is not None:
        raise CheckpointError(
            f"checkpoint[{checkpoint_id}] is a step record of version 1 (an older rillet) whose model sent the "
            f"tool call {clash[:-1]} more than once, and that call ran an agent: version 1 cannot tell those "
            "calls' records apart, so a replay could answer one call with another's result; nothing was run. "
            "Start the run again (this rillet records agent tool runs by the call's position, not its id)"
        )


# Each kind of record and its least length (a "tools" record before session values has 4).
_KINDS = {"start": 2, "resume": 3, "model": 4, "tools": 4}

Writer = Callable[[list[bytes], bytes], Awaitable[None]]  # (records, head) -> appended


class Journal:
    """One step run's record: appends what finishes (through ``write``, the store's append) and
    answers, from the records of a run that died, what it already did."""

    def __init__(
        self,
        write: Writer,
        log: StepLog | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        """``log``: the records of the run that died (its start first), to replay; None for a new run."""
        self._write = write
        self._count = len(log.records) if log is not None else 0
        self.version = log.version if log is not None else _HEAD_VERSION  # a log goes on in its own version
        replay = log.records[1:] if log is not None else ()
        self._lock = asyncio.Lock()  # appends in order: the fallback store numbers records by the head
        self._starts: dict[tuple[str, Address], int] = {}
        self.replies: dict[tuple[str, int], Message] = {}
        self.given: set[tuple[str, int]] = set()  # the replies a before_model callback gave (no model call)
        self.tools: dict[tuple[str, int], dict[int, ToolResult]] = {}
        self._values = values  # the run's session values (shared, changed in place), None: not tracked
        self._seen = _encoded(values) if values is not None else {}  # as last recorded, encoded
        self._replayed_values: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for record in replay:
            if record[0] == "model":
                self.replies[(record[1], record[2])] = record[3]
                if len(record) > 4 and record[4]:
                    self.given.add((record[1], record[2]))
            elif record[0] == "tools":
                done = self.tools.setdefault((record[1], record[2]), {})
                for pos, msg, recs in record[3]:
                    done[int(pos)] = (msg, recs)
                if len(record) > 4 and record[4]:
                    self._replayed_values.setdefault((record[1], record[2]), []).append(dict(record[4]))

    def changed_values(self) -> dict[str, Any] | None:
        """The session values changed (compared encoded: in place too) since the last call."""
        if self._values is None:
            return None
        now = _encoded(self._values)
        changed = {k: self._values[k] for k, b in now.items() if self._seen.get(k) != b}
        self._seen = now
        return changed or None

    def replay_values(self, key: tuple[str, int]) -> None:
        """Puts back the session values the replayed tool round ``key`` had stored."""
        if self._values is None:
            return
        for values in self._replayed_values.pop(key, ()):
            self._values.update(values)
        self._seen = _encoded(self._values)

    def agent(self, address: Address) -> AgentSteps:
        """The record of the agent at ``address``, for its next start there: under the tool call
        it runs in (:data:`STEP_CALL`), if any, and its address below that call. Starts are
        counted per call: a call either replays whole (starting nothing) or runs again from its
        start, so its agents start in the same order in every process."""
        call = STEP_CALL.get() if self.version >= 2 else None
        if call is None:
            prefix, below = "", address
        else:
            key, at = call
            prefix = key + "/"
            below = address[len(at) :] if address[: len(at)] == at else address  # (a Runner of its own: from its root)
        n = self._starts.get((prefix, below), 0)
        self._starts[(prefix, below)] = n + 1
        return AgentSteps(self, prefix + "/".join(below) + f"#{n}")

    async def add(self, record: list[Any]) -> None:
        """Appends ``record`` to the log (durably, before the run goes on)."""
        blob = encode_record(record)
        async with self._lock:
            await self._write([blob], step_head(self._count + 1, self.version))
            self._count += 1


class AgentSteps:
    """What one agent run of a step run records and replays."""

    __slots__ = ("journal", "key")

    def __init__(self, journal: Journal, key: str) -> None:
        self.journal = journal
        self.key = key

    def call(self, iteration: int, position: int, tool: str) -> str:
        """The key of the tool call at ``position`` of the round after model call ``iteration``,
        under which the agents it runs are recorded (see :meth:`Journal.agent`)."""
        return f"{self.key}/tool:{tool}@{iteration}.{position}"

    def reply(self, iteration: int) -> Message | None:
        """The recorded reply of model call ``iteration``, if the run made it before."""
        return self.journal.replies.get((self.key, iteration))

    def given(self, iteration: int) -> bool:
        """Whether the recorded reply of ``iteration`` was a ``before_model`` callback's
        response (the run made no model call for it)."""
        return (self.key, iteration) in self.journal.given

    async def record_reply(self, iteration: int, reply: Message | AgenticMessage, given: bool = False) -> None:
        await self.journal.add(
            ["model", self.key, iteration, reply, True] if given else ["model", self.key, iteration, reply]
        )

    def tool_results(self, iteration: int) -> dict[int, ToolResult]:
        """The recorded results (by position) of the tool round after model call ``iteration``."""
        return self.journal.tools.get((self.key, iteration), {})

    async def record_tools(self, iteration: int, results: dict[int, ToolResult]) -> None:
        rows = [[pos, msg, recs] for pos, (msg, recs) in sorted(results.items())]
        await self.journal.add(["tools", self.key, iteration, rows, self.journal.changed_values()])

    def replay_values(self, iteration: int) -> None:
        """Puts back what the recorded calls of round ``iteration`` stored in the session."""
        self.journal.replay_values((self.key, iteration))


def _encoded(values: dict[str, Any]) -> dict[str, bytes]:
    out = {}
    for k, v in list(values.items()):
        try:
            out[k] = codec.encode(v)
        except EncodeError as e:
            raise EncodeError(
                f"session value {k!r} cannot be kept in the step record (durability='step' records the session "
                f"values a tool stores, so a replayed tool gives them back): {e}"
            ) from e
    return out


JOURNAL: ContextVar[Journal | None] = ContextVar("rillet_step_journal", default=None)
STEP_CALL: ContextVar[tuple[str, Address] | None] = ContextVar("rillet_step_call", default=None)
"""In a step run, the tool call the code runs in: its key (:meth:`AgentSteps.call`) and its address."""
