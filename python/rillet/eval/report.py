"""An eval report in the terminal: a table of the cases, then why each failing case failed."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rillet.eval.run import EvalReport, case_failure_text, where_text

__all__ = ["print_report"]


def print_report(report: EvalReport, console: Console) -> None:
    """Prints ``report``: one row per case (runs passed, pass rate, result, first failure),
    the failures in full, and a last line with the totals."""
    table = Table(title=f"eval set {report.eval_set}", title_justify="left")
    for name in ("case", "runs", "pass rate", "result", "first failure"):
        table.add_column(name, overflow="fold")
    for result in report.cases:
        passed = sum(r.passed for r in result.runs)
        failing = next((r for r in result.runs if not r.passed), None)
        first = failing.failures[0] if failing is not None and failing.failures else None
        why = f"{where_text(first)}, {first.kind}" + (f" (step {first.step})" if first.step else "") if first else ""
        mark = "[green]PASS[/]" if result.passed else "[red]FAIL[/]"
        table.add_row(
            escape(result.case.id), f"{passed}/{len(result.runs)}", f"{result.pass_rate:.0%}", mark, escape(why)
        )
    console.print(table)
    for result in report.cases:
        if not result.passed:
            console.print(case_failure_text(result), markup=False, highlight=False)
    total = len(report.cases)
    ok = sum(c.passed for c in report.cases)
    color = "green" if report.passed else "red"
    console.print(f"[{color}]{ok} of {total} cases passed[/] in {report.duration:.2f}s")
