"""``rillet resume CHECKPOINT --db FILE MODULE:ATTRIBUTE``: continues a run saved in SQLite,
from any process, answering its interrupts from the flags or at the prompt."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from rillet.cli.common import (
    DB_HELP,
    agent_or_fail,
    checkpoint_store,
    db_or_fail,
    decision_options,
    fail,
    output_options,
    verbose_option,
)
from rillet.cli.demo import model_option
from rillet.cli.drive import (
    CTRL_C_STATUS,
    Decisions,
    Driver,
    Pending,
    pending_of_checkpoint,
    resume_hint,
)
from rillet.cli.prompt import resume_command


@click.command(short_help="continue a run saved in SQLite (from any process)")
@click.argument("checkpoint_id", metavar="CHECKPOINT")
@click.argument("spec", metavar="[MODULE:ATTRIBUTE]", required=False)
@click.option(
    "--agent",
    "agent_flag",
    metavar="MODULE:ATTRIBUTE",
    help="the agent, as the argument gives it (the older spelling)",
)
@click.option("--db", metavar="FILE", help=DB_HELP)
@model_option
@decision_options
@verbose_option
@output_options
def resume(
    checkpoint_id: str,
    spec: str | None,
    agent_flag: str | None,
    db: str | None,
    model: str,
    approve: tuple[str, ...],
    reject: tuple[str, ...],
    verbose: bool,
    as_json: bool,
    no_color: bool,
) -> int:
    """Continues the run saved as CHECKPOINT with the agent MODULE:ATTRIBUTE names (an agent, or
    a function of no arguments returning one): it must be the agent that saved it. Without one,
    only the demo's checkpoints. --db is the file it was saved in (required, as for rillet
    inspect). An approval needs --approve/--reject or an answer at the prompt; with neither,
    nothing runs (exit status 2). A problem with the database or the checkpoint is one line on
    stderr, exit status 1."""
    from rillet.examples.demo import make_console

    spec, approve, reject = _agent_given_as_flag_value(spec, approve, reject)
    if spec is not None and agent_flag is not None:
        fail("resume", f"the agent is given twice ({spec} and --agent {agent_flag}): give it once")
    decisions = Decisions("resume", approve, reject)
    path = db_or_fail("resume", db)
    agent = None
    if spec is not None or agent_flag is not None:
        agent = agent_or_fail("resume", spec or agent_flag or "", "" if spec else "--agent", verbose=verbose)
    store = checkpoint_store("resume", path, create=False, code=1)
    console = make_console(False if no_color else None)
    try:
        return _resume(
            checkpoint_id, store, path, agent, model, spec or agent_flag, decisions, console, as_json, verbose
        )
    except Exception as e:
        import sqlite3

        from rillet.checkpoint import CheckpointError
        from rillet.data import codec
        from rillet.errors import SessionError

        if isinstance(e, (CheckpointError, codec.DecodeError, sqlite3.Error, SessionError)):
            fail("resume", str(e), 1)
        raise


def _agent_given_as_flag_value(
    spec: str | None, approve: tuple[str, ...], reject: tuple[str, ...]
) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """``--approve MODULE:ATTRIBUTE`` read as a bare ``--approve`` before the agent (an interrupt
    id or tool name has no colon)."""
    if spec is not None:
        return spec, approve, reject
    flags = [*approve, *reject]
    found = [f for f in flags if ":" in f and "=" not in f]
    if len(found) != 1:
        return spec, approve, reject
    take = found[0]
    return take, tuple("*" if f == take else f for f in approve), tuple("*" if f == take else f for f in reject)


def _resume(
    checkpoint_id: str,
    store: Any,
    path: str,
    agent: Any,
    model: str,
    spec: str | None,
    decisions: Decisions,
    console: Any,
    as_json: bool,
    verbose: bool,
) -> int:
    from rillet.checkpoint.journal import read_step_head
    from rillet.checkpoint.payload import load
    from rillet.examples.demo import ToolErrors, demo_agent_for, make_chat_model, missing_key
    from rillet.runner import Runner
    from rillet.sessions import SqliteSessionStore

    data = store.get(checkpoint_id)
    if data is None:
        fail("resume", f"no checkpoint {checkpoint_id!r} in {path} (rillet inspect --db {path} lists them)", 1)
    if read_step_head(bytes(data), checkpoint_id) is not None:  # a step run that did not finish
        if agent is None:
            fail(
                "resume",
                f"checkpoint[{checkpoint_id}] is the step record of a run that did not finish "
                '(Runner(durability="step")): give the agent that ran it, and the run goes on from its record: '
                f"{resume_command(checkpoint_id, path, 'MODULE:ATTRIBUTE')}",
            )
        return _retry(checkpoint_id, store, path, agent, spec, decisions, console, as_json, verbose)
    loaded = load(data, checkpoint_id)
    if agent is None:
        chat = make_chat_model(model)
        if missing_key(console, chat):
            return 2
        agent = demo_agent_for(checkpoint_id, loaded.agent, chat)
    sessions = SqliteSessionStore(path) if loaded.session_ref is not None else None
    tool_errors = ToolErrors()
    runner = Runner(agent, checkpoint_store=store, session_store=sessions, observers=[tool_errors])
    driver = Driver(
        "resume", runner, console, as_json=as_json, decisions=decisions, verbose=verbose, tool_errors=tool_errors
    )
    pending = pending_of_checkpoint(loaded)
    targets = driver.answer(pending)
    unanswered = [p for p in pending if p.tool is not None and p.id not in targets]
    if unanswered:
        driver.warn_unused(unanswered)
        waiting = ", ".join(p.label() for p in unanswered)
        hint = resume_hint(checkpoint_id, path, spec or "", unanswered)
        if driver.ctrl_c:
            fail(
                "resume",
                f"Ctrl-C at the prompt: nothing was run and checkpoint[{checkpoint_id}] still waits for "
                f"{waiting}; to answer it later: {hint}",
                CTRL_C_STATUS,
            )
        fail(
            "resume",
            f"checkpoint[{checkpoint_id}] waits for an approval ({waiting}) and no answer came "
            f"(no terminal, or stdin ended): pass --approve or --reject (nothing was run): {hint}",
        )

    driver.answered = pending
    stopped = _stopped(driver, checkpoint_id, path, spec, "stopped again at")
    try:
        return driver.follow(checkpoint_id, driver.show(runner.resume(checkpoint_id, targets=targets or None)), stopped)
    except KeyboardInterrupt:  # Ctrl-C while it ran: show() closed it, its claim released
        fail(
            "resume",
            f"stopped by Ctrl-C while the run was going; checkpoint[{checkpoint_id}] is kept as it was, to resume "
            f"again: {resume_hint(checkpoint_id, path, spec or '', driver.answered)}",
            CTRL_C_STATUS,
        )


def _stopped(
    driver: Driver, checkpoint_id: str, path: str, spec: str | None, verb: str
) -> Callable[[Sequence[Pending]], int]:
    """What :meth:`Driver.follow` calls when an interrupt got no answer: says where the run
    stopped and how to resume it; the exit status (130 after Ctrl-C at the prompt, else 3)."""

    def stopped(missing: Sequence[Pending]) -> int:
        what = ", ".join(p.label() for p in missing)
        why = "Ctrl-C at the prompt" if driver.ctrl_c else "with no answer"
        print(
            f"rillet resume: {verb} {what} ({why}); it is saved: {resume_hint(checkpoint_id, path, spec or '', missing)}",
            file=sys.stderr,
        )
        return CTRL_C_STATUS if driver.ctrl_c else 3

    return stopped


def _retry(
    checkpoint_id: str,
    store: Any,
    path: str,
    agent: Any,
    spec: str | None,
    decisions: Decisions,
    console: Any,
    as_json: bool,
    verbose: bool,
) -> int:
    """Continues the step record of a run that did not finish (a model or tool call failed, or
    its process died): the calls it recorded are replayed, not made again, and it goes on live.
    Nothing waits for an answer in it; an interrupt it comes to is answered as in :func:`_resume`."""
    from rillet.examples.demo import ToolErrors
    from rillet.runner import Runner
    from rillet.sessions import SqliteSessionStore

    tool_errors = ToolErrors()
    runner = Runner(
        agent,
        checkpoint_store=store,
        session_store=SqliteSessionStore(path),  # the record may be a session's run
        durability="step",  # failing again, it stays a record to retry
        observers=[tool_errors],
    )
    driver = Driver(
        "resume", runner, console, as_json=as_json, decisions=decisions, verbose=verbose, tool_errors=tool_errors
    )

    if not as_json:
        console.print(f"[dim]continuing the step record of checkpoint {checkpoint_id}[/]")
    stopped = _stopped(driver, checkpoint_id, path, spec, "stopped at")
    try:
        return driver.follow(checkpoint_id, driver.show(runner.resume(checkpoint_id)), stopped)
    except KeyboardInterrupt:  # Ctrl-C while it ran: show() closed it, its claim released
        fail(
            "resume",
            f"stopped by Ctrl-C while the run was going; checkpoint[{checkpoint_id}] keeps its step record, to "
            f"continue again: {resume_command(checkpoint_id, path, spec or 'MODULE:ATTRIBUTE')}",
            CTRL_C_STATUS,
        )
