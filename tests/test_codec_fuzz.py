"""The decoder on hostile bytes: mutated and truncated encodings must only ever decode or
raise DecodeError, and bombs must fail fast without a large allocation."""

from __future__ import annotations

import datetime as dt
import random
import resource
import time
import uuid
from decimal import Decimal

import pytest
from codec_helpers import Color, Point, golden_values

from rillet.codec import DecodeError, decode, encode

HEAD = b"\x93\xabrillet-ckpt\x01"


def _seeds() -> list[bytes]:
    messages = [
        {"role": "assistant", "content": f"step {i} ✓", "tool_calls": [{"id": f"c{i}", "args": (i, None)}],
         "usage": {"in": i, "out": 2**70}, "extra": {1.5: {b"x", -0.0}, "when": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)}}
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


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _fails_fast(data: bytes, match: str) -> None:
    rss = _max_rss_mib()
    start = time.perf_counter()
    with pytest.raises(DecodeError, match=match):
        decode(data)
    assert time.perf_counter() - start < 0.5
    assert _max_rss_mib() - rss < 64, "the decoder allocated for a declared length"


def test_nesting_bomb_fails_fast() -> None:
    _fails_fast(HEAD + b"\x91" * 100_000, "max_depth=512")
    _fails_fast(HEAD + _tuple_bomb(100_000), "max_depth=512")


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
    [b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xdb\xff\xff\xff\xff", b"\xc6\xff\xff\xff\xff",
     b"\xc9\xff\xff\xff\xff\x01"],
    ids=["array", "map", "str", "bin", "ext"],
)
def test_length_bomb_fails_fast(header: bytes) -> None:
    _fails_fast(HEAD + header + b"\x00" * 16, "remain")
