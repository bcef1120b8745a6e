"""The `rillet` command line."""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence

import rillet


def bench(args: argparse.Namespace) -> int:
    from rillet.benchmarks.channel import SCENARIOS
    from rillet.benchmarks.runner import measure, summary

    print(
        f"rillet {rillet.__version__} channel benchmark: {args.items:,} items, median of {args.repeat} runs, "
        f"Python {platform.python_version()} on {platform.machine()}",
        file=sys.stderr,
    )
    items = list(range(args.items))
    results = measure(SCENARIOS, items, args.repeat)
    print(summary(SCENARIOS, results))
    print("\nPeers that are missing come with: pip install 'rillet[bench]'. Timings on a shared machine are noisy;")
    print("compare ratios from one run. The pytest-benchmark suites are in benches/ (make bench-full).")
    return 0


def demo(args: argparse.Namespace) -> int:
    from rillet.demo import main as run_demo

    color = False if args.no_color else None
    return run_demo(delay=0.0 if args.fast else args.delay, streaming=not args.no_stream, color=color)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rillet", description="rillet: an event-stream agent development kit.")
    p.add_argument("--version", action="version", version=f"rillet {rillet.__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="run a ReAct agent with tools on a scripted model (offline, no API key)")
    d.add_argument("--fast", action="store_true", help="no pause between streamed tokens")
    d.add_argument("--delay", type=float, default=0.02, help="seconds between streamed tokens (default: 0.02)")
    d.add_argument("--no-stream", action="store_true", help="ask the model for whole replies instead of streams")
    d.add_argument("--no-color", action="store_true", help="plain text output")
    d.set_defaults(run=demo)
    b = sub.add_parser("bench", help="measure rillet's channel against queue.SimpleQueue, asyncio.Queue, janus and culsans")
    b.add_argument("--items", type=positive_int, default=200_000, help="items per run (default: 200,000)")
    b.add_argument("--repeat", type=positive_int, default=5, help="runs per measurement; the median is reported (default: 5)")
    b.set_defaults(run=bench)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
