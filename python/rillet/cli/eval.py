"""``rillet eval MODULE:ATTRIBUTE evalset.json``: runs an eval set against an agent, prints a
table (or ``--json`` the report), and exits 1 if a case failed; ``rillet eval save-case``
writes a saved session or checkpointed run into an eval set file (docs/evaluation.md).

``rillet eval`` is a group whose default command is ``run``: ``rillet eval SPEC SET`` is
``rillet eval run SPEC SET``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from rillet.cli.common import agent_or_fail, checkpoint_store, fail, load_agent
from rillet.cli.prompt import CTRL_C_STATUS


class _EvalGroup(click.Group):
    """``rillet eval``'s subcommands, ``run`` the default: arguments that do not start with a
    subcommand's name are ``run``'s (``rillet eval SPEC SET``, as before the group)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(
    "eval",
    cls=_EvalGroup,
    short_help="run an eval set against an agent; exit status 1 if a case fails",
    context_settings={"help_option_names": ["-h", "--help"]},
)
def eval_command() -> None:
    """Evaluation (docs/evaluation.md): `rillet eval MODULE:ATTRIBUTE EVALSET` runs an eval set
    (the `run` command, the default); `rillet eval save-case` writes a saved session or a
    checkpointed run into an eval set file."""


@eval_command.command("run", short_help="run an eval set against an agent (the default command)")
@click.argument("spec", metavar="MODULE:ATTRIBUTE")
@click.argument("evalset", metavar="EVALSET")
@click.option("-n", "--repeat", type=click.IntRange(min=1), help="runs of every case (default: the set's, else 1)")
@click.option("-j", "--concurrency", type=click.IntRange(min=1), default=4, show_default=True, help="runs at once")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="stop a run that takes longer (it fails, with its steps so far); default: no limit",
)
@click.option("--case", "cases", multiple=True, metavar="ID", help="run only the case ID (repeatable)")
@click.option(
    "--cassette",
    type=click.Choice(["record", "replay"]),
    help="record the model's replies beside EVALSET (NAME.cassette.json), or replay them offline",
)
@click.option(
    "--judge",
    metavar="MODULE:ATTRIBUTE",
    help="the model that answers the cases' judge criteria: a ChatModel, or a function of no arguments making one",
)
@click.option("--baseline", metavar="FILE", help="compare with an earlier JSON report: regressions, fixes, pass rates")
@click.option("-o", "--output", metavar="FILE", help="also write the JSON report to FILE")
@click.option("--json", "as_json", is_flag=True, help="print the JSON report instead of the table")
@click.option("--no-color", is_flag=True, help="plain text output")
def run_command(
    spec: str,
    evalset: str,
    repeat: int | None,
    concurrency: int,
    timeout: float | None,
    cases: tuple[str, ...],
    cassette: str | None,
    judge: str | None,
    baseline: str | None,
    output: str | None,
    as_json: bool,
    no_color: bool,
) -> int:
    """Runs every case of EVALSET (a JSON file, or YAML with the `eval` extra) on the agent
    MODULE:ATTRIBUTE names. A function of no arguments is called for every run, so runs share
    nothing; an agent object is shared by the runs. Exit status: 0 if every case passed, 1 if
    one failed, 2 if the agent or the eval set cannot be loaded, 130 after Ctrl-C."""
    from rillet.errors import RilletError
    from rillet.eval import EvalSetError, load_eval_set, run_eval
    from rillet.eval.cassette import cassette_path
    from rillet.eval.compare import compare_reports, load_report
    from rillet.eval.report import print_report
    from rillet.examples.demo import make_console

    agent_or_fail("eval", spec)  # a bad spec fails here, in one line, before anything runs
    judge_model = _judge_or_fail(judge) if judge is not None else None
    try:
        evals = load_eval_set(evalset)
    except EvalSetError as e:
        fail("eval", str(e))
    try:
        before = load_report(baseline) if baseline is not None else None
    except (OSError, ValueError) as e:
        fail("eval", f"--baseline {baseline}: {e}")
    if output is not None and not Path(output).resolve().parent.is_dir():
        fail("eval", f"-o {output}: no directory {Path(output).parent} to write the report in")  # before a long run
    if cases:
        unknown = sorted(set(cases) - {c.id for c in evals.cases})
        if unknown:
            fail("eval", f"{evalset} has no case {', '.join(map(repr, unknown))}")
        evals = evals.model_copy(update={"cases": tuple(c for c in evals.cases if c.id in cases)})
        if before is not None:  # the cases not run were not removed from the set: leave them out of the comparison
            before = {**before, "results": [r for r in before["results"] if r["id"] in cases]}

    def make_agent() -> Any:
        return load_agent(spec)  # a function of no arguments makes a fresh agent for each run

    try:
        report = run_eval(
            make_agent,
            evals,
            repeat=repeat,
            concurrency=concurrency,
            cassette=cassette,  # type: ignore[arg-type]  # click's Choice gives one of the two
            judge_model=judge_model,
            cassette_file=cassette_path(evalset),
            timeout=timeout,
        )
    except RilletError as e:  # a cassette that cannot be read
        fail("eval", str(e))
    except KeyboardInterrupt:  # not 1 (click's 'Aborted!'), which says a case failed
        fail("eval", "interrupted (Ctrl-C): the eval stopped, no report", CTRL_C_STATUS)
    data = report.to_json()
    comparison = compare_reports(before, data) if before is not None else None
    if comparison is not None:
        data["comparison"] = comparison.to_json()
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    if as_json:
        click.echo(text)
    else:
        console = make_console(False if no_color else None)
        print_report(report, console)
        if comparison is not None:
            console.print(f"compared with {baseline}:", markup=False)
            console.print(comparison.text(), markup=False, highlight=False)
    if output is not None:  # after the report is shown: a file that cannot be written does not hide it
        try:
            Path(output).write_text(text + "\n", encoding="utf-8")
        except OSError as e:
            fail("eval", f"-o {output}: cannot write the report: {e.strerror or e}")
    return 0 if report.passed else 1


