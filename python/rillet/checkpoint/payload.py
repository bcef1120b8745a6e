"""What a checkpoint holds and how it is written with :mod:`rillet.codec`.

The payload is plain data: the root input, the streaming mode, the session values, every
recorded event (streams concatenated; errors as ``{type, message}`` so any exception can be
saved), and the interrupt tree flattened to ``id -> address`` and ``id -> state``. Session
values and interrupt info and state must be encodable: if one is not, saving fails with the
codec's message naming the value and the fix.

An event is kept as a *record*, a list of seven items (payload versions 2 and 3)::

    [agent_name, run_path, message, role, tool_name, is_streaming, extras]

* ``run_path``: the list of agent names the first time a path appears in a list of records,
  and afterwards its index among the distinct paths of that list (0 for the first one), so a
  long run does not repeat the same path a thousand times. Version 3 writes a path that
  extends one written before as ``[index, name]`` (that path plus one step), so a LoopAgent's
  path, a step longer each round, costs one name a round, not the whole path;
* ``message``, ``role``, ``tool_name``, ``is_streaming``: the event's message output (a
  stream concatenated into one message), or ``None, None, None, False`` when it has none;
* ``extras``: ``None``, or a dict of what events rarely carry: ``customized_output``,
  ``action`` (``exit``, ``transfer_to``, ``break_loop: [from_agent, done, iterations]``,
  ``state_delta``, ``customized``) and ``error`` (``{type, message}``), and ``branch`` (the
  Parallel lane the event came from, see :attr:`AgentEvent.branch`).

Version 1 kept each event as a dict with those same names as keys (``agent_name``,
``run_path``, ``message``, ``role``, ``tool_name``, ``is_streaming``, ``customized_output``,
``action``, ``error``); checkpoints written then, and the records inside their interrupt
states, still load.

Since rillet recorded which agent saved a checkpoint, the payload may also hold ``agent``:
``{name, fingerprint, tree}`` of the root agent (see :mod:`rillet.checkpoint.binding`);
payloads without it (written before) load and resume with any agent, as they always did.

The Runner stores a payload inside a checksummed envelope (:func:`seal`, checked by
:func:`load` before anything is decoded); bytes without the envelope, written before it
existed, still load unchecked. docs/checkpoint-format.md describes the envelope.
"""

from __future__ import annotations

import gc
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from rillet._core.interrupt import InterruptSignal
from rillet._native import events_from_records, stream_from_list
from rillet.data import codec
from rillet.data.events import (
    AgentAction,
    AgentEvent,
    AgentOutput,
    BreakLoopAction,
    MessageVariant,
    RunPath,
    RunStep,
    TransferToAgentAction,
    parent_path,
)
from rillet.errors import (
    CheckpointClaimedError,
    CheckpointCorruptError,
    CheckpointError,
    CheckpointNotFoundError,
    EncodeError,
    RecordedError,
)
from rillet.run.agent import AgentInput, StateDelta
from rillet.run.context import Session

__all__ = [
    "PAYLOAD_VERSION",
    "CheckpointClaimedError",
    "CheckpointCorruptError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "Loaded",
    "load",
]

PAYLOAD_VERSION = 3
_READS = (1, 2, 3)
_KIND = "rillet.checkpoint"


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pauses the cyclic garbage collector while a checkpoint's thousands of objects are made:
    they are all live, so the collections their allocations would trigger find nothing
    (they were a tenth of a load). The codec's decoder does the same."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- events -> records ------------------------------------------------------------------------


def _action_record(a: AgentAction) -> dict[str, Any]:
    act: dict[str, Any] = {}
    if a.exit:
        act["exit"] = True
    if a.transfer_to_agent is not None:
        act["transfer_to"] = a.transfer_to_agent.dest_agent_name
    if a.break_loop is not None:
        b = a.break_loop
        act["break_loop"] = [b.from_agent, b.done, b.current_iterations]
    if a.state_delta is not None:
        act["state_delta"] = dict(a.state_delta)
    if a.customized_action is not None:
        act["customized"] = a.customized_action
    return act


