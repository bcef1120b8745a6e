"""Channel throughput against queue.SimpleQueue, queue.Queue, asyncio.Queue, janus and culsans.

Run: .venv/bin/python -m pytest benches/bench_channel.py --benchmark-only
Each group is one producer/consumer shape; the ratios print at the end of the run.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import pytest
from rillet.benchmarks.channel import SCENARIOS, Items

ITEMS: Items = list(range(200_000))

CASES = [
    pytest.param(scenario.name, impl, run, id=f"{scenario.name}:{impl}")
    for scenario in SCENARIOS
    for impl, run in {**scenario.rillet, **scenario.peers}.items()
]


@pytest.mark.parametrize(("scenario", "impl", "run"), CASES)
def test_channel(benchmark: Any, scenario: str, impl: str, run: Callable[[Items], None]) -> None:
    if impl in ("janus", "culsans"):
        pytest.importorskip(impl)
    benchmark.group = f"channel {scenario} (200k items)"
    benchmark.extra_info["impl"] = impl
    # A collection before each round, untimed, so garbage left by earlier benchmarks is not
    # collected in the middle of this one.
    benchmark.pedantic(run, setup=lambda: (gc.collect(), ((ITEMS,), {}))[1], rounds=11, warmup_rounds=1)
