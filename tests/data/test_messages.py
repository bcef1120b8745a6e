"""Message types: constructors, mutability, equality, repr, copy and the dict form."""

from __future__ import annotations

import copy
import pickle
import threading

import pytest
from rillet import ContentPart, FunctionCall, Message, ResponseMeta, ToolCall, Usage


def call(index: int | None = 0, id: str = "call_1", name: str = "search", args: str = "{}") -> ToolCall:
    return ToolCall(index=index, id=id, function=FunctionCall(name, args))


def test_constructors_set_the_role_and_fields() -> None:
    assert Message.system("be brief").role == "system"
    user = Message.user("hi", name="ann")
    assert (user.role, user.content, user.name) == ("user", "hi", "ann")
    asst = Message.assistant("ok", [call()])
    assert asst.role == "assistant" and asst.tool_calls == (call(),)
    tool = Message.tool_message("42", "call_1", tool_name="calc")
    assert (tool.role, tool.content, tool.tool_call_id, tool.tool_name) == ("tool", "42", "call_1", "calc")


def test_tool_call_defaults() -> None:
    tc = ToolCall()
    assert (tc.index, tc.id, tc.type, tc.extra) == (None, "", "function", None)
    assert tc.function == FunctionCall("", "")


def test_message_attributes_are_assignable() -> None:
    m = Message(role="assistant", content="a")
    m.content = "b"
    m.name = "bot"
    m.tool_calls = [call()]
    m.response_meta = ResponseMeta("stop", Usage(1, 2, 3))
    m.extra = {"k": 1}
    assert m.content == "b" and m.name == "bot" and m.tool_calls[0].id == "call_1"
    assert m.response_meta is not None and m.response_meta.usage == Usage(1, 2, 3)
    assert m.extra == {"k": 1}
    # Getters of containers return read-only views: change them by assigning.
    with pytest.raises(TypeError):
        m.extra["k"] = 2  # type: ignore[index]
    m.extra = {**m.extra, "k": 2}
    assert m.extra == {"k": 2}


def test_parts_are_immutable_values() -> None:
    tc = call()
    with pytest.raises(AttributeError):
        tc.id = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        Usage().total_tokens = 3  # type: ignore[misc]


def test_equality_is_by_value_and_messages_are_unhashable() -> None:
    a = Message.assistant("x", [call()])
    b = Message.assistant("x", [call()])
    assert a == b and a is not b
    b.content = "y"
    assert a != b
    assert a != "x"
    with pytest.raises(TypeError):
        hash(a)
    assert Message(extra={"l": [1, 2]}) == Message(extra={"l": [1, 2]})
    assert Message(extra={"l": [1, 2]}) != Message(extra={"l": [1]})


def test_repr_is_readable() -> None:
    m = Message.assistant("it's", [call(args='{"q": 1}')])
    text = repr(m)
    assert text.startswith("Message(role='assistant', content='it\\'s'")
    assert "ToolCall(index=0, id='call_1', type='function'" in text
    assert repr(Usage(1, 2, 3)).startswith("Usage(prompt_tokens=1")


def test_copy_deepcopy_and_pickle() -> None:
    m = Message.assistant("x", [call()])
    m.extra = {"nested": {"l": [1]}}
    for clone in (copy.copy(m), copy.deepcopy(m), m.copy(), pickle.loads(pickle.dumps(m))):
        assert clone == m and clone is not m
    c = m.copy()
    c.content = "changed"
    assert m.content == "x"


def test_dict_form_is_openai_chat_completions() -> None:
    m = Message.assistant("", [call(args='{"q":"rust"}')])
    assert m.to_dict() == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {"name": "search", "arguments": '{"q":"rust"}'},
            }
        ],
    }
    assert Message.tool_message("r", "call_1").to_dict() == {"role": "tool", "content": "r", "tool_call_id": "call_1"}
    # An OpenAI response message reads back (content None, no index).
    openai = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }
    back = Message.from_dict(openai)
    assert back.content == "" and back.tool_calls[0].index is None and back.tool_calls[0].function.name == "f"


def test_dict_round_trip_of_every_field() -> None:
    m = Message(
        "assistant",
        "text",
        "bot",
        "thinking",
        [call(), ToolCall(index=None, id="x", function=FunctionCall("g", "[]"), extra={"a": "b"})],
        "",
        "",
        ResponseMeta("stop", Usage(10, 5, 15, cached_tokens=4, reasoning_tokens=2)),
        {"s": "v", "n": 1, "f": 1.5, "b": True, "none": None, "d": {"x": [1, 2]}},
        user_input_multi_content=[ContentPart(text="look"), ContentPart(image_url="https://x/y.png", detail="low")],
    )
    d = m.to_dict()
    assert d["response_meta"]["usage"]["prompt_tokens_details"] == {"cached_tokens": 4}
    assert Message.from_dict(d) == m
    assert Message.from_dict(Message.tool_message("r", "id", "t").to_dict()) == Message.tool_message("r", "id", "t")


def test_multi_part_user_input() -> None:
    m = Message.user(["describe", ContentPart(image_url="data:image/png;base64,AAA"), {"type": "text", "text": "!"}])
    assert m.content == ""
    assert [p.type for p in m.user_input_multi_content] == ["text", "image_url", "text"]
    assert m.to_dict()["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}}
    assert Message.from_dict(m.to_dict()) == m
    with pytest.raises(ValueError, match="unsupported content part type"):
        Message.user([{"type": "audio"}])
    with pytest.raises(ValueError, match="exactly one"):
        ContentPart()


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(TypeError, match="extra keys must be str"):
        Message(extra={1: "x"})
    with pytest.raises(TypeError, match=r"Message.tool_calls\[0\]: expected ToolCall \| dict, got int"):
        Message(tool_calls=[1])


def test_concurrent_mutation_is_safe() -> None:
    m = Message(role="assistant")

    def writer(tag: str) -> None:
        for i in range(2000):
            m.content = f"{tag}{i}"
            assert m.content[0] in "ab"

    threads = [threading.Thread(target=writer, args=(t,)) for t in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert m.content in ("a1999", "b1999")
