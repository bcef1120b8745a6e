"""One API for messages: constructors accept a value or name the field in a TypeError,
dict forms are accepted wherever a part type is, container attributes are read-only views,
tool-call deltas without a type merge as unset, parsed arguments, and OpenAI's refusal."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from rillet import (
    ContentPart,
    FunctionCall,
    Message,
    MessageAccumulator,
    ResponseMeta,
    ToolCall,
    Usage,
    codec,
    concat_messages,
)


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (
            lambda: Message(content={"a": 1}),
            r"Message.content: expected str or a list of ContentPart \| dict, got dict",
        ),
        (lambda: Message(content=3), r"Message.content: expected str or a list of ContentPart \| dict, got int"),
        (lambda: Message(content=["ok", 3]), r"Message.content\[1\]: expected ContentPart \| dict \| str, got int"),
        (lambda: Message.user({"text": "x"}), r"Message.user: expected str or a list of ContentPart \| dict, got dict"),
        (lambda: Message(user_input_multi_content="abc"), r"Message.user_input_multi_content: expected a list"),
        (lambda: Message(tool_calls={"id": "x"}), r"Message.tool_calls: expected a list of ToolCall \| dict"),
        (lambda: Message(tool_calls=[1]), r"Message.tool_calls\[0\]: expected ToolCall \| dict, got int"),
        (lambda: Message(response_meta="stop"), r"Message.response_meta: expected ResponseMeta \| dict"),
        (lambda: Message(extra=[("k", 1)]), r"Message.extra: expected a dict with str keys"),
        (lambda: ToolCall(function="f"), r"ToolCall.function: expected FunctionCall \| dict"),
        (lambda: ToolCall(extra=1), r"ToolCall.extra: expected a dict"),
        (lambda: ResponseMeta(usage=5), r"ResponseMeta.usage: expected Usage \| dict"),
    ],
)
def test_constructors_name_the_field_and_what_it_accepts(make: Any, error: str) -> None:
    with pytest.raises(TypeError, match=error):
        make()


def test_setters_check_like_the_constructor() -> None:
    m = Message()
    with pytest.raises(TypeError, match="Message.content: expected str"):
        m.content = {"a": 1}  # type: ignore[assignment]
    with pytest.raises(TypeError, match="Message.response_meta"):
        m.response_meta = 1  # type: ignore[assignment]
    assert m.user_input_multi_content == ()


def test_dicts_are_accepted_wherever_a_part_type_is() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    m = Message(
        role="assistant",
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        response_meta={"finish_reason": "stop", "usage": usage},
        content=[{"type": "text", "text": "hi"}],
    )
    assert m.tool_calls == (ToolCall(id="c1", function=FunctionCall("f", "{}")),)
    assert m.response_meta == ResponseMeta("stop", Usage(1, 2, 3))
    assert m.user_input_multi_content == (ContentPart("hi"),)
    assert ToolCall(function={"name": "f", "arguments": "1"}).function == FunctionCall("f", "1")
    assert ResponseMeta(usage=usage).usage == Usage(1, 2, 3)
    m.response_meta = {"finish_reason": "length"}
    assert m.response_meta == ResponseMeta("length")
    for cls, value in [
        (FunctionCall, FunctionCall("f", "1")),
        (Usage, Usage(1, 2, 3)),
        (ResponseMeta, ResponseMeta("stop", Usage(1))),
    ]:
        assert cls.from_dict(value.to_dict()) == value  # type: ignore[attr-defined]


def test_container_attributes_refuse_in_place_edits() -> None:
    m = Message(tool_calls=[ToolCall(id="a")], extra={"k": 1, "nested": {"x": 1}}, content=["p"])
    with pytest.raises(AttributeError):
        m.tool_calls.append(ToolCall(id="b"))  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        m.extra["k"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        m.extra["nested"]["x"] = 2  # type: ignore[index]
    with pytest.raises(AttributeError):
        m.user_input_multi_content.append(ContentPart("q"))  # type: ignore[attr-defined]
    tc = ToolCall(extra={"k": 1})
    with pytest.raises(TypeError):
        tc.extra["k"] = 2  # type: ignore[index]
    # Assigning works, and a read-only view can be passed back in.
    m.tool_calls = [*m.tool_calls, ToolCall(id="b")]
    m.extra = {**(m.extra or {}), "k": 2}
    assert [t.id for t in m.tool_calls] == ["a", "b"]
    assert m.extra == {"k": 2, "nested": {"x": 1}}
    copy = Message(extra=m.extra)
    assert copy.extra == m.extra and copy == Message(extra={"k": 2, "nested": {"x": 1}})
    assert codec.decode(codec.encode(copy)) == copy


def test_a_delta_without_type_merges_as_unset() -> None:
    out = concat_messages([{"tool_calls": [{"index": 0, "type": "custom"}]}, {"tool_calls": [{"index": 0}]}])
    assert out.tool_calls[0].type == "custom"
    assert ToolCall.from_dict({"id": "x"}).type == ""
    assert ToolCall.from_dict({"id": "x", "type": "function"}).type == "function"


def test_concat_messages_rejects_none_chunks_as_the_stub_says() -> None:
    with pytest.raises(ValueError, match="unexpected None chunk"):
        concat_messages([Message(content="a"), None])  # type: ignore[list-item]


def test_parsed_arguments() -> None:
    call = ToolCall(id="call_7", function=FunctionCall("search", '{"q": "rust", "n": 2}'))
    assert call.parsed_arguments() == call.function.parsed_arguments() == {"q": "rust", "n": 2}
    assert FunctionCall("noargs", "").parsed_arguments() == {}
    bad = ToolCall(id="call_8", function=FunctionCall("search", '{"q":'))
    with pytest.raises(ValueError, match=r"tool call 'call_8' function 'search' are not valid JSON") as info:
        bad.parsed_arguments()
    assert info.value.__cause__ is not None
    with pytest.raises(ValueError, match=r"arguments of function 'search' are not valid JSON"):
        bad.function.parsed_arguments()


def test_refusal_survives_concat_and_round_trips() -> None:
    chunks: list[Any] = [
        {"role": "assistant", "refusal": "I can't "},
        {"refusal": "help with that."},
        Message(refusal=""),
    ]
    out = concat_messages(chunks)
    assert out.refusal == "I can't help with that."
    acc = MessageAccumulator()
    acc.push_many(chunks)
    assert acc.finish().refusal == out.refusal
    assert out.to_dict()["refusal"] == out.refusal
    assert Message.from_dict(out.to_dict()) == out
    assert pickle.loads(pickle.dumps(out)) == out and codec.decode(codec.encode(out)) == out
    assert "refusal='I can" in repr(out)
    assert "refusal" not in Message(content="x").to_dict()


def test_every_public_member_has_a_docstring() -> None:
    missing = []
    for cls in (Message, ToolCall, FunctionCall, ResponseMeta, Usage, ContentPart, MessageAccumulator):
        if not (cls.__doc__ or "").strip():
            missing.append(cls.__name__)
        for attr, value in vars(cls).items():
            if attr.startswith("_"):
                continue
            if not (getattr(value, "__doc__", None) or "").strip():
                missing.append(f"{cls.__name__}.{attr}")
    assert missing == []
    assert "tool_calls" in (Message.__doc__ or "") and "response_meta" in (Message.__doc__ or "")
