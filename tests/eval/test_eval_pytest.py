"""rillet.eval.testing.eval_test: an eval set's cases as parametrized pytest tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from rillet.eval import load_eval_set
from rillet.eval.testing import eval_test
from rillet.examples.demo import build_agent

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eval" / "travel.evalset.json"
TRAVEL = load_eval_set(EXAMPLE)
PASSING = TRAVEL.model_copy(update={"cases": TRAVEL.cases[:2]})

# pytest collects this as test_travel[trip-with-booking] and test_travel[booking-declined]
test_travel = eval_test(build_agent, PASSING)


def test_it_is_parametrized_by_case_id() -> None:
    (mark,) = test_travel.pytestmark  # type: ignore[attr-defined]
    assert mark.name == "parametrize" and mark.kwargs["ids"] == ["trip-with-booking", "booking-declined"]
    assert test_travel.__name__ == "test_travel"


def test_a_failing_case_fails_with_the_report_text() -> None:
    every = eval_test(build_agent, EXAMPLE)
    wrong_order = TRAVEL.cases[2]
    with pytest.raises(pytest.fail.Exception) as failed:
        every(wrong_order)
    text = str(failed.value)
    assert text.startswith("case 'wrong-order': 0 of 1 runs passed")
    assert "turn 1, trajectory: exact: left the expected trajectory at step 2 (call 1)" in text
    assert ">> step 2: travel_assistant: calls get_weather" in text


def test_it_records_then_replays_a_cassette_offline(tmp_path: Path) -> None:
    """eval_test had no cassette: a pytest suite could only call the real model."""
    import shutil

    from rillet import ScriptedModel
    from rillet.eval.cassette import cassette_path

    evalset = tmp_path / "travel.evalset.json"
    shutil.copy(EXAMPLE, evalset)
    record = eval_test(build_agent, evalset, cassette="record")
    for case in PASSING.cases:
        record(case)
    assert cassette_path(evalset).exists()

    def offline(messages: object, tools: object) -> str:
        raise AssertionError("the model was called during a replay")

    replay = eval_test(lambda: build_agent(model=ScriptedModel(offline)), evalset, cassette="replay")
    for case in PASSING.cases:
        replay(case)
    with pytest.raises(ValueError, match="pass cassette_file"):
        eval_test(build_agent, PASSING, cassette="replay")
