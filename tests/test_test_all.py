"""scripts/test-all (`make test`): how it finds interpreters, skips missing ones and counts."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "test-all"


@pytest.fixture(scope="module")
def test_all() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("rillet_test_all", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module  # dataclasses look their module up
    loader.exec_module(module)
    return module


def test_a_missing_version_is_skipped_with_the_reason(test_all: ModuleType) -> None:
    step = test_all.python_step("3.99", [])
    assert step.ok
    assert step.detail == "skipped: no python3.99 on PATH or under pyenv's versions"


def test_finds_this_interpreter(test_all: ModuleType) -> None:
    version = "%d.%d" % sys.version_info[:2]
    found = test_all.find_interpreter(version)
    assert found is not None and test_all.interpreter_version(found) == version


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("...\n===== 3 failed, 286 passed, 1 skipped in 9.10s =====\n", (286, 3, "3 failed, 286 passed, 1 skipped in 9.10s")),
        ("286 passed, 2 errors in 9.10s\n", (286, 2, "286 passed, 2 errors in 9.10s")),
        ("Segmentation fault\n", (0, 0, "")),
    ],
)
def test_reads_pytests_closing_line(test_all: ModuleType, output: str, expected: tuple[int, int, str]) -> None:
    assert test_all.pytest_counts(output) == expected
