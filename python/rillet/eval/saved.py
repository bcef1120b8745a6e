"""An eval case from a saved conversation: a session's turns become the case's turns, with the
tool calls each made as its expected trajectory and its last answer as the expected one; a
checkpointed run (paused at an interrupt) the same way, its pending interrupts expected; and
:func:`add_case` writes such a case into an eval set file (``rillet eval save-case``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rillet._native import MessageAccumulator
from rillet.checkpoint.payload import load
from rillet.eval.sets import (
    Answer,
    EvalCase,
    EvalSet,
    EvalSetError,
    ExpectedCall,
    ExpectedInterrupt,
    MatchMode,
    Trajectory,
    Turn,
    load_eval_set,
)

if TYPE_CHECKING:
    from rillet._native import Message
    from rillet.checkpoint.stores import CheckpointStore
    from rillet.data.events import MessageVariant
    from rillet.sessions import SessionStore

__all__ = [
    "add_case",
    "case_from_checkpoint",
    "case_from_messages",
    "case_from_session",
    "expected_arguments",
    "unanswered",
]


def expected_arguments(text: str) -> dict[str, Any] | None:
    """A recorded call's arguments as an expected call's: the JSON object, or None (any
    arguments) when the text is not one."""
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _turn(
    messages: list[Message], match: MatchMode, answer: str, answers: Mapping[str, Any] | None = None
) -> Turn | None:
    inputs = [m.content for m in messages if m.role == "user" and m.content]
    if not inputs:
        return None
    calls = [
        ExpectedCall(name=c.function.name, arguments=expected_arguments(c.function.arguments))
        for m in messages
        if m.role == "assistant"
        for c in m.tool_calls
    ]
    texts = [m.content for m in messages if m.role == "assistant" and m.content and not m.tool_calls]
    expected: Answer | None = None
    if texts and answer == "exact":
        expected = Answer(exact=texts[-1])
    elif texts and answer == "contains":
        expected = Answer(contains=(texts[-1],))
    known = answers or {}
    asked = tuple(ExpectedInterrupt(tool=c.name, resume=known[c.name]) for c in calls if c.name in known)
    return Turn(
        input="\n".join(inputs),
        trajectory=Trajectory(calls=tuple(calls), match=match),
        answer=expected,
        interrupts=asked,
    )


def case_from_messages(
    case_id: str,
    turns: list[list[Message]],
    *,
    match: MatchMode = "exact",
    answer: Literal["exact", "contains", "none"] = "exact",
    answers: Mapping[str, Any] | None = None,
) -> EvalCase:
    """A case of one turn per list of messages (a turn's user message(s), then what the agents
    said): its input is the user text, its trajectory the tool calls made (compared with
    ``match``), its answer the last assistant text (``"exact"``, ``"contains"``, or ``"none"``
    for no answer check). Turns without user text are left out. ``answers`` maps a tool name
    to the resume data of its interrupt: a turn that called that tool expects an interrupt from
    it, answered so (messages do not say which calls interrupted, nor how they were answered)."""
    made = [t for t in (_turn(messages, match, answer, answers) for messages in turns) if t is not None]
    if not made:
        raise ValueError(f"case {case_id!r}: no turn has a user message to start from")
    return EvalCase(id=case_id, turns=tuple(made))


def case_from_session(
    store: SessionStore,
    session_id: str,
    *,
    case_id: str | None = None,
    match: MatchMode = "exact",
    answer: Literal["exact", "contains", "none"] = "exact",
    answers: Mapping[str, Any] | None = None,
) -> EvalCase:
    """The conversation ``session_id`` of ``store`` as a case (see :func:`case_from_messages`,
    and its ``answers``); its id is ``case_id``, else the session's. A session does not keep
    which calls interrupted nor how they were answered, nor its values as the first turn found
    them: give ``answers``, and add ``session_state`` by hand where the agent needs it."""
    data = store.get(session_id)
    if data is None:
        raise ValueError(f"no session {session_id!r} in the store")
    turns = [t.messages for t in data.turns]
    return case_from_messages(case_id or session_id, turns, match=match, answer=answer, answers=answers)


def _split_turns(messages: list[Message]) -> list[list[Message]]:
    """``messages`` cut before each user message that follows a message of another role."""
    turns: list[list[Message]] = []
    for m in messages:
        if not turns or (m.role == "user" and turns[-1][-1].role != "user"):
            turns.append([])
        turns[-1].append(m)
    return turns


def _message(mv: MessageVariant | None) -> Message | None:
    """An event's message, read whole from its stream if it was streamed (as rillet run does)."""
    if mv is None:
        return None
    if mv.message is not None or mv.message_stream is None:
        return mv.message
    acc = MessageAccumulator()
    for chunk in mv.message_stream:
        acc.push(chunk)
    return acc.finish() if len(acc) else None


