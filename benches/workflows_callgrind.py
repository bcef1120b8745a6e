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

from callgrind_util import per_operation, print_table

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
    import bench_workflows

    print_table(
        sys.argv[1:] or list(bench_workflows.WORKLOADS),
        [f"{shape} (k instr per run)" for shape in bench_workflows.SHAPES],
        lambda impl, col: per_operation(lambda n: _code(impl, col.split(" ")[0], n), N) / 1e3,
        ",.0f",
    )


if __name__ == "__main__":
    main()
