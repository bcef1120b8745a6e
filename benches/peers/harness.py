"""The peer benchmark's runner (``run.py`` is its command line): one virtual environment per
framework, each script run in its own, the loopback HTTP server started once, and every
script's JSON lines collected.

A framework is a ``bench_<name>.py`` in the scripts folder (this one unless told) with its pip
requirements in ``<name>.txt``; rillet itself runs with the current interpreter. A framework
whose install fails, whose script times out or exits with an error is reported as such, and
the others still run. Progress goes to stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from results import (
    WORKLOADS,
    Outcome,
    build,
    markdown,
    parse_lines,
    plot,
    render,
    write_section,
)

if TYPE_CHECKING:
    from rich.console import Console

HERE = Path(__file__).resolve().parent
STAMP = ".rillet-requirements.sha256"  # the hash of the requirements a venv was built from
EVAL_ONLY = ("adk_eval", "pydantic_evals")  # frameworks of the eval workload alone: run when named


@dataclass(frozen=True)
class Peer:
    name: str
    script: Path
    requirements: Path | None  # None: runs with the current interpreter (rillet)


@dataclass(frozen=True)
class Settings:
    workloads: str
    rounds: int
    quick: bool
    concurrent: int
    timeout: float


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def default_venvs() -> Path:
    """The user's cache folder for the peers' virtual environments."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rillet" / "bench-peers"


def discover(folder: Path = HERE) -> list[Peer]:
    """Every ``bench_<name>.py`` of ``folder``; rillet first, then by name."""
    peers = []
    for script in sorted(folder.glob("bench_*.py")):
        name = script.stem.removeprefix("bench_")
        peers.append(Peer(name, script, None if name == "rillet" else folder / f"{name}.txt"))
    return sorted(peers, key=lambda p: (p.name != "rillet", p.name))


def requirement_names(text: str) -> list[str]:
    """The distribution names of a requirements file's lines (for their installed versions)."""
    names = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line)
        if match and not line.startswith("-"):
            names.append(match.group(0))
    return names


def _stream(cmd: list[str], prefix: str, timeout: float) -> tuple[int, list[str]]:
    """Runs ``cmd`` with its output shown on stderr (prefixed); its exit status and last lines."""
    tail: deque[str] = deque(maxlen=20)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            for line in proc.stdout:
                tail.append(line.rstrip())
                say(f"  [{prefix}] {line.rstrip()}")
        finally:
            timer.cancel()
        return proc.wait(), list(tail)


def ensure_venv(peer: Peer, venvs: Path, timeout: float = 1800) -> tuple[Path | None, str]:
    """The Python of ``peer``'s virtual environment, built (or rebuilt when its requirements
    changed) with ``pip install -r``; or None and why it could not be installed."""
    if peer.requirements is None:
        return Path(sys.executable), ""
    if not peer.requirements.is_file():
        return None, f"not installed: no {peer.requirements.name} next to {peer.script.name}"
    wanted = hashlib.sha256(peer.requirements.read_bytes()).hexdigest()
    home = venvs / peer.name
    python = home / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    stamp = home / STAMP
    if python.exists() and stamp.is_file() and stamp.read_text().strip() == wanted:
        say(f"==> {peer.name}: reusing {home}")
        return python, ""
    say(f"==> {peer.name}: installing {peer.requirements.name} into {home}")
    shutil.rmtree(home, ignore_errors=True)
    home.parent.mkdir(parents=True, exist_ok=True)
    wants_pip = bool(requirement_names(peer.requirements.read_text()))
    make = [sys.executable, "-m", "venv", *([] if wants_pip else ["--without-pip"]), str(home)]
    status, tail = _stream(make, peer.name, timeout)
    if status == 0 and wants_pip:
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-r", str(peer.requirements)]
        status, tail = _stream(pip, peer.name, timeout)
    if status != 0:
        reason = next((t for t in reversed(tail) if "error" in t.lower()), tail[-1] if tail else "")
        return None, f"not installed: exit status {status}: {reason.strip()}"
    stamp.write_text(wanted)
    return python, ""


def versions(python: Path, peer: Peer) -> dict[str, str]:
    """The installed versions of the peer's requirements (rillet's own for rillet)."""
    names = ["rillet"] if peer.requirements is None else requirement_names(peer.requirements.read_text())
    code = (
        "import importlib.metadata as m, json, sys\n"
        "def v(n):\n try: return m.version(n)\n except m.PackageNotFoundError: return '?'\n"
        "print(json.dumps({n: v(n) for n in sys.argv[1:]}))"
    )
    try:
        done = subprocess.run([str(python), "-c", code, *names], capture_output=True, text=True, timeout=60)
        found: dict[str, str] = json.loads(done.stdout)
        return found
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}


