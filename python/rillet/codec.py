"""Checkpoint codec: exact, safe and versioned binary encoding of Python values.

``encode(obj)`` writes MessagePack inside the envelope ``["rillet-ckpt", 2, body]`` (see
docs/checkpoint-format.md); ``decode(data)`` reads it back with the exact types, under limits,
and is safe on untrusted bytes: it only ever builds builtins, a few stdlib values and the
classes registered here. It never imports or calls anything named by the data.

Register your own classes once, at import time, under a stable name (never an import path)::

    @dataclass
    class Cart:
        items: list[str]

    register_type(Cart, name="shop.cart")

A type's version travels with each object; decoding an older version first runs its
``migrate(state, old_version)`` function, which returns the state of the current version.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from rillet import _native
from rillet._native import DecodeError, EncodeError

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_ITEMS",
    "DEFAULT_MAX_SIZE",
    "DecodeError",
    "EncodeError",
    "FORMAT_VERSION",
    "decode",
    "encode",
    "register_type",
]

FORMAT_VERSION = 2
DEFAULT_MAX_DEPTH = 512
DEFAULT_MAX_SIZE = 1 << 30
DEFAULT_MAX_ITEMS = 1 << 26

T = TypeVar("T", bound=type)
State = Any
ToState = Callable[[Any], State]
FromState = Callable[[State], Any]
Migrate = Callable[[State, int], State]

# type -> (name, version, to_state, state_is_fields): read by the Rust encoder.
_BY_TYPE: dict[type, tuple[str, int, ToState, bool]] = {}
# name -> (version, from_state, migrate): read by the Rust decoder.
_BY_NAME: dict[str, tuple[int, FromState, Migrate | None]] = {}

# Classes the codec already encodes exactly; registering them would be ambiguous.
_BUILTIN = (
    type(None), bool, int, float, str, bytes, list, tuple, dict, set, frozenset,
    datetime.datetime, datetime.date, datetime.time, datetime.timedelta, uuid.UUID, decimal.Decimal,
)


def encode(
    obj: object, *, max_depth: int = DEFAULT_MAX_DEPTH, format_version: int = FORMAT_VERSION
) -> bytes:
    """Encodes ``obj`` as checkpoint bytes; raises EncodeError naming the path to any value
    that cannot be encoded (an unregistered class, a reference cycle...).

    Format 2 (the default) writes each repeated string and each repeated set of dict keys
    once and refers back to it; format 1 is plain MessagePack with no back-references, for
    readers that predate format 2. ``decode`` reads both.
    """
    if format_version not in (1, FORMAT_VERSION):
        raise ValueError(f"format_version must be 1 or {FORMAT_VERSION}, got {format_version!r}")
    return _native.codec_encode(obj, _BY_TYPE, max_depth, format_version)


def decode(
    data: bytes | bytearray | memoryview,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_size: int = DEFAULT_MAX_SIZE,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> Any:
    """Decodes checkpoint bytes. Raises DecodeError (a ValueError) with the byte offset and
    what was expected when the input is malformed, breaks a limit, or names an unknown type.

    ``max_depth`` bounds container nesting, ``max_size`` the input length in bytes and
    ``max_items`` the number of values.
    """
    if type(data) is not bytes:
        data = bytes(data)  # a private immutable copy: hooks run while decoding
    for name, limit in (("max_depth", max_depth), ("max_size", max_size), ("max_items", max_items)):
        if limit < 0:
            raise ValueError(f"{name} must be >= 0, got {limit}")
    return _native.codec_decode(data, _BY_NAME, max_depth, max_size, max_items)


def register_type(
    cls: T,
    name: str,
    version: int = 1,
    migrate: Migrate | None = None,
    *,
    to_state: ToState | None = None,
    from_state: FromState | None = None,
) -> T:
    """Makes ``cls`` encodable under the stable ``name``; returns ``cls``.

    How its state is taken and given back, in order of precedence:

    * explicit ``to_state(obj) -> state`` and ``from_state(state) -> obj`` callables;
    * an Enum: the member's name;
    * a dataclass or an attrs class: a dict of its fields (built back through ``cls(...)``,
      so validation runs; unknown fields are ignored, missing ones take their defaults);
    * a class defining ``to_state(self)`` and a classmethod ``from_state(cls, state)``.

    ``version`` (>= 1) is written with every object. Decoding an older version calls
    ``migrate(state, old_version)`` first; a newer version than registered is an error.
    """
    _check_registration(cls, name, version, migrate)
    if (to_state is None) != (from_state is None):
        raise TypeError("pass both to_state and from_state, or neither")
    fields = False
    if to_state is None or from_state is None:
        to_state, from_state, fields = _protocol(cls)
    _BY_TYPE[cls] = (name, version, to_state, fields)
    _BY_NAME[name] = (version, from_state, migrate)
    return cls


def _check_registration(cls: type, name: str, version: int, migrate: Migrate | None) -> None:
    if not isinstance(cls, type):
        raise TypeError(f"register_type expects a class, got {cls!r}")
    if cls in _BUILTIN:
        raise TypeError(f"{cls.__name__} is encoded natively and cannot be registered")
    if not isinstance(name, str) or not name:
        raise TypeError(f"the name must be a non-empty str, got {name!r}")
    if type(version) is not int or version < 1:
        raise ValueError(f"version must be an int >= 1, got {version!r}")
    if migrate is not None and not callable(migrate):
        raise TypeError(f"migrate must be callable, got {migrate!r}")
    if name in _BY_NAME:
        raise ValueError(f"the codec name {name!r} is already registered; names must be unique")
    if cls in _BY_TYPE:
        other = _BY_TYPE[cls][0]
        raise ValueError(f"{cls.__qualname__} is already registered under the name {other!r}")


def _protocol(cls: type) -> tuple[ToState, FromState, bool]:
    if issubclass(cls, enum.Enum):
        return _enum_codec(cls)
    if dataclasses.is_dataclass(cls):
        fields = dataclasses.fields(cls)
        return _fields_codec(cls, [(f.name, f.name, f.init) for f in fields])
    attrs = getattr(cls, "__attrs_attrs__", None)
    if attrs is not None:
        specs = [(a.name, getattr(a, "alias", None) or a.name.lstrip("_"), a.init) for a in attrs]
        return _fields_codec(cls, specs)
    to_state = getattr(cls, "to_state", None)
    from_state = getattr(cls, "from_state", None)
    if callable(to_state) and callable(from_state):
        return to_state, from_state, False
    raise TypeError(
        f"cannot register {cls.__qualname__}: it is not an Enum, a dataclass or an attrs class, "
        "and has no to_state()/from_state() methods; pass to_state= and from_state="
    )


def _enum_codec(cls: type[enum.Enum]) -> tuple[ToState, FromState, bool]:
    def from_state(state: State) -> enum.Enum:
        if type(state) is not str or state not in cls.__members__:
            raise ValueError(f"{state!r} is not a member of {cls.__qualname__}")
        return cls[state]

    return (lambda member: member.name), from_state, False


def _fields_codec(cls: type, specs: list[tuple[str, str, bool]]) -> tuple[ToState, FromState, bool]:
    """``specs`` lists (attribute, init argument, set by __init__) for each field."""
    names = tuple(attr for attr, _, _ in specs)
    init = tuple((attr, arg) for attr, arg, in_init in specs if in_init)
    late = tuple(attr for attr, _, in_init in specs if not in_init)

    def to_state(obj: object) -> dict[str, Any]:
        return {n: getattr(obj, n) for n in names}

    def from_state(state: State) -> object:
        if type(state) is not dict:
            raise TypeError(f"expected a dict of fields for {cls.__qualname__}, got {type(state).__name__}")
        obj = cls(**{arg: state[attr] for attr, arg in init if attr in state})
        for attr in late:
            if attr in state:
                object.__setattr__(obj, attr, state[attr])
        return obj

    return to_state, from_state, True


def _register_rillet_types() -> None:
    """rillet's own message types, under stable names, so every checkpoint can hold them.

    A Message, ToolCall or ContentPart travels as its exact chat-completions dict; the small
    value types as a list of their fields. Changing a state's shape needs a new version.
    """
    from rillet._native import ContentPart, FunctionCall, Message, ResponseMeta, ToolCall, Usage

    for cls in (Message, ToolCall, ContentPart):
        register_type(cls, f"rillet.{cls.__name__}", to_state=cls.to_dict, from_state=cls.from_dict)

    def fields_of(*names: str) -> Callable[[Any], list[Any]]:
        return lambda obj: [getattr(obj, n) for n in names]

    register_type(
        FunctionCall,
        "rillet.FunctionCall",
        to_state=fields_of("name", "arguments"),
        from_state=lambda s: FunctionCall(*s),
    )
    register_type(
        Usage,
        "rillet.Usage",
        to_state=fields_of("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "reasoning_tokens"),
        from_state=lambda s: Usage(*s),
    )
    register_type(
        ResponseMeta,
        "rillet.ResponseMeta",
        to_state=fields_of("finish_reason", "usage"),
        from_state=lambda s: ResponseMeta(*s),
    )


_register_rillet_types()
