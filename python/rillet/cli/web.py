"""``rillet web MODULE:ATTRIBUTE``: the dev UI in the browser (rillet.web, the `web` extra)."""

from __future__ import annotations

import ipaddress
import os
import sys
from typing import Any

import click

from rillet.cli.common import agent_or_fail, checkpoint_store, fail


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


@click.command(short_help="chat with an agent and watch its events in the browser")
@click.argument("spec", metavar="MODULE:ATTRIBUTE")
@click.option("--db", metavar="FILE", help="SQLite file for checkpoints (the UI browses them); default: memory")
@click.option("--host", default="127.0.0.1", show_default=True, help="the interface to listen on")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="the port to listen on")
@click.option(
    "--allow-remote", is_flag=True, help="allow a --host other than loopback (others can then run your agent)"
)
@click.option(
    "--durability",
    type=click.Choice(["interrupt", "step"]),
    default="interrupt",
    show_default=True,
    help="step: record every model call and tool round, to replay a run or fork it from any step",
)
@click.option("--evals", metavar="DIR", help="folder of eval reports (rillet eval -o) for the Evals view")
def web(spec: str, db: str | None, host: str, port: int, allow_remote: bool, durability: str, evals: str | None) -> int:
    """Serves a local dev UI for the agent MODULE:ATTRIBUTE names: chat, a live timeline of
    events with the run-path tree, interrupts to approve, and the checkpoints in --db."""
    remote = not is_loopback(host)
    if remote and not allow_remote:
        fail(
            "web",
            f"--host {host} is not a loopback address: anyone who can reach it could run the agent and its "
            "tools; pass --allow-remote to serve it there anyway",
        )
    try:
        # the dev UI's dependencies are the `web` extra; rillet.web imports them only when it
        # serves, so they are checked here, where a missing one is a line and not a traceback
        import starlette  # noqa: F401  # the `web` extra
        import uvicorn  # noqa: F401  # the `web` extra

        from rillet.web import (  # type: ignore[import-not-found, unused-ignore]  # needs the `web` extra
            PortUnavailableError,
            serve,
        )
    except ImportError as e:
        fail("web", f"the dev UI is not installed ({e}): pip install 'rillet[web]'")
    agent = agent_or_fail("web", spec)
    if db is not None:
        checkpoint_store("web", db).close()  # a bad file is one line here, not a traceback in the server
    if evals is not None and os.path.exists(evals) and not os.path.isdir(evals):
        fail(
            "web",
            f"--evals {evals!r} is a file: give the folder of eval reports (rillet eval ... -o DIR/NAME.json "
            "writes them; a missing folder is created when a chat turn is saved as a case)",
        )
    if remote:
        print(
            f"rillet web: warning: serving on {host}:{port}, reachable from other machines; "
            "anyone who can reach it can run the agent and its tools",
            file=sys.stderr,
            flush=True,
        )
    extra: dict[str, Any] = {"evals": evals} if evals is not None else {}  # the Evals view's folder (rillet.web.evals)
    try:
        serve(agent, db=db, host=host, port=port, allow_remote=allow_remote, durability=durability, **extra)
    except PortUnavailableError as e:  # bound before the URL is printed: nothing was served
        fail("web", str(e.args[1] if len(e.args) > 1 else e))
    return 0
