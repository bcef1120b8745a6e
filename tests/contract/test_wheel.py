"""rillet as a user gets it from `pip install`: `make test` (scripts/test-all) runs the whole suite
against each CPython's manylinux2014 wheel, installed into a fresh virtualenv outside the source
tree with no Rust on PATH, and sets RILLET_EXPECT_INSTALLED_IN to that virtualenv's
site-packages. These tests check that the suite really ran against that wheel; run from the
source tree (pytest in .venv) they skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import rillet
import rillet._native


def installed_in() -> Path:
    expected = os.environ.get("RILLET_EXPECT_INSTALLED_IN")
    if not expected:
        pytest.skip("runs when make test runs the suite against an installed wheel (scripts/test-all)")
    return Path(expected).resolve()


def test_rillet_comes_from_the_wheel_not_the_source_tree() -> None:
    site = installed_in()
    for module in (rillet, rillet._native):
        assert Path(str(module.__file__)).resolve().is_relative_to(site), module.__file__
    dist = metadata.distribution("rillet")
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    assert direct.get("url", "").endswith(".whl") and "dir_info" not in direct, direct  # a wheel, not editable


def test_the_wheel_is_tagged_manylinux2014() -> None:
    installed_in()
    wheel = metadata.distribution("rillet").read_text("WHEEL") or ""
    tags = {line.removeprefix("Tag:").strip() for line in wheel.splitlines() if line.startswith("Tag:")}
    abi = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert tags == {f"{abi}-{abi}-manylinux2014_x86_64", f"{abi}-{abi}-manylinux_2_17_x86_64"}, wheel


def test_no_rust_toolchain_is_on_path() -> None:
    installed_in()
    assert shutil.which("cargo") is None and shutil.which("rustc") is None


def test_the_extension_unwinds_with_the_systems_libgcc_s() -> None:
    """zig would link its own libunwind into the extension; a thread woken while the interpreter
    exits is ended by glibc with libgcc_s's unwinder, and mixing the two crashed the process."""
    installed_in()
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    out = subprocess.run([readelf, "--dyn-syms", "-d", str(rillet._native.__file__)], capture_output=True, text=True)
    assert "Shared library: [libgcc_s.so.1]" in out.stdout
    defined = [line for line in out.stdout.splitlines() if "_Unwind_RaiseException" in line and " UND " not in line]
    assert not defined, defined  # not a copy of its own
