"""The release recipe (.github/workflows/release.yml) is a valid GitHub Actions workflow: checked
offline against the workflow schema that check-jsonschema ships (`vendor.github-workflows`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.optional import need

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / ".github" / "workflows" / "release.yml"


def check(workflow: Path) -> subprocess.CompletedProcess[str]:
    need("check_jsonschema")
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_release_workflow_passes_the_schema_check() -> None:
    result = check(RECIPE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok -- validation done" in result.stdout


def test_the_check_catches_a_misspelt_key(tmp_path: Path) -> None:
    broken = tmp_path / "release.yml"
    broken.write_text(RECIPE.read_text().replace("runs-on:", "runs_on:", 1))
    result = check(broken)
    assert result.returncode == 1 and "Schema validation errors" in result.stdout, result.stdout


@pytest.mark.parametrize("platform", ["aarch64", "musllinux", "universal2", "windows", "sdist"])
def test_the_recipe_covers_the_platforms_not_built_here(platform: str) -> None:
    assert platform in RECIPE.read_text()
