"""`python -m rillet.web` started as a subprocess on a free loopback port, for the dev UI's
tests: killed when the test ends, whatever happens."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import rillet

TESTS = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def web_server(spec: str, db: Path | None, timeout: float = 30.0) -> Iterator[str]:
    """The URL of ``python -m rillet.web spec`` (run from tests/, so ``web_agent:build``
    names tests/web_agent.py), once it answers."""
    port = free_port()
    here = str(Path(rillet.__file__).resolve().parent.parent)  # the rillet this test imports
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    args = [sys.executable, "-m", "rillet.cli", "web", spec, "--port", str(port)] + (["--db", str(db)] if db else [])
    proc = subprocess.Popen(args, cwd=TESTS, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"rillet web exited with {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}"
                )
            try:
                if httpx.get(url + "/api/agent", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"rillet web did not answer on {url} within {timeout} s")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
