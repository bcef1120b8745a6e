"""A missing optional dependency skips its tests locally and fails them in CI."""

from __future__ import annotations

import pytest
from support.optional import need


def test_a_missing_module_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no_such_module_for_rillet is not installed"):
        need("no_such_module_for_rillet")


def test_a_missing_module_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run this test"):
        need("no_such_module_for_rillet")


def test_a_present_module_is_returned() -> None:
    assert need("json").dumps([1]) == "[1]"
