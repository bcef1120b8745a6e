"""concat_messages / MessageAccumulator, written from Eino's ConcatMessages rules
(schema/message.go in Eino)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet import (
    ConcatError,
    FunctionCall,
    Message,
    MessageAccumulator,
    ResponseMeta,
    RilletError,
    ToolCall,
    Usage,
    concat_message_stream,
    concat_messages,
    stream_from_list,
)


def tc(index: int | None, id: str = "", name: str = "", args: str = "", type: str = "") -> ToolCall:
    return ToolCall(index=index, id=id, type=type, function=FunctionCall(name, args))


def test_no_chunks_give_an_empty_message() -> None:
    assert concat_messages([]) == Message()


def test_none_chunk_is_an_error_with_its_index() -> None:
    with pytest.raises(ConcatError, match="index: 1") as info:
        concat_messages([Message(content="a"), None])
    assert info.value.field == "chunk"


def test_concat_error_is_a_value_error_and_a_rillet_error() -> None:
    assert issubclass(ConcatError, ValueError) and issubclass(ConcatError, RilletError)


def test_first_non_empty_role_wins_and_content_concatenates() -> None:
    out = concat_messages(
        [
            Message(content="Hel"),
            Message(role="assistant", content="lo"),
            Message(content=", "),
            Message(role="assistant", content="world"),
        ]
    )
    assert out.role == "assistant" and out.content == "Hello, world"


def test_reasoning_content_concatenates() -> None:
    out = concat_messages([Message(reasoning_content="step 1; "), Message(reasoning_content="step 2")])
    assert out.reasoning_content == "step 1; step 2"


@pytest.mark.parametrize(
    ("field", "what"),
    [("role", "roles"), ("name", "names"), ("tool_call_id", "tool_call_ids"), ("tool_name", "tool_names")],
)
def test_conflicting_identity_fields_raise_naming_field_and_both_values(field: str, what: str) -> None:
    a, b = Message(), Message()
    setattr(a, field, "first")
    setattr(b, field, "second")
    with pytest.raises(ConcatError) as info:
        concat_messages([a, Message(content="x"), b])
    assert info.value.field == field
    assert f"different {what}: 'first' and 'second'" in str(info.value)
    same = Message()
    setattr(same, field, "first")
    assert getattr(concat_messages([a, same]), field) == "first"


def test_tool_calls_unindexed_first_then_merged_by_index_sorted() -> None:
    chunks = [
        Message(role="assistant", tool_calls=[tc(1, "id1", "weather", '{"city":'), tc(None, "raw", "legacy", "{}")]),
        Message(tool_calls=[tc(0, "id0", "time", "{")]),
        Message(tool_calls=[tc(1, args='"Paris"}'), tc(0, args="}")]),
        Message(tool_calls=[tc(None, "raw2", "legacy", "[]")]),
    ]
    out = concat_messages(chunks)
    assert [(t.index, t.id, t.function.name, t.function.arguments) for t in out.tool_calls] == [
        (None, "raw", "legacy", "{}"),
        (None, "raw2", "legacy", "[]"),
        (0, "id0", "time", "{}"),
        (1, "id1", "weather", '{"city":"Paris"}'),
    ]


def test_tool_call_first_non_empty_type_and_base_extra() -> None:
    first = ToolCall(index=0, id="a", type="function", function=FunctionCall("f", "1"), extra={"k": "first"})
    later = ToolCall(index=0, id="", type="", function=FunctionCall("", "2"), extra={"k": "later"})
    out = concat_messages([Message(tool_calls=[first]), Message(tool_calls=[later])]).tool_calls[0]
    assert (out.type, out.function.arguments, out.extra) == ("function", "12", {"k": "first"})


@pytest.mark.parametrize(
    ("a", "b", "field"),
    [
        (tc(0, id="x"), tc(0, id="y"), "tool_calls[index=0].id"),
        (tc(0, type="function"), tc(0, type="code"), "tool_calls[index=0].type"),
        (tc(2, name="f"), tc(2, name="g"), "tool_calls[index=2].function.name"),
    ],
)
def test_tool_call_conflicts_raise(a: ToolCall, b: ToolCall, field: str) -> None:
    with pytest.raises(ConcatError) as info:
        concat_messages([Message(tool_calls=[a]), Message(tool_calls=[b])])
    assert info.value.field == field
    assert "'" in str(info.value)


def test_finish_reason_last_non_empty_and_usage_maximum() -> None:
    chunks = [
        Message(response_meta=ResponseMeta("", Usage(prompt_tokens=10, total_tokens=10, cached_tokens=3))),
        Message(response_meta=ResponseMeta("length")),
        Message(response_meta=ResponseMeta("stop")),
        Message(
            response_meta=ResponseMeta(
                "", Usage(prompt_tokens=8, completion_tokens=5, total_tokens=13, reasoning_tokens=2)
            )
        ),
    ]
    meta = concat_messages(chunks).response_meta
    assert meta is not None and meta.finish_reason == "stop"
    assert meta.usage == Usage(10, 5, 13, cached_tokens=3, reasoning_tokens=2)
    summed = concat_messages(chunks, usage="sum").response_meta
    assert summed is not None and summed.usage == Usage(18, 5, 23, 3, 2)
    last = concat_messages(chunks, usage="last").response_meta
    assert last is not None and last.usage == Usage(8, 5, 13, 0, 2)
    with pytest.raises(ValueError, match="usage must be"):
        concat_messages(chunks, usage="avg")  # type: ignore[arg-type]
    assert concat_messages([Message(content="x")]).response_meta is None


def test_extra_merges_by_type() -> None:
    out = concat_messages(
        [
            Message(extra={"s": "ab", "i": 1, "f": 1.0, "b": False, "d": {"x": "1"}, "once": None, "l": [1]}),
            Message(content="no extra"),
            Message(extra={"s": "c", "i": 2, "f": 2.5, "b": True, "d": {"x": "2", "y": 3}, "l": []}),
        ]
    )
    assert out.extra == {"s": "abc", "i": 2, "f": 2.5, "b": True, "d": {"x": "12", "y": 3}, "once": None, "l": [1]}


@pytest.mark.parametrize(
    ("a", "b", "field", "message"),
    [
        ({"k": 1}, {"k": "x"}, "extra.k", "a int value and a str value"),
        ({"m": {"k": 1.0}}, {"m": {"k": 1}}, "extra.m.k", "a float value and a int value"),
        ({"l": [1]}, {"l": [2]}, "extra.l", "multiple non-zero values of type list"),
    ],
)
def test_extra_conflicts_raise(a: dict[str, Any], b: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ConcatError, match=message) as info:
        concat_messages([Message(extra=a), Message(extra=b)])
    assert info.value.field == field


def test_inputs_are_not_mutated() -> None:
    chunks = [
        Message(
            role="assistant",
            content="a",
            tool_calls=[tc(0, "id", "f", "{")],
            extra={"d": {"x": "1"}},
            response_meta=ResponseMeta("", Usage(1, 1, 2)),
        ),
        Message(
            content="b",
            tool_calls=[tc(0, args="}")],
            extra={"d": {"x": "2"}},
            response_meta=ResponseMeta("stop", Usage(1, 3, 4)),
        ),
    ]
    before = [c.copy() for c in chunks]
    concat_messages(chunks)
    assert chunks == before


def test_dict_chunks_are_accepted() -> None:
    out = concat_messages([{"role": "assistant", "content": "a"}, Message(content="b")])
    assert out == Message(role="assistant", content="ab")


def test_user_input_text_parts_merge() -> None:
    out = concat_messages(
        [Message.user(["a"]), Message(user_input_multi_content=["b", {"type": "image_url", "image_url": {"url": "u"}}])]
    )
    assert [p.text for p in out.user_input_multi_content] == ["ab", None]


def test_accumulator_matches_concat_and_survives_a_rejected_chunk() -> None:
    chunks = [Message(role="assistant", content=str(i)) for i in range(10)]
    acc = MessageAccumulator()
    acc.push(chunks[0])
    acc.push_many(chunks[1:5])
    assert acc.snapshot().content == "01234" and len(acc) == 5
    with pytest.raises(ConcatError):
        acc.push(Message(role="user", content="bad"))
    acc.push_many(iter(chunks[5:]))
    assert acc.finish() == concat_messages(chunks)
    assert len(acc) == 0 and acc.finish() == Message()


# --- property: splitting a message into chunks and concatenating gives it back ---------

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
ident = st.text(alphabet="abcdefghij_0123", min_size=1, max_size=8)


def split(s: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(s) + 1) for c in cuts})
    bounds = [0, *points, len(s)]
    return [s[a:b] for a, b in zip(bounds, bounds[1:])]


@st.composite
def message_and_chunks(draw: st.DrawFn) -> tuple[Message, list[Message]]:
    content, reasoning = draw(text), draw(text)
    n_calls = draw(st.integers(0, 3))
    calls = [
        ToolCall(index=i, id=draw(ident), type="function", function=FunctionCall(draw(ident), draw(text)))
        for i in range(n_calls)
    ]
    usage = Usage(*(draw(st.integers(0, 10_000)) for _ in range(5)))
    full = Message(
        role="assistant",
        content=content,
        reasoning_content=reasoning,
        tool_calls=calls,
        response_meta=ResponseMeta("stop", usage),
    )
    cuts = st.lists(st.integers(0, 1000), max_size=6)
    chunks = [Message(role="assistant")]
    chunks += [Message(content=p) for p in split(content, draw(cuts))]
    chunks += [Message(reasoning_content=p) for p in split(reasoning, draw(cuts))]
    for call in calls:
        parts = split(call.function.arguments, draw(cuts))
        chunks.append(
            Message(
                tool_calls=[
                    ToolCall(
                        index=call.index,
                        id=call.id,
                        type="function",
                        function=FunctionCall(call.function.name, parts[0]),
                    )
                ]
            )
        )
        chunks += [
            Message(tool_calls=[ToolCall(index=call.index, type="", function=FunctionCall("", p))]) for p in parts[1:]
        ]
    # Usage reported cumulatively: counters never go down, the last report is the total.
    steps = draw(st.integers(0, 3))
    u = [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens, usage.cached_tokens, usage.reasoning_tokens]
    for k in range(steps, 0, -1):
        chunks.append(Message(response_meta=ResponseMeta("", Usage(*(v * (steps - k) // steps for v in u)))))
    chunks.append(Message(response_meta=ResponseMeta("stop", usage)))
    # Keep each stream's own order but interleave the streams at random.
    order = draw(st.permutations(range(1, len(chunks) - 1)))
    return full, [chunks[0], *interleave_keeping_order(chunks[1:-1], order), chunks[-1]]


def interleave_keeping_order(chunks: list[Message], order: list[int]) -> list[Message]:
    """Shuffles across fields, but chunks of the same field keep their relative order."""

    def key(m: Message) -> str:
        if m.tool_calls:
            return f"tc{m.tool_calls[0].index}"
        return "content" if m.content else "reasoning" if m.reasoning_content else "meta"

    by_key: dict[str, list[Message]] = {}
    for m in chunks:
        by_key.setdefault(key(m), []).append(m)
    lanes = [key(chunks[i - 1]) for i in order]
    return [by_key[lane].pop(0) for lane in lanes]


@settings(max_examples=300, deadline=None)
@given(message_and_chunks())
def test_split_then_concat_round_trips(case: tuple[Message, list[Message]]) -> None:
    full, chunks = case
    assert concat_messages(chunks) == full
    acc = MessageAccumulator()
    for c in chunks:
        acc.push(c)
    assert acc.finish() == full
    assert concat_message_stream(stream_from_list(chunks)) == full
