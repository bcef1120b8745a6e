"""The `rillet` command line: one module per command, on click (docs/cli.md).

Commands import what they run when they run, so that ``rillet --help`` starts without loading
the agent layers.

Layer: applications, beside rillet.web, rillet.examples and rillet.benchmarks (which may import
each other). May import rillet.a2a, rillet.mcp, rillet.redis, rillet.temporal, rillet.tracing and
every layer under them (the import-linter contract in pyproject.toml; docs/architecture.md).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

import rillet
from rillet.cli.bench import bench
from rillet.cli.common import load_agent
from rillet.cli.demo import demo
from rillet.cli.eval import eval_command
from rillet.cli.inspect import inspect
from rillet.cli.resume import resume
from rillet.cli.run import run
from rillet.cli.web import web

__all__ = ["cli", "load_agent", "main"]


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    help="rillet: an event-stream agent development kit.",
)
@click.version_option(rillet.__version__, "--version", prog_name="rillet", message="%(prog)s %(version)s")
def cli() -> None:
    pass


for command in (run, resume, inspect, demo, bench, web):
    cli.add_command(command)
cli.add_command(eval_command)


def _command(argv: Sequence[str] | None) -> str:
    """The command ``argv`` runs (its first word that is not an option), or ''."""
    words = list(argv) if argv is not None else sys.argv[1:]
    return next((w for w in words if not w.startswith("-")), "") if words else ""


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command ``argv`` (default: the process's arguments) and returns its exit status;
    a usage error is shown as click shows it and exits with status 2; Ctrl-C that the command
    does not answer itself is one line and status 130."""
    reconfigure = getattr(sys.stdin, "reconfigure", None)
    if callable(reconfigure):  # a line that is not UTF-8 is named where it is read, not a traceback
        reconfigure(errors="surrogateescape")
    try:
        status = cli.main(args=list(argv) if argv is not None else None, prog_name="rillet", standalone_mode=False)
    except click.ClickException as e:
        e.show()
        raise SystemExit(e.exit_code) from None
    except click.Abort as e:
        if isinstance(e.__cause__, KeyboardInterrupt):  # Ctrl-C that no command turned into its own line
            print(" ".join(w for w in ("rillet", _command(argv)) if w) + ": stopped by Ctrl-C", file=sys.stderr)
            raise SystemExit(130) from None  # the shell's status for a SIGINT
        print("Aborted!", file=sys.stderr)
        raise SystemExit(1) from None
    return int(status or 0)
