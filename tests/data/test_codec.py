"""rillet.codec: exact round trips, the type registry, migrations, and the error messages."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from typing import Any

import pytest
import rillet
from hypothesis import given, settings
from rillet import _native
from rillet.data.codec import DecodeError, EncodeError, decode, encode, register_type
from support.codec_helpers import assert_identical, values


@pytest.mark.slow  # 300 examples: in make test, not the quick loop
@settings(max_examples=300, deadline=None)
@given(values)
def test_round_trip_is_exact(value: Any) -> None:
    assert_identical(decode(encode(value)), value)


@given(values)
def test_encoding_is_deterministic(value: Any) -> None:
    assert encode(value) == encode(value)


@pytest.mark.parametrize(
    "value",
    [2**64, -(2**63) - 1, 2**1000, -(2**1000), "\udc80", "a\ud800b\udfff", float("-nan"), -0.0, (), frozenset(), {}],
)
def test_edge_values_round_trip(value: Any) -> None:
    assert_identical(decode(encode(value)), value)


def test_dict_order_and_mixed_keys_are_kept() -> None:
    value = {3: "a", "x": 1, (1, 2): None, None: [], 1.5: b"", frozenset({1}): True}
    assert list(decode(encode(value)).items()) == list(value.items())


def test_errors_are_rillet_errors_and_builtins() -> None:
    assert issubclass(DecodeError, ValueError) and issubclass(DecodeError, rillet.RilletError)
    assert issubclass(EncodeError, TypeError) and issubclass(EncodeError, rillet.RilletError)
    assert rillet.codec.encode is encode and rillet.DecodeError is DecodeError


def test_accepts_bytes_like_input() -> None:
    data = encode([1, "two"])
    assert decode(bytearray(data)) == [1, "two"]
    assert decode(memoryview(data)) == [1, "two"]


# --- registered types ---------------------------------------------------------------


class Mood(enum.IntEnum):
    CALM = 1
    ANGRY = 2


register_type(Mood, name="test.mood")


@dataclasses.dataclass
class Item:
    sku: str
    qty: int = 1
    note: str = dataclasses.field(default="", init=False)


@dataclasses.dataclass
class Cart:
    items: list[Any]
    owner: str = ""


register_type(Item, name="test.item")
register_type(Cart, name="test.cart")


class Money:
    """A plain class using the to_state/from_state protocol."""

    def __init__(self, cents: int, currency: str) -> None:
        self.cents, self.currency = cents, currency

    def to_state(self) -> list[Any]:
        return [self.cents, self.currency]

    @classmethod
    def from_state(cls, state: list[Any]) -> Money:
        return cls(*state)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Money) and (self.cents, self.currency) == (other.cents, other.currency)

    __hash__ = None  # type: ignore[assignment]


register_type(Money, name="test.money")


class _Attribute:
    def __init__(self, name: str, init: bool = True) -> None:
        self.name, self.init, self.alias = name, init, name.lstrip("_")


class AttrsLike:
    """Shaped like an attrs class: `__attrs_attrs__` and an __init__ taking the aliases."""

    __attrs_attrs__ = (_Attribute("_secret"), _Attribute("public"))

    def __init__(self, secret: str, public: int) -> None:
        self._secret, self.public = secret, public


register_type(AttrsLike, name="test.attrs_like")


def test_registered_types_round_trip() -> None:
    item = Item("abc", 3)
    item.note = "set after init"
    value = {"mood": Mood.ANGRY, "cart": Cart([item, Money(250, "EUR")], owner="ada")}
    back = decode(encode(value))
    assert back == value and type(back["mood"]) is Mood
    assert back["cart"].items[0].note == "set after init"
    attrs = decode(encode(AttrsLike("s", 2)))
    assert (attrs._secret, attrs.public) == ("s", 2)


def test_explicit_hooks_take_precedence() -> None:
    class Pair:
        def __init__(self, a: int, b: int) -> None:
            self.a, self.b = a, b

    register_type(Pair, name="test.pair", to_state=lambda p: (p.a, p.b), from_state=lambda s: Pair(*s))
    back = decode(encode(Pair(1, 2)))
    assert (type(back), back.a, back.b) == (Pair, 1, 2)


def test_duplicate_registrations_are_errors() -> None:
    class Other:
        pass

    with pytest.raises(ValueError, match="already registered"):
        register_type(Other, name="test.cart", to_state=id, from_state=id)
    with pytest.raises(ValueError, match="already registered under the name 'test.cart'"):
        register_type(Cart, name="test.cart2")
    with pytest.raises(TypeError, match="encoded natively"):
        register_type(dict, name="test.dict")
    with pytest.raises(TypeError, match="to_state"):
        register_type(Other, name="test.other")


def test_migration_runs_for_older_versions() -> None:
    @dataclasses.dataclass
    class Profile:
        full_name: str

    calls: list[int] = []

    def migrate(state: dict[str, Any], version: int) -> dict[str, Any]:
        calls.append(version)
        return {"full_name": state.pop("name")}

    register_type(Profile, name="test.profile", version=3, migrate=migrate)
    old = _native.codec_encode(Profile("x"), {Profile: ("test.profile", 2, lambda p: {"name": "Ada"}, True)})
    assert decode(old) == Profile("Ada") and calls == [2]
    newer = _native.codec_encode(Profile("x"), {Profile: ("test.profile", 4, lambda p: {}, True)})
    with pytest.raises(DecodeError, match="version 4 is newer than the registered version 3"):
        decode(newer)


def test_older_version_without_migrate_is_an_error() -> None:
    @dataclasses.dataclass
    class Note:
        text: str

    register_type(Note, name="test.note", version=2)
    old = _native.codec_encode(Note("x"), {Note: ("test.note", 1, lambda n: {"text": n.text}, True)})
    with pytest.raises(DecodeError, match="no migrate function"):
        decode(old)


def test_decoding_never_builds_unregistered_names() -> None:
    data = _native.codec_encode(Item("a"), {Item: ("os.system", 1, lambda i: "echo pwned", False)})
    with pytest.raises(DecodeError, match="unknown registered type 'os.system'.*register_type"):
        decode(data)


def test_from_state_failures_become_decode_errors() -> None:
    data = _native.codec_encode(Item("a"), {Item: ("test.item", 1, lambda i: {"qty": 1}, True)})
    with pytest.raises(DecodeError, match="building test.item from its state failed") as info:
        decode(data)
    assert isinstance(info.value.__cause__, TypeError)


# --- encode errors ---------------------------------------------------------------------


class Unregistered:
    pass


def test_unregistered_type_error_names_type_path_and_fix() -> None:
    value = {"session_values": {"cart": Cart(items=[1, 2, 3, Unregistered()])}}
    with pytest.raises(EncodeError) as info:
        encode(value)
    message = str(info.value)
    assert "test_codec.Unregistered" in message
    assert "session_values['cart'].items[3]" in message
    assert 'rillet.codec.register_type(Unregistered, name="<a stable name>")' in message


def test_builtin_subclasses_are_rejected_unless_registered() -> None:
    class Tag(str):
        pass

    with pytest.raises(EncodeError, match="subclasses str.*plain str"):
        encode({"tags": [Tag("x")]})
    register_type(Tag, name="test.tag", to_state=str, from_state=Tag)
    assert type(decode(encode(Tag("x")))) is Tag


def test_cycles_and_depth_are_reported() -> None:
    loop: list[Any] = []
    loop.append({"again": loop})
    with pytest.raises(EncodeError, match=r"reference cycle: the list at \[0\]\['again'\]"):
        encode(loop)
    deep: list[Any] = []
    for _ in range(600):
        deep = [deep]
    with pytest.raises(EncodeError, match="max_depth=512"):
        encode(deep)
    assert decode(encode(deep, max_depth=601), max_depth=601) == deep


def test_unsupported_tzinfo_is_an_encode_error() -> None:
    class Tz(dt.tzinfo):
        def utcoffset(self, d: dt.datetime | None) -> dt.timedelta:
            return dt.timedelta(0)

    with pytest.raises(EncodeError, match="only datetime.timezone and zoneinfo.ZoneInfo"):
        encode(dt.datetime(2026, 1, 1, tzinfo=Tz()))


def test_to_state_failure_names_the_path() -> None:
    class Bad:
        def to_state(self) -> None:
            raise RuntimeError("boom")

        @classmethod
        def from_state(cls, state: object) -> Bad:
            return cls()

    register_type(Bad, name="test.bad")
    with pytest.raises(EncodeError, match=r"to_state .* failed at x\[1\]: RuntimeError: boom"):
        encode({"x": [0, Bad()]})


def test_mutation_during_encoding_is_an_error_not_a_crash() -> None:
    victim: list[Any] = [1, 2, 3]

    class Mutator:
        def to_state(self) -> int:
            victim.clear()
            return 0

        @classmethod
        def from_state(cls, state: object) -> Mutator:
            return cls()

    register_type(Mutator, name="test.mutator")
    victim.insert(0, Mutator())
    with pytest.raises(EncodeError, match="changed size"):
        encode(victim)


# --- decode errors ----------------------------------------------------------------------

HEAD = b"\x93\xabrillet-ckpt\x01"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"\x82\xa1a\x01\xa1a\x02", "duplicate map key 'a' (at byte 14)"),
        (b"\x82\x01\x01\xc3\x02", "duplicate map key True"),
        (b"\x81\x90\x01", "unhashable map key of type list"),
        (b"\xc0\xc0", "1 trailing bytes"),
        (b"\xa2\xc3\x28", "UTF-8"),
        (b"\xd4\x63\x00", "unknown ext type 99"),
        (b"\xc7\x04\x08\x93\x01\x0d\x01", "invalid date"),
    ],
)
def test_malformed_bodies_raise_decode_error(body: bytes, expected: str) -> None:
    with pytest.raises(DecodeError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        decode(HEAD + body)


def test_not_a_checkpoint() -> None:
    with pytest.raises(DecodeError, match="expected a rillet checkpoint"):
        decode(b'{"json": true}')
    with pytest.raises(DecodeError, match="newer than this rillet reads"):
        decode(HEAD[:-1] + b"\x04\xc0")


def test_limits() -> None:
    data = encode([[1, 2], [3]])
    with pytest.raises(DecodeError, match="max_depth=1"):
        decode(data, max_depth=1)
    with pytest.raises(DecodeError, match="max_items=4"):
        decode(data, max_items=4)
    with pytest.raises(DecodeError, match="max_size=10"):
        decode(data, max_size=10)
    assert decode(data, max_depth=2, max_items=6, max_size=len(data)) == [[1, 2], [3]]


# --- AgenticMessage and ContentBlock: encoded natively (their dict state made in Rust) ---------

from hypothesis import strategies as st  # noqa: E402
from rillet import AgenticMessage, ContentBlock  # noqa: E402

_KINDS = [
    "text",
    "reasoning",
    "refusal",
    "image",
    "audio",
    "video",
    "file",
    "tool_call",
    "tool_result",
    "server_tool_call",
    "server_tool_result",
    "mcp_tool_call",
    "mcp_tool_result",
]


def _kind_fields(kind: str) -> list[str]:
    """The fields a kind uses, read from the type itself (the error lists them)."""
    try:
        ContentBlock(kind, file_id="x")  # type: ignore[arg-type]
    except ValueError as e:
        return str(e).split("its fields are: ")[1].split(", ")
    return ["url", "data", "mime_type", "filename", "file_id"]


@st.composite
def _agentic_blocks(draw: st.DrawFn) -> ContentBlock:
    kind = draw(st.sampled_from(_KINDS))
    fields: dict[str, Any] = {}
    for f in _kind_fields(kind):
        fields[f] = draw(st.booleans()) if f == "is_error" else draw(st.text(max_size=6))
    index = draw(st.none() | st.integers(-(2**63), 2**63 - 1))
    extra = draw(st.none() | st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3), max_size=2))
    return ContentBlock(kind, index=index, extra=extra, **fields)  # type: ignore[arg-type]


_agentic_messages = st.builds(
    AgenticMessage,
    st.sampled_from(["system", "user", "assistant", ""]),
    st.lists(_agentic_blocks(), max_size=4),
    name=st.text(max_size=4),
    response_meta=st.none() | st.builds(rillet.ResponseMeta, st.text(max_size=4), st.none() | st.builds(rillet.Usage)),
    extra=st.none() | st.dictionaries(st.text(max_size=3), st.lists(st.integers(), max_size=2), max_size=2),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_agentic_messages, max_size=3), st.sampled_from([1, 2]))
def test_agentic_messages_round_trip_in_both_formats(messages: list[AgenticMessage], version: int) -> None:
    back = decode(encode(messages, format_version=version))
    assert back == messages
    assert all(type(m) is AgenticMessage for m in back)


def test_content_blocks_round_trip_on_their_own() -> None:
    block = ContentBlock.reasoning("why", signature="sig", index=3)
    assert decode(encode({"b": block})) == {"b": block}


def _agentic_checkpoint(name: str, state: Any) -> bytes:
    class Raw:
        def __init__(self, state: Any) -> None:
            self.state = state

    return _native.codec_encode(Raw(state), {Raw: (name, 1, lambda r: r.state, False)}, 512, 2)


@pytest.mark.parametrize(
    ("name", "state", "match"),
    [
        ("rillet.AgenticMessage", {"blocks": []}, "missing field 'role'"),
        ("rillet.AgenticMessage", {"role": "user"}, "missing field 'blocks'"),
        ("rillet.AgenticMessage", {"role": "user", "blocks": [], "x": 1}, "unknown field 'x'"),
        ("rillet.AgenticMessage", {"role": "user", "blocks": "text"}, "field 'blocks' must be a list, got str"),
        ("rillet.AgenticMessage", {"role": "user", "blocks": [{"text": "a"}]}, r"missing field 'blocks\[0\].type'"),
        (
            "rillet.AgenticMessage",
            {"role": "user", "blocks": [{"type": "txt"}]},
            r"field 'blocks\[0\].type' must be a content block kind, got \"txt\"",
        ),
        (
            "rillet.AgenticMessage",
            {"role": "user", "blocks": [{"type": "text", "call_id": "c"}]},
            r"'blocks\[0\]' is a 'text' block, which has no field 'call_id'",
        ),
        ("rillet.ContentBlock", {"type": "tool_result", "is_error": 1}, "field 'is_error' must be a bool, got int"),
        ("rillet.ContentBlock", {"type": "text", "index": "0"}, "field 'index' must be a 64-bit int, got str"),
        ("rillet.ContentBlock", {"type": "text", "text": None}, "field 'text' must be a str, got NoneType"),
        ("rillet.ContentBlock", ["text"], "field 'state' must be a dict, got list"),
    ],
)
def test_malformed_agentic_states_are_decode_errors_naming_the_field(name: str, state: Any, match: str) -> None:
    with pytest.raises(DecodeError, match=f"cannot build {name} from its state: .*{match}"):
        decode(_agentic_checkpoint(name, state))


@settings(max_examples=200, deadline=None)
@given(_agentic_messages, st.data())
def test_corrupted_agentic_checkpoints_raise_decode_errors_never_crash(m: AgenticMessage, data: st.DataObject) -> None:
    raw = bytearray(encode(m))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    try:
        decode(bytes(raw))
    except DecodeError:
        pass
