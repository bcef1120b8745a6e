"""rillet's dev UI in the browser (the ``rillet[web]`` extra: Starlette and uvicorn).

``serve(agent, db=...)`` serves a page to chat with ``agent`` and watch its runs: the agent
tree, events as they arrive (tokens streamed), the run-path tree, tool calls with their
arguments and results, errors in the chat, a call inspector (rillet.web.calls), interrupts with
approve / reject / edit controls that resume the run (the answers kept in the timeline), the
chat's sessions, a browser of the checkpoint store, and replay and fork of step-recorded runs. ``rillet web MODULE:ATTRIBUTE`` and ``python -m rillet.web
MODULE:ATTRIBUTE`` call it; docs/web.md shows it.

Layer: applications, beside rillet.cli, rillet.examples and rillet.benchmarks (which may import
each other). May import rillet.a2a, rillet.mcp, rillet.redis, rillet.temporal, rillet.tracing and
every layer under them (the import-linter contract in pyproject.toml; docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import logging
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any

from rillet.checkpoint.stores import CheckpointStore, SqliteCheckpointStore
from rillet.errors import PortUnavailableError
from rillet.sessions import InMemorySessionStore, SessionStore, SqliteSessionStore
from rillet.web.checkpoints import MemoryStore

if TYPE_CHECKING:
    from types import FrameType

    from starlette.applications import Starlette

__all__ = ["PortUnavailableError", "bind", "create_app", "is_loopback", "serve"]

_log = logging.getLogger(__name__)

_SHUTDOWN_GRACE = 3  # seconds Ctrl-C waits for open requests before cutting them

_MISSING = "the dev UI needs Starlette and uvicorn: pip install 'rillet[web]'"

MAX_BODY = 1 << 20  # bytes of a POST body (rillet.web.app refuses more): a message is far less


def create_app(
    agent: Any,
    *,
    store: CheckpointStore | None = None,
    sessions: SessionStore | None = None,
    allow_remote: bool = False,
    max_body: int = MAX_BODY,
    durability: str = "interrupt",
    evals: str | None = None,
) -> Starlette:
    """The dev UI as a Starlette application for ``agent``; interrupted runs are saved to
    ``store`` (a fresh in-memory store when None), whose checkpoints the page lists; the chat's
    turns to ``sessions`` (a fresh in-memory session store when None), whose sessions the page
    lists, opens and continues. ``durability="step"`` records every model call and tool round
    of each run (``Runner(durability="step")``), which the page can replay, or fork from any
    recorded step as a new run. It
    answers only requests for a loopback host (127.0.0.1, localhost) unless ``allow_remote``,
    and only same-origin JSON POSTs of at most ``max_body`` bytes: pages of other sites
    cannot drive it, and no client makes it hold more than that. ``evals``: the folder of eval
    reports its Evals view lists, where it saves chat turns as eval cases."""
    if isinstance(agent, type) or not (callable(getattr(agent, "run", None)) and hasattr(agent, "name")):
        raise TypeError(f"create_app(agent): expected an agent, got {type(agent).__name__}")
    if durability not in ("interrupt", "step"):
        raise ValueError(f'create_app(durability={durability!r}): give "interrupt" or "step"')
    if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 1:
        raise ValueError(f"create_app(max_body={max_body!r}): give the largest body to accept, in bytes (1 or more)")
    try:
        from rillet.web.app import build_app  # imports Starlette: the optional rillet[web] extra
    except ImportError as e:
        raise ImportError(f"{_MISSING} ({e})") from e
    return build_app(
        agent,
        store if store is not None else MemoryStore(),
        sessions if sessions is not None else InMemorySessionStore(),
        allow_remote=allow_remote,
        max_body=max_body,
        durability=durability,
        evals=evals,
    )


def bind(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (``port`` 0: a free one, which its
    ``getsockname()`` tells); raises :class:`PortUnavailableError` saying why not and what to do."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family)
    except OSError as e:
        where = f"{'[' + host + ']' if ':' in host else host}:{port}"
        if e.errno == errno.EADDRINUSE:
            why = f"port {port} is already in use (another rillet web, or another server, listens there)"
        elif e.errno == errno.EACCES:
            why = f"this user may not listen on port {port}"
        else:
            why = e.strerror or str(e)
        raise PortUnavailableError(
            e.errno or 0,
            f"cannot listen on {where}: {why}; stop what holds it, or choose another port with --port "
            "(--port 0 picks a free one)",
        ) from e


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
    durability: str = "interrupt",
    evals: str | None = None,
) -> None:
    """Serves the dev UI for ``agent`` on ``host:port`` until interrupted (Ctrl-C).
    The port is bound before the URL is printed (``port`` 0: a free one, printed): a port in
    use raises :class:`PortUnavailableError`. Checkpoints go to the SQLite file ``db``, or to
    memory when None. Only loopback addresses
    unless ``allow_remote``: the page runs the agent and its tools for whoever reaches it.
    ``max_body``, ``durability``, ``evals``: as for :func:`create_app`."""
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
    sessions: SessionStore = SqliteSessionStore(db) if db is not None else InMemorySessionStore()
    app = create_app(
        agent,
        store=store,
        sessions=sessions,
        allow_remote=allow_remote,
        max_body=max_body,
        durability=durability,
        evals=evals,
    )
    try:
        import uvicorn  # the optional rillet[web] extra, needed only to serve
    except ImportError as e:
        raise ImportError(f"{_MISSING} ({e})") from e
    sock = bind(host, port)  # before the URL is printed: a port taken is an error, not a URL that fails
    port = sock.getsockname()[1]
    print(f"rillet web: http://{'[' + host + ']' if ':' in host else host}:{port}/ (Ctrl-C stops)", file=sys.stderr)
    sys.stderr.flush()
    stop_runs = app.state.stop_runs
    stopping: list[threading.Thread] = []

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            # a page watching a run keeps its event stream open until the run ends: end them now,
            # on a thread (this signal may have interrupted the holder of a run's lock)
            stopper = threading.Thread(target=stop_runs, name="rillet-web-stop", daemon=True)
            stopper.start()
            stopping.append(stopper)
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=_SHUTDOWN_GRACE)
    try:
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn raises the Ctrl-C again once it has stopped
            Server(config).run(sockets=[sock])
    finally:
        for stopper in stopping:  # the runs it closed let go of their claims before the process exits
            stopper.join(_SHUTDOWN_GRACE + 3)
        sock.close()
