"""Every Python example in README.md runs, and prints exactly what the README shows.

An example's expected output is the ```output block that follows it (before any other code
block); an example with no such block must print nothing. Each runs in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.doc_blocks import README, examples

EXAMPLES = examples(README.read_text(encoding="utf-8"))


def test_readme_has_examples_with_output() -> None:
    assert len(EXAMPLES) >= 3
    assert all(expected is not None for _, _, expected in EXAMPLES), "every README example shows its output"


def test_an_output_block_belongs_to_the_code_block_before_it() -> None:
    text = "```python\nprint(1)\n```\n\nprints:\n\n```output\n1\n```\n\n```python\npass\n```\n"
    assert examples(text) == [(1, "print(1)\n", "1\n"), (11, "pass\n", None)]


@pytest.mark.parametrize(("line", "code", "expected"), EXAMPLES, ids=[f"README.md:{line}" for line, _, _ in EXAMPLES])
def test_readme_example(line: int, code: str, expected: str | None, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"README.md:{line} failed:\n{proc.stderr}"
    assert proc.stdout == (expected or ""), f"README.md:{line} printed something other than the README shows"
