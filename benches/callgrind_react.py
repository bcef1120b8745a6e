"""Instruction counts per model call for the ReAct workload, stable on a noisy machine.

    .venv/bin/python benches/callgrind_react.py [IMPL-KIND-MODE[@K] ...]  # default: the set below
    .venv/bin/python benches/callgrind_react.py run IMPL KIND MODE K N     # one process (valgrind's)

Each workload (bench_react.py's, at K = 50 unless @K says otherwise) runs under ``valgrind --tool=callgrind`` twice: one
warm-up run then N more runs, with N = 2 and N = 0; the difference divided by 2 (K + 1) is the
cost of one model call with its tool call, imports, graph building and first-run caches
excluded. Valgrind runs one thread at a time, so a def tool's thread hand-off is counted as work
(both sides of it), not as waiting.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

K = 50
RUNS = 2
DEFAULT = [
    "floor-async-invoke",
    "floor-def-invoke",
    "rillet-async-invoke",
    "rillet-def-invoke",
    "rillet-async-stream",
    "rillet-async-invoke@100",
    "langchain-async-invoke",
    "langchain-def-invoke",
    "langgraph-async-invoke",
]


def run_one(impl: str, kind: str, mode: str, k: int, n: int) -> None:
    import bench_react as b

    if os.environ.get("CALLGRIND_NO_GC"):  # to tell the garbage collector's share from the loop's
        import gc

        gc.disable()

    try:  # valgrind runs code ~50x slower: keep microsecond def tools on the path they take natively
        from rillet._core import workers

        workers.SLOW_CALL = 1.0
    except ImportError:  # an older rillet
        pass
    run, reset = b.WORKLOADS[impl](k, kind, mode)
    for _ in range(1 + n):
        reset()
        loop = asyncio.new_event_loop()
        loop.run_until_complete(run())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def instructions(impl: str, kind: str, mode: str, k: int, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "run",
                impl,
                kind,
                mode,
                str(k),
                str(n),
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        with open(out) as f:
            return int(re.search(r"^summary: (\d+)", f.read(), re.M).group(1))  # type: ignore[union-attr]


def main(keys: list[str]) -> None:
    per_call: dict[str, float] = {}
    for key in keys:
        impl, kind, mode = key.partition("@")[0].split("-")
        k = int(key.partition("@")[2] or K)
        per_call[key] = (instructions(impl, kind, mode, k, RUNS) - instructions(impl, kind, mode, k, 0)) / (
            RUNS * (k + 1)
        )
        print(f"{key:<28} {per_call[key]:10.0f} instructions/model call", flush=True)
    print()
    for key, mine in per_call.items():
        if not key.startswith("rillet"):
            continue
        variant, _, size = key.partition("@")
        _, kind, mode = variant.split("-")
        for peer in ("langchain", "langgraph", "floor"):
            theirs = per_call.get(f"{peer}-{kind}-{mode}" + (f"@{size}" if size else ""))
            if theirs is not None:
                print(f"{key}: {peer:<10} / rillet {theirs / mine:8.2f}x")


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        impl, kind, mode, k, n = sys.argv[2:7]
        run_one(impl, kind, mode, int(k), int(n))
    else:
        main(sys.argv[1:] or DEFAULT)
