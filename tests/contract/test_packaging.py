"""What `pip install rillet` gives: one version, extras that resolve together, an sdist that builds.

The two slow tests use dist/ from `make wheels`. Under `make test` (scripts/test-all) the first
CPython's run sets RILLET_PACKAGING_REQUIRED, so there a missing artefact fails; the other
versions' runs set RILLET_PACKAGING_SKIP (the packaging is the same and each check costs a build
or an install). Run alone, they skip with the command that makes dist/.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
import rillet

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
NOT_IN_ALL = {"test", "bench", "all"}  # development extras, and `all` itself
IMPORT_BUDGET_S = 0.150


def extras() -> dict[str, list[str]]:
    extras: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
    return extras


def test_all_names_every_optional_part() -> None:
    (union,) = extras()["all"]
    match = re.fullmatch(r"rillet\[([\w,\s-]+)\]", union)
    assert match, f"`all` should be one self-reference, rillet[a,b,...], not {union!r}"
    assert {name.strip() for name in match.group(1).split(",")} == set(extras()) - NOT_IN_ALL


def test_the_version_has_one_source() -> None:
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())["package"]["version"]
    assert rillet.__version__ == cargo == metadata.version("rillet")
    # Compiled into the extension: reading package metadata at import costs milliseconds.
    assert rillet.__version__ is rillet._native.__version__


def test_rillet_version_prints_it() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rillet.cli", "--version"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "rillet" in out and rillet.__version__ in out.split(), out


def packaging_artefact(pattern: str) -> Path:
    """dist/'s file matching `pattern`, or the test skipped (failed under make test's first version)."""
    if os.environ.get("RILLET_PACKAGING_SKIP"):
        pytest.skip(os.environ["RILLET_PACKAGING_SKIP"])
    found = sorted((ROOT / "dist").glob(pattern))
    if not found:
        message = f"no {pattern} in dist/: run `make wheels`"
        if os.environ.get("RILLET_PACKAGING_REQUIRED"):
            pytest.fail(message)
        pytest.skip(message)
    return found[-1]


def peer_benchmark_files(names: list[str]) -> list[str]:
    """The names that belong to the peer benchmark: a peers/ folder, a framework's
    ``bench_<name>.py`` or a requirements pin (a .txt outside the metadata)."""
    return [
        n
        for n in names
        if "peers" in n.split("/")
        or re.search(r"/bench_\w+\.py$", n)
        or (n.endswith(".txt") and ".dist-info/" not in n)
    ]


def test_the_wheel_carries_no_peer_framework_adapter() -> None:
    wheel = packaging_artefact(f"rillet-*-{TAG}-{TAG}-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
    assert "rillet/benchmarks/channel.py" in names and "rillet/cli/bench.py" in names  # `rillet bench` stays
    assert peer_benchmark_files(names) == [], "the peer benchmark belongs to the source tree (benches/peers)"


def test_the_sdist_carries_the_peer_benchmark_in_benches_only() -> None:
    sdist = packaging_artefact("rillet-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]  # without rillet-<version>/
    assert {"benches/peers/run.py", "benches/peers/harness.py", "benches/peers/agno.txt"} <= set(names)
    assert peer_benchmark_files([n for n in names if n.startswith("python/")]) == []


def fresh_venv(where: Path, env: dict[str, str]) -> list[str]:
    """A new virtualenv of this CPython; returns its pip install command."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(where)], check=True, env=env, timeout=120)
    return [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]


def clean_env(path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "CARGO_TARGET_DIR")}
    env["PATH"] = path
    return env


def median_import_seconds(python: str, cwd: Path, runs: int = 7) -> float:
    """CPU seconds `import rillet` takes in a fresh process, median of `runs` (CPU time, so other
    processes' work does not count as rillet's)."""
    code = "import time; c = time.process_time(); import rillet; print(time.process_time() - c)"
    times = [
        float(
            subprocess.run([python, "-c", code], cwd=cwd, check=True, capture_output=True, text=True, timeout=60).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(times)


def import_seconds_within_budget(python: str, cwd: Path) -> tuple[float, str]:
    """The best median import time of up to three attempts: a busy spell (more runnable processes
    than cores) slows even CPU time (caches, clock), so an over-budget median measured then is
    measured again 10 s later. Returns it with what each attempt saw."""
    seen: list[tuple[float, float]] = []
    for _ in range(3):
        seen.append((median_import_seconds(python, cwd), os.getloadavg()[0] / (os.cpu_count() or 1)))
        if seen[-1][0] < IMPORT_BUDGET_S or seen[-1][1] <= 1:
            break
        time.sleep(10)
    return min(s for s, _ in seen), "; ".join(f"{s * 1000:.0f} ms at load {load:.1f} per core" for s, load in seen)


@pytest.mark.slow
@pytest.mark.timeout(900)  # resolving and installing every extra into a new virtualenv
def test_every_extra_installs_together_and_import_stays_fast(tmp_path: Path) -> None:
    wheel = packaging_artefact(f"rillet-*-{TAG}-{TAG}-*.whl")
    env = clean_env(os.environ["PATH"])
    pip = fresh_venv(tmp_path / "venv", env)
    subprocess.run([*pip, "--only-binary", "rillet", f"{wheel}[all]"], check=True, env=env, timeout=840)
    py = pip[0]
    subprocess.run([py, "-m", "pip", "check"], check=True, env=env, timeout=120)
    modules = "import opentelemetry.trace, starlette, uvicorn, mcp, a2a.client, websockets, redis, psycopg, temporalio"  # one per extra
    subprocess.run([py, "-c", modules], check=True, env=env, cwd=tmp_path, timeout=120)
    seconds, seen = import_seconds_within_budget(py, tmp_path)
    assert seconds < IMPORT_BUDGET_S, f"import rillet (median CPU time, rillet[all] installed): {seen}"


@pytest.mark.slow
@pytest.mark.timeout(1500)  # a release build from nothing: minutes on a busy 2-core machine
def test_the_sdist_builds_with_only_rust_and_pip(tmp_path: Path) -> None:
    sdist = packaging_artefact("rillet-*.tar.gz")
    # make test runs the suite with no Rust on PATH and names the directories it took out.
    rust = os.environ.get("RILLET_RUST_PATH", "")
    env = clean_env(os.pathsep.join(d for d in [rust, os.environ["PATH"]] if d))
    pip = fresh_venv(tmp_path / "venv", env)
    subprocess.run([*pip, "--no-binary", "rillet", str(sdist)], check=True, env=env, timeout=1440)
    out = subprocess.run(
        [pip[0], "-c", "import rillet; print(rillet.__version__, rillet.__file__)"],
        check=True,
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.split()
    assert out[0] == rillet.__version__ and Path(out[1]).is_relative_to(tmp_path / "venv"), out
