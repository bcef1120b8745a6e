"""A saved session as an eval case: its turns, tool calls and answers become what the case
expects, and the case passes on the agent that made the session."""

from __future__ import annotations

import pytest
from rillet import InMemoryCheckpointStore, InMemorySessionStore, Message, Runner
from rillet.eval import EvalSet, ExpectedInterrupt, run_eval
from rillet.eval.saved import case_from_messages, case_from_session
from rillet.examples.demo import build_agent
from rillet.tools.approval import approve


def test_a_session_becomes_a_case_that_passes_on_its_agent() -> None:
    sessions = InMemorySessionStore()
    runner = Runner(build_agent(delay=0), checkpoint_store=InMemoryCheckpointStore(), session_store=sessions)
    asked = None
    for ev in runner.query("Lisbon trip?", session_id="trip", checkpoint_id="c1"):
        if ev.action and ev.action.interrupted:
            asked = ev.action.interrupted.interrupt_contexts[0]
    assert asked is not None
    for _ in runner.resume("c1", targets={asked.id: approve()}):
        pass
    for _ in runner.query("And again?", session_id="trip"):
        pass

    case = case_from_session(sessions, "trip", case_id="from-session")
    first, second = case.turns
    assert first.input == "Lisbon trip?" and second.input == "And again?"
    assert first.trajectory is not None
    assert [c.name for c in first.trajectory.calls] == ["get_weather", "convert_currency", "packing_tips", "book_hotel"]
    assert first.trajectory.calls[0].arguments == {"city": "Lisbon"}
    assert first.answer is not None and first.answer.exact is not None and "LIS-4821" in first.answer.exact

    # the session does not keep how the interrupt was answered: add it
    answered = first.model_copy(update={"interrupts": (ExpectedInterrupt(tool="book_hotel", resume="approve"),)})
    case = case.model_copy(update={"turns": (answered, second)})
    report = run_eval(build_agent, EvalSet(name="saved", cases=(case,)), progress=False)
    assert report.passed, report.failure_text()


def test_messages_without_user_text_and_unknown_sessions_are_refused() -> None:
    with pytest.raises(ValueError, match="no turn has a user message"):
        case_from_messages("x", [[Message.assistant("hi")]])
    with pytest.raises(ValueError, match="no session 'nope'"):
        case_from_session(InMemorySessionStore(), "nope")
    case = case_from_messages("y", [[Message.user("q"), Message.assistant("a")]], answer="contains", match="subset")
    (turn,) = case.turns
    assert turn.answer is not None and turn.answer.contains == ("a",)
    assert turn.trajectory is not None and turn.trajectory.match == "subset" and turn.trajectory.calls == ()
