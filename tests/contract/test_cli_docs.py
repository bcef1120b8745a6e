"""docs/cli.md stays true: its agent module is written to a folder and every ```console block's
command is run there, in order, and prints what the page shows (ids, sizes, ages and times
aside)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from support.doc_blocks import DOCS, FENCE

PAGE = DOCS / "cli.md"
VARIES = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\(([0-9a-f]{8})\)"), "(<id>)"),
    (re.compile(r"run-[0-9a-f]{8}"), "run-<id>"),
    (re.compile(r"\d+\.\d\d s\b"), "<time>"),
    (re.compile(r"\d+ (s|min|h|d) ago"), "<age> ago"),
    (re.compile(r"\d+(\.\d)? (B|KB|MB)\b"), "<size>"),
    (re.compile(r"[ \t]+"), " "),  # columns sized to the values above
]


def normal(text: str) -> str:
    for pattern, replacement in VARIES:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def run_shown(line: str, cwd: Path) -> str:
    """What ``$ line`` prints (stdout, then stderr, as a terminal shows them): ``echo TEXT |``
    pipes TEXT in, ``< /dev/null`` pipes nothing, ``> /dev/null`` hides stdout."""
    words = shlex.split(line)
    stdin = ""
    if "|" in words:
        bar = words.index("|")
        assert words[0] == "echo", line
        stdin, words = " ".join(words[1:bar]) + "\n", words[bar + 1 :]
    hide = False
    while len(words) > 2 and words[-2] in ("<", ">") and words[-1] == "/dev/null":
        hide = hide or words[-2] == ">"
        words = words[:-2]
    assert words[0] == "rillet", line
    done = subprocess.run(
        [sys.executable, "-m", "rillet.cli", *words[1:], "--no-color"],
        input=stdin,
        stdout=subprocess.DEVNULL if hide else subprocess.PIPE,
        stderr=subprocess.STDOUT if not hide else subprocess.PIPE,
        text=True,
        timeout=60,
        cwd=cwd,
    )
    return (done.stderr if hide else done.stdout) or ""


def test_every_console_block_prints_what_the_page_shows(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]
    module = next(body for lang, body in blocks if lang == "python")
    (tmp_path / "myagent.py").write_text(module)
    shown = [body for lang, body in blocks if lang == "console"]
    assert len(shown) >= 8
    for body in shown:
        command, _, expected = body.partition("\n")
        assert command.startswith("$ "), command
        got = run_shown(command[2:], tmp_path)
        assert normal(got) == normal(expected), f"{command}\n--- printed ---\n{got}"
