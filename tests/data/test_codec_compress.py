"""Format 3: ``encode(obj, compress=True)`` compresses the format-2 body with LZ4, and
``decode`` recognises it by itself. Compressed input is untrusted like any other: a forged
size, a corrupt block or an unknown algorithm is a DecodeError with an offset, and a small
input never makes the decoder allocate a large buffer."""

from __future__ import annotations

import struct
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet import Message, _native, codec
from rillet.data.codec import COMPRESSED_FORMAT_VERSION, DecodeError, decode, encode
from support.codec_helpers import assert_identical, golden_values, values

HEAD = b"\x93\xabrillet-ckpt"


def framed(payload: bytes, version: int = 3) -> bytes:
    """A format-3 checkpoint around ``payload`` (in a bin 32, which readers must accept)."""
    return HEAD + bytes([version, 0xC6]) + struct.pack(">I", len(payload)) + payload


def payload(size: int, block: bytes, algorithm: int = 1) -> bytes:
    return bytes([algorithm]) + struct.pack(">I", size) + block


def split(data: bytes) -> tuple[int, bytes]:
    """(declared size, LZ4 block) of a checkpoint rillet wrote."""
    assert data[:14] == HEAD + b"\x03"
    start = {0xC4: 16, 0xC5: 17, 0xC6: 19}[data[14]]
    assert data[start] == 1
    return struct.unpack(">I", data[start + 1 : start + 5])[0], data[start + 5 :]


def transcript(n: int) -> list[Any]:
    return [
        {"role": "user" if i % 2 else "assistant", "content": f"step {i}: the weather in Lisbon is sunny", "n": i}
        for i in range(n)
    ]


@pytest.mark.slow  # 300 examples: in make test, not the quick loop
@settings(max_examples=300, deadline=None)
@given(values)
def test_compressed_round_trip_is_exact(value: Any) -> None:
    assert_identical(decode(encode(value, compress=True)), value)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["assistant", "user", "tool", "", "é😀"]) | st.integers(-3, 300), max_size=200))
def test_compressed_body_is_the_format_2_body(value: Any) -> None:
    data = encode(value, compress=True)
    size, _ = split(data)
    assert size == len(encode(value)) - 14
    assert data[13] == COMPRESSED_FORMAT_VERSION


def test_golden_values_and_messages_round_trip() -> None:
    value = {**golden_values(), "messages": [Message.user("hi"), Message.assistant("hello " * 50)]}
    assert_identical(decode(encode(value, compress=True)), value)


def test_compressed_is_much_smaller_on_repetitive_data() -> None:
    value = transcript(1000)
    plain, packed = encode(value), encode(value, compress=True)
    assert len(packed) * 3 < len(plain), (len(packed), len(plain))
    assert decode(packed) == value


def test_uncompressed_output_is_unchanged_and_the_default() -> None:
    value = transcript(10)
    assert encode(value) == encode(value, compress=False) == _native.codec_encode(value, {}, 512, 2)
    assert encode(value)[13] == 2


def test_compression_needs_format_2() -> None:
    with pytest.raises(ValueError, match=r"compress=True writes format 3 .*drop compress=True, or format_version=1"):
        encode([1], format_version=1, compress=True)
    with pytest.raises(ValueError, match=r"got 3 \(format 3 is written by compress=True\)"):
        encode([1], format_version=3)
    with pytest.raises(TypeError, match="compress must be True or False"):
        encode([1], compress=1)  # type: ignore[arg-type]


