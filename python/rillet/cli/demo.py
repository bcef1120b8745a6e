"""``rillet demo``: the travel demo, or one of the multi-agent examples, offline."""

from __future__ import annotations

import importlib
import sys

import click
from click.decorators import FC

from rillet.cli.bench import seconds
from rillet.cli.common import decision_options, verbose_option
from rillet.examples import EXAMPLES


def model_option(f: FC) -> FC:
    """``--model``: the travel demo's model."""
    return click.option(
        "--model",
        type=click.Choice(["scripted", "openai"]),
        default="scripted",
        show_default=True,
        help="travel demo only: the scripted model (offline) or an OpenAI-compatible endpoint from "
        "OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL (default gpt-4o-mini); see docs/models.md",
    )(f)


def approval_flags(f: FC) -> FC:
    """The demo's ``--approve``/``--reject`` (those of ``rillet run``: alone, or with the tool's
    name or the interrupt's id), ``--db``, ``--model``."""
    f = model_option(f)
    f = click.option("--db", help="the SQLite checkpoint file (default: rillet-demo.db in the temp folder)")(f)
    return decision_options(f)


@click.command(
    help="Runs an example offline on scripted models. travel (the default): a ReAct agent with four "
    "tools, one needing approval; team: a supervisor transferring to specialists; research: an agent "
    "calling two agents as tools; review: a writer and a reviewer in a loop; deep: a DeepAgent with a "
    "todo list, a sub-agent and files; plan: plan, execute and replan. docs/multi-agent.md explains "
    "team, research and review, docs/prebuilt.md deep and plan.",
    short_help="run an example on scripted models (offline, no API key)",
)
@click.argument("example", default="travel", type=click.Choice(["travel", *EXAMPLES]))
@click.option("--fast", is_flag=True, help="no pause between streamed tokens")
@click.option(
    "--delay", type=float, callback=seconds, default=0.02, show_default=True, help="seconds between streamed tokens"
)
@click.option("--no-stream", is_flag=True, help="ask the model for whole replies instead of streams")
@click.option("--no-color", is_flag=True, help="plain text output")
@click.option(
    "--stop-at-approval", is_flag=True, help="save the run when it asks for approval and stop (see: rillet resume)"
)
@approval_flags
@verbose_option
def demo(
    example: str,
    fast: bool,
    delay: float,
    no_stream: bool,
    no_color: bool,
    stop_at_approval: bool,
    approve: tuple[str, ...],
    reject: tuple[str, ...],
    db: str | None,
    model: str,
    verbose: bool,
) -> int:
    color = False if no_color else None
    delay = 0.0 if fast else delay
    if example != "travel":
        flags = {
            "--approve/--reject": approve or reject,
            "--db": db,
            "--stop-at-approval": stop_at_approval,
            "--model": model != "scripted",
            "--verbose": verbose,
        }
        used = [flag for flag, value in flags.items() if value]
        if used:
            print(
                f"rillet demo {example}: {', '.join(used)} only apply to the travel demo (`rillet demo travel`)",
                file=sys.stderr,
            )
            return 2
        run_example = importlib.import_module(EXAMPLES[example]).main
        return int(run_example(delay=delay, streaming=not no_stream, color=color))
    from rillet.examples.demo import main as run_demo

    return run_demo(
        delay=delay,
        streaming=not no_stream,
        color=color,
        approve=approve,
        reject=reject,
        db=db,
        stop_at_approval=stop_at_approval,
        model=model,
        verbose=verbose,
    )
