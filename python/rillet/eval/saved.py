"""An eval case from a saved conversation: a session's turns become the case's turns, with the
tool calls each made as its expected trajectory and its last answer as the expected one."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from rillet.eval.sets import Answer, EvalCase, ExpectedCall, MatchMode, Trajectory, Turn

if TYPE_CHECKING:
    from rillet._native import Message
    from rillet.sessions import SessionStore

__all__ = ["case_from_messages", "case_from_session"]


def _arguments(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _turn(messages: list[Message], match: MatchMode, answer: str) -> Turn | None:
    inputs = [m.content for m in messages if m.role == "user" and m.content]
    if not inputs:
        return None
    calls = [
        ExpectedCall(name=c.function.name, arguments=_arguments(c.function.arguments))
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
    return Turn(
        input="\n".join(inputs),
        trajectory=Trajectory(calls=tuple(calls), match=match),
        answer=expected,
    )


def case_from_messages(
    case_id: str,
    turns: list[list[Message]],
    *,
    match: MatchMode = "exact",
    answer: Literal["exact", "contains", "none"] = "exact",
) -> EvalCase:
    """A case of one turn per list of messages (a turn's user message(s), then what the agents
    said): its input is the user text, its trajectory the tool calls made (compared with
    ``match``), its answer the last assistant text (``"exact"``, ``"contains"``, or ``"none"``
    for no answer check). Turns without user text are left out."""
    made = [t for t in (_turn(messages, match, answer) for messages in turns) if t is not None]
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
) -> EvalCase:
    """The conversation ``session_id`` of ``store`` as a case (see :func:`case_from_messages`);
    its id is ``case_id``, else the session's. A session does not keep how interrupts were
    answered, nor its values as the first turn found them: add ``interrupts`` and
    ``session_state`` by hand where the agent needs them."""
    data = store.get(session_id)
    if data is None:
        raise ValueError(f"no session {session_id!r} in the store")
    return case_from_messages(case_id or session_id, [t.messages for t in data.turns], match=match, answer=answer)
