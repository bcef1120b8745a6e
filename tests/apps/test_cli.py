"""The `rillet` command: `rillet bench` reports medians and ranges over rounds, once."""

from __future__ import annotations

import io
import re

import pytest
from rillet import cli
from rillet.benchmarks.channel import SCENARIOS
from rillet.benchmarks.runner import Measurement, summary


def test_bench_prints_one_summary_with_medians_ranges_and_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "--items", "2000", "--rounds", "2", "--min-time", "0"]) == 0
    out, err = capsys.readouterr()
    assert out.count("speed-up (peer time / rillet time)") == 1
    assert out.count("range over 2 rounds") == 1
    # Progress goes to stderr, one line per round, and repeats no measurement.
    assert re.findall(r"round (\d)/2", err) == ["1", "2"]
    assert "ns/item" not in err
    ratio_lines = [line for line in out.splitlines() if " vs " in line]
    assert len(ratio_lines) == sum(len(s.rillet) * len(s.peers) for s in SCENARIOS)
    for line in ratio_lines:
        if not line.rstrip().endswith("-"):  # a peer that is not installed has no ratio
            assert re.search(r"\d+\.\d\dx  \d+\.\d\d-\d+\.\d\dx", line), line
    for scenario in SCENARIOS:
        for ours, peer, goal in scenario.targets:
            line = next(line for line in ratio_lines if line.startswith(f"{scenario.name}: {ours} vs {peer} "))
            if not line.rstrip().endswith("-"):  # measured: a verdict against the target
                assert re.search(rf">= {goal:g}x (met|NOT met) \(in [0-2] of 2 rounds\)", line), line


def test_verdict_reads_the_median_round() -> None:
    scenario = SCENARIOS[1]  # task→task: rillet vs asyncio.Queue, target 3x
    results = [
        Measurement(scenario.name, "rillet", [10.0, 10.0, 10.0]),
        Measurement(scenario.name, "rillet batched", [5.0, 5.0, 5.0]),
        Measurement(scenario.name, "asyncio.Queue", [20.0, 35.0, 40.0]),
    ]
    table = summary([scenario], results)
    line = next(line for line in table.splitlines() if "rillet vs asyncio.Queue" in line)
    assert "3.50x  2.00-4.00x" in line
    assert ">= 3x met (in 2 of 3 rounds)" in line
    assert table.count("task→task       asyncio.Queue") == 1


def test_missing_peer_is_named_not_measured() -> None:
    scenario = SCENARIOS[2]
    results = [
        Measurement(scenario.name, "rillet", [10.0]),
        Measurement(scenario.name, "janus", note="not installed (janus)"),
    ]
    table = summary([scenario], results)
    assert "not installed (janus)" in table
    assert re.search(r"thread→asyncio: rillet vs janus\s+-$", table, re.MULTILINE)


@pytest.mark.parametrize("argv", [["bench", "--rounds", "0"], ["bench", "--min-time", "-1"], ["bench", "--items", "x"]])
def test_bad_bench_arguments_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main(argv)
    assert exit.value.code == 2
    assert "Invalid value for '--" in capsys.readouterr().err  # click's wording of a usage error


def test_bench_ticks_its_progress_once_per_implementation_and_round() -> None:
    from rillet.benchmarks.runner import measure

    ticks: list[str] = []
    measure(SCENARIOS[:1], list(range(100)), 2, 0.0, progress=io.StringIO(), step=ticks.append)
    names = [*SCENARIOS[0].rillet, *SCENARIOS[0].peers]
    assert ticks == [f"{SCENARIOS[0].name}: {n}" for n in names] * 2


def test_version_and_help_list_every_command() -> None:
    import subprocess
    import sys

    import rillet

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "rillet.cli", *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert run("--version") == f"rillet {rillet.__version__}\n"
    rows = run("--help").split("Commands:")[1].splitlines()
    listed = [line.split()[0] for line in rows if line.startswith("  ") and not line.startswith("   ")]
    assert listed == ["bench", "demo", "eval", "inspect", "resume", "run", "web"]
