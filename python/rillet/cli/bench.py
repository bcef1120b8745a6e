"""``rillet bench``: rillet's channel against the queues it replaces, with progress on stderr."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import click

import rillet


def seconds(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A number of seconds: at least 0 (and not nan)."""
    if not value >= 0:
        raise click.BadParameter(f"must be a number of seconds >= 0, got {value:g}")
    return value


def peers_moved(peers: str) -> str:
    """What `rillet bench --peers` says: the installed package carries no other framework's
    adapter, so the peer comparison runs from a clone (with this tree's path when rillet is
    installed from one, as `make setup` does)."""
    script = Path(rillet.__file__).resolve().parents[2] / "benches" / "peers" / "run.py"
    names = "" if peers == "all" else f" {peers}"
    if script.is_file():
        return f"the peer comparison is a script of the source tree; run:\n  {sys.executable} {script}{names}"
    return (
        "the peer comparison is not part of the installed package (it installs six other frameworks);"
        f"\nit is a script of rillet's source tree: in a clone of rillet's repository, run"
        f"\n  .venv/bin/python benches/peers/run.py{names}"
        "\n(docs/benchmarks.md, 'rillet and its peers, one command')"
    )


@click.command(short_help="measure rillet's channel against queue.SimpleQueue, asyncio.Queue, janus and culsans")
@click.option("--items", type=click.IntRange(min=1), default=200_000, show_default=True, help="items per run")
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="rounds over every implementation; medians and ranges are over rounds",
)
@click.option(
    "--min-time",
    type=float,
    callback=seconds,
    default=0.2,
    show_default=True,
    help="seconds each implementation runs in a round, at least one run",
)
@click.option(
    "--peers",
    is_flag=False,
    flag_value="all",
    default=None,
    metavar="[NAMES]",
    help="prints the command that compares rillet with its peer frameworks: a script of rillet's source tree",
)
def bench(
    items: int,
    rounds: int,
    min_time: float,
    peers: str | None,
) -> int:
    """Measures rillet's channel against queue.SimpleQueue, asyncio.Queue, janus and culsans.
    The comparison with LangChain, LangGraph, the OpenAI Agents SDK, Pydantic AI, Google ADK and
    Agno is a script of rillet's source tree; --peers says how to run it (docs/benchmarks.md)."""
    if peers is not None:
        raise click.UsageError(peers_moved(peers))
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from rillet.benchmarks.channel import SCENARIOS
    from rillet.benchmarks.runner import measure, summary

    print(
        f"rillet {rillet.__version__} channel benchmark: {items:,} items, {rounds} rounds "
        f"(each implementation runs for at least {min_time:g} s a round; its median run counts), "
        f"Python {platform.python_version()} on {platform.machine()}",
        file=sys.stderr,
    )
    runs = rounds * sum(len(s.rillet) + len(s.peers) for s in SCENARIOS)
    err = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as progress:  # drawn only on a terminal
        task = progress.add_task("measuring", total=runs)

        def step(what: str) -> None:
            progress.update(task, advance=1, description=f"measuring {what}")

        results = measure(SCENARIOS, list(range(items)), rounds, min_time, step=step)  # round lines: above the bar
    print(summary(SCENARIOS, results))
    print(
        "\nEach ratio is taken within a round and reported as the median over rounds with the lowest"
        "\nand highest round; a verdict reads the median. Peers that are missing come with:"
        "\npip install 'rillet[bench]'. The pytest-benchmark suites are in benches/ (make bench-full)."
    )
    return 0
