"""Instruction counts per item for the channel workloads, stable on a noisy machine.

    .venv/bin/python benches/callgrind_channel.py            # every workload, then ratios
    .venv/bin/python benches/callgrind_channel.py run NAME N # one run (what valgrind executes)

Each workload runs under `valgrind --tool=callgrind` twice, with N items and with 1 item;
the difference divided by N - 1 is the cost of one item, start-up and imports excluded.
Valgrind runs one thread at a time, so this counts work, not waiting: it complements the
wall-clock medians of bench_channel.py rather than replacing them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

from rillet.benchmarks.channel import SCENARIOS, Items

ITEMS = 20_000


def workloads() -> dict[str, tuple[str, object]]:
    return {f"{s.name}:{name}": (s.name, run) for s in SCENARIOS for name, run in {**s.rillet, **s.peers}.items()}


def run_one(key: str, n: int) -> None:
    _, run = workloads()[key]
    # Both runs make the same items, so making them cancels out of the difference.
    items: Items = list(range(ITEMS))[:n]
    run(items)  # type: ignore[operator]


def instructions(key: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "run",
                key,
                str(n),
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        with open(out) as f:
            return int(re.search(r"^summary: (\d+)", f.read(), re.M).group(1))  # type: ignore[union-attr]


def main() -> None:
    per_item: dict[str, float] = {}
    for key in workloads():
        per_item[key] = (instructions(key, ITEMS) - instructions(key, 1)) / (ITEMS - 1)
        print(f"{key:<40} {per_item[key]:8.0f} instructions/item", flush=True)
    print()
    for scenario in SCENARIOS:
        for ours in scenario.rillet:
            for peer in scenario.peers:
                a, b = per_item[f"{scenario.name}:{ours}"], per_item[f"{scenario.name}:{peer}"]
                print(f"{scenario.name}: {ours} vs {peer:<20} {b / a:6.2f}x fewer instructions")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "run":
        run_one(sys.argv[2], int(sys.argv[3]))
    else:
        main()
