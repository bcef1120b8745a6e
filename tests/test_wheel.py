"""The release wheel from `make wheel` works on its own: installed into a fresh virtualenv, with
no editable install and no Rust toolchain on PATH, it passes the Python tests.

`make test` builds the wheel for .venv's Python and sets RILLET_WHEEL_REQUIRED in that version's
run, so there a missing wheel fails (and RILLET_WHEEL_SKIP, with the reason, in the other
versions' runs); run alone, the test skips with the command that builds one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"


def find_wheel() -> Path | None:
    wheels = sorted((ROOT / "dist").glob(f"rillet-*-{TAG}-{TAG}-*.whl"), key=lambda p: p.stat().st_mtime)
    return wheels[-1] if wheels else None


def without_rust(env: dict[str, str]) -> dict[str, str]:
    """`env` with every PATH directory that holds cargo or rustc removed, and no virtualenv or
    PYTHONPATH that could lead back to the source tree."""
    keep = [
        d
        for d in env.get("PATH", "").split(os.pathsep)
        if d and not any((Path(d) / tool).exists() for tool in ("cargo", "rustc"))
    ]
    clean = {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    clean["PATH"] = os.pathsep.join(keep)
    return clean


def test_without_rust_removes_cargo_and_rustc(tmp_path: Path) -> None:
    (tmp_path / "cargo").touch()
    env = without_rust({"PATH": f"{tmp_path}{os.pathsep}/usr/bin", "VIRTUAL_ENV": "/x", "HOME": "/h"})
    assert env == {"PATH": "/usr/bin", "HOME": "/h"}


def test_imported_from_expected_place() -> None:
    """Inside the wheel's own run (below), rillet must come from the virtualenv, not python/."""
    expected = os.environ.get("RILLET_EXPECT_INSTALLED_IN")
    if not expected:
        pytest.skip("runs inside test_wheel_installs_and_passes_the_tests only")
    import rillet
    import rillet._native

    for module in (rillet, rillet._native):
        assert Path(str(module.__file__)).resolve().is_relative_to(Path(expected).resolve()), module.__file__


def pinned_test_requirements() -> list[str]:
    """The test extra from pyproject.toml, pinned to the versions this interpreter runs with."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    names = [req.split(">")[0].split("=")[0].split("<")[0].strip() for req in extras]
    return [f"{name}=={metadata.version(name)}" for name in names if name != "mypy"]


@pytest.mark.slow
def test_wheel_installs_and_passes_the_tests(tmp_path: Path) -> None:
    if os.environ.get("RILLET_WHEEL_SKIP"):
        pytest.skip(os.environ["RILLET_WHEEL_SKIP"])
    wheel = find_wheel()
    if wheel is None:
        message = f"no {TAG} wheel in dist/: run `make wheel` (with this interpreter)"
        if os.environ.get("RILLET_WHEEL_REQUIRED"):
            pytest.fail(message)
        pytest.skip(message)
    venv = tmp_path / "venv"
    env = without_rust(dict(os.environ))
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, env=env, cwd=tmp_path)
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    # --only-binary: were the wheel unusable here, pip must fail rather than build from source.
    subprocess.run(
        [*pip, "--only-binary", ":all:", str(wheel), *pinned_test_requirements()], check=True, env=env, cwd=tmp_path
    )

    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    ).stdout.strip()
    probe = subprocess.run(
        [py, "-c", "import rillet, rillet._native; print(rillet.__file__); print(rillet._native.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    for path in probe.stdout.split():
        assert Path(path).resolve().is_relative_to(Path(site).resolve()), f"{path} is not in the venv's {site}"

    # The quick tests, from the temporary directory so the source tree's python/ is not on sys.path.
    env["RILLET_EXPECT_INSTALLED_IN"] = site
    result = subprocess.run(
        [py, "-m", "pytest", str(ROOT / "tests"), "-m", "not slow", "-v", "-p", "no:cacheprovider"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    tail = "\n".join(result.stdout.splitlines()[-25:])
    assert result.returncode == 0, f"the tests failed against the installed wheel:\n{tail}\n{result.stderr[-2000:]}"
    assert "test_wheel.py::test_imported_from_expected_place PASSED" in result.stdout