def extras_record(ev: AgentEvent, custom: Any) -> dict[str, Any]:
    """The parts of an event that few events set: customized output, action, error, branch."""
    action, err = ev.action, ev.error
    extras: dict[str, Any] = {}
    if custom is not None:
        extras["customized_output"] = custom
    if action is not None:
        extras["action"] = _action_record(action)
    if err is not None:
        extras["error"] = {
            "type": getattr(err, "type_name", type(err).__name__),
            "message": getattr(err, "message", str(err)),
        }
    if ev.branch is not None:
        extras["branch"] = ev.branch
    return extras


class _RecordWriter:
    """Turns events into records, remembering the run paths already written."""

    __slots__ = ("by_id", "by_names", "keep", "records")

    def __init__(self) -> None:
        self.records: list[list[Any]] = []
        self.by_names: dict[tuple[Any, ...], int] = {}  # names, or (index, name) of an extension
        self.by_id: dict[int, int] = {}  # id of a run-path object -> its index
        self.keep: list[Any] = []  # those objects, so that their ids stay theirs

    def _path(self, run_path: Sequence[RunStep]) -> list[Any] | int:
        """``run_path``'s names (or its parent's index and its last name) the first time it
        is written, else its index."""
        ref = self.by_id.get(id(run_path))
        if ref is not None:
            return ref
        parent = parent_path(run_path) if isinstance(run_path, RunPath) else None
        base = self.by_id.get(id(parent)) if parent else None
        if base is not None:  # a step longer than a path written before: O(1)
            form: list[Any] = [base, run_path[-1].agent_name]
            key: tuple[Any, ...] = (base, form[1])
        else:
            form = [s.agent_name for s in run_path]
            key = tuple(form)
        ref = self.by_names.get(key)
        self.keep.append(run_path)
        if ref is None:
            self.by_id[id(run_path)] = self.by_names[key] = len(self.by_names)
            return form
        self.by_id[id(run_path)] = ref
        return ref

    def add(self, events: list[AgentEvent], start: int) -> int:
        """Appends the records of ``events[start:]`` up to the first event holding an unread
        stream and returns its index (``len(events)`` when none does)."""
        append = self.records.append
        last_path: Any = None  # the run path of the event before (usually the same tuple)
        ref: list[Any] | int = 0
        for i, ev in enumerate(events[start:] if start else events, start):
            msg = role = tool_name = custom = None
            streaming = False
            output = ev.output
            if output is not None:
                mv = output.message_output
                if mv is not None:
                    msg = mv.message
                    if msg is None:
                        return i
                    role, tool_name, streaming = mv.role, mv.tool_name, mv.is_streaming
                custom = output.customized_output
            run_path = ev.run_path
            if run_path is not last_path:
                ref = self._path(run_path)
                last_path = run_path if ref.__class__ is int else None
            append(
                [
                    ev.agent_name,
                    ref,
                    msg,
                    role,
                    tool_name,
                    streaming,
                    None
                    if custom is None and ev.action is None and ev.error is None and ev.branch is None
                    else extras_record(ev, custom),
                ]
            )
        return len(events)


async def events_to_records(events: list[AgentEvent]) -> list[list[Any]]:
    """The records of ``events`` (see the module docstring). A stream no one read is read
    to its end (awaited) and concatenated; without such streams nothing is awaited."""
    writer = _RecordWriter()
    with _gc_paused():
        i = writer.add(events, 0)
    while i < len(events):
        mv = events[i].message_output
        assert mv is not None
        await mv.aget_message()
        with _gc_paused():
            i = writer.add(events, i)
    return writer.records


# --- records -> events ------------------------------------------------------------------------


def apply_extras_record(ev: AgentEvent, extras: dict[str, Any]) -> None:
    custom = extras.get("customized_output")
    if custom is not None:
        if ev.output is None:
            ev.output = AgentOutput(None, custom)
        else:
            ev.output.customized_output = custom
    act = extras.get("action")
    if act is not None:
        brk = act.get("break_loop")
        ev.action = AgentAction(
            exit=bool(act.get("exit")),
            transfer_to_agent=TransferToAgentAction(act["transfer_to"]) if "transfer_to" in act else None,
            break_loop=BreakLoopAction(brk[0], bool(brk[1]), int(brk[2])) if brk is not None else None,
            customized_action=act.get("customized"),
            state_delta=StateDelta(act["state_delta"]) if "state_delta" in act else None,
        )
    err = extras.get("error")
    if err is not None:
        ev.error = RecordedError(err["type"], err["message"])
    branch = extras.get("branch")
    if branch is not None:
        ev.branch = branch


