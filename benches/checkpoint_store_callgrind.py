"""Instruction counts (valgrind callgrind) per save, per load and per save + load of the
1,000-event checkpoint in bench_checkpoint_store.py, for rillet and LangGraph: a noise-free
complement to the wall-clock medians (fsync and other waiting cost no instructions).

    .venv/bin/python benches/checkpoint_store_callgrind.py [rillet|langgraph ...]

Each count is (run with N operations - run with 0) / N, in a process that builds both sides'
state first (so the garbage collector sees the same heap for each).
"""

from __future__ import annotations

import sys
from pathlib import Path

from callgrind_util import per_operation, print_table

N = 5
HERE = Path(__file__).parent
OPS = {"save": "s.save()", "load": "s.load()", "save+load": "s.save(); s.load()"}


def _code(impl: str, op: str, n: int) -> str:
    return (
        f"import sys, tempfile; sys.path.insert(0, {str(HERE)!r}); from pathlib import Path\n"
        f"import bench_checkpoint_store as b\n"
        f"msgs = b.conversation(); other = b.langchain_messages(msgs), b.rillet_session(msgs)\n"
        f"s = b.SIDES[{impl!r}](Path(tempfile.mkdtemp()), msgs); s.save()\n"
        f"for _ in range({n}): {OPS[op]}\n"
        f"s.close()\n"
    )


def main() -> None:
    print_table(
        sys.argv[1:] or ["rillet", "langgraph"],
        [f"{op} (M instr)" for op in OPS],
        lambda impl, col: per_operation(lambda n: _code(impl, col.split(" ")[0], n), N) / 1e6,
        ".2f",
    )


if __name__ == "__main__":
    main()
