"""Cassettes: record an eval set's model replies once, replay them offline (the model is not
called), beside the eval set's file; a replay past the recording fails the run and says why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rillet import ChatModelAgent, Message, ScriptedModel, ToolInfo
from rillet.eval import run_eval
from rillet.eval.cassette import Cassette, CassetteError, cassette_path
from rillet.examples.demo import build_agent

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eval" / "travel.evalset.json"
PASSING = ["trip-with-booking", "booking-declined"]


def offline(messages: list[Message], tools: tuple[ToolInfo, ...]) -> str:
    raise AssertionError("the model was called during a replay")


def test_a_recorded_eval_set_replays_offline_with_the_same_outcome(tmp_path: Path) -> None:
    evalset = tmp_path / "travel.evalset.json"
    shutil.copy(EXAMPLE, evalset)
    recorded = run_eval(build_agent, evalset, cassette="record", progress=False)
    tape = cassette_path(evalset)
    assert tape == tmp_path / "travel.cassette.json" and tape.exists()
    runs = json.loads(tape.read_text())["runs"]
    assert sorted(runs) == sorted(c.case.id for c in recorded.cases)
    assert [len(r["travel_assistant"]) for r in runs["trip-with-booking"]] == [4]  # four model calls

    def no_model() -> ChatModelAgent:
        return build_agent(model=ScriptedModel(offline))  # type: ignore[no-any-return]

    replayed = run_eval(no_model, evalset, cassette="replay", progress=False)
    assert [(c.case.id, c.passed) for c in replayed.cases] == [(c.case.id, c.passed) for c in recorded.cases]
    assert [r.steps for c in replayed.cases for r in c.runs] == [r.steps for c in recorded.cases for r in c.runs]


def test_a_replay_past_the_recording_fails_the_run_and_names_the_case(tmp_path: Path) -> None:
    evalset = tmp_path / "travel.evalset.json"
    shutil.copy(EXAMPLE, evalset)
    short = Cassette({"trip-with-booking": [{"travel_assistant": [Message.assistant("hi").to_dict()]}]})
    short.save(cassette_path(evalset))
    report = run_eval(build_agent, evalset, cassette="replay", progress=False)
    by_id = {c.case.id: c for c in report.cases}
    text = report.failure_text()
    assert not by_id["trip-with-booking"].passed and "expected an interrupt from book_hotel that never came" in text
    assert "the cassette has no recording of case 'booking-declined'" in text


def test_the_cli_records_then_replays_beside_the_eval_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rillet import cli

    evalset = tmp_path / "travel.evalset.json"
    shutil.copy(EXAMPLE, evalset)
    argv = ["eval", "rillet.examples.demo:build_agent", str(evalset), "--case", PASSING[0], "--json"]
    with pytest.raises(SystemExit) as missing:
        cli.main([*argv, "--cassette", "replay"])
    assert missing.value.code == 2 and "record one first" in capsys.readouterr().err
    assert cli.main([*argv, "--cassette", "record"]) == 0
    assert list(json.loads(cassette_path(evalset).read_text())["runs"]) == [PASSING[0]]
    capsys.readouterr()
    assert cli.main([*argv, "--cassette", "replay"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True


def test_replay_without_a_cassette_and_a_cassette_for_an_object_say_what_to_do(tmp_path: Path) -> None:
    evalset = tmp_path / "travel.evalset.json"
    shutil.copy(EXAMPLE, evalset)
    with pytest.raises(CassetteError, match=r"no cassette at .*travel.cassette.json: record one first"):
        run_eval(build_agent, evalset, cassette="replay", progress=False)
    from rillet.eval import load_eval_set

    with pytest.raises(ValueError, match="pass cassette_file"):
        run_eval(build_agent, load_eval_set(evalset), cassette="record", progress=False)