def _v1_as_v2(rec: dict[str, Any]) -> list[Any]:
    """A version-1 record (a dict) in the version-2 layout; its dict serves as the extras."""
    msg = rec.get("message")
    if msg is None:
        return [rec["agent_name"], rec["run_path"], None, None, None, False, rec]
    role, tool_name = rec.get("role", "assistant"), rec.get("tool_name", "")
    return [rec["agent_name"], rec["run_path"], msg, role, tool_name, bool(rec.get("is_streaming")), rec]


class _EventKinds(NamedTuple):
    """What ``events_from_records`` (Rust) makes events of."""

    event: type[AgentEvent]
    variant: type[MessageVariant]
    output: type[AgentOutput]
    run_step: type[RunStep]
    extend_path: Callable[[Sequence[RunStep], tuple[RunStep, ...]], RunPath]
    one_chunk_stream: Callable[[list[Any]], Any]
    apply_extras: Callable[[AgentEvent, dict[str, Any]], None]


def records_to_events(records: list[Any]) -> list[AgentEvent]:
    """The events of ``records`` (either layout). A streamed message comes back as a
    one-chunk stream, as in Eino; an error as a :class:`RecordedError`; events of the same
    run path share one tuple of RunSteps. The objects are made in Rust (a third of a load
    before): tests/checkpoint/test_checkpoint_payload.py checks every dataclass field is set."""
    if records and isinstance(records[0], dict):
        records = [_v1_as_v2(r) for r in records]
    return events_from_records(records, _KINDS)


def _extend_path(base: Sequence[RunStep], steps: tuple[RunStep, ...]) -> RunPath:
    return RunPath(base) + steps  # shares ``base`` (when it is a RunPath: every extended path is)


_KINDS = _EventKinds(
    AgentEvent, MessageVariant, AgentOutput, RunStep, _extend_path, stream_from_list, apply_extras_record
)


# --- the payload ------------------------------------------------------------------------------


async def dump(
    root_input: AgentInput,
    session: Session,
    signal: InterruptSignal,
    data: Any = None,
    binding: dict[str, Any] | None = None,
    session_ref: dict[str, Any] | None = None,
    limits: dict[str, int] | None = None,
) -> bytes:
    """The checkpoint bytes of a run that ``signal`` interrupted, LZ4-compressed (codec
    format 3: a run's text compresses to about a third, for about a millisecond per 300 KB).
    With ``binding`` (:func:`rillet.checkpoint.binding.agent_binding`), the payload records
    which agent tree saved it; with ``session_ref``, which session the run belongs to
    (:meth:`rillet.sessions.session_run.SessionRun.ref`); with ``limits``, the run's
    :class:`~rillet.RunConfig` limits (:meth:`~rillet.RunConfig.limits`), which its resume keeps."""
    events = session.snapshot()
    with session.lock:
        values = dict(session.values)
    payload = {
        "kind": _KIND,
        "version": PAYLOAD_VERSION,
        "root_input": {"messages": list(root_input.messages), "enable_streaming": root_input.enable_streaming},
        "session_values": values,
        "events": await events_to_records(events),
        "interrupts": {
            s.id: {"address": list(s.address), "state": s.state, "info": _info_record(s.info)} for s in signal.walk()
        },
        "info": data,
    }
    if binding is not None:
        payload["agent"] = binding
    if session_ref is not None:
        payload["session"] = session_ref
    if limits is not None:
        payload["limits"] = limits
    return codec.encode(payload, compress=True)


def _info_record(info: Any) -> Any:
    """What an interrupt asked (``interrupt(info)``), as the checkpoint keeps it for whoever
    resumes (``rillet inspect``, the dev UI): the value itself, or its ``repr`` when the codec
    cannot encode it (the run's own event had the object; the save must not fail for it)."""
    if info is None or isinstance(info, (str, int, float, bool)):
        return info
    try:
        codec.encode(info)
    except EncodeError:
        return repr(info)
    return info


