"""scripts/test-all (`make test`): how it finds interpreters, skips missing ones and counts."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-all"


@pytest.fixture(scope="module")
def test_all() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("rillet_test_all", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module  # dataclasses look their module up
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("ci", [None, "false", "0", ""])
def test_a_missing_version_is_skipped_with_the_reason(
    test_all: ModuleType, monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    step = test_all.python_step("3.99", [])
    assert step.ok
    assert step.detail == "skipped: no python3.99 on PATH or under pyenv's versions"


@pytest.mark.parametrize("ci", ["true", "TRUE", "1"])
def test_under_ci_a_missing_version_fails_the_run_saying_why(
    test_all: ModuleType, monkeypatch: pytest.MonkeyPatch, ci: str
) -> None:
    monkeypatch.setenv("CI", ci)
    step = test_all.python_step("3.99", [])
    assert not step.ok
    assert step.detail.startswith("FAILED: no python3.99 on PATH or under pyenv's versions; CI=true requires")
    assert "3.11 3.12 3.13" in step.detail or "PYTHON_VERSIONS" in step.detail


def test_under_ci_the_whole_run_exits_non_zero_when_a_version_is_missing(
    test_all: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """main() with the tool steps and the present version stubbed out: only the verdict runs."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(test_all, "VERSIONS", ["3.98", "3.99"])
    monkeypatch.setenv("PYTHON_VERSIONS", "3.98 3.99")
    monkeypatch.setattr(test_all, "tool_step", lambda name, cmd: test_all.Step(name, True, "ok", 0.0))
    ran = test_all.Step("CPython 3.98", True, "5 passed in 1.00s", 0.0, passed=5)
    real = test_all.python_step
    monkeypatch.setattr(test_all, "python_step", lambda v, *args: ran if v == "3.98" else real(v, *args))
    assert test_all.main() == 1
    out = capsys.readouterr().out
    assert "== CPython 3.99: FAILED: no python3.99" in out and "CI=true requires" in out
    monkeypatch.setenv("CI", "false")
    assert test_all.main() == 0


def test_finds_this_interpreter(test_all: ModuleType) -> None:
    version = "%d.%d" % sys.version_info[:2]
    found = test_all.find_interpreter(version)
    assert found is not None and test_all.interpreter_version(found) == version


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (
            "...\n===== 3 failed, 286 passed, 1 skipped in 9.10s =====\n",
            (286, 3, "3 failed, 286 passed, 1 skipped in 9.10s"),
        ),
        ("286 passed, 2 errors in 9.10s\n", (286, 2, "286 passed, 2 errors in 9.10s")),
        ("Segmentation fault\n", (0, 0, "")),
    ],
)
def test_reads_pytests_closing_line(test_all: ModuleType, output: str, expected: tuple[int, int, str]) -> None:
    assert test_all.pytest_counts(output) == expected


def test_without_rust_removes_cargo_and_rustc(test_all: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "cargo").touch()
    env = test_all.without_rust({"PATH": f"{tmp_path}{os.pathsep}/usr/bin", "VIRTUAL_ENV": "/x", "HOME": "/h"})
    assert env == {"PATH": "/usr/bin", "HOME": "/h"}


def test_a_version_without_its_wheel_fails_saying_so(
    test_all: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(test_all, "ROOT", tmp_path)  # no dist/
    site, why = test_all.prepare("3.12", sys.executable, tmp_path)
    assert site is None and why == "FAILED: no cp312 wheel in dist/ (scripts/build-wheels)"


def test_the_first_version_runs_the_whole_suite_and_the_others_the_native_tests(test_all: ModuleType) -> None:
    tests = SCRIPT.parents[1] / "tests"
    parallel, serial, stress = test_all.pytest_commands("py", ["-x"], whole=True)
    pytest = ["py", "-m", "pytest", str(tests)]
    assert parallel == [*pytest, "-n", str(test_all.WORKERS), "-m", "not serial and not stress", "-x"]
    assert serial == [*pytest, "-n", "0", "-m", "serial", "-x"]
    assert stress == [*pytest, "-n", str(test_all.STRESS_WORKERS), "-m", "stress", "-x"]
    parallel, serial, stress = test_all.pytest_commands("py", [], whole=False)
    paths = [Path(a) for a in parallel[3 : parallel.index("-n")]]
    assert (
        paths == [Path(a) for a in serial[3 : serial.index("-n")]] == [Path(a) for a in stress[3 : stress.index("-n")]]
    )
    assert paths and all(p.is_relative_to(tests) and p.exists() for p in paths), paths
    assert tests / "contract" / "test_wheel.py" in paths and tests / "data" in paths


def test_a_pass_that_selects_nothing_is_no_failure_and_counts_add_up(
    test_all: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = iter([(0, "== 7 passed, 1 skipped in 3.00s =="), (5, "== 9 deselected in 1.00s ==")])
    monkeypatch.setattr(test_all, "run", lambda cmd, env, cwd: next(outputs))
    assert test_all.pytest_passes([["a"], ["b"]], {}, Path()) == (
        True,
        7,
        0,
        "7 passed, 1 skipped in 3.00s; 9 deselected in 1.00s",
    )
    outputs = iter([(1, "== 1 failed, 2 passed in 3.00s =="), (0, "== 2 passed in 1.00s ==")])
    monkeypatch.setattr(test_all, "run", lambda cmd, env, cwd: next(outputs))
    assert test_all.pytest_passes([["a"], ["b"]], {}, Path())[:3] == (False, 4, 1)


def test_every_serial_and_stress_entry_names_a_test_that_exists() -> None:
    import conftest

    tests = Path(conftest.__file__).parent
    assert not set(conftest.SERIAL) & set(conftest.STRESS)
    for entry in conftest.SERIAL + conftest.STRESS:
        path, _, name = entry.partition("::")
        assert (tests / path).is_file(), entry
        assert not name or f"def {name}(" in (tests / path).read_text(), entry


SOURCE_TREE = ".parent / " + '"python"'  # how a test would point a child at the source tree


def test_test_files_import_their_helpers_as_the_wheel_run_finds_them() -> None:
    """make test runs the suite from outside the tree against the installed wheel, with only
    tests/ on sys.path (tests/conftest.py puts it there): a helper imported as `tests.x` is not
    found there, nor one imported by its bare name from tests/support/ (`support.x` is), and a
    child process given the source tree's python/ imports a rillet without the native module of
    that CPython (both happened once)."""
    tests = Path(__file__).parents[1]
    helpers = tuple(f"{s} {p.stem}" for p in (tests / "support").glob("*.py") for s in ("from", "import"))
    offenders = [
        f"{p.relative_to(tests)}:{n}"
        for p in sorted(tests.rglob("*.py"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if line.lstrip().startswith(("from tests.", "import tests.", "from tests import", *helpers))
        or SOURCE_TREE in line
    ]
    assert offenders == [], "import helpers as support.x, and give children tests/ only, not python/: " + ", ".join(
        offenders
    )
