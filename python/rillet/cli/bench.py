"""``rillet bench``: rillet's channel against the queues it replaces, with progress on stderr."""

from __future__ import annotations

import platform
import sys

import click

import rillet


def seconds(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A number of seconds: at least 0 (and not nan)."""
    if not value >= 0:
        raise click.BadParameter(f"must be a number of seconds >= 0, got {value:g}")
    return value


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
    help="instead: rillet against its peer frameworks (all, or NAMES such as agno,langgraph), "
    "each installed into its own virtual environment",
)
@click.option("--workloads", default=None, help="with --peers: comma-separated (default: all seven)")
@click.option("--quick", is_flag=True, help="with --peers: fewer agents and runs, for a quick look")
@click.option(
    "--concurrent", type=click.IntRange(min=1), default=10_000, show_default=True, help="with --peers: waiting runs"
)
@click.option("--venvs", type=click.Path(file_okay=False), default=None, help="with --peers: the venvs' folder")
@click.option("--scripts-dir", type=click.Path(file_okay=False, exists=True), default=None, hidden=True)
@click.option("--timeout", type=float, callback=seconds, default=1800, show_default=True, help="seconds per script")
@click.option(
    "--write-docs",
    is_flag=False,
    flag_value="docs/benchmarks.md",
    default=None,
    metavar="[FILE]",
    help="with --peers: rewrite the peer section of FILE (default docs/benchmarks.md)",
)
@click.option("--plots", type=click.Path(file_okay=False), default=None, help="with --peers: write PNG plots here")
def bench(
    items: int,
    rounds: int,
    min_time: float,
    peers: str | None,
    workloads: str | None,
    quick: bool,
    concurrent: int,
    venvs: str | None,
    scripts_dir: str | None,
    timeout: float,
    write_docs: str | None,
    plots: str | None,
) -> int:
    """Measures rillet's channel against queue.SimpleQueue, asyncio.Queue, janus and culsans;
    with --peers, rillet against LangChain, LangGraph, the OpenAI Agents SDK, Pydantic AI,
    Google ADK and Agno on one workload set (docs/benchmarks.md)."""
    if peers is not None:
        from rillet.cli.bench_peers import run_peers  # only the peer benchmark needs it

        return run_peers(peers, workloads, rounds, quick, concurrent, venvs, scripts_dir, timeout, write_docs, plots)
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
