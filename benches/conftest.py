"""Prints, after the pytest-benchmark tables, each rillet-vs-peer ratio measured in this run."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    medians: dict[str, dict[str, float]] = defaultdict(dict)
    for bench in session.benchmarks:
        if bench.stats is None or "impl" not in bench.extra_info:
            continue
        medians[bench.group][bench.extra_info["impl"]] = bench.stats.median
    terminalreporter.section("ratios (peer median / rillet median, same run)")
    for group, by_impl in sorted(medians.items()):
        ours = {k: v for k, v in by_impl.items() if k.startswith("rillet")}
        peers = {k: v for k, v in by_impl.items() if not k.startswith("rillet")}
        for name, mine in sorted(ours.items()):
            for peer, theirs in sorted(peers.items()):
                terminalreporter.write_line(f"{group:<32} {name:<16} vs {peer:<18} {theirs / mine:8.2f}x")
