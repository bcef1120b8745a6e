"""Prints, after the pytest-benchmark tables, each rillet-vs-peer ratio measured in this run
(benches/ratios.py computes the same from saved runs, with medians and ranges over runs).

A benchmark whose ``extra_info`` has ``per`` (how many units one round does, e.g. model calls),
``series`` and ``size`` also gets its median per unit in microseconds, and each implementation
measured at several sizes of one series gets its per-unit cost at the largest size over the
smallest (how it scales)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from ratios import implementation, ratios

# the peer benchmark's scripts (benches/peers/run.py runs each with its framework's Python)
collect_ignore = ["peers"]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    medians: dict[str, dict[str, float]] = defaultdict(dict)
    for bench in session.benchmarks:
        if bench.stats is None:
            continue
        medians[bench.group or ""][implementation(bench.extra_info, bench.param, bench.name)] = bench.stats.median
    terminalreporter.section("ratios (peer median / rillet median, same run)")
    for (group, name, peer), value in sorted(ratios(medians).items()):
        terminalreporter.write_line(f"{group:<32} {name:<16} vs {peer:<18} {value:8.2f}x")
    _per_unit_summary(terminalreporter, session.benchmarks)


def _per_unit_summary(terminalreporter: Any, benchmarks: Any) -> None:
    per_unit: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    unit = ""
    for bench in benchmarks:
        info = bench.extra_info
        if bench.stats is None or not {"impl", "per", "series", "size"} <= info.keys():
            continue
        unit = info.get("unit", "unit")
        per_unit[info["series"], info["impl"]][info["size"]] = bench.stats.median / info["per"] * 1e6
    if not per_unit:
        return
    terminalreporter.section(f"microseconds per {unit} (median), and largest size / smallest size")
    for (series, impl), by_size in sorted(per_unit.items()):
        sizes = sorted(by_size)
        cells = "  ".join(f"{s}: {by_size[s]:10.1f}" for s in sizes)
        scale = f"  x{by_size[sizes[-1]] / by_size[sizes[0]]:.2f}" if len(sizes) > 1 else ""
        terminalreporter.write_line(f"{series:<28} {impl:<12} {cells}{scale}")
