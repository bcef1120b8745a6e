"""``rillet bench --peers``: the command line's side of the peer benchmark (checking options)."""

from __future__ import annotations

from pathlib import Path

import click


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
) -> int:
    from rillet.benchmarks.peers.harness import HERE, Settings, bench_peers, default_venvs, discover
    from rillet.benchmarks.peers.results import WORKLOADS

    scripts = Path(scripts_dir) if scripts_dir else HERE
    known = tuple(p.name for p in discover(scripts))
    chosen = [] if peers == "all" else names(peers, known, "framework", "--peers")
    settings = Settings(
        ",".join(names(workloads, WORKLOADS, "workload", "--workloads"))
        if workloads is not None
        else ",".join(WORKLOADS),
        rounds,
        quick,
        concurrent,
        timeout,
    )
    if write_docs is not None and not Path(write_docs).is_file():
        raise click.BadParameter(f"{write_docs} does not exist (run from the repository's root, or name the file)")
    return bench_peers(
        chosen,
        settings,
        venvs=Path(venvs) if venvs else default_venvs(),
        scripts=scripts,
        write_docs=Path(write_docs) if write_docs else None,
        plots=Path(plots) if plots else None,
    )
