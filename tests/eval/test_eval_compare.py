"""Comparing two eval reports: regressions, fixes, moved pass rates, new and removed cases,
from report objects or their JSON (and in the CLI with --baseline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rillet import cli
from rillet.eval.compare import compare_reports, load_report


def report(*cases: tuple[str, float, bool]) -> dict[str, object]:
    return {"results": [{"id": i, "pass_rate": r, "passed": p} for i, r, p in cases]}


def test_each_case_gets_its_status() -> None:
    before = report(("a", 1.0, True), ("b", 0.0, False), ("c", 1.0, True), ("d", 0.5, False), ("gone", 1.0, True))
    after = report(("a", 0.0, False), ("b", 1.0, True), ("c", 1.0, True), ("d", 0.25, False), ("new", 1.0, True))
    diff = compare_reports(before, after)
    assert [(c.case_id, c.status) for c in diff.changes] == [
        ("a", "regressed"),
        ("b", "fixed"),
        ("c", "same"),
        ("d", "changed"),
        ("new", "new"),
        ("gone", "removed"),
    ]
    assert [c.case_id for c in diff.regressions] == ["a"]
    assert diff.text().splitlines() == [
        "a: regressed (100% -> 0%)",
        "b: fixed (0% -> 100%)",
        "d: changed (50% -> 25%)",
        "new: new (- -> 100%)",
        "gone: removed (100% -> -)",
        "1 regressed, 1 unchanged",
    ]


def test_the_cli_compares_with_a_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = str(Path(__file__).resolve().parents[2] / "examples" / "eval" / "travel.evalset.json")
    baseline = tmp_path / "before.json"
    baseline.write_text(json.dumps(report(("trip-with-booking", 1.0, True), ("wrong-order", 1.0, True))))
    argv = ["eval", "rillet.examples.demo:build_agent", example, "--no-color", "--baseline", str(baseline)]
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    assert "wrong-order: regressed (100% -> 0%)" in out and "rain-expected: new (- -> 0%)" in out
    assert cli.main([*argv, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert {"id": "wrong-order", "status": "regressed", "before": 1.0, "after": 0.0} in data["comparison"]
    (tmp_path / "bad.json").write_text("[]")
    with pytest.raises(ValueError, match="not an eval report"):
        load_report(tmp_path / "bad.json")


def test_reports_that_are_not_reports_raise_value_errors_not_key_errors() -> None:
    good = report(("a", 1.0, True))
    with pytest.raises(ValueError, match=r"the report before: not an eval report: result 1 is not"):
        compare_reports({"results": [{"pass_rate": 1.0, "passed": True}]}, good)
    with pytest.raises(ValueError, match=r"the report after: not an eval report \(expected"):
        compare_reports(good, {"cases": []})
    with pytest.raises(ValueError, match="two results have the id 'a'"):
        compare_reports(good, report(("a", 1.0, True), ("a", 0.0, False)))


def test_with_case_the_cases_not_run_are_not_called_removed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = str(Path(__file__).resolve().parents[2] / "examples" / "eval" / "travel.evalset.json")
    baseline = tmp_path / "before.json"
    baseline.write_text(json.dumps(report(("trip-with-booking", 1.0, True), ("wrong-order", 1.0, True))))
    argv = ["eval", "rillet.examples.demo:build_agent", example, "--case", "wrong-order", "--baseline", str(baseline)]
    assert cli.main([*argv, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["comparison"] == [
        {"id": "wrong-order", "status": "regressed", "before": 1.0, "after": 0.0}
    ]
