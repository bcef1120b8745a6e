"""Differential tests against the stock `msgpack` package: the wire format is plain msgpack
with the ext types of docs/checkpoint-format.md, so a ~50-line reader and writer built on
msgpack's hooks (the executable spec below) must agree with rillet in both directions."""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid
import zoneinfo
from typing import Any

import lz4.block
import msgpack
from hypothesis import given, settings
from rillet.data.codec import decode, encode
from support.codec_helpers import Point, assert_identical, values

MAGIC, VERSION = "rillet-ckpt", 1


def _tz(v: Any) -> dt.tzinfo | None:
    if v is None:
        return None
    if isinstance(v, int):
        return dt.timezone(dt.timedelta(seconds=v))
    if isinstance(v, str):
        return zoneinfo.ZoneInfo(v)
    seconds, micros, name = v
    offset = dt.timedelta(seconds=seconds, microseconds=micros)
    return dt.timezone(offset) if name is None else dt.timezone(offset, name)


class _Shape:
    """A record's keys, as the first element of its array (format 2)."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys


class Reader:
    """Format 2's tables: definitions are numbered in the order a reader meets them, which
    is the order msgpack calls its hooks in."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.shapes: list[list[str]] = []

    def unpack(self, payload: bytes) -> Any:
        return msgpack.unpackb(
            payload, ext_hook=self.ext_hook, list_hook=self.list_hook, strict_map_key=False, raw=False
        )

    def list_hook(self, items: list[Any]) -> Any:
        if items and type(items[0]) is _Shape:
            return dict(zip(items[0].keys, items[1:], strict=True))
        return items

    def ext_hook(self, code: int, payload: bytes) -> Any:
        def items() -> Any:
            return self.unpack(payload)

        index = int.from_bytes(payload, "big")
        match code:
            case 1:
                return tuple(items())
            case 2:
                return (-1 if payload[0] else 1) * int.from_bytes(payload[1:], "big")
            case 3:
                return set(items())
            case 4:
                return frozenset(items())
            case 5:
                return ("object", *items())
            case 6:
                return payload.decode("utf-8", "surrogatepass")
            case 7:
                *fields, fold, tz = items()
                return dt.datetime(*fields, fold=fold, tzinfo=_tz(tz))
            case 8:
                return dt.date(*items())
            case 9:
                *fields, fold, tz = items()
                return dt.time(*fields, fold=fold, tzinfo=_tz(tz))
            case 10:
                return dt.timedelta(*items())
            case 11:
                return uuid.UUID(bytes=payload)
            case 12:
                return decimal.Decimal(payload.decode("ascii"))
            case 13:
                self.strings.append(payload.decode("utf-8"))
                return self.strings[-1]
            case 14:
                return self.strings[index]
            case 15:
                self.shapes.append(msgpack.unpackb(payload, raw=False))
                return _Shape(self.shapes[-1])
            case 16:
                return _Shape(self.shapes[index])
        raise ValueError(f"unknown ext type {code}")


def reference_decode(data: bytes) -> Any:
    magic, version, body = Reader().unpack(data)
    assert magic == MAGIC and version in (1, 2, 3)
    if version == 3:
        # The bin payload: algorithm 1 (LZ4 block), the u32 size, then a format-2 body.
        algorithm, size = struct.unpack(">BI", body[:5])
        assert algorithm == 1
        return Reader().unpack(lz4.block.decompress(body[5:], uncompressed_size=size))
    return body


def _ext(code: int, items: Any) -> msgpack.ExtType:
    return msgpack.ExtType(code, reference_pack(items))


