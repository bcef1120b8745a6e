"""Instruction counts (valgrind callgrind) per save, per load and per save + load of the
1,000-event checkpoint in bench_checkpoint_store.py, for rillet and LangGraph: a noise-free
complement to the wall-clock medians (fsync and other waiting cost no instructions).

    .venv/bin/python benches/checkpoint_store_callgrind.py [rillet|langgraph ...]

Each count is (run with N operations - run with 0) / N, in a process that builds both sides'
state first (so the garbage collector sees the same heap for each).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

N = 5
HERE = Path(__file__).parent
OPS = {"save": "s.save()", "load": "s.load()", "save+load": "s.save(); s.load()"}


def _one(impl: str, op: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        code = (
            f"import sys; sys.path.insert(0, {str(HERE)!r}); from pathlib import Path\n"
            f"import bench_checkpoint_store as b\n"
            f"msgs = b.conversation(); other = b.langchain_messages(msgs), b.rillet_session(msgs)\n"
            f"s = b.SIDES[{impl!r}](Path({tmp!r}), msgs); s.save()\n"
            f"for _ in range({n}): {OPS[op]}\n"
            f"s.close()\n"
        )
        # A fixed hash seed: str hashes move dict probe counts by ~0.5 % from run to run.
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", code],
            capture_output=True, text=True, check=True, env=env,
        ).stderr
    match = re.search(r"refs:\s+([\d,]+)", out)
    assert match, out
    return int(match.group(1).replace(",", ""))


def main() -> None:
    impls = sys.argv[1:] or ["rillet", "langgraph"]
    print("| implementation | " + " | ".join(f"{op} (M instr)" for op in OPS) + " |")
    print("| --- |" + " ---: |" * len(OPS))
    for impl in impls:
        cells = [(_one(impl, op, N) - _one(impl, op, 0)) / N / 1e6 for op in OPS]
        print(f"| {impl} | " + " | ".join(f"{c:.2f}" for c in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
