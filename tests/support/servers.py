"""Real Redis and PostgreSQL servers for the tests that need them: each started once per test
session on loopback and a free port, in a temporary directory, and stopped at the session's end.

`make test` installs redis-server (Debian's package) when it can; PostgreSQL is found on PATH
or under /usr/lib/postgresql. PostgreSQL refuses to run as root, so as root it runs as the
``postgres`` user. A server that cannot start skips its tests with one line saying why, and
fails them under CI=true (tests/support/optional.py), where every server must run.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from support.optional import skip_or_fail
from support.waiting import wait_until


@dataclass
class Server:
    """A running server: its URL and how to stop it."""

    url: str
    stop: Callable[[], None]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 30.0) -> None:
    def listening() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} before listening on port {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False

    wait_until(listening, f"{what} to listen on port {port}", timeout)


def find_binary(name: str, *patterns: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for pattern in patterns:
        matches = sorted(glob.glob(pattern))
        if matches:
            return matches[-1]
    return None


def start_redis() -> Server:
    """redis-server on 127.0.0.1, no persistence, in a temporary directory."""
    binary = find_binary("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server; make test does it)")
    port, workdir = free_port(), tempfile.mkdtemp(prefix="rillet-redis-")
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*args, "--dir", workdir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop() -> None:
        proc.kill()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)

    try:
        wait_for_port(port, proc, "redis-server")
    except BaseException:
        stop()
        raise
    return Server(f"redis://127.0.0.1:{port}/0", stop)


def start_postgres() -> Server:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (trust auth, user postgres, fsync off)."""
    initdb = find_binary("initdb", "/usr/lib/postgresql/*/bin/initdb")
    pg_ctl = find_binary("pg_ctl", "/usr/lib/postgresql/*/bin/pg_ctl")
    if initdb is None or pg_ctl is None:
        raise RuntimeError("PostgreSQL's initdb and pg_ctl are not installed (apt-get install postgresql)")
    as_user: list[str] = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    workdir = Path(tempfile.mkdtemp(prefix="rillet-pg-"))
    data = workdir / "data"
    if as_user:
        shutil.chown(workdir, "postgres", "postgres")
    port = free_port()

    def run(*args: str) -> None:
        result = subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({result.returncode}): {result.stderr.strip()[-400:]}")

    def stop() -> None:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(workdir, ignore_errors=True)

    try:
        run(initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        options = f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        run(pg_ctl, "-D", str(data), "-o", options, "-l", str(workdir / "log"), "-w", "-t", "60", "start")
    except BaseException:
        stop()
        raise
    return Server(f"postgresql://postgres@127.0.0.1:{port}/postgres", stop)


def server_or_skip(start: Callable[[], Server]) -> Iterator[str]:
    """For a session fixture: yields the server's URL and stops it after the session, or skips
    (fails under CI) with why it could not start."""
    try:
        server = start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        skip_or_fail(str(e))
    try:
        yield server.url
    finally:
        server.stop()
