"""rillet and its peers on one workload set: ``python benches/peers/run.py [NAMES]``.

A development script of rillet's source tree, not part of the installed package (which carries
no adapter for another framework). Run it from a clone with a Python where rillet is installed
(``.venv/bin/python`` after ``make setup``); it runs rillet's script with that Python and each
peer's in a virtual environment of its own, built from the pinned requirements beside it
(docs/benchmarks.md, "rillet and its peers, one command").

The folder: ``bench_<framework>.py`` is the script the harness runs with that framework's
Python, ``<framework>.txt`` its pinned requirements, ``_common.py`` the workloads' script,
timing and output (standard library only), ``_server.py`` the loopback OpenAI-compatible server
of the HTTP workload, ``harness.py`` installs and runs them and ``results.py`` makes the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from harness import HERE, Settings, bench_peers, default_venvs, discover
from results import EXTRA_WORKLOADS, WORKLOADS

DOCS = HERE.parents[1] / "docs" / "benchmarks.md"  # this source tree's page


def names(value: str, known: tuple[str, ...] | None, what: str, option: str) -> list[str]:
    """A comma-separated list, checked against ``known`` when given."""
    chosen = [n.strip() for n in value.split(",") if n.strip()]
    bad = [n for n in chosen if known is not None and n not in known]
    if bad or not chosen:
        raise click.BadParameter(
            f"unknown {what} {', '.join(bad) or repr(value)}; choose from {', '.join(known or ())}",
            param_hint=option,
        )
    return chosen


def seconds(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A number of seconds: at least 0 (and not nan)."""
    if not value >= 0:
        raise click.BadParameter(f"must be a number of seconds >= 0, got {value:g}")
    return value


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("peers", metavar="[NAMES]", default="all")
@click.option(
    "--workloads", default=None, help="comma-separated (default: all seven; eval, the eval workload, only when named)"
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="timed runs of each variant (the median is shown)",
)
@click.option("--quick", is_flag=True, help="fewer agents and runs, for a quick look")
@click.option("--concurrent", type=click.IntRange(min=1), default=10_000, show_default=True, help="waiting runs")
@click.option("--venvs", type=click.Path(file_okay=False), default=None, help="the venvs' folder")
@click.option("--scripts-dir", type=click.Path(file_okay=False, exists=True), default=None, hidden=True)
@click.option("--timeout", type=float, callback=seconds, default=1800, show_default=True, help="seconds per script")
@click.option(
    "--write-docs",
    is_flag=False,
    flag_value=str(DOCS),
    default=None,
    metavar="[FILE]",
    help="rewrite the peer section of FILE (default: this tree's docs/benchmarks.md)",
)
@click.option("--plots", type=click.Path(file_okay=False), default=None, help="write PNG plots here")
def run_peers(
    peers: str,
    workloads: str | None,
    rounds: int,
    quick: bool,
    concurrent: int,
    venvs: str | None,
    scripts_dir: str | None,
    timeout: float,
    write_docs: str | None,
    plots: str | None,
) -> None:
    """Runs rillet against LangChain, LangGraph, the OpenAI Agents SDK, Pydantic AI, Google ADK
    and Agno (all, or NAMES such as agno,langgraph), each installed into its own virtual
    environment, and prints the table; exit status 1 when any framework failed to install or
    run, or any run did not do its work."""
    scripts = Path(scripts_dir) if scripts_dir else HERE
    known = tuple(p.name for p in discover(scripts))
    chosen = [] if peers == "all" else names(peers, known, "framework", "NAMES")
    settings = Settings(
        ",".join(names(workloads, WORKLOADS + EXTRA_WORKLOADS, "workload", "--workloads"))
        if workloads is not None
        else ",".join(WORKLOADS),
        rounds,
        quick,
        concurrent,
        timeout,
    )
    if write_docs is not None and not Path(write_docs).is_file():
        raise click.BadParameter(f"{write_docs} does not exist", param_hint="--write-docs")
    sys.exit(
        bench_peers(
            chosen,
            settings,
            venvs=Path(venvs) if venvs else default_venvs(),
            scripts=scripts,
            write_docs=Path(write_docs) if write_docs else None,
            plots=Path(plots) if plots else None,
        )
    )


if __name__ == "__main__":
    run_peers()