def run_script(peer: Peer, python: Path, settings: Settings, base_url: str, db_dir: str) -> Outcome:
    """Runs the peer's script; its JSON lines, with progress on stderr as they arrive."""
    cmd = [str(python), str(peer.script), "--workloads", settings.workloads, "--rounds", str(settings.rounds)]
    cmd += ["--concurrent", str(settings.concurrent), "--base-url", base_url, "--db-dir", db_dir]
    cmd += ["--quick"] if settings.quick else []
    env = dict(os.environ)
    # the scripts import _common from this folder, also when they live elsewhere (--scripts-dir)
    inherited = [os.environ["PYTHONPATH"]] if peer.requirements is None and "PYTHONPATH" in os.environ else []
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *inherited])
    outcome = Outcome(peer.name, versions(python, peer))
    say(f"==> {peer.name}: running {peer.script.name} ({settings.workloads})")
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) as proc:  # stderr: passed through
        assert proc.stdout is not None
        killed = threading.Event()  # set by the timer itself: is_alive() races with its kill()

        def kill() -> None:
            killed.set()
            proc.kill()

        timer = threading.Timer(settings.timeout, kill)
        timer.start()
        try:
            for raw in proc.stdout:
                for line in parse_lines(raw):
                    outcome.lines.append(line)
                    say(f"  [{peer.name}] {progress(line)}")
        finally:
            timer.cancel()
        status = proc.wait()
    if killed.is_set():
        outcome.problem = f"timed out after {settings.timeout:g} s"
    elif status != 0:
        outcome.problem = f"script exited with status {status}"
    elif not outcome.lines:  # e.g. no main(...) call: an empty column would pass for a clean run
        outcome.problem = "script printed no result lines"
    return outcome


def progress(line: dict[str, object]) -> str:
    what = f"{line['workload']}/{line.get('variant', '-')}"
    if "error" in line or "skipped" in line:
        return f"{what}: {line.get('error') or 'skipped: ' + str(line.get('skipped'))}"
    median = line.get("median")
    shown = f"{median:.4g} {line.get('unit')}" if isinstance(median, (int, float)) else "-"
    return f"{what}: {shown}" + ("" if line.get("ok") else "  FAILED: the counts differ")


@contextmanager
def loopback_server(timeout: float = 30) -> Iterator[str]:
    """The loopback OpenAI-compatible server of the HTTP workload, as a child process; its URL."""
    proc = subprocess.Popen([sys.executable, str(HERE / "_server.py")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        first = proc.stdout.readline()
        timer.cancel()
        if not first.startswith("listening on "):
            raise RuntimeError(f"the loopback server did not start (it printed {first!r})")
        yield first.removeprefix("listening on ").strip()
    finally:
        proc.kill()
        proc.wait()


def run_all(peers: list[Peer], settings: Settings, venvs: Path) -> list[Outcome]:
    """Installs and runs every peer, rillet first; one Outcome each."""
    outcomes = []
    with loopback_server() as url, tempfile.TemporaryDirectory(prefix="rillet-bench-peers-") as tmp:
        for peer in peers:
            python, problem = ensure_venv(peer, venvs)
            if python is None:
                say(f"==> {peer.name}: {problem}")
                outcomes.append(Outcome(peer.name, problem=problem))
                continue
            db_dir = os.path.join(tmp, peer.name)
            os.makedirs(db_dir, exist_ok=True)
            outcomes.append(run_script(peer, python, settings, url, db_dir))
    return outcomes


def command_line(settings: Settings, chosen: list[str]) -> str:
    """The command that reproduces a run."""
    parts = ["python benches/peers/run.py" + (f" {','.join(chosen)}" if chosen else "")]
    if settings.workloads != ",".join(WORKLOADS):
        parts.append(f"--workloads {settings.workloads}")
    parts.append(f"--rounds {settings.rounds}")
    parts += ["--quick"] if settings.quick else [f"--concurrent {settings.concurrent}"]
    return " ".join(parts)


def machine() -> str:
    import platform  # only for the report's header

    cpus = os.cpu_count() or 0
    return f"{platform.system()} {platform.machine()}, {cpus} CPUs, Python {platform.python_version()}"


def table_console(file: IO[str] | None = None) -> Console:
    """Where the table goes: the terminal at its width, or a file or pipe at the table's own
    width (at 80 columns, rich cut seven frameworks' cells to "8,3…" and "(47.…")."""
    from rich.console import Console  # a runtime dependency; the table is drawn only here

    console = Console(file=file)
    return console if console.is_terminal else Console(file=file, width=1000)


def bench_peers(
    chosen: list[str],
    settings: Settings,
    *,
    venvs: Path,
    scripts: Path = HERE,
    write_docs: Path | None = None,
    plots: Path | None = None,
) -> int:
    """Runs rillet and the chosen peers (all when none are named), prints the table; 1 when
    any framework failed to install or run, or any run did not do its work."""
    found = discover(scripts)
    unknown = sorted(set(chosen) - {p.name for p in found})
    if unknown:
        raise ValueError(
            f"no bench_<name>.py for {', '.join(unknown)} in {scripts}; known: {', '.join(p.name for p in found)}"
        )
    # the eval-only frameworks (bench_adk_eval.py, bench_pydantic_evals.py) run when named
    peers = [p for p in found if p.name == "rillet" or (p.name in chosen if chosen else p.name not in EVAL_ONLY)]
    say(f"==> {machine()}; frameworks: {', '.join(p.name for p in peers)}")
    outcomes = run_all(peers, settings, venvs)
    table = build(outcomes)
    table_console().print(render(table, outcomes))
    if write_docs is not None:
        body = "\n".join(
            [
                f"Measured on {machine()} with:",
                "",
                "```sh",
                command_line(settings, chosen),
                "```",
                "",
                markdown(table, outcomes),
            ]
        )
        write_section(write_docs, body)
        say(f"==> wrote the peer section of {write_docs}")
    for png in plot(table, plots) if plots is not None else []:
        say(f"==> wrote {png}")
    return 1 if table.failures() or any(o.problem for o in outcomes) else 0