def _prepare(o: Any) -> Any:
    """What msgpack's packer cannot hand to `default`: big ints and lone surrogates."""
    t = type(o)
    if t is int and not -(2**63) <= o < 2**64:
        return msgpack.ExtType(2, bytes([o < 0]) + abs(o).to_bytes((abs(o).bit_length() + 7) // 8, "big"))
    if t is str:
        try:
            o.encode("utf-8")
        except UnicodeEncodeError:
            return msgpack.ExtType(6, o.encode("utf-8", "surrogatepass"))
    if t is list:
        return [_prepare(i) for i in o]
    if t is dict:
        return {_prepare(k): _prepare(v) for k, v in o.items()}
    return o


def _default(o: Any) -> Any:
    simple = {tuple: 1, set: 3, frozenset: 4}
    if type(o) in simple:
        return _ext(simple[type(o)], list(o))
    if type(o) is dt.datetime:
        return _ext(7, [o.year, o.month, o.day, o.hour, o.minute, o.second, o.microsecond, o.fold, _ref_tz(o.tzinfo)])
    if type(o) is dt.date:
        return _ext(8, [o.year, o.month, o.day])
    if type(o) is dt.time:
        return _ext(9, [o.hour, o.minute, o.second, o.microsecond, o.fold, _ref_tz(o.tzinfo)])
    if type(o) is dt.timedelta:
        return _ext(10, [o.days, o.seconds, o.microseconds])
    if type(o) is uuid.UUID:
        return msgpack.ExtType(11, o.bytes)
    if type(o) is decimal.Decimal:
        return msgpack.ExtType(12, str(o).encode("ascii"))
    if type(o) is Point:
        return _ext(5, ["golden.point", 1, {"x": o.x, "y": o.y, "label": o.label}])
    raise TypeError(type(o))


def _ref_tz(tz: dt.tzinfo | None) -> Any:
    if tz is None or type(tz) is zoneinfo.ZoneInfo:
        return tz and tz.key  # type: ignore[union-attr]
    offset, name = tz.utcoffset(None), tz.tzname(None)
    assert offset is not None
    seconds = offset.days * 86400 + offset.seconds
    if offset.microseconds == 0 and name == dt.timezone(offset).tzname(None):
        return seconds
    return [seconds, offset.microseconds, None if name == dt.timezone(offset).tzname(None) else name]


def reference_pack(obj: Any) -> bytes:
    return msgpack.packb(_prepare(obj), default=_default, strict_types=True, use_bin_type=True, use_single_float=False)


def reference_encode(obj: Any) -> bytes:
    return reference_pack([MAGIC, VERSION, obj])


def reference_encode_compressed(obj: Any) -> bytes:
    """Format 3 around a (format-1 style) body: plain msgpack is a valid format-2 body."""
    body = reference_pack(obj)
    block = lz4.block.compress(body, store_size=False)
    return reference_pack([MAGIC, 3, struct.pack(">BI", 1, len(body)) + block])


@settings(max_examples=200, deadline=None)
@given(values)
def test_stock_msgpack_reads_what_rillet_writes(value: Any) -> None:
    assert_identical(reference_decode(encode(value)), value)


@settings(max_examples=100, deadline=None)
@given(values)
def test_stock_msgpack_reads_format_1(value: Any) -> None:
    assert_identical(reference_decode(encode(value, format_version=1)), value)


def test_stock_msgpack_reads_shared_strings_and_records() -> None:
    rows = [{"role": "user", "content": f"hello {i}", "meta": {"model": "gpt-x", "n": i}} for i in range(5)]
    value = {"rows": rows, "tags": ["alpha", "alpha", ("alpha", "beta")], "again": {"role": "user"}}
    data = encode(value)
    # the keys of {"model", "n"}: in full in the first map, in the shape definition of the
    # second, then only as a shape reference
    assert data.count(b"model") == 2
    assert_identical(reference_decode(data), value)


@settings(max_examples=100, deadline=None)
@given(values)
def test_stock_msgpack_and_lz4_read_format_3(value: Any) -> None:
    assert_identical(reference_decode(encode(value, compress=True)), value)


@settings(max_examples=100, deadline=None)
@given(values)
def test_rillet_reads_format_3_from_the_lz4_c_library(value: Any) -> None:
    assert_identical(decode(reference_encode_compressed(value)), value)


@settings(max_examples=200, deadline=None)
@given(values)
def test_rillet_reads_what_stock_msgpack_writes(value: Any) -> None:
    assert_identical(decode(reference_encode(value)), value)


def test_registered_objects_are_name_version_state() -> None:
    point = Point(1.0, 2.0, "p")
    assert reference_decode(encode(point)) == ("object", "golden.point", 1, {"x": 1.0, "y": 2.0, "label": "p"})
    assert decode(reference_encode(point)) == point


def test_edge_values_agree_both_ways() -> None:
    for value in ["lone \ud800", 2**70, -(2**70), 2**64 - 1, -(2**63), (1, "a"), float("-nan")]:
        assert_identical(reference_decode(encode(value)), value)
        assert_identical(decode(reference_encode(value)), value)