def _judge_or_fail(spec: str) -> Any:
    """The judge model ``MODULE:ATTRIBUTE`` names (a model, or a function of no arguments that
    makes one); exit status 2 with one line otherwise."""
    import importlib
    import os
    import sys

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        fail("eval", f"--judge {spec!r}: expected MODULE:ATTRIBUTE, for example myapp.models:judge")
    if os.getcwd() not in sys.path:  # as for the agent: the current directory is importable
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            obj = getattr(obj, part)
        model = obj if callable(getattr(obj, "generate", None)) or not callable(obj) else obj()
    except Exception as e:  # noqa: BLE001  # an import, a missing attribute, a factory's failure: one line
        fail("eval", f"--judge {spec!r}: {type(e).__name__}: {e}")
    if not callable(getattr(model, "generate", None)):
        fail("eval", f"--judge {spec!r} is a {type(model).__name__}, not a chat model (it has no generate method)")
    return model


def _answer(text: str) -> tuple[str, Any]:
    tool, sep, data = text.partition("=")
    if not sep or not tool:
        raise click.BadParameter(f"{text!r}: give TOOL=DATA, e.g. book_hotel=approve", param_hint="--answer")
    try:
        return tool, json.loads(data)
    except json.JSONDecodeError:
        return tool, data  # a bare word: the string itself


@eval_command.command("save-case", short_help="write a saved session or checkpointed run into an eval set file")
@click.option("--db", required=True, metavar="FILE", help="the SQLite file of the run (rillet run --db)")
@click.option("--session", "session_id", metavar="ID", help="the session to turn into a case")
@click.option("--checkpoint", "checkpoint_id", metavar="ID", help="the checkpoint (a run paused at an interrupt)")
@click.option("-o", "--output", required=True, metavar="EVALSET", help="the eval set file (JSON), created or extended")
@click.option("--id", "case_id", metavar="ID", help="the case's id (default: the session's or checkpoint's)")
@click.option("--name", metavar="NAME", help="the eval set's name when the file is created (default: from its name)")
@click.option(
    "--match",
    type=click.Choice(["exact", "in_order", "any_order", "subset"]),
    help="how the trajectory is compared (default: exact; in_order for a checkpoint's last turn)",
)
@click.option(
    "--answer-check",
    type=click.Choice(["exact", "contains", "none"]),
    default="exact",
    show_default=True,
    help="how each turn's saved answer is checked",
)
@click.option(
    "--answer",
    "answers",
    multiple=True,
    metavar="TOOL=DATA",
    help="the resume data for TOOL's interrupt (JSON, or a word such as approve); repeatable",
)
@click.option("--replace", is_flag=True, help="replace a case of the same id instead of refusing")
def save_case_command(
    db: str,
    session_id: str | None,
    checkpoint_id: str | None,
    output: str,
    case_id: str | None,
    name: str | None,
    match: str | None,
    answer_check: str,
    answers: tuple[str, ...],
    replace: bool,
) -> int:
    """Turns the session --session (every turn: its question, tool calls and answer) or the
    checkpoint --checkpoint (a run paused at an interrupt: its question, the tool calls up to
    the interrupt, the interrupts it waits on) of the SQLite file --db into an eval case, and
    adds it to EVALSET. Neither keeps how an interrupt was or will be answered: give it with
    --answer TOOL=DATA, else the case resumes it with null (edit the file). A session's values
    as its first turn found them are not kept either: add session_state by hand if needed."""
    from rillet.errors import RilletError
    from rillet.eval import EvalSetError
    from rillet.eval.saved import add_case, case_from_checkpoint, case_from_session, unanswered

    if (session_id is None) == (checkpoint_id is None):
        fail("eval save-case", "give one of --session ID or --checkpoint ID")
    if not Path(db).is_file():
        fail("eval save-case", f"no database at {db} (give the --db the run used)")
    known = dict(_answer(a) for a in answers)
    check: Any = answer_check  # click's Choice gives one of the modes
    mode: Any = match
    try:
        if session_id is not None:
            from rillet.sessions import SqliteSessionStore

            sessions = SqliteSessionStore(db)
            case = case_from_session(
                sessions, session_id, case_id=case_id, match=mode or "exact", answer=check, answers=known
            )
        else:
            assert checkpoint_id is not None
            store = checkpoint_store("eval save-case", db, create=False)
            case = case_from_checkpoint(
                store, checkpoint_id, case_id=case_id, match=mode or "in_order", answer=check, answers=known
            )
        evals = add_case(output, case, name=name, replace=replace)
    except (EvalSetError, ValueError, RilletError) as e:  # RilletError: a --db that is not a rillet database
        fail("eval save-case", str(e))
    except OSError as e:  # the eval set file cannot be written
        fail("eval save-case", f"-o {output}: cannot write it: {e.strerror or e}")
    calls = sum(len(t.trajectory.calls) for t in case.turns if t.trajectory is not None)
    click.echo(
        f"rillet eval save-case: case {case.id!r} ({len(case.turns)} turn(s), {calls} tool call(s)) "
        f"written to {output} ({len(evals.cases)} case(s))"
    )
    for tool in unanswered(case):
        click.echo(
            f"rillet eval save-case: note: the answer to {tool}'s interrupt is not known; the case resumes it "
            f"with null: pass --answer {tool}=DATA, or edit the file",
            err=True,
        )
    return 0