BLOCK_SIZE, BLOCK = split(encode(transcript(20), compress=True))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (framed(b""), r"truncated compressed body: 0 bytes, shorter than its 5-byte header .* \(at byte 19\)"),
        (framed(b"\x01\x00"), r"truncated compressed body: 2 bytes"),
        (
            framed(payload(BLOCK_SIZE, BLOCK, algorithm=7)),
            r"unknown compression algorithm 7 \(this rillet reads 1, LZ4 block\).*upgrade rillet \(at byte 19\)",
        ),
        (
            framed(payload(BLOCK_SIZE + 1, BLOCK)),
            rf"decompresses to {BLOCK_SIZE} bytes, not the declared {BLOCK_SIZE + 1} \(at byte 24\)",
        ),
        (
            framed(payload(BLOCK_SIZE - 1, BLOCK)),
            rf"decompresses to more than the declared {BLOCK_SIZE - 1} bytes \(at byte 24\)",
        ),
        (framed(payload(BLOCK_SIZE, BLOCK[:-2])), r"corrupt or truncated LZ4 block \(.*\) \(at byte 24\)"),
        (framed(payload(10, b"\x10x\x00\x00")), r"corrupt or truncated LZ4 block \(a match has offset 0\)"),
        (framed(payload(BLOCK_SIZE, BLOCK))[:-5], r"truncated compressed body: expected bin data of"),
        (framed(payload(BLOCK_SIZE, BLOCK)) + b"\xc0", r"found 1 trailing bytes"),
        (HEAD + b"\x03\x90", r"expected the compressed body of a format-3 checkpoint \(a msgpack bin\)"),
        (HEAD + b"\x04\xc0", r"format version 4 is newer than this rillet reads \(3\); upgrade rillet"),
    ],
)
def test_malformed_compressed_checkpoints_raise_decode_error(data: bytes, expected: str) -> None:
    with pytest.raises(DecodeError, match=expected):
        decode(data)


def test_every_truncation_is_a_decode_error() -> None:
    data = encode(transcript(3), compress=True)
    for n in range(len(data)):
        with pytest.raises(DecodeError):
            decode(data[:n])


def test_every_single_byte_corruption_is_an_error_or_a_value() -> None:
    data = bytearray(encode(transcript(3), compress=True))
    for i in range(14, len(data)):
        for flip in (0x01, 0x80, 0xFF):
            corrupt = bytearray(data)
            corrupt[i] ^= flip
            try:
                decode(bytes(corrupt))
            except DecodeError as e:
                assert "internal error" not in str(e)


def test_a_bomb_is_refused_before_allocating() -> None:
    # 24 bytes declaring 4 GiB: refused by max_size, and with no size limit by what a
    # 5-byte block can hold; allocating would fail with MemoryError or be seen below.
    bomb = framed(payload(2**32 - 1, b"\x00" * 5))
    with pytest.raises(
        DecodeError, match=r"declares 4294967295 decompressed bytes, which exceeds max_size=1073741824 \(at byte 20\)"
    ):
        decode(bomb)
    with pytest.raises(DecodeError, match=r"more than its LZ4 block of 5 bytes can hold"):
        decode(bomb, max_size=sys.maxsize)


def test_a_bomb_does_not_allocate() -> None:
    # In a process that cannot map another 512 MiB, decoding 24 bytes that declare 4 GiB
    # with no size limit must fail cleanly: an attempted allocation would abort it instead.
    script = f"""
import resource, sys
from rillet import codec
with open("/proc/self/statm") as f:
    pages = int(f.read().split()[0])
room = pages * resource.getpagesize() + (512 << 20)
resource.setrlimit(resource.RLIMIT_AS, (room, room))
try:
    codec.decode({framed(payload(2**32 - 1, bytes(5)))!r}, max_size=sys.maxsize)
except codec.DecodeError as e:
    print("refused:", e)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "refused: compressed body declares 4294967295 decompressed bytes" in done.stdout


def test_max_size_bounds_the_decompressed_body() -> None:
    value = transcript(200)
    data = encode(value, compress=True)
    size, _ = split(data)
    assert len(data) < size
    with pytest.raises(DecodeError, match=rf"declares {size} decompressed bytes, which exceeds max_size={size - 1}"):
        decode(data, max_size=size - 1)
    assert decode(data, max_size=size) == value


def test_limits_apply_to_the_decompressed_body() -> None:
    data = encode(transcript(50), compress=True)
    with pytest.raises(DecodeError, match=r"more than max_items=20 values \(at byte \d+ of the decompressed body\)"):
        decode(data, max_items=20)
    with pytest.raises(DecodeError, match=r"of the decompressed body\)"):
        decode(data, max_depth=1)


def test_registry_errors_in_a_compressed_body_name_the_body_offset() -> None:
    @codec.register_type(name="test.compress.gone")
    class Gone:
        def to_state(self) -> int:
            return 1

        @classmethod
        def from_state(cls, state: int) -> Gone:
            return cls()

    data = encode([Gone()], compress=True)
    del codec._BY_NAME["test.compress.gone"]
    del codec._BY_TYPE[Gone]
    with pytest.raises(DecodeError, match=r"test\.compress\.gone.*\(at byte \d+ of the decompressed body\)"):
        decode(data)
    assert decode(data, unknown="placeholder") == [codec.Unknown("test.compress.gone", 1, 1)]
