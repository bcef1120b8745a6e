"""Checkpoint codec: exact, safe and versioned binary encoding of Python values.

``encode(obj)`` writes MessagePack inside the envelope ``["rillet-ckpt", 2, body]`` (see
docs/checkpoint-format.md); ``encode(obj, compress=True)`` compresses that body with LZ4 into
``["rillet-ckpt", 3, compressed]``, about a third of the size. ``decode(data)`` reads either
back with the exact types, under limits, and is safe on untrusted bytes: it only ever builds
builtins, a few stdlib values and the classes registered here. It never imports or calls
anything named by the data.

Register your own classes once, at import time, under a stable name (never an import path)::

    @register_type(name="shop.cart")
    @dataclass
    class Cart:
        items: list[str]

(``register_type(Cart, name="shop.cart")`` does the same.) Registering the same class under
the same name again, or a class with the same module and qualified name (the new class of a
reloaded module or a re-run notebook cell), replaces the registration instead of failing.

A type's version travels with each object; decoding an older version first runs its
``migrate(state, old_version)`` function, which returns the state of the current version.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import io
import types
from collections.abc import Callable
from typing import Any, Literal, TypeVar, overload

from rillet import _native
from rillet._native import (
    AgenticMessage,
    ContentBlock,
    ContentPart,
    FunctionCall,
    Message,
    ResponseMeta,
    ToolCall,
    Usage,
)
from rillet.errors import DecodeError, EncodeError

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_ITEMS",
    "DEFAULT_MAX_SIZE",
    "DecodeError",
    "COMPRESSED_FORMAT_VERSION",
    "EncodeError",
    "FORMAT_VERSION",
    "MAX_DEPTH_LIMIT",
    "Unknown",
    "decode",
    "encode",
    "register_type",
]

FORMAT_VERSION = 2
# What encode(..., compress=True) writes: a format-2 body compressed with LZ4.
COMPRESSED_FORMAT_VERSION = 3
DEFAULT_MAX_DEPTH = 512
DEFAULT_MAX_SIZE = 1 << 30
DEFAULT_MAX_ITEMS = 1 << 26
# The largest max_depth encode and decode accept. Both walk with a stack on the heap, so any
# depth up to this is safe, on any thread stack; it bounds what a mistaken argument costs.
MAX_DEPTH_LIMIT = 100_000

T = TypeVar("T", bound=type)
State = Any
ToState = Callable[[Any], State]
FromState = Callable[[State], Any]
Migrate = Callable[[State, int], State]

# type -> (name, version, to_state, state_is_fields): read by the Rust encoder. A to_state of
# None marks rillet's own message types, which the encoder writes from their Rust fields.
_BY_TYPE: dict[type, tuple[str, int, ToState | None, bool]] = {}
# name -> (version, from_state, migrate): read by the Rust decoder. A from_state of None marks
# rillet's own message types, which the decoder builds natively.
_BY_NAME: dict[str, tuple[int, FromState | None, Migrate | None]] = {}

# Classes the codec already encodes exactly; registering them would be ambiguous. The stdlib
# ones by module and name, so that importing the codec does not import datetime, uuid and decimal.
_BUILTIN = (type(None), bool, int, float, str, bytes, list, tuple, dict, set, frozenset)
_BUILTIN_STDLIB = frozenset(
    [("datetime", n) for n in ("datetime", "date", "time", "timedelta")] + [("uuid", "UUID"), ("decimal", "Decimal")]
)


def _encoded_natively(cls: type) -> bool:
    return cls in _BUILTIN or (cls.__module__, cls.__qualname__) in _BUILTIN_STDLIB


def encode(
    obj: object,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    format_version: int = FORMAT_VERSION,
    compress: bool = False,
) -> bytes:
    """Encodes ``obj`` as checkpoint bytes; raises EncodeError naming the path to any value
    that cannot be encoded (an unregistered class, a reference cycle...) and what to do.

    ``max_depth`` (0 to MAX_DEPTH_LIMIT) bounds container nesting. Format 2 (the default)
    writes each repeated string and each repeated set of dict keys once and refers back to
    it; format 1 is plain MessagePack with no back-references, for readers that predate
    format 2. ``compress=True`` writes format 3 (COMPRESSED_FORMAT_VERSION): the format-2
    body compressed with LZ4, typically a third of the bytes for well under a millisecond
    per 300 kB; rillet before format 3 refuses it, asking to upgrade. It needs format 2, so
    ``format_version=1`` with ``compress=True`` is a ValueError. ``decode`` reads all three.
    """
    if format_version not in (1, FORMAT_VERSION):
        hint = " (format 3 is written by compress=True)" if format_version == COMPRESSED_FORMAT_VERSION else ""
        raise ValueError(f"format_version must be 1 or {FORMAT_VERSION}, got {format_version!r}{hint}")
    if type(compress) is not bool:
        raise TypeError(f"compress must be True or False, got {compress!r}")
    _check_max_depth(max_depth)
    return _native.codec_encode(obj, _BY_TYPE, max_depth, format_version, compress)


@dataclasses.dataclass(frozen=True)
class Unknown:
    """A registered object whose name is not registered in this process, as
    ``decode(data, unknown="placeholder")`` returns it: its registered ``name``, the
    ``version`` it was written with and its ``state`` (for a dataclass or attrs class, the
    dict of its fields). For inspecting a checkpoint without the application's classes;
    it is not itself encodable."""

    name: str
    version: int
    state: Any


def decode(
    data: bytes | bytearray | memoryview,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_size: int = DEFAULT_MAX_SIZE,
    max_items: int = DEFAULT_MAX_ITEMS,
    unknown: Literal["error", "placeholder"] = "error",
) -> Any:
    """Decodes checkpoint bytes of format 1, 2 or 3 (compressed: recognised by itself).
    Raises DecodeError (a ValueError) with the byte offset and what was expected when the
    input is malformed, breaks a limit, or names an unknown type. In a compressed checkpoint,
    offsets inside the body say they count bytes "of the decompressed body".

    ``max_depth`` (0 to MAX_DEPTH_LIMIT) bounds container nesting, ``max_size`` the input
    length in bytes, and also a compressed body's declared decompressed length, checked
    before anything is allocated; ``max_items`` bounds the number of values. ``unknown="placeholder"`` turns
    an object whose registered name is unknown here into an ``Unknown(name, version, state)``
    instead of an error, so a tool can inspect a checkpoint without the application's classes.
    """
    if not _rillet_states_loaded:
        _load_rillet_states()
    if type(data) is not bytes:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(
                "decode: data must be the bytes encode() returned (bytes, bytearray or "
                f"memoryview), got {type(data).__name__}"
            )
        data = bytes(data)  # a private immutable copy: hooks run while decoding
    _check_max_depth(max_depth)
    for name, limit in (("max_size", max_size), ("max_items", max_items)):
        if limit < 0:
            raise ValueError(f"{name} must be >= 0, got {limit}")
    if unknown == "error":
        return _native.codec_decode(data, _BY_NAME, max_depth, max_size, max_items)
    if unknown == "placeholder":
        return _native.codec_decode(data, _BY_NAME, max_depth, max_size, max_items, Unknown)
    raise ValueError(f"unknown must be 'error' or 'placeholder', got {unknown!r}")


# The modules whose classes are rillet's checkpointed states (registered as they load). `import
# rillet` loads no agent module, and a checkpoint may be read before any agent exists (`rillet
# resume`, `rillet inspect`), so the first decode loads them; tests/data/test_codec_registry.py keeps
# the list whole. rillet.prebuilt's states load with the prebuilt agents, as a user's own do.
RILLET_STATE_MODULES = ("rillet.compose.agent_tool", "rillet.chatmodel.state", "rillet.compose.workflow")
_rillet_states_loaded = False


def _load_rillet_states() -> None:
    global _rillet_states_loaded
    for module in RILLET_STATE_MODULES:
        importlib.import_module(module)
    _rillet_states_loaded = True


def _check_max_depth(max_depth: int) -> None:
    if type(max_depth) is not int or not 0 <= max_depth <= MAX_DEPTH_LIMIT:
        raise ValueError(
            f"max_depth must be from 0 to {MAX_DEPTH_LIMIT} (rillet.codec.MAX_DEPTH_LIMIT), got {max_depth!r}"
        )


@overload
def register_type(
    cls: T,
    name: str,
    version: int = 1,
    migrate: Migrate | None = None,
    *,
    to_state: ToState | None = None,
    from_state: FromState | None = None,
) -> T: ...
@overload
def register_type(
    cls: None = None,
    *,
    name: str,
    version: int = 1,
    migrate: Migrate | None = None,
    to_state: ToState | None = None,
    from_state: FromState | None = None,
) -> Callable[[T], T]: ...
def register_type(
    cls: T | None = None,
    name: str | None = None,
    version: int = 1,
    migrate: Migrate | None = None,
    *,
    to_state: ToState | None = None,
    from_state: FromState | None = None,
) -> T | Callable[[T], T]:
    """Makes ``cls`` encodable under the stable ``name``; returns ``cls``. Without ``cls``
    it is a class decorator: ``@register_type(name="shop.cart")``.

    How its state is taken and given back, in order of precedence:

    * explicit ``to_state(obj) -> state`` and ``from_state(state) -> obj`` callables;
    * an Enum: the member's name;
    * a dataclass or an attrs class: a dict of its fields (built back through ``cls(...)``,
      so validation runs; unknown fields are ignored, missing ones take their defaults);
    * a class defining ``to_state(self)`` and a classmethod ``from_state(cls, state)``.

    ``version`` (>= 1) is written with every object. Decoding an older version calls
    ``migrate(state, old_version)`` first; a newer version than registered is an error.

    Registering again under a name already taken replaces that registration when the class
    is the same one, or has the same module and qualified name (a reloaded module, a re-run
    notebook cell): re-running registration code is harmless. Any other reuse of a name, or
    a second name for one class, is a ValueError.
    """
    if cls is None:
        if name is None:
            raise TypeError("register_type needs a name: register_type(cls, name=...) or @register_type(name=...)")
        taken = name

        def decorate(c: T) -> T:
            return register_type(c, taken, version, migrate, to_state=to_state, from_state=from_state)

        return decorate
    if name is None:
        raise TypeError(f'register_type({getattr(cls, "__qualname__", cls)!r}) needs name="<a stable name>"')
    _check_registration(cls, name, version, migrate)
    if (to_state is None) != (from_state is None):
        raise TypeError("pass both to_state and from_state, or neither")
    fields = False
    if to_state is None or from_state is None:
        to_state, from_state, fields = _protocol(cls)
    for old_cls in [c for c, entry in _BY_TYPE.items() if entry[0] == name]:
        del _BY_TYPE[old_cls]  # the same class, or the one a reload replaced
    _BY_TYPE[cls] = (name, version, to_state, fields)
    _BY_NAME[name] = (version, from_state, migrate)
    return cls


def _same_class(a: type, b: type) -> bool:
    """The same class, or its new version from a reloaded module or a re-run cell."""
    return a is b or (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


def _check_registration(cls: type, name: str, version: int, migrate: Migrate | None) -> None:
    if not isinstance(cls, type):
        raise TypeError(f"register_type expects a class, got {cls!r}")
    if _encoded_natively(cls):
        raise TypeError(f"{cls.__name__} is encoded natively and cannot be registered")
    if not isinstance(name, str) or not name:
        raise TypeError(f"the name must be a non-empty str, got {name!r}")
    if type(version) is not int or version < 1:
        raise ValueError(f"version must be an int >= 1, got {version!r}")
    if migrate is not None and not callable(migrate):
        raise TypeError(f"migrate must be callable, got {migrate!r}")
    holders = [c for c, entry in _BY_TYPE.items() if entry[0] == name]
    if name in _BY_NAME and not any(_same_class(c, cls) for c in holders):
        owner = ", ".join(f"{c.__module__}.{c.__qualname__}" for c in holders) or "another class"
        raise ValueError(f"the codec name {name!r} is already registered for {owner}; names must be unique")
    if cls in _BY_TYPE and _BY_TYPE[cls][0] != name:
        other = _BY_TYPE[cls][0]
        raise ValueError(f"{cls.__qualname__} is already registered under the name {other!r}")


def _advice_for(obj: object) -> str | None:
    """What to store instead of a value that is not data and cannot usefully be registered
    (the encoder puts it in its EncodeError); None when registering the class is the fix."""
    if isinstance(obj, BaseException):
        return (
            "exceptions are not stored in checkpoints (their traceback and arguments are not "
            "portable data). Store a dict instead, e.g. "
            "{'type': type(exc).__name__, 'message': str(exc)}"
        )
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)) or (
        callable(obj) and type(obj).__name__ in ("partial", "method-wrapper", "method_descriptor")
    ):
        return (
            "functions and lambdas are code, not data. Store a name (a str) and look the "
            "function up in a dict of your own after decoding"
        )
    import pathlib  # here, not at import: only this error message needs it

    if isinstance(obj, pathlib.PurePath):
        return "store str(path) instead, and rebuild it with pathlib.Path(...) after decoding"
    if isinstance(obj, (bytearray, memoryview)):
        return "store bytes(value) instead (bytes round-trip exactly)"
    if isinstance(obj, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)):
        return (
            "a running generator or coroutine cannot be saved. Store the values it produced "
            "(e.g. list(gen)) or the arguments needed to start it again"
        )
    if isinstance(obj, io.IOBase):
        return "an open file or stream cannot be saved. Store its path (a str) and reopen it after decoding"
    if isinstance(obj, types.ModuleType):
        return "store the module's name (a str) and import it after decoding"
    if isinstance(obj, type):
        return (
            "a class is code, not data. Store a stable name (a str) and map it back to the "
            "class in your own code after decoding"
        )
    return None


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

    A Message, ToolCall or ContentPart travels as its exact chat-completions dict, an
    AgenticMessage or ContentBlock as its ``to_dict()`` form; the small
    value types as a list of their fields (docs/checkpoint-format.md). The encoder writes
    these states straight from the Rust fields and the decoder builds the objects straight
    from them, so their entries carry no hooks (None). Changing a state's shape needs a new
    version and a migrate function.
    """

    for cls in (Message, ToolCall, ContentPart, FunctionCall, Usage, ResponseMeta, AgenticMessage, ContentBlock):
        name = f"rillet.{cls.__name__}"
        _check_registration(cls, name, 1, None)
        _BY_TYPE[cls] = (name, 1, None, False)
        _BY_NAME[name] = (1, None, None)


_register_rillet_types()
