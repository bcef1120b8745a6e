"""Shared pieces of the codec tests: an exact comparator and hypothesis strategies."""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import struct
import uuid
import zoneinfo
from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st


def canon(x: Any) -> Any:
    """A hashable picture of ``x`` that differs whenever the types, float bits, dict order
    or tz differ; ``canon(a) == canon(b)`` is exact equality, unlike ``a == b``."""
    t = type(x)
    if t is float:
        return ("float", struct.pack("<d", x))
    if t in (list, tuple):
        return (t.__name__, tuple(canon(i) for i in x))
    if t is dict:
        return ("dict", tuple((canon(k), canon(v)) for k, v in x.items()))
    if t in (set, frozenset):
        return (t.__name__, frozenset(Counter(canon(i) for i in x).items()))
    if t in (dt.datetime, dt.time):
        fields = x.isoformat(), x.fold
        return (t.__name__, fields, canon_tz(x.tzinfo))
    return (f"{t.__module__}.{t.__qualname__}", repr(x))


def canon_tz(tz: dt.tzinfo | None) -> Any:
    if tz is None:
        return None
    if type(tz) is zoneinfo.ZoneInfo:
        return ("zoneinfo", tz.key)
    return (type(tz).__name__, tz.utcoffset(None), tz.tzname(None))


def assert_identical(a: Any, b: Any) -> None:
    assert canon(a) == canon(b), f"{a!r} != {b!r}"


# Any float, including NaNs with payloads and signalling NaNs.
float_bits = st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0])
floats = st.floats() | float_bits
ints = st.integers() | st.integers(min_value=-(2**300), max_value=2**300)
# Text that may contain lone surrogates (st.text() never generates them).
texts = st.text() | st.text(st.characters() | st.characters(categories=["Cs"]), max_size=20)
fixed_offsets = st.timedeltas(min_value=dt.timedelta(hours=-23), max_value=dt.timedelta(hours=23)).map(dt.timezone)
named_offsets = st.builds(
    dt.timezone,
    st.timedeltas(min_value=dt.timedelta(hours=-23), max_value=dt.timedelta(hours=23)),
    st.text(min_size=1, max_size=5),
)
tzs = st.none() | st.just(dt.timezone.utc) | fixed_offsets | named_offsets | st.timezones()

hashable_atoms = (
    st.none()
    | st.booleans()
    | ints
    | floats
    | texts
    | st.binary()
    | st.datetimes(timezones=tzs, allow_imaginary=True)
    | st.dates()
    | st.times(timezones=tzs)
    | st.timedeltas()
    | st.uuids()
    | st.decimals(allow_nan=False, allow_infinity=True)
)
# Signalling NaN decimals cannot be hashed, so they only appear as values.
atoms = hashable_atoms | st.decimals(allow_nan=True)
hashables = st.recursive(hashable_atoms, lambda c: st.tuples(c, c) | st.frozensets(c, max_size=3), max_leaves=6)
values = st.recursive(
    atoms,
    lambda c: (
        st.lists(c, max_size=5)
        | st.lists(c, max_size=4).map(tuple)
        | st.dictionaries(hashables, c, max_size=5)
        | st.sets(hashables, max_size=4)
        | st.frozensets(hashables, max_size=4)
    ),
    max_leaves=30,
)


class Color(enum.Enum):
    RED = "r"
    GREEN = "g"


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    label: str = ""


