"""register_type as a decorator, re-registration, advice for values that are not data,
decoding unknown names as placeholders, and argument errors."""

from __future__ import annotations

import dataclasses
import enum
import functools
import io
import pathlib
import subprocess
import sys
import types
from typing import Any

import pytest
from rillet import codec
from rillet.data.codec import DecodeError, EncodeError, Unknown, decode, encode, register_type


def test_register_type_works_as_a_decorator() -> None:
    @register_type(name="test.registry.point", version=2)
    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    assert isinstance(Point, type) and Point.__name__ == "Point"
    assert decode(encode([Point(1, 2)])) == [Point(1, 2)]
    with pytest.raises(TypeError, match="needs a name"):
        register_type()


def test_registering_the_same_class_again_is_a_no_op() -> None:
    @dataclasses.dataclass
    class Cell:
        v: int

    for _ in range(3):  # a notebook cell run three times
        assert register_type(Cell, "test.registry.cell") is Cell
    assert decode(encode(Cell(1))) == Cell(1)


def _define_reloadable() -> type:
    @dataclasses.dataclass
    class Reloaded:
        v: int

    return Reloaded


def test_a_reloaded_class_replaces_its_old_registration() -> None:
    old, new = _define_reloadable(), _define_reloadable()
    assert old is not new and old.__qualname__ == new.__qualname__
    register_type(old, "test.registry.reloaded")
    register_type(new, "test.registry.reloaded", version=2, migrate=lambda s, v: s)
    back = decode(encode(new(5)))
    assert type(back) is new and back.v == 5
    with pytest.raises(EncodeError, match="not a registered type"):
        encode(old(1))  # the stale class is no longer registered


def test_a_taken_name_or_a_second_name_is_still_an_error() -> None:
    @dataclasses.dataclass
    class First:
        v: int

    @dataclasses.dataclass
    class Second:
        v: int

    register_type(First, "test.registry.taken")
    with pytest.raises(ValueError, match=r"'test.registry.taken' is already registered for .*First"):
        register_type(Second, "test.registry.taken")
    with pytest.raises(ValueError, match="already registered under the name 'test.registry.taken'"):
        register_type(First, "test.registry.other")


class _Color(enum.Enum):
    RED = 1


def _gen() -> Any:
    yield 1


@pytest.mark.parametrize(
    ("value", "advice"),
    [
        (lambda: 1, r"functions and lambdas are code.*Store a name"),
        (len, r"functions and lambdas are code"),
        (functools.partial(int, "1"), r"functions and lambdas are code"),
        ("x".upper, r"functions and lambdas are code"),
        (ValueError("bad"), r"\{'type': type\(exc\).__name__, 'message': str\(exc\)\}"),
        (pathlib.Path("/tmp/x"), r"store str\(path\) instead"),
        (pathlib.PurePosixPath("a"), r"store str\(path\) instead"),
        (bytearray(b"ab"), r"store bytes\(value\) instead"),
        (memoryview(b"ab"), r"store bytes\(value\) instead"),
        (_gen(), r"generator or coroutine cannot be saved"),
        (io.BytesIO(), r"open file or stream cannot be saved.*path"),
        (types, r"store the module's name"),
        (_Color, r"a class is code, not data"),
    ],
)
def test_values_that_are_not_data_get_advice_that_fits(value: Any, advice: str) -> None:
    with pytest.raises(EncodeError, match=r"at x\[0\]: .*" + advice) as info:
        encode({"x": [value]})
    assert "register_type" not in str(info.value)


def test_open_files_get_the_file_advice(tmp_path: pathlib.Path) -> None:
    with open(tmp_path / "f", "w") as f, pytest.raises(EncodeError, match="open file"):
        encode(f)


@dataclasses.dataclass
class _AppOnly:
    label: str
    n: int


def test_unknown_names_decode_to_placeholders_on_request() -> None:
    data = codec._native.codec_encode(
        {"cart": _AppOnly("tea", 2), "mood": 1},
        {_AppOnly: ("shop.app_only", 3, lambda o: {"label": o.label, "n": o.n}, True)},
    )
    with pytest.raises(DecodeError, match=r"unknown registered type 'shop.app_only'.*unknown=\"placeholder\""):
        decode(data)
    back = decode(data, unknown="placeholder")
    assert back == {"cart": Unknown("shop.app_only", 3, {"label": "tea", "n": 2}), "mood": 1}
    assert back["cart"].state["label"] == "tea"
    with pytest.raises(ValueError, match="unknown must be 'error' or 'placeholder'"):
        decode(data, unknown="skip")  # type: ignore[arg-type]


@pytest.mark.parametrize("data", ["abc", 3, None, [1]])
def test_decode_of_a_non_bytes_value_names_data(data: Any) -> None:
    with pytest.raises(
        TypeError, match=rf"decode: data must be the bytes encode\(\) returned .*got {type(data).__name__}"
    ):
        decode(data)


def test_decode_still_takes_bytearray_and_memoryview() -> None:
    data = encode([1, "a"])
    assert decode(bytearray(data)) == decode(memoryview(data)) == [1, "a"]


def test_every_module_registering_a_rillet_state_is_loaded_by_the_first_decode() -> None:
    """rillet's states register as their modules load; `import rillet` loads none of them, so
    codec.RILLET_STATE_MODULES must name each (rillet.prebuilt's load with its agents)."""
    root = pathlib.Path(codec.__file__).parents[1]  # python/rillet
    registering = set()
    for path in root.rglob("*.py"):
        text = path.read_text()
        if "@checkpoint_state(" in text or "@codec.register_type(" in text:
            registering.add(".".join(path.relative_to(root.parent).with_suffix("").parts))
    assert registering - {m for m in registering if m.startswith("rillet.prebuilt.")} == set(codec.RILLET_STATE_MODULES)


def test_a_fresh_process_decodes_rillets_states_before_loading_any_agent() -> None:
    from rillet.compose.workflow import SequentialState

    data = encode(SequentialState(index=1))
    code = (
        "import sys; from rillet import codec; "
        "print(type(codec.decode(sys.stdin.buffer.read())).__name__, 'rillet.chatmodel' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, check=True, timeout=60)
    assert out.stdout.decode().split() == ["SequentialState", "True"]