def case_from_checkpoint(
    store: CheckpointStore,
    checkpoint_id: str,
    *,
    case_id: str | None = None,
    match: MatchMode = "in_order",
    answer: Literal["exact", "contains", "none"] = "exact",
    answers: Mapping[str, Any] | None = None,
) -> EvalCase:
    """The run checkpoint ``checkpoint_id`` of ``store`` saved when it stopped at an interrupt,
    as a case: the turns of its input (a conversation's earlier turns, then its question), the
    last turn's trajectory the tool calls made up to the interrupt (compared ``in_order`` by
    default: what the run does after it is not known) and, instead of an answer, the pending
    interrupts, each resumed with ``answers[tool]`` (None where not given: the checkpoint holds
    the question, not its answer; see :func:`unanswered`). Its id is ``case_id``, else the
    checkpoint's."""
    data = store.get(checkpoint_id)
    if data is None:
        raise ValueError(f"no checkpoint {checkpoint_id!r} in the store")
    if not isinstance(data, (bytes, bytearray, memoryview)):  # an async store's get: not for this
        raise TypeError(f"checkpoint {checkpoint_id!r}: the store returned {type(data).__name__}, not bytes")
    loaded = load(bytes(data), checkpoint_id)
    turns = _split_turns(list(loaded.root_input.messages))
    if not turns:
        raise ValueError(f"checkpoint {checkpoint_id!r}: its run had no input messages")
    ran = [m for m in (_message(ev.message_output) for ev in loaded.session.snapshot()) if m is not None]
    earlier = [t for t in (_turn(m, "exact", answer, answers) for m in turns[:-1]) if t is not None]
    last = _turn(turns[-1] + ran, match, "none")
    if last is None:
        raise ValueError(f"checkpoint {checkpoint_id!r}: its last turn has no user message to start from")
    pending = []
    addresses = loaded.addresses
    for iid, addr in addresses.items():
        if any(len(o) > len(addr) and o[: len(addr)] == addr for o in addresses.values()):
            continue  # an agent tool's interrupt that an inner one caused: the inner one is answered
        info = loaded.infos.get(iid)
        tool = info.get("tool") if isinstance(info, dict) and isinstance(info.get("tool"), str) else None
        if tool is None:
            tool = next((str(s).split(":")[1] for s in reversed(tuple(addr)) if str(s).startswith("tool:")), None)
        pending.append(ExpectedInterrupt(tool=tool, resume=(answers or {}).get(tool or "")))
    last = last.model_copy(update={"interrupts": tuple(pending)})
    return EvalCase(id=case_id or checkpoint_id, turns=(*earlier, last))


def unanswered(case: EvalCase) -> list[str]:
    """The tools whose expected interrupts in ``case`` have no resume data (None): the case
    resumes them with None until it is given."""
    return [i.tool or "(any)" for t in case.turns for i in t.interrupts if i.resume is None]


def add_case(path: str | Path, case: EvalCase, *, name: str | None = None, replace: bool = False) -> EvalSet:
    """Adds ``case`` to the eval set file ``path`` (JSON), creating it (named ``name``, else
    after the file) if it does not exist; returns the set written. A case of the same id is
    refused unless ``replace``, which puts the new one in its place."""
    path = Path(path)
    if path.suffix in (".yaml", ".yml"):
        raise EvalSetError(f"{path}: cases are written to JSON eval sets only; give a .json file")
    if path.exists():
        evals = load_eval_set(path)
        ids = [c.id for c in evals.cases]
        if case.id in ids and not replace:
            raise EvalSetError(f"{path}: it has a case {case.id!r} already (replace it, or give another id)")
        cases = tuple(case if c.id == case.id else c for c in evals.cases)
        evals = evals.model_copy(update={"cases": cases if case.id in ids else (*cases, case)})
    else:
        stem = path.name.removesuffix(".json").removesuffix(".evalset")
        evals = EvalSet(name=name or stem, cases=(case,))
    data = evals.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return evals
