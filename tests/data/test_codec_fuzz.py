"""The decoder on hostile bytes: mutated and truncated encodings must only ever decode or
raise DecodeError, and bombs must fail fast without a large allocation."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from rillet.data.codec import DecodeError, decode, encode
from support.codec_helpers import Color, Point, golden_values

HEAD = b"\x93\xabrillet-ckpt\x01"


def _seeds() -> list[bytes]:
    messages = [
        {
            "role": "assistant",
            "content": f"step {i} ✓",
            "tool_calls": [{"id": f"c{i}", "args": (i, None)}],
            "usage": {"in": i, "out": 2**70},
            "extra": {1.5: {b"x", -0.0}, "when": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)},
        }
        for i in range(3)
    ]
    extra = [messages, {"u": uuid.UUID(int=7), "d": Decimal("1.5"), "c": Color.RED, "p": Point(1, 2)}, "\ud800 x"]
    plain = [*golden_values().values(), *extra]
    return [encode(v) for v in plain] + [encode(v, compress=True) for v in plain]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:  # flip bits
            b[i % len(b)] ^= 1 << rng.randrange(8)
        elif op == 1 and b:  # set an interesting byte
            b[i % len(b)] = rng.choice([0x00, 0x7F, 0x80, 0x90, 0xC0, 0xC1, 0xC7, 0xD4, 0xDC, 0xDD, 0xDF, 0xFF])
        elif op == 2:  # insert
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif op == 3:  # delete
            del b[i : i + rng.randint(1, 4)]
        elif op == 4:  # truncate
            del b[i:]
        else:  # duplicate a slice
            j = rng.randrange(len(b) + 1)
            b[i:i] = b[min(i, j) : max(i, j)][:32]
    return bytes(b)


def _feed(count: int, seed: int) -> tuple[int, int]:
    rng = random.Random(seed)
    seeds = _seeds()
    ok = failed = 0
    for _ in range(count):
        data = _mutate(rng, rng.choice(seeds))
        try:
            decode(data)
            ok += 1
        except DecodeError:
            failed += 1
    return ok, failed


def test_mutated_encodings_only_raise_decode_error() -> None:
    ok, failed = _feed(5_000, seed=1)
    assert ok + failed == 5_000 and failed > 2_500


@pytest.mark.slow
def test_mutated_encodings_only_raise_decode_error_100k() -> None:
    ok, failed = _feed(100_000, seed=2)
    assert ok + failed == 100_000


def test_every_truncation_raises_decode_error() -> None:
    for data in _seeds():
        for n in range(len(data)):
            with pytest.raises(DecodeError):
                decode(data[:n])


# Decodes one input (a file) in a fresh process and reports the error, the time and how far
# the peak of the process's address space (VmPeak) rose above its size just before: unlike the
# RSS, that counts an allocation whether or not its pages are ever touched, and no earlier peak
# of a long-lived test process hides it. mimalloc is told not to reserve its 1 GiB arena up
# front, so the Rust side's allocations map memory of their own too.
_MEASURE = """
import json, sys, time
from rillet.data.codec import DecodeError, decode, encode

def vm(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))

decode(encode(["warm", 1]))
with open(sys.argv[1], "rb") as f:
    data = f.read()
before = vm("VmSize")
start = time.perf_counter()
try:
    decode(data)
    error = None
except DecodeError as e:
    error = str(e)
print(json.dumps({"error": error, "seconds": time.perf_counter() - start, "mib": (vm("VmPeak") - before) / 2**20}))
"""

needs_proc = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmPeak is read from /proc")


def _decode_measured(data: bytes, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "input.bin"
    path.write_bytes(data)
    env = {**os.environ, "MIMALLOC_ARENA_RESERVE": "0"}
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, timeout=60, env=env
    )  # run() kills the child on a timeout
    assert proc.returncode == 0, f"the decoder crashed (exit {proc.returncode}): {proc.stderr[-2000:]}"
    got: dict[str, Any] = json.loads(proc.stdout)
    return got


def _fails_fast(data: bytes, match: str, tmp_path: Path) -> None:
    got = _decode_measured(data, tmp_path)
    assert got["error"] is not None and re.search(match, got["error"]), got
    assert got["seconds"] < 0.5, got
    assert got["mib"] < 64, f"the decoder allocated {got['mib']:.0f} MiB for a declared length"


@needs_proc
def test_the_allocation_measure_sees_an_allocation(tmp_path: Path) -> None:
    """The measure the bomb tests rely on: decoding a real 80 MiB string shows up in it."""
    got = _decode_measured(encode("x" * (80 << 20)), tmp_path)
    assert got["error"] is None and got["mib"] >= 80, got


@needs_proc
def test_nesting_bomb_fails_fast(tmp_path: Path) -> None:
    _fails_fast(HEAD + b"\x91" * 100_000, "max_depth=512", tmp_path)
    _fails_fast(HEAD + _tuple_bomb(100_000), "max_depth=512", tmp_path)


def _tuple_bomb(depth: int) -> bytes:
    """Tuples nested `depth` deep, each a well-formed ext 32 whose length covers the rest."""
    sizes, inner = [], 1  # the innermost empty array
    for _ in range(depth):
        sizes.append(1 + inner)  # array(1) head + what it holds
        inner = 6 + sizes[-1]  # ext 32 head: marker, 4 length bytes, type code
    head = b"".join(b"\xc9" + n.to_bytes(4, "big") + b"\x01\x91" for n in reversed(sizes))
    return head + b"\x90"


@pytest.mark.parametrize(
    "header",
    [
        b"\xdd\xff\xff\xff\xff",
        b"\xdf\xff\xff\xff\xff",
        b"\xdb\xff\xff\xff\xff",
        b"\xc6\xff\xff\xff\xff",
        b"\xc9\xff\xff\xff\xff\x01",
    ],
    ids=["array", "map", "str", "bin", "ext"],
)
@needs_proc
def test_length_bomb_fails_fast(header: bytes, tmp_path: Path) -> None:
    _fails_fast(HEAD + header + b"\x00" * 16, "remain", tmp_path)
