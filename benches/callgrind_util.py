"""Counts the instructions a Python snippet executes under valgrind's callgrind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence


def instructions(code: str) -> int:
    """Total instructions (callgrind's ``refs``) of ``python -c code`` in a fresh process."""
    # A fixed hash seed: str hashes move dict probe counts by ~0.5 % from run to run.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stderr
    match = re.search(r"refs:\s+([\d,]+)", out)
    assert match, out
    return int(match.group(1).replace(",", ""))


def per_operation(make_code: Callable[[int], str], n: int) -> float:
    """Instructions per operation: (a run doing ``n`` operations - a run doing none) / n."""
    return (instructions(make_code(n)) - instructions(make_code(0))) / n


def print_table(impls: Iterable[str], columns: Sequence[str], count: Callable[[str, str], float], fmt: str) -> None:
    """Prints a Markdown table: a row per implementation, a cell per column, each cell
    ``count(impl, column)`` formatted with ``fmt``, rows printed as they are measured."""
    print("| implementation | " + " | ".join(columns) + " |")
    print("| --- |" + " ---: |" * len(columns))
    for impl in impls:
        cells = [format(count(impl, col), fmt) for col in columns]
        print(f"| {impl} | " + " | ".join(cells) + " |", flush=True)
