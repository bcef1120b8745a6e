"""What step durability costs per step: a 50-turn ReAct run (an offline model double, one tool
call a turn: 101 steps, each a model call or a tool round) with ``Runner(durability="step")``
against the default ``"interrupt"``, both given a checkpoint id, on SqliteCheckpointStore (a
file in a temporary directory, WAL, one transaction per step) and on InMemoryCheckpointStore.
The step runs end well, so each round also deletes its record. ``extra_info["per"]`` is the
step count: the summary prints the median per step, and the difference between a "step" and
an "interrupt" row of one store is the overhead of recording a step.

Run: .venv/bin/python -m pytest benches/bench_durability.py --benchmark-only \
         --benchmark-columns=median,mean,rounds --benchmark-group-by=group
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from rillet import InMemoryCheckpointStore, Runner, SqliteCheckpointStore

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from support.step_agents import counting_agent

TURNS = 50
STEPS = 2 * TURNS + 1


@pytest.mark.parametrize("store_kind", ["sqlite", "memory"])
@pytest.mark.parametrize("durability", ["interrupt", "step"])
def test_durability_per_step(benchmark: Any, tmp_path: Path, store_kind: str, durability: str) -> None:
    store: Any = SqliteCheckpointStore(tmp_path / "c.db") if store_kind == "sqlite" else InMemoryCheckpointStore()
    runner = Runner(counting_agent(TURNS), checkpoint_store=store, durability=durability)  # type: ignore[arg-type]

    def run() -> None:
        events = list(runner.query("go", checkpoint_id="run"))
        assert events[-1].error is None

    benchmark.group = f"durability per step ({store_kind})"
    benchmark.extra_info.update(impl=durability, per=STEPS, unit="step", series=f"durability-{store_kind}", size=STEPS)
    benchmark.pedantic(run, rounds=15, warmup_rounds=1)
