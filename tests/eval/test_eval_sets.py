"""Eval sets as Python objects and as files: JSON always, YAML with the `eval` extra, the
shipped JSON schema matching the models, and clear errors for files that are not eval sets."""

from __future__ import annotations

import builtins
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rillet.eval import (
    SCHEMA_PATH,
    Answer,
    EvalCase,
    EvalSet,
    EvalSetError,
    ExpectedCall,
    ExpectedInterrupt,
    Judge,
    Trajectory,
    Turn,
    eval_set_schema,
    load_eval_set,
)
from rillet.eval.sets import schema_text
from support.optional import need

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "eval" / "travel.evalset.json"
SMALL = {
    "name": "small",
    "cases": [
        {
            "id": "one",
            "session_state": {"user": "ana"},
            "turns": [
                {
                    "input": "hi",
                    "trajectory": {"match": "subset", "calls": [{"name": "greet", "arguments": {"who": "ana"}}]},
                    "answer": {"contains": ["hello"], "judge": {"rubric": "friendly"}},
                    "interrupts": [{"tool": "greet", "resume": "approve"}],
                }
            ],
        }
    ],
}


def test_the_shipped_schema_is_the_models_schema() -> None:
    """After changing the models: python -c 'from rillet.eval.sets import write_schema; write_schema()'."""
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text()
    assert "output_model" not in eval_set_schema()["$defs"]["Answer"]["properties"]  # a Python class: not in files


def test_the_example_and_a_small_set_validate_against_the_schema() -> None:
    jsonschema = need("jsonschema")
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(json.loads(EXAMPLE.read_text(encoding="utf-8")))
    jsonschema.Draft202012Validator(schema).validate(SMALL)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate({"name": "x", "cases": [{"id": "a", "turns": []}]})


def test_a_json_file_loads_to_the_same_set_as_the_python_objects(tmp_path: Path) -> None:
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL))
    loaded = load_eval_set(path)
    assert loaded == EvalSet.model_validate(SMALL)
    case = loaded.cases[0]
    assert case.session_state == {"user": "ana"} and case.min_pass_rate == 1.0
    turn = case.turns[0]
    assert turn.trajectory is not None and turn.trajectory.match == "subset"
    assert turn.interrupts[0].resume == "approve"
    assert turn.answer is not None and turn.answer.judge is not None and turn.answer.judge.rubric == "friendly"
    assert load_eval_set(EXAMPLE).name == "travel"


def test_a_yaml_file_loads_with_pyyaml(tmp_path: Path) -> None:
    yaml = need("yaml")
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    assert load_eval_set(path) == EvalSet.model_validate(SMALL)


