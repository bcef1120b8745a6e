"""``rillet run MODULE:ATTRIBUTE "question"``: runs any agent, showing what it does as it
happens, answering its interrupts, and (``--session``) chatting turn after turn."""

from __future__ import annotations

import shlex
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import click

from rillet.cli.common import (
    agent_or_fail,
    checkpoint_store,
    decision_options,
    fail,
    output_options,
    verbose_option,
)
from rillet.cli.drive import CTRL_C_STATUS, Decisions, Driver, Pending, resume_hint
from rillet.cli.prompt import not_utf8, resume_command, shown

if TYPE_CHECKING:
    from rich.console import Console


@click.command(short_help="run an agent on a question, showing its events live")
@click.argument("spec", metavar="MODULE:ATTRIBUTE")
@click.argument("query", metavar='["QUESTION"]', required=False)
@click.option(
    "--db", metavar="FILE", help="SQLite file for checkpoints and sessions (created if missing); default: memory"
)
@click.option(
    "--session",
    "session_id",
    metavar="ID",
    help="continue the conversation ID, then keep chatting: every line read from stdin is a turn",
)
@click.option("--checkpoint-id", metavar="ID", help="the id an interrupted run is saved under (default: run-<random>)")
@click.option("--no-stream", is_flag=True, help="ask the model for whole replies instead of streams")
@decision_options
@verbose_option
@output_options
def run(
    spec: str,
    query: str | None,
    db: str | None,
    session_id: str | None,
    checkpoint_id: str | None,
    no_stream: bool,
    approve: tuple[str, ...],
    reject: tuple[str, ...],
    verbose: bool,
    as_json: bool,
    no_color: bool,
) -> int:
    """Runs the agent MODULE:ATTRIBUTE names (an agent, or a function of no arguments returning
    one) on QUESTION. Interrupts are answered by --approve/--reject, else at the prompt; with
    neither (no --json, stdin at its end) the run stops there, exit status 3 (130 after Ctrl-C
    at the prompt); with --db it is saved, and the line on stderr is the command that resumes it.
    A model or tool error shows its type and message; --verbose, its traceback too."""
    from rillet.checkpoint import InMemoryCheckpointStore
    from rillet.examples.demo import ToolErrors, make_console
    from rillet.runner import Runner

    decisions = Decisions("run", approve, reject)
    if query is None and session_id is None:
        fail("run", 'no question: rillet run MODULE:ATTRIBUTE "QUESTION" (or --session ID to chat)')
    if query is not None and not_utf8(query):
        fail("run", f"the question is not UTF-8 text ({not_utf8(query)}); give it in UTF-8")
    agent = agent_or_fail("run", spec, verbose=verbose)
    store: Any = checkpoint_store("run", db) if db is not None else InMemoryCheckpointStore()
    if db is not None and checkpoint_id is not None and store.get(checkpoint_id) is not None:
        fail(  # a new run paused under its id would replace the run that waits there
            "run",
            f"checkpoint {checkpoint_id!r} is in {db} already, a run waiting to be resumed "
            f"({shlex.join(['rillet', 'inspect', checkpoint_id, '--db', db])} shows it): resume it, "
            f"{resume_command(checkpoint_id, db, spec)}, or give another --checkpoint-id",
        )
    sessions = _session_store(db) if session_id is not None else None
    console = make_console(False if no_color else None)
    tool_errors = ToolErrors()
    runner = Runner(
        agent, streaming=not no_stream, checkpoint_store=store, session_store=sessions, observers=[tool_errors]
    )
    driver = Driver(
        "run", runner, console, as_json=as_json, decisions=decisions, verbose=verbose, tool_errors=tool_errors
    )
    driver.defer_warnings = session_id is not None
    start = time.perf_counter()
    status = 0
    for text, typed in _turns(query, session_id, console, as_json):
        status = _turn(driver, text, typed, session_id, checkpoint_id, db, spec)
        if status in (3, CTRL_C_STATUS):  # stopped at an interrupt: the conversation cannot go on past it
            break
    driver.warn_unused([])  # a chat's flags, at its end (a one-question run's were named already)
    if not as_json:
        from rillet.examples.demo import print_summary

        print_summary(console, driver.renderer, time.perf_counter() - start, 0.0)
    return status


def _session_store(db: str | None) -> Any:
    """Sessions in ``db`` (beside its checkpoints), else in memory for this process."""
    import sqlite3

    from rillet.errors import SessionError
    from rillet.sessions import InMemorySessionStore, SqliteSessionStore

    if db is None:
        return InMemorySessionStore()
    try:
        return SqliteSessionStore(db)
    except (SessionError, sqlite3.Error, OSError) as e:
        fail("run", str(e))


def _turns(query: str | None, session_id: str | None, console: Console, as_json: bool) -> Iterator[tuple[str, bool]]:
    """The question, then (a session) each line read until the input ends or says /exit; with
    whether it was typed after the ``you>`` prompt."""
    if query is not None:
        yield query, False
    if session_id is None:
        return
    while True:
        if not as_json:
            console.print("\n[bold]you>[/] ", end="")
        try:
            line = sys.stdin.readline()
        except KeyboardInterrupt:  # Ctrl-C at you>: the conversation ends, as at the input's end
            line = ""
        if not line or line.strip() == "/exit":
            if not as_json:
                console.print()
            return
        bad = not_utf8(line)
        if not as_json and not sys.stdin.isatty():  # piped: show the line, as a terminal would have
            console.print(shown(line.strip()), markup=False, highlight=False)
        if bad:  # a model takes text: say so and go on, as after a line that was not understood
            print(f"rillet run: that line is not UTF-8 text ({bad}): it was not sent", file=sys.stderr, flush=True)
        elif line.strip():
            yield line.strip(), True


def _turn(
    driver: Driver, text: str, typed: bool, session_id: str | None, checkpoint_id: str | None, db: str | None, spec: str
) -> int:
    from rillet.errors import RilletError
    from rillet.examples.demo import print_user

    cid = checkpoint_id or f"run-{uuid.uuid4().hex[:8]}"
    if not driver.as_json and not typed:
        print_user(driver.console, text)

    def stopped(missing: Sequence[Pending]) -> int:
        what = ", ".join(p.label() for p in missing)
        where = (
            f"it is saved: {resume_hint(cid, db, spec, missing)}"
            if db is not None
            else "nothing was saved (with --db FILE it could be resumed later)"
        )
        why = "Ctrl-C at the prompt" if driver.ctrl_c else "no --approve/--reject for it and no answer on stdin"
        print(f"rillet run: stopped at {what}: {why}; {where}", file=sys.stderr)
        return CTRL_C_STATUS if driver.ctrl_c else 3

    driver.answered = []
    try:  # the run's own failures are events; these are the Runner refusing (a busy session, a claimed checkpoint)
        events = driver.runner.query(text, checkpoint_id=cid, session_id=session_id)
        return driver.follow(cid, driver.show(events), stopped)
    except (RilletError, ValueError) as e:
        fail("run", str(e), 1)
    except KeyboardInterrupt:  # Ctrl-C while it ran (show() closed the run): closed, and a resume's claim released
        kept = (
            f"checkpoint[{cid}] is kept as it was at its last interrupt, to resume again: "
            f"{resume_hint(cid, db, spec, driver.answered)}"
            if db is not None and driver.answered
            else "nothing was saved (a run is saved where it stops for an answer, with --db FILE)"
        )
        print(f"rillet run: stopped by Ctrl-C while the run was going; {kept}", file=sys.stderr, flush=True)
        return CTRL_C_STATUS
