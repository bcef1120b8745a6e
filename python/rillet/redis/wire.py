"""Stream entries: what one Redis Streams entry of a run holds, and the events rebuilt from them.

Every entry has one field, ``r``: a :mod:`rillet.codec` list ``[n, kind, ...]``, where ``n``
counts the run's entries from 0 (a reader that finds a number missing knows the stream was
trimmed under it). The kinds:

- ``ev``: a whole event ``[n, "ev", agent, path, message, role, tool_name, streaming, extras]``
- ``open``: the head of an event whose message is streamed (the same fields, no message);
  its chunks follow as ``chunk`` entries ``[n, "chunk", Message]`` and a ``close`` entry
  ``[n, "close", error]`` (error None, or ``[type name, message]``)
- ``end``: the run is over ``[n, "end", events, status]`` (status ``done``, ``abandoned`` when
  its consumer stopped early, ``failed`` when iterating its events raised)

``extras`` is the checkpoint record's (customized output, action, error, branch), plus ``interrupted``
(``[data, contexts]``) for an interrupt, which a checkpoint keeps elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rillet._core.interrupt import InterruptCtx, InterruptInfo
from rillet._native import Message
from rillet.checkpoint.payload import apply_extras_record, extras_record
from rillet.data import codec
from rillet.data.events import AgentAction, AgentEvent, AgentOutput, MessageVariant, RunPath, RunStep
from rillet.errors import EncodeError, RecordedError

__all__ = [
    "FIELD",
    "Paths",
    "chunk_entry",
    "close_entry",
    "decode_entry",
    "end_entry",
    "event_entry",
    "rebuild_event",
    "recorded_error",
]

FIELD = b"r"


def _ctx_record(ctx: InterruptCtx | None) -> list[Any] | None:
    if ctx is None:
        return None
    return [ctx.id, list(ctx.address), ctx.info, ctx.is_root_cause, _ctx_record(ctx.parent)]


def _ctx_of(rec: list[Any] | None) -> InterruptCtx | None:
    if rec is None:
        return None
    return InterruptCtx(rec[0], tuple(rec[1]), rec[2], bool(rec[3]), _ctx_of(rec[4]))


def _extras(ev: AgentEvent) -> dict[str, Any] | None:
    custom = ev.output.customized_output if ev.output is not None else None
    if custom is None and ev.action is None and ev.error is None and ev.branch is None:
        return None
    extras = extras_record(ev, custom)
    interrupted = ev.action.interrupted if ev.action is not None else None
    if interrupted is not None:
        extras["interrupted"] = [interrupted.data, [_ctx_record(c) for c in interrupted.interrupt_contexts]]
    return extras


def event_entry(n: int, ev: AgentEvent) -> tuple[bytes, bool]:
    """The entry of event ``ev`` and whether it opens a stream (its message is still being
    streamed: the chunks follow as their own entries)."""
    mv = ev.message_output
    msg, role, tool_name, streaming = None, None, None, False
    if mv is not None:
        msg, role, tool_name, streaming = mv.message, mv.role, mv.tool_name, mv.is_streaming
    opens = mv is not None and msg is None and mv.message_stream is not None
    path = [s.agent_name for s in ev.run_path]
    record = [n, "open" if opens else "ev", ev.agent_name, path, msg, role, tool_name, streaming, _extras(ev)]
    try:
        return codec.encode(record), opens
    except EncodeError as e:
        raise EncodeError(
            f"event {n} of agent {ev.agent_name!r} cannot be sent to the stream: {e}. Register the class of its "
            "customized output or action with rillet.codec.register_type (readers must register it too)"
        ) from e


def chunk_entry(n: int, chunk: Message) -> bytes:
    return codec.encode([n, "chunk", chunk])


def close_entry(n: int, error: BaseException | None) -> bytes:
    err = None if error is None else [getattr(error, "type_name", type(error).__name__), str(error)]
    return codec.encode([n, "close", err])


def end_entry(n: int, events: int, status: str) -> bytes:
    return codec.encode([n, "end", events, status])


def decode_entry(fields: dict[bytes, bytes], entry_id: str, key: str) -> list[Any]:
    """The record of an entry; a DecodeError names the entry when it is not one of a sink's."""
    data = fields.get(FIELD)
    try:
        if data is None:
            raise codec.DecodeError(f"no field {FIELD.decode()!r}")
        record = codec.decode(data)
        if not isinstance(record, list) or len(record) < 2 or not isinstance(record[0], int):
            raise codec.DecodeError("not a [n, kind, ...] list")
    except codec.DecodeError as e:
        raise codec.DecodeError(
            f"entry {entry_id} of stream {key!r} was not written by a RedisStreamSink ({e}); "
            "is another program writing to this key? give the sink and sources their own prefix="
        ) from e
    return record


class Paths:
    """Run paths rebuilt from their names, one shared object per path (as in a live run)."""

    def __init__(self) -> None:
        self._paths: dict[tuple[str, ...], RunPath] = {}

    def get(self, names: Sequence[str]) -> RunPath:
        key = tuple(names)
        path = self._paths.get(key)
        if path is None:
            path = self._paths[key] = RunPath(RunStep(name) for name in key)
        return path


def rebuild_event(record: list[Any], paths: Paths, stream: Any = None) -> AgentEvent:
    """The event of an ``ev`` or ``open`` record (``stream``: the reader of an open one)."""
    _, kind, agent, path, msg, role, tool_name, streaming, extras = record
    output = None
    if role is not None:
        output = AgentOutput(MessageVariant(bool(streaming), msg, stream if kind == "open" else None, role, tool_name))
    ev = AgentEvent(agent, paths.get(path), output)
    if extras:
        apply_extras_record(ev, extras)
        interrupted = extras.get("interrupted")
        if interrupted is not None:
            if ev.action is None:
                ev.action = AgentAction()
            contexts = [c for c in (_ctx_of(r) for r in interrupted[1]) if c is not None]
            ev.action.interrupted = InterruptInfo(interrupted[0], contexts)
    return ev


def recorded_error(err: list[Any]) -> RecordedError:
    return RecordedError(err[0], err[1])