class Loaded:
    """A decoded checkpoint: the root input, the session (values and events) to resume
    with, and the interrupts' addresses, states and info."""

    def __init__(self, payload: dict[str, Any]) -> None:
        root = payload["root_input"]
        self.root_input = AgentInput(list(root["messages"]), bool(root["enable_streaming"]))
        self.session = Session(dict(payload["session_values"]))
        self.session.restore(records_to_events(payload["events"]))
        self.addresses = {i: tuple(v["address"]) for i, v in payload["interrupts"].items()}
        self.states = {i: v["state"] for i, v in payload["interrupts"].items()}
        self.infos = {i: v.get("info") for i, v in payload["interrupts"].items()}  # None in older checkpoints
        self.info = payload.get("info")
        self.agent: dict[str, Any] | None = payload.get("agent")
        self.session_ref: dict[str, Any] | None = payload.get("session")
        self.limits: dict[str, Any] | None = payload.get("limits")  # absent before run limits were saved


# --- the checksummed envelope ------------------------------------------------------------------

_SEAL_MAGIC = b"RCK"  # never the first byte of a codec envelope (0x93)
_SEAL_VERSION = 1
_SEAL_HEAD = len(_SEAL_MAGIC) + 1 + 4


def seal(blob: bytes) -> bytes:
    """``blob`` in the stored envelope: ``b"RCK"``, version 1, then the CRC-32 (big-endian)
    of the version byte and ``blob``, then ``blob``. CRC-32 detects every single-bit error and
    every burst of up to 32 bits."""
    head = bytes([_SEAL_VERSION])
    return b"".join((_SEAL_MAGIC, head, zlib.crc32(blob, zlib.crc32(head)).to_bytes(4, "big"), blob))


def unseal(data: bytes, checkpoint_id: str) -> bytes:
    """The payload bytes of stored ``data``, checked; unsealed (older) bytes are returned as
    they are."""
    if data[:1] == b"\x93":  # a bare codec envelope: written before checksums, unchecked
        return data
    if data[:3] == b"RSH":  # rillet.checkpoint.journal's head: no payload to decode here
        raise CheckpointError(
            f"checkpoint[{checkpoint_id}] is the step record of a run that did not finish "
            '(Runner(durability="step")), not an interrupt checkpoint; continue it with Runner.resume(id)'
        )
    if data[:3] != _SEAL_MAGIC or len(data) < _SEAL_HEAD:
        raise CheckpointCorruptError(
            f"checkpoint[{checkpoint_id}] is not a rillet checkpoint (its first bytes are {bytes(data[:4])!r}); "
            "it was damaged or written by something else"
        )
    if data[3] != _SEAL_VERSION:
        raise CheckpointCorruptError(
            f"checkpoint[{checkpoint_id}] has envelope version {data[3]}; this rillet reads version "
            f"{_SEAL_VERSION}: it was damaged, or load it with the rillet that wrote it"
        )
    want = int.from_bytes(data[4:8], "big")
    got = zlib.crc32(data[8:], zlib.crc32(data[3:4]))
    if got != want:
        raise CheckpointCorruptError(
            f"checkpoint[{checkpoint_id}] fails its checksum (CRC-32 {got:08x}, stored {want:08x}): "
            "its bytes were altered after rillet saved them; nothing was decoded or run"
        )
    return data[8:]


def load(data: bytes, checkpoint_id: str) -> Loaded:
    """Checks and decodes stored checkpoint bytes (sealed or not); raises
    :class:`CheckpointCorruptError` for bytes that fail their checksum and DecodeError for
    bytes that are not a checkpoint."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CheckpointError(
            f"checkpoint[{checkpoint_id}]: the store returned {type(data).__name__}, not bytes; a checkpoint "
            "store must keep and return the exact bytes the Runner gave it (a BLOB, not a text column)"
        )
    data = unseal(bytes(data), checkpoint_id)
    with _gc_paused():
        return _load(data, checkpoint_id)


def _load(data: bytes, checkpoint_id: str) -> Loaded:
    payload = codec.decode(data)
    if not isinstance(payload, dict) or payload.get("kind") != _KIND:
        raise codec.DecodeError(f"checkpoint[{checkpoint_id}] is not a rillet run checkpoint")
    version = payload.get("version")
    if version not in _READS:
        raise codec.DecodeError(
            f"checkpoint[{checkpoint_id}] has payload version {version!r}; this rillet reads versions "
            f"{', '.join(map(str, _READS))}: load it with the rillet that wrote it"
        )
    try:
        return Loaded(payload)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise codec.DecodeError(
            f"checkpoint[{checkpoint_id}] (payload version {version}) is malformed: {type(e).__name__}: {e}; "
            "it was not written by rillet's payload.dump or was altered since"
        ) from e
