"""Instructions per event for bench_events.py's workloads, stable on a noisy machine.

    .venv/bin/python benches/callgrind_events.py [IMPL ...]   # default: every workload

Each workload runs under ``valgrind --tool=callgrind`` with N events and with none; the
difference over N is one event's cost (imports, Runner and loop set-up excluded). Valgrind
runs one thread at a time, so the ``for`` rows count both threads' work, not their waiting.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from callgrind_util import per_operation

N = 20_000
BENCHES = str(Path(__file__).parent)


def code(impl: str) -> object:
    def make(n: int) -> str:
        return f"import sys; sys.path.insert(0, {BENCHES!r}); import bench_events as b; b.WORKLOADS[{impl!r}]({n})"

    return make


def main(impls: list[str]) -> None:
    import bench_events

    for impl in impls or list(bench_events.WORKLOADS):
        print(f"{impl:<22} {per_operation(code(impl), N):8.0f} instructions/event", flush=True)  # type: ignore[arg-type]


if __name__ == "__main__":
    main(sys.argv[1:])
