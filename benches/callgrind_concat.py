"""Instruction counts for the concat benchmark, stable where wall-clock timings on a shared
machine are not. Runs one implementation N times; run it with N=0 and N>0 under callgrind
and divide the difference by N (see docs/benchmarks.md for the command).

    python benches/callgrind_concat.py {rillet,rillet_dicts,reference,langchain,langchain_pairwise,rillet_copy2,python_tee2} N
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_concat as b
import rillet


def main(which: str, n: int) -> None:
    if which.startswith("langchain"):
        from langchain_core.messages.ai import add_ai_message_chunks

        chunks = b.langchain_chunks(b.DICTS)
        if which == "langchain":
            fn = lambda: add_ai_message_chunks(chunks[0], *chunks[1:])  # noqa: E731
        else:
            from functools import reduce
            from operator import add

            fn = lambda: reduce(add, chunks)  # noqa: E731
    else:
        fn = {
            "rillet": lambda: rillet.concat_messages(b.MESSAGES),
            "rillet_dicts": lambda: rillet.concat_messages(b.DICTS),
            "reference": lambda: b.reference_concat(b.DICTS),
            "rillet_copy2": b.rillet_copy2_concat,
            "python_tee2": b.python_tee2_concat,
        }[which]
    fn()  # warm up caches and lazy imports in both the N=0 and N>0 runs
    for _ in range(n):
        fn()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
