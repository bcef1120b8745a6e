"""Instruction counts (valgrind callgrind) per encode and per decode of the checkpoint in
bench_codec.py, for each peer: a noise-free complement to the pytest-benchmark timings.

    .venv/bin/python benches/codec_callgrind.py [library ...]   # default: every peer
    .venv/bin/python benches/codec_callgrind.py "rillet Messages" "jsonplus langchain messages"

A name from ``bench_codec.NATIVE`` measures that framework's own message types (the
checkpoint with its messages converted, as ``test_roundtrip_native_messages`` does).
Each count is (run with N operations - run with 0) / N, in a process that imports every peer
(so the garbage collector sees a realistically large heap); both runs do one operation first,
so one-time work (the first decode imports rillet's state modules) is not counted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from callgrind_util import instructions

N = 10
HERE = Path(__file__).parent


def _one(lib: str, op: str, n: int) -> int:
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); import bench_codec as b\n"
        f"if {lib!r} in b.NATIVE:\n"
        f"    enc, dec, convert = b.NATIVE[{lib!r}]\n"
        f"    state = {{**b.STATE, 'messages': [convert(m) for m in b.STATE['messages']]}}\n"
        f"else:\n"
        f"    (enc, dec), state = b.PEERS[{lib!r}], b.STATE\n"
        f"data = enc(state)\n"
        f"f = (lambda: dec(data)) if {op!r} == 'decode' else (lambda: enc(state))\n"
        # Once outside the count: the first decode imports rillet's state modules.
        f"f()\n"
        f"for _ in range({n}): f()\n"
    )
    return instructions(code)


def main() -> None:
    sys.path.insert(0, str(HERE))
    import bench_codec

    print("| library | encode (M instr) | decode (M instr) | round trip (M instr) |")
    print("| --- | --- | --- | --- |")
    for lib in sys.argv[1:] or bench_codec.PEERS:
        enc, dec = ((_one(lib, op, N) - _one(lib, op, 0)) / N / 1e6 for op in ("encode", "decode"))
        print(f"| {lib} | {enc:.2f} | {dec:.2f} | {enc + dec:.2f} |", flush=True)


if __name__ == "__main__":
    main()