def test_yaml_without_pyyaml_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def no_yaml(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "yaml":
            raise ImportError("No module named 'yaml'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_yaml)
    path = tmp_path / "s.yml"
    path.write_text("name: x\n")
    with pytest.raises(EvalSetError, match=r"reading YAML needs PyYAML: pip install 'rillet\[eval\]'"):
        load_eval_set(path)


def test_files_that_are_not_eval_sets_say_where_and_what(tmp_path: Path) -> None:
    with pytest.raises(EvalSetError, match="cannot read it"):
        load_eval_set(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(EvalSetError, match="bad.json: not valid JSON"):
        load_eval_set(bad)
    bad.write_text(
        json.dumps({"name": "x", "cases": [{"id": "a", "turns": [{"input": "q", "trajectory": {"match": "some"}}]}]})
    )
    with pytest.raises(EvalSetError, match=r"not an eval set: cases\.0\.turns\.0\.trajectory\.match: Input should be"):
        load_eval_set(bad)
    bad.write_text(json.dumps({"name": "x", "cases": [{"id": "a", "turns": [{"input": "q"}]}] * 2}))
    with pytest.raises(EvalSetError, match="two cases have the id 'a'"):
        load_eval_set(bad)


def test_python_objects_check_their_values() -> None:
    with pytest.raises(ValueError, match="at least 1 character"):
        EvalCase(id="", turns=(Turn(input="q"),))
    with pytest.raises(ValueError, match="at least 1 character"):
        EvalSet(name="", cases=(EvalCase(id="a", turns=(Turn(input="q"),)),))
    with pytest.raises(ValueError, match="at least 1 item"):
        EvalCase(id="a", turns=())
    with pytest.raises(ValueError, match="less than or equal to 1"):
        EvalCase(id="a", turns=(Turn(input="q"),), min_pass_rate=2)


def test_a_bad_regex_or_json_schema_is_the_eval_sets_error_at_load(tmp_path: Path) -> None:
    """Found when the set is read, naming the field, not at every run as an 'error' of the agent."""
    need("jsonschema")
    bad = tmp_path / "bad.json"
    for answer, said in [
        ({"regex": "paid ("}, r"cases\.0\.turns\.0\.answer\.regex: Value error, not a valid regular expression"),
        ({"json_schema": {"type": "nope"}}, r"answer\.json_schema: Value error, not a valid JSON schema \(at type\)"),
    ]:
        bad.write_text(json.dumps({"name": "x", "cases": [{"id": "a", "turns": [{"input": "q", "answer": answer}]}]}))
        with pytest.raises(EvalSetError, match=said):
            load_eval_set(bad)
    with pytest.raises(ValueError, match="not a valid regular expression"):
        Answer(regex="[")


def test_a_set_without_cases_is_refused_it_would_pass_checking_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"name": "x", "cases": []}))
    with pytest.raises(EvalSetError, match="empty.json: not an eval set: cases: Tuple should have at least 1 item"):
        load_eval_set(empty)
    with pytest.raises(ValueError, match="at least 1 item"):
        EvalSet(name="x", cases=())


def test_a_file_that_is_not_utf8_says_so(tmp_path: Path) -> None:
    latin = tmp_path / "latin.json"
    latin.write_bytes(json.dumps({"name": "caf\u00e9", "cases": []}).encode("latin-1").replace(b"\\u00e9", b"\xe9"))
    with pytest.raises(EvalSetError, match=r"latin.json: not UTF-8 text \(invalid continuation byte at byte \d+\)"):
        load_eval_set(latin)


