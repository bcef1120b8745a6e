"""rillet's message types go through the codec natively (from and into their Rust fields),
with exactly the bytes the old Python to_state hooks gave, and strict states on decode."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet import ContentPart, FunctionCall, Message, ResponseMeta, ToolCall, Usage, _native, codec
from rillet.data.codec import DecodeError


def _usage_list(u: Usage) -> list[int]:
    return [u.prompt_tokens, u.completion_tokens, u.total_tokens, u.cached_tokens, u.reasoning_tokens]


# The registry as it was before the native path: every state built by a Python hook.
HOOKS: dict[type, tuple[str, int, Any, bool]] = {
    Message: ("rillet.Message", 1, Message.to_dict, False),
    ToolCall: ("rillet.ToolCall", 1, ToolCall.to_dict, False),
    ContentPart: ("rillet.ContentPart", 1, ContentPart.to_dict, False),
    FunctionCall: ("rillet.FunctionCall", 1, lambda f: [f.name, f.arguments], False),
    Usage: ("rillet.Usage", 1, _usage_list, False),
    ResponseMeta: ("rillet.ResponseMeta", 1, lambda r: [r.finish_reason, r.usage], False),
}

texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=30)
# Short and repeated values, so format 2's tables are exercised (strs of 4+ bytes repeat).
words = st.sampled_from(["", "a", "user", "assistant", "call_1", "weather", "héllo 🦀"]) | texts
counts = st.integers(0, 2**64 - 1)
leaf = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | words
extra_values = st.recursive(leaf, lambda inner: st.dictionaries(words, inner, max_size=3), max_leaves=6)
# A list in extra is a Python object the fast path hands to the generic encoder.
extras = st.none() | st.dictionaries(words, extra_values | st.lists(leaf, max_size=2), max_size=4)
usages = st.builds(Usage, counts, counts, counts, counts, counts)
metas = st.none() | st.builds(ResponseMeta, words, st.none() | usages)
functions = st.builds(FunctionCall, words, texts)
tool_calls = st.builds(
    ToolCall, st.none() | st.integers(-(2**63), 2**63 - 1), words, st.sampled_from(["function", ""]), functions, extras
)
parts = st.one_of(
    st.builds(ContentPart, texts),
    st.builds(
        lambda url, detail: ContentPart(image_url=url, detail=detail), words, st.sampled_from(["", "low", "auto"])
    ),
    # The bytes forms: an image as a data URL, a file inline (data URL) or by provider id.
    st.builds(lambda data: ContentPart.image(data, mime_type="image/png"), st.binary(min_size=1, max_size=40)),
    st.builds(
        lambda data, name: ContentPart.file(data, filename=name or "f.pdf", mime_type="application/pdf"),
        st.binary(min_size=1, max_size=40),
        words,
    ),
    st.builds(lambda fid, name: ContentPart.file(file_id=fid or "file-1", filename=name), words, words),
)
messages = st.builds(
    lambda role, content, name, reasoning, refusal, calls, call_id, tool, meta, extra, ps: Message(
        role, content, name, reasoning, calls, call_id, tool, meta, extra, user_input_multi_content=ps, refusal=refusal
    ),
    words,
    texts,
    words,
    texts,
    words,
    st.lists(tool_calls, max_size=3),
    words,
    words,
    metas,
    extras,
    st.lists(parts, max_size=3),
)
any_part = messages | tool_calls | functions | usages | metas | parts


@settings(max_examples=300, deadline=None)
@given(st.lists(any_part, min_size=1, max_size=6))
def test_native_path_round_trips_every_type_with_every_field(values: list[Any]) -> None:
    back = codec.decode(codec.encode(values))
    assert back == values
    assert [type(v) for v in back] == [type(v) for v in values]


@settings(max_examples=300, deadline=None)
@given(st.lists(any_part, min_size=1, max_size=6), st.integers(0, 3))
def test_native_bytes_are_the_hook_bytes(values: list[Any], repeat: int) -> None:
    values = values + values[:repeat]  # the same objects again: the tables refer back
    for version in (1, 2):
        native = codec.encode(values, format_version=version)
        assert native == _native.codec_encode(values, HOOKS, codec.DEFAULT_MAX_DEPTH, version)


def full_message() -> Message:
    return Message(
        role="assistant",
        content="text too",
        name="planner",
        reasoning_content="why",
        refusal="no",
        tool_calls=[ToolCall(index=0, id="call_1", function=FunctionCall("weather", "{}"), extra={"k": {"n": 1}})],
        tool_call_id="call_0",
        tool_name="search",
        response_meta=ResponseMeta("stop", Usage(1, 2, 3, 4, 5)),
        extra={"trace": "abc", "spans": [1, 2]},
        user_input_multi_content=[
            ContentPart("hi"),
            ContentPart(image_url="https://example.invalid/a.png", detail="low"),
            ContentPart.file(b"%PDF-1.7", filename="a.pdf"),
            ContentPart.file(file_id="file-abc"),
        ],
    )


@pytest.mark.parametrize("max_depth", range(0, 8))
def test_depth_limits_and_their_errors_are_unchanged(max_depth: int) -> None:
    values = [full_message(), ResponseMeta("stop", Usage(1)), ContentPart(image_url="u")]

    def outcome(types: dict[type, Any]) -> bytes | str:
        try:
            return _native.codec_encode(values, types, max_depth, 2)
        except codec.EncodeError as e:
            return str(e)

    assert outcome(codec._BY_TYPE) == outcome(HOOKS)


def test_deeply_nested_extra_takes_the_generic_path() -> None:
    deep: dict[str, Any] = {"leaf": "x"}
    for _ in range(60):
        deep = {"d": deep}
    msg = Message(role="user", content="hi", extra=deep)
    data = codec.encode(msg, max_depth=100)
    assert data == _native.codec_encode(msg, HOOKS, 100, 2)
    assert codec.decode(data, max_depth=100) == msg


def test_a_message_inside_its_own_extra_is_a_cycle() -> None:
    inner: list[Any] = []
    msg = Message(role="user", content="hi", extra={"again": inner})
    inner.append(msg)
    with pytest.raises(codec.EncodeError, match="reference cycle"):
        codec.encode(msg)


def test_registrations_keep_their_names_and_versions() -> None:
    for cls in HOOKS:
        assert codec._BY_TYPE[cls][:2] == (f"rillet.{cls.__name__}", 1)
        assert codec._BY_NAME[f"rillet.{cls.__name__}"][0] == 1


class _Raw:
    """Encodes as a rillet type name with any state: a hand-made (or corrupt) checkpoint."""

    def __init__(self, state: Any) -> None:
        self.state = state


def _checkpoint(name: str, state: Any) -> bytes:
    return _native.codec_encode(_Raw(state), {_Raw: (name, 1, lambda r: r.state, False)}, 512, 2)


def _message_state(**changes: Any) -> dict[str, Any]:
    state = full_message().to_dict()
    for key, value in changes.items():
        if value is _DROP:
            del state[key]
        else:
            state[key] = value
    return state


_DROP = object()


@pytest.mark.parametrize(
    ("name", "state", "match"),
    [
        ("rillet.Message", _message_state(role=_DROP), "missing field 'role'"),
        ("rillet.Message", _message_state(content=_DROP), "missing field 'content'"),
        ("rillet.Message", _message_state(colour="red"), "unknown field 'colour'"),
        ("rillet.Message", _message_state(role=3), "field 'role' must be a str, got int"),
        ("rillet.Message", _message_state(content=4.5), "field 'content' must be a str or a list"),
        ("rillet.Message", _message_state(content=[{"type": "text"}]), r"missing field 'content\[0\].text'"),
        (
            "rillet.Message",
            _message_state(content=[{"type": "video"}]),
            r"'content\[0\].type' must be 'text', 'image_url' or 'file'",
        ),
        ("rillet.Message", _message_state(tool_calls={"id": "x"}), "field 'tool_calls' must be a list, got dict"),
        (
            "rillet.Message",
            _message_state(tool_calls=[{"id": "x", "type": "function"}]),
            r"missing field 'tool_calls\[0\].function'",
        ),
        (
            "rillet.Message",
            _message_state(tool_calls=[{"id": "x", "type": "function", "function": {"name": "f"}}]),
            r"missing field 'tool_calls\[0\].function.arguments'",
        ),
        (
            "rillet.Message",
            _message_state(
                tool_calls=[{"id": "x", "type": "function", "function": {"name": "f", "arguments": "", "x": 1}}]
            ),
            r"unknown field 'tool_calls\[0\].function.x'",
        ),
        (
            "rillet.Message",
            _message_state(
                tool_calls=[{"index": "0", "id": "x", "type": "function", "function": {"name": "f", "arguments": ""}}]
            ),
            r"field 'tool_calls\[0\].index' must be a 64-bit int, got str",
        ),
        (
            "rillet.Message",
            _message_state(response_meta={"finish_reason": "stop"}),
            "missing field 'response_meta.usage'",
        ),
        (
            "rillet.Message",
            _message_state(response_meta={"finish_reason": "stop", "usage": {"prompt_tokens": -1}}),
            "field 'response_meta.usage.prompt_tokens' must be an int from 0 to 2",
        ),
        ("rillet.Message", _message_state(extra={1: "x"}), "field 'extra': extra keys must be str"),
        ("rillet.Message", _message_state(content_text=None), "field 'content_text' must be a str, got NoneType"),
        ("rillet.Message", ["not", "a", "dict"], "field 'state' must be a dict, got list"),
        ("rillet.ToolCall", {"id": "x", "type": "function"}, "missing field 'function'"),
        (
            "rillet.ContentPart",
            {"type": "text", "text": "a", "image_url": {"url": "u"}},
            "has more than one of 'text', 'image_url' and 'file'",
        ),
        ("rillet.ContentPart", {"type": "file", "file": {"filename": "a.pdf"}}, "missing field 'file.file_data'"),
        ("rillet.ContentPart", {"type": "file", "file": {"file_id": "f", "x": 1}}, "unknown field 'file.x'"),
        ("rillet.ContentPart", {"type": "file"}, "missing field 'file'"),
        ("rillet.ContentPart", {"type": "image_url", "image_url": {"detail": "low"}}, "missing field 'image_url.url'"),
        ("rillet.FunctionCall", ["f"], r"expected a list \[name, arguments\] of 2 items, got 1"),
        ("rillet.FunctionCall", ["f", None], "field 'arguments' must be a str, got NoneType"),
        ("rillet.Usage", [1, 2, 3, 4, True], "field 'reasoning_tokens' must be an int from 0 to 2\\*\\*64-1, got bool"),
        ("rillet.Usage", [1, 2, 3, 4, 2**64], "field 'reasoning_tokens' must be an int"),
        (
            "rillet.ResponseMeta",
            ["stop", {"prompt_tokens": 1}],
            "field 'usage' must be a rillet.Usage or None, got dict",
        ),
        ("rillet.ResponseMeta", "stop", r"field '\[finish_reason, usage\]' must be a list, got str"),
    ],
)
def test_malformed_states_are_decode_errors_naming_the_field(name: str, state: Any, match: str) -> None:
    with pytest.raises(DecodeError, match=f"cannot build {name} from its state: .*{match}"):
        codec.decode(_checkpoint(name, state))


def test_a_well_formed_hand_made_state_decodes() -> None:
    state = _message_state()
    assert codec.decode(_checkpoint("rillet.Message", state)) == full_message()
    assert codec.decode(_checkpoint("rillet.Message", {"role": "user", "content": "hi"})) == Message.user("hi")


# Decoding builds a message state's values as Rust values and moves them into the message;
# what the string table shares crosses between those values and Python ones.


def test_strings_shared_between_message_states_and_python_values_round_trip() -> None:
    m = full_message()
    # "content" and "role" are interned keys: the message state and the plain dicts share
    # them through the string table, in both orders.
    value = [{"role": "a", "content": "b"}, m, {"content": "c", "role": "d", "tool_calls": 1}, m]
    assert codec.decode(codec.encode(value)) == value
    value = [m, {"content": "x", "role": "y"}, m, ["content", "role", "tool_calls"]]
    assert codec.decode(codec.encode(value)) == value


def test_python_objects_inside_a_message_extra_round_trip() -> None:
    import datetime
    import decimal
    import uuid

    extra = {
        "when": datetime.datetime(2026, 12, 1, 4, 5, 6, tzinfo=datetime.timezone.utc),
        "tags": ["a", 1, None],
        "blob": b"\x00\xff",
        "big": 2**70,
        "huge_unsigned": 2**64 - 1,
        "id": uuid.UUID(int=7),
        "price": decimal.Decimal("9.99"),
        "pair": (1, 2),
        "nested": {"deep": {"k": [1.5]}},
    }
    m = Message(role="user", content="hi", extra=extra)
    back = codec.decode(codec.encode([m, m]))
    assert back == [m, m]
    assert back[0].extra == extra


def _hand_made(state: bytes) -> bytes:
    """A checkpoint of one rillet.Message whose state is the given msgpack bytes."""
    import msgpack

    payload = b"\x93" + msgpack.packb("rillet.Message") + msgpack.packb(1) + state
    return b"\x93" + msgpack.packb("rillet-ckpt") + msgpack.packb(2) + msgpack.packb(msgpack.ExtType(5, payload))


def test_a_message_state_with_a_duplicate_key_is_refused() -> None:
    import msgpack

    pairs = [("role", "user"), ("role", "assistant"), ("content", "")]
    state = b"\x83" + b"".join(msgpack.packb(k) + msgpack.packb(v) for k, v in pairs)
    with pytest.raises(DecodeError, match="duplicate map key 'role'"):
        codec.decode(_hand_made(state))
    # the same state without the duplicate decodes
    state = b"\x82" + b"".join(msgpack.packb(k) + msgpack.packb(v) for k, v in pairs[1:])
    assert codec.decode(_hand_made(state)) == Message(role="assistant", content="")


def test_invalid_utf8_inside_a_message_state_is_refused() -> None:
    import msgpack

    state = b"\x82" + msgpack.packb("role") + msgpack.packb("user") + msgpack.packb("content") + b"\xa2\xc3\x28"
    with pytest.raises(DecodeError, match="expected a UTF-8 str"):
        codec.decode(_hand_made(state))
