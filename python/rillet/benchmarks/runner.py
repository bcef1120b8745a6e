"""Runs benchmark scenarios in rounds and reports medians, ranges and ratios against the peers.

Every implementation is timed once per round, all rounds interleaved, so a slow spell on a
shared machine falls on every implementation alike instead of on whichever ran during it. In
a round an implementation runs until ``min_time`` has passed (at least once) and its median
run is that round's time. A ratio is computed per round (peer time over rillet time in the
same round) and reported as the median over rounds with the lowest and highest round.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from rillet.benchmarks.channel import Items, Scenario


@dataclass
class Measurement:
    """One implementation of one scenario: nanoseconds per item in each round."""

    scenario: str
    name: str
    rounds: list[float] = field(default_factory=list)
    note: str = ""  # why there are no rounds, e.g. "not installed (janus)"

    @property
    def ns_per_item(self) -> float | None:
        """The median over rounds, or None when the implementation did not run."""
        return statistics.median(self.rounds) if self.rounds else None


@dataclass(frozen=True)
class Spread:
    """The median of per-round values with the lowest and highest round."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(statistics.median(values), min(values), max(values))


def time_once(run: Callable[[Items], None], items: Items) -> float:
    gc.collect()
    start = time.perf_counter()
    run(items)
    return time.perf_counter() - start


def round_ns_per_item(run: Callable[[Items], None], items: Items, min_time: float) -> float:
    """Runs until `min_time` seconds have been spent (at least once); the median run, per item."""
    times = [time_once(run, items)]
    while sum(times) < min_time:
        times.append(time_once(run, items))
    return statistics.median(times) / len(items) * 1e9


def measure(
    scenarios: Sequence[Scenario],
    items: Items,
    rounds: int,
    min_time: float = 0.2,
    progress: TextIO | None = None,
    step: Callable[[str], None] | None = None,
) -> list[Measurement]:
    """Times every implementation of every scenario in `rounds` interleaved rounds, printing a
    line per round to `progress` (default: stderr) and calling `step(name)` after each
    implementation's turn (a progress bar's tick)."""
    progress = progress or sys.stderr
    results = [
        Measurement(scenario.name, name) for scenario in scenarios for name in {**scenario.rillet, **scenario.peers}
    ]
    runs = {
        (scenario.name, name): run
        for scenario in scenarios
        for name, run in {**scenario.rillet, **scenario.peers}.items()
    }
    warm = max(1, len(items) // 10)
    for m in results:  # warm up imports, caches and the allocator; find the missing peers
        try:
            runs[m.scenario, m.name](items[:warm])
        except ImportError as missing:
            m.note = f"not installed ({missing.name})"
    for r in range(rounds):
        start = time.perf_counter()
        for m in results:
            if not m.note:
                m.rounds.append(round_ns_per_item(runs[m.scenario, m.name], items, min_time))
            if step is not None:
                step(f"{m.scenario}: {m.name}")
        print(f"  round {r + 1}/{rounds}: {time.perf_counter() - start:.1f} s", file=progress, flush=True)
    return results


def ratios(results: Sequence[Measurement], scenario: str, ours: str, peer: str) -> list[float]:
    """Peer time over rillet time in each round; empty when either did not run."""
    by_name = {(m.scenario, m.name): m.rounds for m in results}
    ours_rounds, peer_rounds = by_name.get((scenario, ours), []), by_name.get((scenario, peer), [])
    return [p / o for p, o in zip(peer_rounds, ours_rounds)]


def summary(scenarios: Sequence[Scenario], results: Sequence[Measurement]) -> str:
    """A table of per-item times, then every rillet-vs-peer speed-up with its target, if any."""
    rounds = max((len(m.rounds) for m in results), default=0)
    lines = [f"{'scenario':<16}{'implementation':<20}{'ns/item':>10}  range over {rounds} rounds", "-" * 72]
    for m in results:
        if not m.rounds:
            lines.append(f"{m.scenario:<16}{m.name:<20}{'-':>10}  {m.note}")
            continue
        s = Spread.of(m.rounds)
        lines.append(f"{m.scenario:<16}{m.name:<20}{s.median:10.1f}  {s.low:.1f}-{s.high:.1f}")
    lines += [
        "",
        f"{'speed-up (peer time / rillet time)':<52}{'median':>8}  {'range':<14}target",
        "-" * 96,
    ]
    for scenario in scenarios:
        targets = {(ours, peer): goal for ours, peer, goal in scenario.targets}
        for ours in scenario.rillet:
            for peer in scenario.peers:
                label = f"{scenario.name}: {ours} vs {peer}"
                per_round = ratios(results, scenario.name, ours, peer)
                if not per_round:
                    lines.append(f"{label:<52}{'-':>8}")
                    continue
                r = Spread.of(per_round)
                goal = targets.get((ours, peer))
                verdict = ""
                if goal is not None:
                    held = sum(v >= goal for v in per_round)
                    met = "met" if r.median >= goal else "NOT met"
                    verdict = f">= {goal:g}x {met} (in {held} of {len(per_round)} rounds)"
                spread = f"{r.low:.2f}-{r.high:.2f}x"
                lines.append(f"{label:<52}{r.median:7.2f}x  {spread:<14}{verdict}")
    return "\n".join(lines)
