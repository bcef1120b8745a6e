"""The `rillet` command line."""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence

import rillet
from rillet.examples import EXAMPLES


def bench(args: argparse.Namespace) -> int:
    from rillet.benchmarks.channel import SCENARIOS
    from rillet.benchmarks.runner import measure, summary

    print(
        f"rillet {rillet.__version__} channel benchmark: {args.items:,} items, {args.rounds} rounds "
        f"(each implementation runs for at least {args.min_time:g} s a round; its median run counts), "
        f"Python {platform.python_version()} on {platform.machine()}",
        file=sys.stderr,
    )
    items = list(range(args.items))
    results = measure(SCENARIOS, items, args.rounds, args.min_time)
    print(summary(SCENARIOS, results))
    print(
        "\nEach ratio is taken within a round and reported as the median over rounds with the lowest"
        "\nand highest round; a verdict reads the median. Peers that are missing come with:"
        "\npip install 'rillet[bench]'. The pytest-benchmark suites are in benches/ (make bench-full)."
    )
    return 0


def demo(args: argparse.Namespace) -> int:
    color = False if args.no_color else None
    delay = 0.0 if args.fast else args.delay
    if args.example != "travel":
        import importlib

        flags = {
            "--approve/--reject": args.decision,
            "--db": args.db,
            "--stop-at-approval": args.stop_at_approval,
            "--model": args.model != "scripted",
        }
        used = [flag for flag, value in flags.items() if value]
        if used:
            print(
                f"rillet demo {args.example}: {', '.join(used)} only apply to the travel demo (`rillet demo travel`)",
                file=sys.stderr,
            )
            return 2
        run_example = importlib.import_module(EXAMPLES[args.example]).main
        return int(run_example(delay=delay, streaming=not args.no_stream, color=color))
    from rillet.demo import main as run_demo

    return run_demo(
        delay=delay,
        streaming=not args.no_stream,
        color=color,
        decision=args.decision,
        db=args.db,
        stop_at_approval=args.stop_at_approval,
        model=args.model,
    )


def load_agent(spec: str) -> object:
    """The agent ``MODULE:ATTRIBUTE`` names (an agent, or a function of no arguments that
    returns one); ValueError with a one-line message otherwise. The current directory is
    importable, as with ``python -m``."""
    import importlib
    import os

    def is_agent(x: object) -> bool:
        return (
            not isinstance(x, type) and callable(getattr(x, "run", None)) and isinstance(getattr(x, "name", None), str)
        )

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"--agent {spec!r}: expected MODULE:ATTRIBUTE, for example myapp.agents:build_agent")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            obj = getattr(obj, part)
        if not is_agent(obj) and callable(obj):
            obj = obj()
    except Exception as e:
        raise ValueError(f"--agent {spec!r}: {type(e).__name__}: {e}") from e

    if not is_agent(obj):
        raise ValueError(f"--agent {spec!r} is a {type(obj).__name__}, not an agent or a function returning one")
    return obj


def resume(args: argparse.Namespace) -> int:
    from rillet.demo import resume as resume_demo

    agent = None
    if args.agent is not None:
        try:
            agent = load_agent(args.agent)
        except ValueError as e:
            print("rillet resume: " + " ".join(str(e).split()), file=sys.stderr)
            return 2
    return resume_demo(
        args.checkpoint_id,
        db=args.db,
        decision=args.decision,
        color=False if args.no_color else None,
        model=args.model,
        agent=agent,
    )


def _approval_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--approve", dest="decision", action="store_const", const="approve", help="approve the booking")
    g.add_argument("--reject", dest="decision", action="store_const", const="reject", help="decline the booking")
    p.add_argument("--db", help="the SQLite checkpoint file (default: rillet-demo.db in the temp folder)")
    p.add_argument(
        "--model",
        choices=["scripted", "openai"],
        default="scripted",
        help="travel demo only: the scripted model (default, offline) or an OpenAI-compatible endpoint "
        "from OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL (default gpt-4o-mini); see docs/models.md",
    )


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rillet", description="rillet: an event-stream agent development kit.")
    p.add_argument("--version", action="version", version=f"rillet {rillet.__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser(
        "demo",
        help="run an example on scripted models (offline, no API key): a ReAct agent, or a multi-agent one",
        description="Runs an example offline on scripted models. travel (the default): a ReAct agent "
        "with four tools, one needing approval; team: a supervisor transferring to specialists; "
        "research: an agent calling two agents as tools; review: a writer and a reviewer in a loop. "
        "docs/multi-agent.md explains the last three.",
    )
    d.add_argument(
        "example", nargs="?", default="travel", choices=["travel", *EXAMPLES], help="which example (default: travel)"
    )
    d.add_argument("--fast", action="store_true", help="no pause between streamed tokens")
    d.add_argument("--delay", type=seconds, default=0.02, help="seconds between streamed tokens (default: 0.02)")
    d.add_argument("--no-stream", action="store_true", help="ask the model for whole replies instead of streams")
    d.add_argument("--no-color", action="store_true", help="plain text output")
    d.add_argument(
        "--stop-at-approval",
        action="store_true",
        help="save the run when it asks for approval and stop (see: rillet resume)",
    )
    _approval_flags(d)
    d.set_defaults(run=demo)
    r = sub.add_parser("resume", help="continue a run saved in SQLite (from any process)")
    r.add_argument("checkpoint_id", help="the id `rillet demo --stop-at-approval` printed, or your run's checkpoint id")
    r.add_argument(
        "--agent",
        metavar="MODULE:ATTRIBUTE",
        help="the agent to resume with: an agent or a function of no arguments returning one "
        "(required unless the checkpoint is the demo's); it must be the agent that saved the checkpoint",
    )
    r.add_argument("--no-color", action="store_true", help="plain text output")
    _approval_flags(r)
    r.set_defaults(run=resume)
    b = sub.add_parser(
        "bench", help="measure rillet's channel against queue.SimpleQueue, asyncio.Queue, janus and culsans"
    )
    b.add_argument("--items", type=positive_int, default=200_000, help="items per run (default: 200,000)")
    b.add_argument(
        "--rounds",
        type=positive_int,
        default=5,
        help="rounds over every implementation; medians and ranges are over rounds (default: 5)",
    )
    b.add_argument(
        "--min-time",
        type=seconds,
        default=0.2,
        help="seconds each implementation runs in a round, at least one run (default: 0.2)",
    )
    b.set_defaults(run=bench)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
