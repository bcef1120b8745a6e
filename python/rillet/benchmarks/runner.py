"""Runs benchmark scenarios and reports medians and ratios against the named peers."""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from rillet.benchmarks.channel import Items, Scenario


@dataclass(frozen=True)
class Measurement:
    scenario: str
    name: str
    ns_per_item: float | None  # None: the peer is not installed
    note: str = ""


def time_once(run: Callable[[Items], None], items: Items) -> float:
    gc.collect()
    start = time.perf_counter()
    run(items)
    return time.perf_counter() - start


def median_ns_per_item(run: Callable[[Items], None], items: Items, repeat: int) -> float:
    run(items[: max(1, len(items) // 10)])  # warm up imports, caches and the allocator
    times = [time_once(run, items) for _ in range(repeat)]
    return statistics.median(times) / len(items) * 1e9


def measure(scenarios: Sequence[Scenario], items: Items, repeat: int, progress: TextIO = sys.stderr) -> list[Measurement]:
    results = []
    for scenario in scenarios:
        for name, run in {**scenario.rillet, **scenario.peers}.items():
            print(f"  {scenario.name:<15} {name:<18}", end="", file=progress, flush=True)
            try:
                ns = median_ns_per_item(run, items, repeat)
            except ImportError as missing:
                results.append(Measurement(scenario.name, name, None, f"not installed ({missing.name})"))
                print(" skipped: not installed", file=progress)
                continue
            results.append(Measurement(scenario.name, name, ns))
            print(f" {ns:9.1f} ns/item", file=progress)
    return results


def ratio(results: Sequence[Measurement], scenario: str, ours: str, peer: str) -> float | None:
    by_name = {(m.scenario, m.name): m.ns_per_item for m in results}
    ours_ns, peer_ns = by_name.get((scenario, ours)), by_name.get((scenario, peer))
    if not ours_ns or not peer_ns:
        return None
    return peer_ns / ours_ns


def summary(scenarios: Sequence[Scenario], results: Sequence[Measurement]) -> str:
    """A table of medians, then every rillet-vs-peer speed-up with the issue's targets."""
    lines = [f"{'scenario':<16}{'implementation':<20}{'median ns/item':>16}", "-" * 52]
    for m in results:
        value = f"{m.ns_per_item:16.1f}" if m.ns_per_item is not None else f"{m.note:>16}"
        lines.append(f"{m.scenario:<16}{m.name:<20}{value}")
    lines += ["", f"{'speed-up (peer time / rillet time)':<52}{'ratio':>8}  target", "-" * 72]
    for scenario in scenarios:
        targets = {(ours, peer): goal for ours, peer, goal in scenario.targets}
        for ours in scenario.rillet:
            for peer in scenario.peers:
                r = ratio(results, scenario.name, ours, peer)
                shown = f"{r:7.2f}x" if r is not None else "      -"
                goal = targets.get((ours, peer))
                verdict = "" if goal is None or r is None else f"  >= {goal:g}x {'met' if r >= goal else 'NOT met'}"
                lines.append(f"{scenario.name + ': ' + ours + ' vs ' + peer:<52}{shown}{verdict}")
    return "\n".join(lines)