# no control characters or line separators: PyYAML reads some (U+0085) back as a line break
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=8)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | _TEXT,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_TEXT, inner, max_size=2),
    max_leaves=4,
)
_CALL = st.builds(
    ExpectedCall,
    name=_TEXT,
    arguments=st.none() | st.dictionaries(_TEXT, _JSON, max_size=2),
    arguments_match=st.sampled_from(["exact", "subset"]),
)
_ANSWER = st.builds(
    Answer,
    exact=st.none() | _TEXT,
    contains=st.lists(_TEXT, max_size=2).map(tuple),
    not_contains=st.lists(_TEXT, max_size=2).map(tuple),
    regex=st.none() | _TEXT.map(re.escape),
    json_schema=st.none() | st.sampled_from([{"type": "object"}, {"type": "array", "items": {"type": "integer"}}]),
    judge=st.none() | st.builds(Judge, rubric=_TEXT),
)
_TURN = st.builds(
    Turn,
    input=_TEXT,
    trajectory=st.none()
    | st.builds(
        Trajectory,
        calls=st.lists(_CALL, max_size=3).map(tuple),
        match=st.sampled_from(["exact", "in_order", "any_order", "subset"]),
    ),
    answer=st.none() | _ANSWER,
    interrupts=st.lists(st.builds(ExpectedInterrupt, tool=st.none() | _TEXT, resume=_JSON), max_size=2).map(tuple),
)
_NAME = _TEXT.filter(bool)
_CASE = st.builds(
    EvalCase,
    id=_NAME,
    turns=st.lists(_TURN, min_size=1, max_size=2).map(tuple),
    session_state=st.dictionaries(_TEXT, _JSON, max_size=2),
    min_pass_rate=st.sampled_from([0.0, 0.5, 1.0]),
    repeat=st.none() | st.integers(1, 3),
    description=_TEXT,
)
_SET = st.builds(
    lambda name, cases, repeat: EvalSet(name=name, cases=tuple({c.id: c for c in cases}.values()), repeat=repeat),
    name=_NAME,
    cases=st.lists(_CASE, min_size=1, max_size=3),
    repeat=st.none() | st.integers(1, 3),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(evals=_SET)
def test_an_eval_set_written_as_json_or_yaml_loads_back_the_same(tmp_path: Path, evals: EvalSet) -> None:
    data = evals.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    path = tmp_path / "round.evalset.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert load_eval_set(path) == evals
    yaml = need("yaml")
    path = tmp_path / "round.evalset.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert load_eval_set(path) == evals


def test_a_typo_in_a_turn_is_reported_alone_not_as_an_empty_list_too(tmp_path: Path) -> None:
    """pydantic adds 'cases: Tuple should have at least 1 item ..., not 0' for a set of two
    cases when one item failed: a false lead."""
    bad = tmp_path / "typo.json"
    cases = [
        {"id": "a", "turns": [{"input": "q", "bogus": 1}]},
        {"id": "b", "turns": [{"input": "q", "answer": {"exact": 3}}]},
    ]
    bad.write_text(json.dumps({"name": "x", "cases": cases}))
    with pytest.raises(EvalSetError) as e:
        load_eval_set(bad)
    assert str(e.value) == (
        f"{bad}: not an eval set: cases.0.turns.0.bogus: Extra inputs are not permitted; "
        "cases.1.turns.0.answer.exact: Input should be a valid string"
    )
    bad.write_text(json.dumps({"name": "x", "cases": [{"id": "a", "turns": []}]}))
    with pytest.raises(
        EvalSetError, match=r"cases\.0\.turns: Tuple should have at least 1 item after validation, not 0$"
    ):
        load_eval_set(bad)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(evals=_SET)
def test_cases_added_one_by_one_with_add_case_load_back_the_same(tmp_path: Path, evals: EvalSet) -> None:
    from rillet.eval.saved import add_case

    path = tmp_path / "added.evalset.json"
    path.unlink(missing_ok=True)
    for case in evals.cases:
        add_case(path, case, name=evals.name)
    loaded = load_eval_set(path)
    assert loaded.name == evals.name and loaded.cases == evals.cases
    add_case(path, evals.cases[0], replace=True)  # in its place, the others unchanged
    assert load_eval_set(path).cases == evals.cases


def test_a_key_given_twice_is_refused_not_silently_the_last(tmp_path: Path) -> None:
    """json and PyYAML keep the last of two keys: a case's second "answer" dropped the first's
    checks, and the case could pass on less than it says."""
    twice = '{"name": "x", "cases": [{"id": "a", "turns": [{"input": "q", "answer": {"exact": "no"}, "answer": {}}]}]}'
    path = tmp_path / "twice.json"
    path.write_text(twice)
    with pytest.raises(
        EvalSetError, match=r"twice.json: not valid JSON: the key 'answer' is given twice in one object"
    ):
        load_eval_set(path)
    need("yaml")
    path = tmp_path / "twice.yaml"
    path.write_text(
        "name: x\ncases:\n  - id: a\n    turns:\n      - input: q\n        answer: {exact: 'no'}\n        answer: {}\n"
    )
    with pytest.raises(
        EvalSetError,
        match=r"twice.yaml: not valid YAML: the key 'answer' is given twice in one object \(line 7, column 9\)",
    ):
        load_eval_set(path)
    path.write_text("name: x\ncases:\n  - id: a\n    turns:\n      - {input: q, answer: {exact: 'yes'}}\n")
    assert load_eval_set(path).cases[0].turns[0].answer == Answer(exact="yes")