def golden_values() -> dict[str, Any]:
    """The values behind tests/support/golden/v1/*.bin. Never change them: add new ones instead."""
    return {
        "scalars": [
            None,
            True,
            False,
            0,
            -1,
            127,
            -33,
            2**63 - 1,
            -(2**63),
            2**64 - 1,
            2**64,
            -(2**100),
            1.5,
            -0.0,
            float("inf"),
            float("-inf"),
            struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_0ABC))[0],
        ],
        "text": ["", "ascii", "héllo wörld ✓ 你好 🎉", "lone \ud800 surrogate", "x" * 40, b"\x00\xffbytes"],
        "containers": {
            "list": [1, [2, [3]]],
            (1, "tuple key"): (1, (2,), ()),
            "set": {1, 2, 3},
            "frozenset": frozenset({4, 5}),
            7: {"nested": {"dict": None}},
        },
        "stdlib": [
            dt.datetime(2026, 11, 30, 19, 10, 5, 123456),
            dt.datetime(2026, 11, 30, 19, 10, tzinfo=dt.timezone.utc),
            dt.datetime(2026, 11, 30, 19, 10, tzinfo=dt.timezone(dt.timedelta(hours=-5, minutes=-30))),
            dt.datetime(2026, 11, 30, tzinfo=dt.timezone(dt.timedelta(hours=1), "CET")),
            dt.datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=zoneinfo.ZoneInfo("America/New_York")),
            dt.date(2024, 2, 29),
            dt.time(23, 59, 59, 999999, tzinfo=dt.timezone.utc),
            dt.timedelta(days=-1, seconds=5, microseconds=6),
            uuid.UUID("12345678-1234-5678-1234-567812345678"),
            decimal.Decimal("-1.50E+3"),
            decimal.Decimal("NaN"),
        ],
        "registered": {"color": Color.GREEN, "point": Point(1.0, -2.5, "p")},
        "messages": golden_messages(),
        "records": golden_records(),
        "content_parts": golden_content_parts(),
    }


def golden_content_parts() -> list[Any]:
    """Images from bytes (data URLs) and file parts, as user messages and on their own."""
    from rillet import ContentPart, Message

    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    image = ContentPart.image(png, detail="low")
    inline = ContentPart.file(b"%PDF-1.7\n", filename="report.pdf")
    stored = ContentPart.file(file_id="file-abc123", filename="notes.txt")
    return [
        Message.user(["Compare these.", image, inline, stored]),
        Message(role="tool", content="the screen:", tool_call_id="call_1", user_input_multi_content=[image]),
        [image, inline, stored],
    ]


def golden_records() -> list[Any]:
    """Repeated strings and dict shapes: format 2 writes them as table definitions and
    references (plain maps and strs in format 1)."""
    rows = [
        {"role": role, "content": f"turn {i}", "usage": {"input_tokens": i, "output_tokens": 2 * i}}
        for i, role in enumerate(["user", "assistant", "user", "assistant"])
    ]
    return [rows, {"role": "user", "extra": ["assistant", "assistant"]}, ("usage", "usage", "usage")]


def golden_messages() -> list[Any]:
    """rillet's own types as checkpoints hold them (the state shapes of version 1)."""
    from rillet import ContentPart, FunctionCall, Message, ResponseMeta, ToolCall, Usage

    return [
        Message.system("You are terse."),
        Message(
            role="user",
            user_input_multi_content=[
                ContentPart("what is this?"),
                ContentPart(image_url="https://example.invalid/a.png", detail="low"),
            ],
        ),
        Message(
            role="assistant",
            content="Checking.",
            reasoning_content="needs a tool",
            tool_calls=[
                ToolCall(index=0, id="call_1", function=FunctionCall("weather", '{"city":"Paris"}'), extra={"k": 1})
            ],
            response_meta=ResponseMeta("tool_calls", Usage(10, 20, 30, 4, 5)),
            extra={"trace": "abc"},
        ),
        Message.tool_message('{"temp": 21}', "call_1", tool_name="weather"),
    ]


@dataclass
class User:
    """Version 2 of "golden.user": version 1 had a single ``name`` field."""

    first: str
    last: str


def migrate_user(state: dict[str, Any], version: int) -> dict[str, Any]:
    assert version == 1
    first, _, last = state["name"].partition(" ")
    return {"first": first, "last": last}


def register_golden_types() -> None:
    from rillet import codec

    if "golden.point" not in codec._BY_NAME:
        codec.register_type(Color, name="golden.color")
        codec.register_type(Point, name="golden.point")
        codec.register_type(User, name="golden.user", version=2, migrate=migrate_user)


register_golden_types()
