"""Instruction counts (valgrind callgrind) per run of the workflows in bench_workflows.py,
for rillet and LangGraph: a noise-free complement to the wall-clock medians on a shared
machine.

    .venv/bin/python benches/workflows_callgrind.py [impl ...]   # default: every impl

Each count is (a process doing N runs - one doing 0) / N, after a warm-up run; every process
imports both frameworks, so the garbage collector sees the same heap for each.
"""

from __future__ import annotations

import sys
from pathlib import Path

from callgrind_util import per_operation

N = 20
HERE = Path(__file__).parent


def _code(impl: str, shape: str, n: int) -> str:
    return (
        f"import sys, asyncio; sys.path.insert(0, {str(HERE)!r}); import bench_workflows as b\n"
        f"import langgraph.graph, langchain_core.language_models\n"
        f"run, reset, _ = b.WORKLOADS[{impl!r}]({shape!r}); loop = asyncio.new_event_loop()\n"
        f"reset(); loop.run_until_complete(run())\n"
        f"for _ in range({n}):\n    reset(); loop.run_until_complete(run())\n"
    )


def main() -> None:
    sys.path.insert(0, str(HERE))
    import bench_workflows

    print("| implementation | " + " | ".join(f"{s} (k instr per run)" for s in bench_workflows.SHAPES) + " |")
    print("| --- |" + " ---: |" * len(bench_workflows.SHAPES))
    for impl in sys.argv[1:] or bench_workflows.WORKLOADS:
        cells = [per_operation(lambda n, s=shape: _code(impl, s, n), N) / 1e3 for shape in bench_workflows.SHAPES]
        print(f"| {impl} | " + " | ".join(f"{c:,.0f}" for c in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
