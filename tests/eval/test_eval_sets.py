"""Eval sets as Python objects and as files: JSON always, YAML with the `eval` extra, the
shipped JSON schema matching the models, and clear errors for files that are not eval sets."""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

import pytest
from rillet.eval import SCHEMA_PATH, EvalCase, EvalSet, EvalSetError, Turn, eval_set_schema, load_eval_set
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
    with pytest.raises(ValueError, match="at least 1 item"):
        EvalCase(id="a", turns=())
    with pytest.raises(ValueError, match="less than or equal to 1"):
        EvalCase(id="a", turns=(Turn(input="q"),), min_pass_rate=2)
