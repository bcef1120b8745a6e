"""Two eval reports side by side (before and after a change): which cases regressed, which were
fixed, whose pass rate moved, which are new or gone."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rillet.eval.run import EvalReport

__all__ = ["CaseChange", "Comparison", "compare_reports", "load_report"]

Status = Literal["regressed", "fixed", "changed", "same", "new", "removed"]


@dataclass(frozen=True, slots=True)
class CaseChange:
    """One case in both reports (or in one): its pass rate and result before and after."""

    case_id: str
    status: Status
    before: float | None
    after: float | None

    def text(self) -> str:
        return f"{self.case_id}: {self.status} ({_rate(self.before)} -> {_rate(self.after)})"


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every case of either report, in the after report's order, then the removed ones."""

    changes: tuple[CaseChange, ...]

    @property
    def regressions(self) -> list[CaseChange]:
        return [c for c in self.changes if c.status == "regressed"]

    def to_json(self) -> list[dict[str, Any]]:
        return [{"id": c.case_id, "status": c.status, "before": c.before, "after": c.after} for c in self.changes]

    def text(self) -> str:
        moved = [c for c in self.changes if c.status != "same"]
        same = len(self.changes) - len(moved)
        lines = [c.text() for c in moved]
        lines.append(f"{len(self.regressions)} regressed, {same} unchanged")
        return "\n".join(lines)


def load_report(path: str | Path) -> dict[str, Any]:
    """A JSON report written by ``rillet eval --json`` or ``-o`` (``EvalReport.to_json()``).
    Raises OSError if it cannot be read, ValueError if it is not such a report."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not an eval report (not JSON: {e})") from None
    _rates(data, str(path))
    assert isinstance(data, dict)  # _rates said so
    return data


def _rates(report: EvalReport | dict[str, Any], where: str = "the report") -> dict[str, tuple[float, bool]]:
    """Each case's pass rate and result; ValueError if ``report`` is not a report's JSON."""
    data = report.to_json() if isinstance(report, EvalReport) else report
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise ValueError(f"{where}: not an eval report (expected the JSON of rillet eval --json)")
    rates: dict[str, tuple[float, bool]] = {}
    for n, r in enumerate(results, 1):
        ok = (
            isinstance(r, dict)
            and isinstance(r.get("id"), str)
            and isinstance(r.get("pass_rate"), (int, float))
            and not isinstance(r.get("pass_rate"), bool)
            and isinstance(r.get("passed"), bool)
        )
        if not ok:
            raise ValueError(
                f'{where}: not an eval report: result {n} is not {{"id": str, "pass_rate": number, "passed": bool}}'
            )
        if r["id"] in rates:
            raise ValueError(f"{where}: not an eval report: two results have the id {r['id']!r}")
        rates[r["id"]] = (float(r["pass_rate"]), r["passed"])
    return rates


def compare_reports(before: EvalReport | dict[str, Any], after: EvalReport | dict[str, Any]) -> Comparison:
    """How each case went from ``before`` to ``after`` (reports, or their JSON): ``regressed``
    (passed, now fails), ``fixed`` (failed, now passes), ``changed`` (same result, another pass
    rate), ``same``, ``new`` (only after), ``removed`` (only before)."""
    old, new = _rates(before, "the report before"), _rates(after, "the report after")
    changes = []
    for case_id, (rate, passed) in new.items():
        if case_id not in old:
            changes.append(CaseChange(case_id, "new", None, rate))
            continue
        was_rate, was_passed = old[case_id]
        status: Status = (
            "regressed"
            if was_passed and not passed
            else "fixed"
            if passed and not was_passed
            else "changed"
            if rate != was_rate
            else "same"
        )
        changes.append(CaseChange(case_id, status, was_rate, rate))
    changes += [CaseChange(i, "removed", rate, None) for i, (rate, _) in old.items() if i not in new]
    return Comparison(tuple(changes))
