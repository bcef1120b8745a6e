"""Format 2: repeated strings and dict shapes are written once and referred back to.

The tables are invisible to users: whatever mix of repeats, aliases and temporaries a value
holds, decoding gives back exactly the value, and format 1 stays available for old readers.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet import codec
from rillet.data.codec import DecodeError, decode, encode, register_type
from support.codec_helpers import assert_identical, values

# Few distinct keys and strings, so shapes and strings repeat often.
keys = st.sampled_from(["role", "content", "id", "tool_calls", "usage", "a", "é😀"])
words = st.sampled_from(["assistant", "user", "tool", "search", "x", "", "naïve ☕", "🎉🎉🎉🎉"])
leaves = words | st.integers(-3, 300) | st.none() | st.floats(allow_nan=False)
repetitive = st.recursive(
    leaves,
    lambda c: st.lists(c, max_size=6) | st.dictionaries(keys, c, max_size=5) | st.lists(c, max_size=3).map(tuple),
    max_leaves=60,
)


@pytest.mark.slow  # 300 examples: in make test, not the quick loop
@settings(max_examples=300, deadline=None)
@given(st.lists(repetitive, min_size=1, max_size=8))
def test_repetitive_values_round_trip_exactly(value: Any) -> None:
    assert_identical(decode(encode(value)), value)
    assert_identical(decode(encode(value, format_version=1)), value)


@settings(max_examples=100, deadline=None)
@given(values)
def test_format_2_is_never_larger_than_format_1_by_much(value: Any) -> None:
    # A value seen twice costs one definition header (at most 2 bytes) more than plain.
    v1, v2 = encode(value, format_version=1), encode(value)
    assert len(v2) <= len(v1) * 1.25 + 8


def test_aliased_objects_round_trip() -> None:
    row = {"role": "assistant", "content": "hi"}
    text = "shared text " * 10
    value = [row, row, row, [text, text], {"k": text}, row]
    assert_identical(decode(encode(value)), value)


def test_shapes_are_matched_by_key_order() -> None:
    value = [{"a": 1, "b": 2}, {"b": 3, "a": 4}, {"a": 5, "b": 6}, {"b": 7, "a": 8}]
    out = decode(encode(value))
    assert [list(d.items()) for d in out] == [list(d.items()) for d in value]


class Temp:
    """to_state returns fresh dicts with fresh key strings each time: objects the encoder
    sees once and that die right after, whose addresses Python may reuse."""

    def __init__(self, i: int) -> None:
        self.i = i

    def to_state(self) -> dict[str, Any]:
        return {"".join(["fi", "eld"]) + str(self.i % 3): "".join(["val", "ue"]) * (self.i % 4 + 1)}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> dict[str, Any]:
        return state


register_type(Temp, name="test.format2.temp")


def test_temporaries_from_hooks_never_alias() -> None:
    out = decode(encode([Temp(i) for i in range(300)]))
    assert out == [Temp(i).to_state() for i in range(300)]


def test_a_hook_that_mutates_a_dict_being_written_gets_its_snapshot() -> None:
    # Dicts written with the tables are copied (keys and values held strongly) before any
    # hook can run: a hook that swaps a key mid-way neither crashes nor mixes key and value.
    rows: list[dict[str, Any]] = [{"a": 1, "b": 2} for _ in range(3)]

    class Swapper:
        def to_state(self) -> int:
            del rows[2]["b"]
            rows[2]["c"] = 0
            return 0

        @classmethod
        def from_state(cls, state: object) -> str:
            return "swapper"

    register_type(Swapper, name="test.format2.swapper")
    rows[2]["a"] = Swapper()
    assert decode(encode(rows))[2] == {"a": "swapper", "b": 2}


def test_format_1_has_no_tables_and_unknown_versions_are_refused() -> None:
    value = [{"role": "assistant"}] * 4
    v1 = encode(value, format_version=1)
    assert v1[13] == 1 and v1.count(b"assistant") == 4
    assert encode(value)[13] == 2 and encode(value).count(b"assistant") == 2
    with pytest.raises(ValueError, match="format_version must be 1 or 2, got 3"):
        encode(value, format_version=3)
    assert codec.FORMAT_VERSION == 2


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"\xd4\x0e\x00", "string reference 0 comes before its definition"),
        (b"\x92\x01\xd4\x10\x00", "only allowed as the first element of an array"),
        (b"\x93\xd6\x0f\x91\xa2id\x01\x02", "expected a record of 1 values"),
    ],
)
def test_malformed_tables_raise_decode_error(body: bytes, expected: str) -> None:
    with pytest.raises(DecodeError, match=expected):
        decode(b"\x93\xabrillet-ckpt\x02" + body)
