"""rillet's dev UI in the browser (the ``rillet[web]`` extra: Starlette and uvicorn).

``serve(agent, db=...)`` serves a page to chat with ``agent`` and watch its runs: events as
they arrive (tokens streamed), the run-path tree, tool calls with their arguments and
results, interrupts with approve / reject / edit controls that resume the run, and a browser
of the checkpoint store. ``rillet web MODULE:ATTRIBUTE`` and ``python -m rillet.web
MODULE:ATTRIBUTE`` call it; docs/web.md shows it.

Layer: applications, beside rillet.cli, rillet.examples and rillet.benchmarks (which may import
each other). May import rillet.a2a, rillet.mcp, rillet.redis, rillet.temporal, rillet.tracing and
every layer under them (the import-linter contract in pyproject.toml; docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import sys
import threading
from typing import TYPE_CHECKING, Any

from rillet.checkpoint.stores import CheckpointStore, SqliteCheckpointStore
from rillet.web.checkpoints import MemoryStore

if TYPE_CHECKING:
    from types import FrameType

    from starlette.applications import Starlette

__all__ = ["create_app", "is_loopback", "serve"]

_log = logging.getLogger(__name__)

_SHUTDOWN_GRACE = 3  # seconds Ctrl-C waits for open requests before cutting them

_MISSING = "the dev UI needs Starlette and uvicorn: pip install 'rillet[web]'"

MAX_BODY = 1 << 20  # bytes of a POST body (rillet.web.app refuses more): a message is far less


def create_app(
    agent: Any,
    *,
    store: CheckpointStore | None = None,
    allow_remote: bool = False,
    max_body: int = MAX_BODY,
    evals: str | None = None,
) -> Starlette:
    """The dev UI as a Starlette application for ``agent``; interrupted runs are saved to
    ``store`` (a fresh in-memory store when None), whose checkpoints the page lists. It
    answers only requests for a loopback host (127.0.0.1, localhost) unless ``allow_remote``,
    and only same-origin JSON POSTs of at most ``max_body`` bytes: pages of other sites
    cannot drive it, and no client makes it hold more than that. ``evals``: the folder of eval
    reports its Evals view lists, where it saves chat turns as eval cases."""
    if isinstance(agent, type) or not (callable(getattr(agent, "run", None)) and hasattr(agent, "name")):
        raise TypeError(f"create_app(agent): expected an agent, got {type(agent).__name__}")
    if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 1:
        raise ValueError(f"create_app(max_body={max_body!r}): give the largest body to accept, in bytes (1 or more)")
    try:
        from rillet.web.app import build_app  # imports Starlette: the optional rillet[web] extra
    except ImportError as e:
        raise ImportError(f"{_MISSING} ({e})") from e
    chosen = store if store is not None else MemoryStore()
    return build_app(agent, chosen, allow_remote=allow_remote, max_body=max_body, evals=evals)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    agent: object,
    *,
    db: str | None,
    host: str = "127.0.0.1",
    port: int = 8000,
    allow_remote: bool = False,
    max_body: int = MAX_BODY,
    evals: str | None = None,
) -> None:
    """Serves the dev UI for ``agent`` on ``host:port`` until interrupted (Ctrl-C).
    Checkpoints go to the SQLite file ``db``, or to memory when None. Only loopback addresses
    unless ``allow_remote``: the page runs the agent and its tools for whoever reaches it.
    ``max_body``, ``evals``: as for :func:`create_app`."""
    if not is_loopback(host):
        if not allow_remote:
            raise ValueError(
                f"rillet web: refusing to listen on {host!r}, which other machines can reach: whoever opens the "
                "page runs your agent and its tools; use 127.0.0.1, or allow it explicitly (allow_remote=True, "
                "--allow-remote)"
            )
        warning = (
            f"rillet web: WARNING: listening on {host}:{port}, reachable from other machines; anyone who can "
            "open the page can run this agent and its tools, with no authentication"
        )
        _log.warning(warning)
        print(warning, file=sys.stderr)
    store: CheckpointStore = SqliteCheckpointStore(db) if db is not None else MemoryStore()
    app = create_app(agent, store=store, allow_remote=allow_remote, max_body=max_body, evals=evals)
    try:
        import uvicorn  # the optional rillet[web] extra, needed only to serve
    except ImportError as e:
        raise ImportError(f"{_MISSING} ({e})") from e
    print(f"rillet web: http://{'[' + host + ']' if ':' in host else host}:{port}/ (Ctrl-C stops)", file=sys.stderr)
    stop_runs = app.state.stop_runs

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            # a page watching a run keeps its event stream open until the run ends: end them now,
            # on a thread (this signal may have interrupted the holder of a run's lock)
            threading.Thread(target=stop_runs, name="rillet-web-stop", daemon=True).start()
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=_SHUTDOWN_GRACE)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn raises the Ctrl-C again once it has stopped
        Server(config).run()
