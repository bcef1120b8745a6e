"""`python -m rillet.web` started as a subprocess on a free loopback port, for the dev UI's
tests: killed when the test ends, whatever happens; or an app served by uvicorn on the
test's own event loop."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import rillet

from support.waiting import wait_until

TESTS = Path(__file__).resolve().parents[1]  # holds support/


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def web_server(spec: str, db: Path | None, timeout: float = 30.0, extra: Sequence[str] = ()) -> Iterator[str]:
    """The URL of ``python -m rillet.web spec`` (run from tests/, so ``support.web_agent:build``
    names tests/support/web_agent.py), once it answers; ``extra``: more options."""
    port = free_port()
    here = str(Path(rillet.__file__).resolve().parent.parent)  # the rillet this test imports
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    args = [sys.executable, "-m", "rillet.cli", "web", spec, "--port", str(port)] + (["--db", str(db)] if db else [])
    args += list(extra)
    proc = subprocess.Popen(args, cwd=TESTS, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"rillet web exited with {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}")
        try:
            return httpx.get(url + "/api/agent", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(answers, f"rillet web to answer on {url}", timeout)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """The URL of ``app`` served by uvicorn on the running event loop, on a free loopback port.
    Its socket listens before uvicorn starts, so a client can connect at once (the kernel holds
    the connection until uvicorn accepts it): there is nothing to wait for. uvicorn's loggers
    are left unconfigured, so what it logs reaches pytest's ``caplog``."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
        sock.close()
