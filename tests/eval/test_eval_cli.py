"""`rillet eval MODULE:ATTRIBUTE EVALSET` on the example eval set shipped in examples/eval:
the table, the JSON report, and the exit status (1 when a case fails, 0 when all pass, 2 when
the agent or the set cannot be loaded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rillet import cli

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "eval" / "travel.evalset.json")
AGENT = "rillet.examples.demo:build_agent"


def test_the_example_set_fails_on_its_failing_cases_with_the_step_shown(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", AGENT, EXAMPLE, "--no-color"]) == 1
    out = capsys.readouterr().out
    for case, result in [("trip-with-booking", "PASS"), ("booking-declined", "PASS"), ("wrong-order", "FAIL")]:
        assert any(case in line and result in line for line in out.splitlines()), out
    assert "left the expected trajectory at step 2 (call 1): expected convert_currency(...)" in " ".join(out.split())
    assert ">> step 2: travel_assistant: calls get_weather" in out
    assert "2 of 4 cases passed" in out


def test_only_passing_cases_exit_zero_and_the_json_report_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    written = tmp_path / "report.json"
    argv = ["eval", AGENT, EXAMPLE, "--case", "trip-with-booking", "--case", "booking-declined", "-n", "3"]
    assert cli.main([*argv, "--json", "-o", str(written)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == json.loads(written.read_text())
    assert report["passed"] is True and report["cases"] == 2
    assert [(r["id"], len(r["runs"]), r["pass_rate"]) for r in report["results"]] == [
        ("trip-with-booking", 3, 1.0),
        ("booking-declined", 3, 1.0),
    ]


def test_what_cannot_be_loaded_exits_2_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as bad_agent:
        cli.main(["eval", "rillet.examples.demo:nothing", EXAMPLE])
    assert bad_agent.value.code == 2
    assert (
        capsys.readouterr().err
        == "rillet eval: 'rillet.examples.demo:nothing': rillet.examples.demo has no attribute 'nothing'\n"
    )
    (tmp_path / "bad.json").write_text('{"name": "x"}')
    with pytest.raises(SystemExit) as bad_set:
        cli.main(["eval", AGENT, str(tmp_path / "bad.json")])
    assert bad_set.value.code == 2
    assert "bad.json: not an eval set: cases: Field required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["eval", AGENT, EXAMPLE, "--case", "nope"])
    assert "has no case 'nope'" in capsys.readouterr().err
