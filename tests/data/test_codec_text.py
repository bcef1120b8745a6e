"""Decoding str: the decoder builds each str at its final width (ASCII, Latin-1, UCS-2 or
UCS-4) itself, so these check that the result is exactly the str CPython's own UTF-8 decoder
makes, and that invalid UTF-8 fails exactly as it did when CPython decoded it."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet.data.codec import DecodeError, decode, encode

HEAD = b"\x93\xabrillet-ckpt\x01"

ascii_chars = st.characters(max_codepoint=0x7F)
latin1_chars = st.characters(min_codepoint=0x80, max_codepoint=0xFF)
# Surrogates (category Cs) are excluded: lone surrogates take the ext 6 path.
bmp_chars = st.characters(min_codepoint=0x100, max_codepoint=0xFFFF, exclude_categories=["Cs"])
astral_chars = st.characters(min_codepoint=0x10000)
any_chars = ascii_chars | latin1_chars | bmp_chars | astral_chars
# Long ASCII runs between wide chars, as in chat text, cross the decoder's 16-byte steps.
words = st.text(any_chars, max_size=3) | st.text(ascii_chars, min_size=10, max_size=40)
texts = st.text() | st.text(any_chars) | st.lists(words, max_size=20).map("".join)


def assert_same_str(got: Any, expected: str) -> None:
    assert type(got) is str
    # CPython compares strs of different widths as unequal, so this also checks the width
    # for Latin-1, UCS-2 and UCS-4; ASCII and Latin-1 share a width, so check that flag too.
    assert got == expected
    assert got.isascii() == all(ord(c) < 0x80 for c in got)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_str_round_trips(s: str) -> None:
    assert_same_str(decode(encode(s)), s)


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, max_size=8))
def test_str_keys_and_values_round_trip(strs: list[str]) -> None:
    value = {s: s for s in strs}
    got = decode(encode(value))
    assert list(got) == list(value)
    for k, v in got.items():
        assert_same_str(k, v)


@pytest.mark.parametrize(
    "s",
    [
        "",
        "é",
        "\x80",
        "\xff" * 17,
        "✓",
        "\uffff",
        "🎉",
        "\U0010ffff",
        "naïve café, ÿ" * 3,
        "检索 结果 ✓ and more ascii text",
        "the agent 🎉 calls 检索 a tool ✓ " * 20,
        "x" * 100_000,
        "é" * 100_000,
        "检" * 100_000,
        "🎉" * 100_000,
        ("the agent 检索 结果 🎉 ✓ héllo " * 4000)[:100_000],
    ],
    ids=lambda s: f"{s[:12]!r}:{len(s)}",
)
def test_str_of_every_width_and_length(s: str) -> None:
    got = decode(encode([s, {s: s}]))
    assert_same_str(got[0], s)
    ((key, value),) = got[1].items()
    assert_same_str(key, s)
    assert_same_str(value, s)


def str_head(n: int) -> bytes:
    """A msgpack str header for n bytes."""
    if n < 32:
        return bytes([0xA0 | n])
    if n < 256:
        return bytes([0xD9, n])
    return b"\xda" + struct.pack(">H", n)


INVALID = [
    b"\xed\xa0",  # a surrogate's first two bytes
    b"\xed\xa0\x80",  # U+D800, a surrogate (strict UTF-8 refuses it)
    b"\xc0\x80",  # overlong NUL
    b"\xe0\x80\xaf",  # overlong '/'
    b"\xf4\x90\x80\x80",  # beyond U+10FFFF
    b"\xf5\x80\x80\x80",
    b"\x80",  # a lone continuation byte
    b"\xc3\x28",
    b"\xe6\xa3",  # a truncated 3-byte char
    b"x" * 40 + b"\xff" + "检".encode(),
    "🎉".encode() * 20 + b"\xf0\x9f\x8e",
]


@pytest.mark.parametrize("raw", INVALID, ids=lambda b: f"{b[:12]!r}:{len(b)}")
def test_invalid_utf8_raises_decode_error(raw: bytes) -> None:
    with pytest.raises(UnicodeDecodeError) as expected:
        raw.decode("utf-8")
    data = HEAD + str_head(len(raw)) + raw
    with pytest.raises(DecodeError, match=r"expected a UTF-8 str \(at byte 14\)") as got:
        decode(data)
    # CPython's own decoder still raises the cause: same message and position.
    assert type(got.value.__cause__) is UnicodeDecodeError
    assert str(got.value.__cause__) == str(expected.value)


def test_invalid_utf8_from_the_format_doc() -> None:
    with pytest.raises(DecodeError, match="UTF-8"):
        decode(b"\x93\xabrillet-ckpt\x01\xa2\xed\xa0")


@settings(max_examples=500, deadline=None)
@given(
    st.binary(max_size=60)
    | st.lists(
        st.sampled_from([b"a" * 20, b"\x80", b"\xc3\xa9", b"\xed\xa0\x80", "检".encode(), "🎉".encode(), b"\xf4\x90"]),
        max_size=8,
    ).map(b"".join)
)
def test_any_bytes_decode_like_cpython_strict(raw: bytes) -> None:
    data = HEAD + str_head(len(raw)) + raw
    try:
        expected = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        with pytest.raises(DecodeError) as got:
            decode(data)
        assert str(got.value.__cause__) == str(e)
    else:
        assert_same_str(decode(data), expected)
