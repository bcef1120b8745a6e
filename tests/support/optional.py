"""Tests of optional parts skip where their dependency is missing, except in CI: `.ci/run`
(CI=true) installs the test extra, so a skip there means an install step is missing."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true")


def skip_or_fail(reason: str) -> NoReturn:
    """Skips the test, or fails it under CI, where nothing optional may be missing."""
    if in_ci():
        pytest.fail(f"{reason}; CI must run this test (install the test extra)", pytrace=False)
    pytest.skip(reason)


def need(module: str) -> ModuleType:
    """``module`` imported, or the test skipped (failed under CI) with the reason."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        skip_or_fail(f"{module} is not installed ({e})")
