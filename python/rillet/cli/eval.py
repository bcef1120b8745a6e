"""``rillet eval MODULE:ATTRIBUTE evalset.json``: runs an eval set against an agent, prints a
table (or ``--json`` the report), and exits 1 if a case failed (docs/evaluation.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from rillet.cli.common import agent_or_fail, fail, load_agent


@click.command("eval", short_help="run an eval set against an agent; exit status 1 if a case fails")
@click.argument("spec", metavar="MODULE:ATTRIBUTE")
@click.argument("evalset", metavar="EVALSET")
@click.option("-n", "--repeat", type=click.IntRange(min=1), help="runs of every case (default: the set's, else 1)")
@click.option("-j", "--concurrency", type=click.IntRange(min=1), default=4, show_default=True, help="runs at once")
@click.option("--case", "cases", multiple=True, metavar="ID", help="run only the case ID (repeatable)")
@click.option(
    "--cassette",
    type=click.Choice(["record", "replay"]),
    help="record the model's replies beside EVALSET (NAME.cassette.json), or replay them offline",
)
@click.option("--baseline", metavar="FILE", help="compare with an earlier JSON report: regressions, fixes, pass rates")
@click.option("-o", "--output", metavar="FILE", help="also write the JSON report to FILE")
@click.option("--json", "as_json", is_flag=True, help="print the JSON report instead of the table")
@click.option("--no-color", is_flag=True, help="plain text output")
def eval_command(
    spec: str,
    evalset: str,
    repeat: int | None,
    concurrency: int,
    cases: tuple[str, ...],
    cassette: str | None,
    baseline: str | None,
    output: str | None,
    as_json: bool,
    no_color: bool,
) -> int:
    """Runs every case of EVALSET (a JSON file, or YAML with the `eval` extra) on the agent
    MODULE:ATTRIBUTE names. A function of no arguments is called for every run, so runs share
    nothing; an agent object is shared by the runs. Exit status: 0 if every case passed, 1 if
    one failed, 2 if the agent or the eval set cannot be loaded."""
    from rillet.errors import RilletError
    from rillet.eval import EvalSetError, load_eval_set, run_eval
    from rillet.eval.cassette import cassette_path
    from rillet.eval.compare import compare_reports, load_report
    from rillet.eval.report import print_report
    from rillet.examples.demo import make_console

    agent_or_fail("eval", spec)  # a bad spec fails here, in one line, before anything runs
    try:
        evals = load_eval_set(evalset)
    except EvalSetError as e:
        fail("eval", str(e))
    try:
        before = load_report(baseline) if baseline is not None else None
    except (OSError, ValueError) as e:
        fail("eval", f"--baseline {baseline}: {e}")
    if cases:
        unknown = sorted(set(cases) - {c.id for c in evals.cases})
        if unknown:
            fail("eval", f"{evalset} has no case {', '.join(map(repr, unknown))}")
        evals = evals.model_copy(update={"cases": tuple(c for c in evals.cases if c.id in cases)})

    def make_agent() -> Any:
        return load_agent(spec)  # a function of no arguments makes a fresh agent for each run

    try:
        report = run_eval(
            make_agent,
            evals,
            repeat=repeat,
            concurrency=concurrency,
            cassette=cassette,  # type: ignore[arg-type]  # click's Choice gives one of the two
            cassette_file=cassette_path(evalset),
        )
    except RilletError as e:  # a cassette that cannot be read
        fail("eval", str(e))
    data = report.to_json()
    comparison = compare_reports(before, data) if before is not None else None
    if comparison is not None:
        data["comparison"] = comparison.to_json()
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    if output is not None:
        Path(output).write_text(text + "\n", encoding="utf-8")
    if as_json:
        click.echo(text)
    else:
        console = make_console(False if no_color else None)
        print_report(report, console)
        if comparison is not None:
            console.print(f"compared with {baseline}:", markup=False)
            console.print(comparison.text(), markup=False, highlight=False)
    return 0 if report.passed else 1
