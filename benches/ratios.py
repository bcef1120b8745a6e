"""rillet-vs-peer ratios from pytest-benchmark results: one run, or the median and range of several.

    python benches/ratios.py RUN.json [RUN.json ...]

Each run's JSON comes from `pytest benches --benchmark-json=RUN.json` (`make bench-full` writes
one per run and calls this). In every benchmark group, each implementation whose name starts
with "rillet" is compared with every other one: the ratio is the peer's median over rillet's
median within one run; across runs this prints the median ratio and the lowest and highest.
benches/conftest.py prints the same ratios for the run in progress.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

Medians = Mapping[str, Mapping[str, float]]  # group -> implementation -> median seconds


def implementation(extra_info: Mapping[str, object], param: object, name: str) -> str:
    """The implementation a benchmark measures: its extra_info["impl"], else its parameter."""
    impl = extra_info.get("impl")
    if isinstance(impl, str):
        return impl
    return str(param) if param is not None else name


def ratios(medians: Medians) -> dict[tuple[str, str, str], float]:
    """(group, rillet implementation, peer) -> peer median / rillet median."""
    out = {}
    for group, by_impl in medians.items():
        ours = {k: v for k, v in by_impl.items() if k.startswith("rillet")}
        peers = {k: v for k, v in by_impl.items() if not k.startswith("rillet")}
        for name, mine in ours.items():
            for peer, theirs in peers.items():
                out[group, name, peer] = theirs / mine
    return out


def load(path: Path) -> dict[str, dict[str, float]]:
    medians: dict[str, dict[str, float]] = defaultdict(dict)
    for bench in json.loads(path.read_text())["benchmarks"]:
        impl = implementation(bench.get("extra_info", {}), bench.get("param"), bench["name"])
        medians[bench["group"] or ""][impl] = bench["stats"]["median"]
    return medians


def number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def spread(values: list[float], unit: str = "") -> str:
    if len(values) == 1:
        return f"{number(values[0])}{unit}"
    return f"{number(statistics.median(values))}{unit} ({number(min(values))}-{number(max(values))})"


def report(runs: Iterable[Medians]) -> str:
    runs = list(runs)
    times: dict[tuple[str, str], list[float]] = defaultdict(list)
    by_ratio: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for medians in runs:
        for group, by_impl in medians.items():
            for impl, seconds in by_impl.items():
                times[group, impl].append(seconds * 1e6)
        for key, value in ratios(medians).items():
            by_ratio[key].append(value)
    n = len(runs)
    lines = [f"medians over {n} run(s), as median (lowest-highest run)", ""]
    for group in sorted({g for g, _ in times}):
        lines.append(f"{group}")
        for (g, impl), values in sorted(times.items()):
            if g == group:
                lines.append(f"  {impl:<44} {spread(values, ' µs')}")
        for (g, ours, peer), values in sorted(by_ratio.items()):
            if g == group:
                runs_note = "" if len(values) == n else f"  [{len(values)} of {n} runs]"
                lines.append(f"  {ours + ' vs ' + peer:<44} {spread(values, 'x')}{runs_note}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(report(load(Path(p)) for p in argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
