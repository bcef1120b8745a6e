"""The fenced code blocks of the README and docs/*.md, for the tests that run and type-check them.

An example's expected output is the ```output block that follows it (before any other code
block).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def examples(text: str) -> list[tuple[int, str, str | None]]:
    """(line, code, expected output or None) for each ```python block of a Markdown text;
    ``line`` is the line of the opening fence."""
    blocks = [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]
    found = []
    for i, (lang, body, line) in enumerate(blocks):
        if lang != "python":
            continue
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        expected = following[1] if following is not None and following[0] == "output" else None
        found.append((line, body, expected))
    return found


def documents() -> list[Path]:
    """README.md and every docs/*.md page that has a ```python block."""
    pages = [README, *sorted(DOCS.glob("*.md"))]
    return [p for p in pages if examples(p.read_text(encoding="utf-8"))]
