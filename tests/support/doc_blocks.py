"""The fenced code blocks of the README and docs/*.md, for the tests that run and type-check them.

An example's expected output is the ```output block that follows it (before any other code
block).

A ```python block is a script: it runs alone, as written (``python block.py``). A first-line
comment, which the reader sees as part of the block, says otherwise:

* ``# Continues the block above.``: the block goes on from the ```python block before it on
  the page (its names, its files); it runs after the blocks it continues, in the same script.
* ``# Not run in the docs test: <reason>``: the block cannot run offline (a real API key, a
  server the tests do not start); the reason is required. It is still type-checked.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
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


# A fence, possibly indented (a block inside a list item).
INDENTED_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>\w*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.MULTILINE | re.DOTALL
)
CONTINUES = re.compile(r"#\s*continues the block above\b", re.IGNORECASE)
NOT_RUN = re.compile(r"#\s*not run in the docs test\b:?\s*(?P<reason>.*)", re.IGNORECASE)
MARKERISH = re.compile(r"#\s*(continues|not run)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Block:
    """A ```python block of a page: ``line`` is its opening fence's line; ``code`` is dedented
    when the fence is indented; ``expected`` is the ```output block after it, if any."""

    line: int
    code: str
    expected: str | None
    continues: bool = False
    not_run: str | None = None  # the reason, for a block that is not run


class MarkerError(ValueError):
    """A marker comment the docs test cannot honour (a bad kind, a missing reason...)."""


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, with their markers (see the module's docstring)."""
    fences = []
    for m in INDENTED_FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        body = textwrap.dedent(m.group("body")) if m.group("indent") else m.group("body")
        fences.append((m.group("lang"), body, line))
    found: list[Block] = []
    for i, (lang, body, line) in enumerate(fences):
        if lang != "python":
            continue
        following = fences[i + 1] if i + 1 < len(fences) else None
        expected = following[1] if following is not None and following[0] == "output" else None
        first = body.split("\n", 1)[0].strip()
        continues = CONTINUES.match(first) is not None
        skip = NOT_RUN.match(first)
        not_run = skip.group("reason").strip() if skip else None
        if MARKERISH.match(first) and not continues and skip is None:
            raise MarkerError(
                f"line {line}: {first!r} is not a marker ('# Continues the block above.', or '# Not run in the docs test: <reason>')"
            )
        if continues and not found:
            raise MarkerError(f"line {line}: the block continues no block (it is the page's first)")
        if not_run == "":
            raise MarkerError(
                f"line {line}: a block that is not run must say why ('# Not run in the docs test: <reason>')"
            )
        found.append(Block(line, body, expected, continues, not_run))
    return found


def scripts(found: list[Block]) -> list[list[Block]]:
    """The page's blocks as the scripts they run in: a block, then the blocks that continue it."""
    out: list[list[Block]] = []
    for block in found:
        if block.continues and out:
            out[-1].append(block)
        else:
            out.append([block])
    return out


def documents() -> list[Path]:
    """README.md and every docs/*.md page that has a ```python block."""
    pages = [README, *sorted(DOCS.glob("*.md"))]
    return [p for p in pages if examples(p.read_text(encoding="utf-8"))]
