"""Images and files in chat-completions requests, asserted as the exact bodies a loopback
server receives: user parts as they are, a tool's image and file parts in a user message
after the turn's tool results, and a clear error for a part the API cannot carry."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from rillet import AgenticMessage, ContentPart, Message, ToolCall
from rillet.chatmodel import ChatModelAgent
from rillet.models.errors import UnsupportedContentError
from rillet.models.openai import OpenAIChatModel, messages_to_openai
from rillet.runner import Runner
from rillet.tools import tool
from support.openai_server import FakeOpenAIServer, Reply, run

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
PDF = b"%PDF-1.7\n"
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
PDF_DATA = "data:application/pdf;base64," + base64.b64encode(PDF).decode()


def make_model(server: FakeOpenAIServer) -> OpenAIChatModel:
    return OpenAIChatModel("test-model", base_url=server.url, api_key="sk-test", max_retries=0)


def completion(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1764550000,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }


TEXT = completion({"role": "assistant", "content": "A cat."})


def test_user_images_and_files_are_sent_as_content_parts(server: FakeOpenAIServer) -> None:
    server.script(Reply.json(TEXT))
    question = Message.user(
        [
            "Compare these.",
            ContentPart.image(PNG, detail="low"),
            ContentPart.image("https://example.invalid/cat.jpg"),
            ContentPart.file(PDF, filename="report.pdf"),
            ContentPart.file(file_id="file-abc"),
        ]
    )
    answer = run(make_model(server).generate([question]))
    assert answer.content == "A cat."
    assert server.bodies() == [
        {
            "model": "test-model",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Compare these."},
                        {"type": "image_url", "image_url": {"url": PNG_URL, "detail": "low"}},
                        {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.jpg"}},
                        {"type": "file", "file": {"filename": "report.pdf", "file_data": PDF_DATA}},
                        {"type": "file", "file": {"file_id": "file-abc"}},
                    ],
                }
            ],
        }
    ]


def test_a_tools_image_reaches_the_model_after_the_turns_tool_results(server: FakeOpenAIServer) -> None:
    @tool
    def screenshot() -> list[str | ContentPart]:
        """Takes a screenshot."""
        return ["the screen:", ContentPart.image(PNG)]

    @tool
    def clock() -> str:
        """The time."""
        return "12:00"

    calls = [
        {"id": "call_1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}},
        {"id": "call_2", "type": "function", "function": {"name": "clock", "arguments": "{}"}},
    ]
    server.script(
        Reply.json(completion({"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls")),
        Reply.json(TEXT),
    )
    agent = ChatModelAgent("eyes", model=make_model(server), tools=[screenshot, clock])
    events = list(Runner(agent).query("look"))
    assert events[-1].message_output is not None and events[-1].message_output.message.content == "A cat."
    second = server.bodies()[1]["messages"]
    assert second == [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "content": "the screen:\n[1 attachment(s) follow]", "tool_call_id": "call_1"},
        {"role": "tool", "content": "12:00", "tool_call_id": "call_2"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attachments of tool call call_1 (screenshot):"},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
            ],
        },
    ]


def test_attachments_are_flushed_before_the_next_message_and_at_the_end() -> None:
    image = ContentPart.image("https://example.invalid/a.png")
    call = ToolCall(id="c1", function={"name": "look", "arguments": "{}"})
    tool_msg = Message(role="tool", tool_call_id="c1", user_input_multi_content=[image])
    wire = messages_to_openai([Message.assistant(tool_calls=[call]), tool_msg, Message.user("next")])
    assert [m["role"] for m in wire] == ["assistant", "tool", "user", "user"]
    assert wire[1]["content"] == "[1 attachment(s) follow]"
    assert wire[2]["content"][0] == {"type": "text", "text": "Attachments of tool call c1:"}
    assert [m["role"] for m in messages_to_openai([tool_msg])] == ["tool", "user"]


@pytest.mark.parametrize("role", ["system", "assistant"])
def test_a_part_the_api_cannot_carry_is_refused_before_sending(server: FakeOpenAIServer, role: str) -> None:
    server.script(Reply.json(TEXT))
    bad = Message(role=role, user_input_multi_content=["look", ContentPart.image(PNG)])
    with pytest.raises(UnsupportedContentError, match=f"a {role} message holds a image_url part.*user message"):
        run(make_model(server).generate([bad, Message.user("hi")]))
    assert server.requests == []


@pytest.mark.parametrize("streaming", [False, True])
def test_an_agentic_conversation_is_refused_before_sending_naming_the_fix(
    server: FakeOpenAIServer, streaming: bool
) -> None:
    # Chat completions has no block form: the error says how to convert, or which models take blocks.
    server.script(Reply.json(TEXT))
    model = make_model(server)
    conversation = [Message.system("Be brief."), AgenticMessage.user("hi")]
    with pytest.raises(
        UnsupportedContentError, match=r"message 1 is an AgenticMessage.*to_messages\(\).*OpenAIResponsesModel"
    ):
        run(model.stream(conversation) if streaming else model.generate(conversation))
    assert server.requests == []
    # in a run, the same error is the run's error event
    agent = ChatModelAgent("a", description="a", model=model)
    (event,) = list(Runner(agent, streaming=streaming).run([AgenticMessage.user("hi")]))
    assert isinstance(event.error, UnsupportedContentError)
    assert server.requests == []


def test_a_user_messages_text_and_parts_are_both_sent() -> None:
    both = Message(role="user", content="Look:", user_input_multi_content=[ContentPart.image(PNG)])
    assert messages_to_openai([both]) == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Look:"}, {"type": "image_url", "image_url": {"url": PNG_URL}}],
        }
    ]


def test_text_parts_of_other_roles_are_unchanged() -> None:
    system = Message(role="system", user_input_multi_content=["Be brief."])
    assert messages_to_openai([system]) == [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]}]
