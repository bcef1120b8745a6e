"""rillet.eval's checks: each trajectory match mode (and where a run leaves the expected
trajectory), each answer criterion, and the judge on a scripted model."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel
from rillet import Message, ScriptedModel
from rillet.eval import ActualCall, Answer, ExpectedCall, Judge, Trajectory, check_answer, check_trajectory
from rillet.eval.checks import JUDGE_SYSTEM, judge_answer

WEATHER = ActualCall("get_weather", {"city": "Lisbon"}, 2)
RATE = ActualCall("convert", {"amount": 200, "to": "EUR"}, 2)
BOOK = ActualCall("book", {"nights": 2}, 6)


def traj(match: str, *calls: ExpectedCall) -> Trajectory:
    return Trajectory.model_validate({"match": match, "calls": calls})


W, R, B = (
    ExpectedCall(name="get_weather", arguments={"city": "Lisbon"}),
    ExpectedCall(name="convert"),
    ExpectedCall(name="book"),
)


def test_exact_passes_only_on_the_same_calls_in_the_same_order() -> None:
    assert check_trajectory(1, traj("exact", W, R, B), [WEATHER, RATE, BOOK]).passed
    swapped = check_trajectory(1, traj("exact", R, W, B), [WEATHER, RATE, BOOK])
    assert not swapped.passed and swapped.step == 2 and swapped.kind == "trajectory"
    assert swapped.message == (
        'exact: left the expected trajectory at step 2 (call 1): expected convert(...), got get_weather({"city": "Lisbon"})'
    )
    extra = check_trajectory(1, traj("exact", W, R), [WEATHER, RATE, BOOK])
    assert extra.step == 6 and 'extra call book({"nights": 2})' in extra.message
    short = check_trajectory(1, traj("exact", W, R, B), [WEATHER, RATE])
    assert short.step is None and "stopped calling tools after step 2; expected call 3: book(...)" in short.message


def test_arguments_compare_whole_or_as_a_subset() -> None:
    wrong_city = ActualCall("get_weather", {"city": "Porto"}, 3)
    assert not check_trajectory(1, traj("exact", W), [wrong_city]).passed
    some = ExpectedCall(name="convert", arguments={"amount": 200}, arguments_match="subset")
    assert check_trajectory(1, traj("exact", some), [RATE]).passed
    assert not check_trajectory(
        1, traj("exact", ExpectedCall(name="convert", arguments={"amount": 200})), [RATE]
    ).passed


def test_in_order_allows_calls_between_and_names_the_step_after_the_last_match() -> None:
    assert check_trajectory(1, traj("in_order", W, B), [WEATHER, RATE, BOOK]).passed
    out = check_trajectory(1, traj("in_order", B, W), [WEATHER, RATE, BOOK])
    assert not out.passed and out.step is None  # book matched last: nothing came after it
    assert out.message.startswith("in_order: left the expected trajectory after step 6: expected get_weather(")
    never = check_trajectory(1, traj("in_order", ExpectedCall(name="pay")), [WEATHER])
    assert never.step == 2 and "from the start" in never.message


def test_any_order_needs_every_call_and_allows_others() -> None:
    assert check_trajectory(1, traj("any_order", B, W), [WEATHER, RATE, BOOK]).passed
    missing = check_trajectory(1, traj("any_order", B, B), [WEATHER, BOOK])
    assert not missing.passed and missing.message.startswith("any_order: never made book(...);")


def test_subset_refuses_a_call_outside_the_expected_ones() -> None:
    assert check_trajectory(1, traj("subset", W, R, B), [BOOK, WEATHER]).passed
    assert check_trajectory(1, traj("subset", W), []).passed
    out = check_trajectory(1, traj("subset", W, B), [WEATHER, RATE, BOOK])
    assert not out.passed and out.step == 2 and "convert(" in out.message


def test_answer_criteria_each_give_a_check() -> None:
    answer = 'Sunny, 24 °C. {"not": "json"}'
    checks = check_answer(
        2, Answer(exact="Sunny", contains=("Sunny", "rain"), not_contains=("snow",), regex=r"\d+ °C"), answer, 7
    )
    assert [(c.kind, c.passed) for c in checks] == [
        ("answer.exact", False),
        ("answer.contains", True),
        ("answer.contains", False),
        ("answer.not_contains", True),
        ("answer.regex", True),
    ]
    assert checks[2].message.startswith("expected it to contain 'rain', got 'Sunny") and checks[2].step == 7
    assert checks[2].turn == 2
    assert [c.kind for c in check_answer(1, Answer(contains=("x",)), None, None)] == ["answer"]


class Forecast(BaseModel):
    city: str
    high_c: float


def test_structured_answers_against_a_pydantic_model_and_a_json_schema() -> None:
    good, bad = '{"city": "Lisbon", "high_c": 24}', '{"city": "Lisbon"}'
    assert check_answer(1, Answer(output_model=Forecast), good, 3)[0].passed
    failed = check_answer(1, Answer(output_model=Forecast), bad, 3)[0]
    assert not failed.passed and failed.message.startswith("not a valid Forecast") and "high_c" in failed.message
    pytest.importorskip("jsonschema")
    schema = {"type": "object", "required": ["city", "high_c"], "properties": {"high_c": {"type": "number"}}}
    assert check_answer(1, Answer(json_schema=schema), good, 3)[0].passed
    assert (
        check_answer(1, Answer(json_schema=schema), bad, 3)[0].message == "at the top: 'high_c' is a required property"
    )
    assert "not JSON" in check_answer(1, Answer(json_schema=schema), "sunny", 3)[0].message


def test_the_judge_asks_the_model_with_the_rubric_and_reads_a_strict_verdict() -> None:
    model = ScriptedModel(
        [
            '{"verdict": "pass", "reason": "it gives the temperature"}',
            '{"verdict": "fail", "reason": "no temperature"}',
            "Verdict: pass",
            '{"verdict": "maybe", "reason": "?"}',
        ]
    )
    judge = Judge(rubric="The answer gives a temperature in Celsius.")

    async def verdicts() -> list[tuple[bool, str]]:
        out = []
        for _ in range(4):
            c = await judge_answer(1, judge, model, "Weather?", "Sunny, 24 °C.", 5)
            out.append((c.passed, c.message))
        return out

    got = asyncio.run(verdicts())
    assert got[0] == (True, "")
    assert got[1] == (False, "the judge says: no temperature")
    assert got[2][0] is False and got[2][1].startswith('the judge did not reply {"verdict": "pass" | "fail"')
    assert got[3][0] is False and "did not reply" in got[3][1]
    sent = model.calls[0].messages
    assert sent[0] == Message.system(JUDGE_SYSTEM)
    assert "The answer gives a temperature in Celsius." in sent[1].content and "Sunny, 24 °C." in sent[1].content


def test_a_judge_criterion_without_a_judge_model_fails_and_says_so() -> None:
    c = asyncio.run(judge_answer(1, Judge(rubric="r"), None, "q", "a", 2))
    assert not c.passed and "no judge model: give run_eval's judge_model (rillet eval --judge" in c.message


def test_a_verdict_in_a_json_fence_is_read_anything_else_around_it_is_not() -> None:
    """Models often fence JSON: a fenced verdict failed the case, the agent's answer unjudged."""
    replies = [
        '```json\n{"verdict": "pass", "reason": "ok"}\n```',
        '```\n{"verdict": "fail", "reason": "rude"}\n```',
        'Sure! ```json\n{"verdict": "pass", "reason": "ok"}\n```',
        '```json\n{"verdict": "pass", "reason": "ok"}\n```\n```json\n{"verdict": "fail", "reason": "no"}\n```',
    ]
    model = ScriptedModel(replies)

    async def verdicts() -> list[tuple[bool, str]]:
        return [
            ((c := await judge_answer(1, Judge(rubric="r"), model, "q", "a", 2)).passed, c.message) for _ in replies
        ]

    got = asyncio.run(verdicts())
    assert got[:2] == [(True, ""), (False, "the judge says: rude")]
    assert all(not ok and "did not reply" in message for ok, message in got[2:]), got
