"""rillet's message types are registered with the codec out of the box."""

from __future__ import annotations

import pytest
from rillet import ContentPart, FunctionCall, Message, ResponseMeta, ToolCall, Usage, codec


def full_message() -> Message:
    return Message(
        role="assistant",
        content="Let me check.",
        name="planner",
        reasoning_content="the user wants the weather",
        tool_calls=[
            ToolCall(index=0, id="call_1", function=FunctionCall("weather", '{"city": "Paris"}'), extra={"k": 1}),
            ToolCall(id="call_2", function=FunctionCall("time", "{}")),
        ],
        response_meta=ResponseMeta("tool_calls", Usage(10, 20, 30, 4, 5)),
        extra={"trace": {"id": "abc", "spans": [1, 2]}, "cost": 0.25},
    )


@pytest.mark.parametrize(
    "value",
    [
        full_message(),
        Message.user("hi"),
        Message.tool_message('{"temp": 21}', "call_1", tool_name="weather"),
        ToolCall(index=3, id="x", function=FunctionCall("f", "{")),
        FunctionCall("f", "args"),
        Usage(1, 2, 3, 4, 5),
        ResponseMeta("stop", None),
        ResponseMeta("length", Usage(7, 8, 15)),
    ],
    ids=type,
)
def test_rillet_types_round_trip(value: object) -> None:
    back = codec.decode(codec.encode(value))
    assert type(back) is type(value)
    assert back == value


def test_multi_part_user_input_round_trips() -> None:
    parts = [ContentPart("what is this?"), ContentPart(image_url="https://example.invalid/cat.png", detail="low")]
    msg = Message(role="user", user_input_multi_content=parts)
    assert codec.decode(codec.encode(msg)) == msg


def test_a_checkpoint_of_messages_round_trips() -> None:
    state = {"messages": [full_message(), Message.user("next")], "session_values": {"step": 3}}
    back = codec.decode(codec.encode(state))
    assert back == state
    assert all(type(m) is Message for m in back["messages"])


def test_rillet_names_are_taken() -> None:
    class Mine:
        pass

    with pytest.raises(ValueError, match="already registered"):
        codec.register_type(Mine, "rillet.Message")
