"""Trajectory matching against a brute force: any_order and subset give each call a partner of
its own (a matching, not a first fit), and arguments compare as JSON (a boolean is not 1)."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from rillet.eval import ActualCall, ExpectedCall, Trajectory, check_trajectory
from rillet.eval.checks import _matches

NAMES = st.sampled_from(["a", "b"])
ARGS = st.sampled_from([{"i": 1}, {"i": 2}, {"i": 1, "j": True}, {"i": True}])
EXPECTED = st.builds(
    ExpectedCall,
    name=NAMES,
    arguments=st.one_of(st.none(), ARGS),
    arguments_match=st.sampled_from(["exact", "subset"]),
)
ACTUAL = st.lists(st.tuples(NAMES, ARGS), max_size=5).map(
    lambda calls: [ActualCall(name, args, step) for step, (name, args) in enumerate(calls, 1)]
)


def _brute_any_order(exp: list[ExpectedCall], actual: list[ActualCall]) -> bool:
    """Some distinct calls made, one per expected call, each matching it."""
    return any(
        all(_matches(e, actual[k]) for e, k in zip(exp, pick, strict=True))
        for pick in itertools.permutations(range(len(actual)), len(exp))
    )


def _brute_subset(exp: list[ExpectedCall], actual: list[ActualCall]) -> bool:
    """Some distinct expected calls, one per call made, each matching it."""
    return any(
        all(_matches(exp[j], a) for a, j in zip(actual, pick, strict=True))
        for pick in itertools.permutations(range(len(exp)), len(actual))
    )


@settings(max_examples=400, deadline=None)
@given(exp=st.lists(EXPECTED, max_size=4), actual=ACTUAL)
def test_any_order_and_subset_pass_exactly_when_a_matching_exists(
    exp: list[ExpectedCall], actual: list[ActualCall]
) -> None:
    any_order = check_trajectory(1, Trajectory(calls=tuple(exp), match="any_order"), actual)
    assert any_order.passed == _brute_any_order(exp, actual), any_order.message
    subset = check_trajectory(1, Trajectory(calls=tuple(exp), match="subset"), actual)
    assert subset.passed == _brute_subset(exp, actual), subset.message


def test_a_call_with_any_arguments_does_not_take_the_call_a_precise_one_needs() -> None:
    made = [ActualCall("lookup", {"invoice": "A"}, 2), ActualCall("lookup", {"invoice": "B"}, 4)]
    calls = (ExpectedCall(name="lookup"), ExpectedCall(name="lookup", arguments={"invoice": "A"}))
    assert check_trajectory(1, Trajectory(calls=calls, match="any_order"), made).passed
    assert check_trajectory(1, Trajectory(calls=calls, match="subset"), made).passed
    third = [*made, ActualCall("lookup", {"invoice": "C"}, 6)]
    extra = check_trajectory(1, Trajectory(calls=calls, match="subset"), third)
    assert not extra.passed and extra.step == 6 and "expected calls left (none)" in extra.message


def _one(expected: Any, actual: Any, match: str = "exact") -> bool:
    call = ExpectedCall(name="t", arguments=expected, arguments_match=match)  # type: ignore[arg-type]
    return check_trajectory(1, Trajectory(calls=(call,)), [ActualCall("t", actual, 2)]).passed


def test_arguments_compare_as_json_a_boolean_is_not_a_number() -> None:
    assert not _one({"confirm": True}, {"confirm": 1})
    assert not _one({"amount": 1}, {"amount": True})
    assert not _one({"flags": [False]}, {"flags": [0]})
    assert not _one({"confirm": True}, {"confirm": 1, "more": 2}, "subset")
    assert _one({"amount": 30}, {"amount": 30.0})
    assert _one({"nested": {"a": [1, {"b": True}]}}, {"nested": {"a": [1, {"b": True}]}})
