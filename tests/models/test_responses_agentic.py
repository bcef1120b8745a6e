"""OpenAIResponsesModel on AgenticMessage conversations: replies come as blocks, one per part
of each output item (reasoning summaries keep their item id and encrypted content, tool
calls their item id, server-side tool items become server_tool_call / server_tool_result
blocks, refusals refusal blocks); the request maps blocks back to the items they came from;
a streamed ReAct run on AgenticMessage interrupts for approval, is checkpointed and resumes,
sending the reasoning item back verbatim."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rillet import (
    AgenticMessage,
    ContentBlock,
    Message,
    ResponseMeta,
    Usage,
    concat_messages,
)
from rillet.models.errors import ModelStreamError
from rillet.models.responses import OpenAIResponsesModel, agentic_to_responses
from support.agentic_refund import interrupt_then_resume
from support.openai_server import FakeOpenAIServer, Reply, run, transcript

ENCRYPTED = "gAAAAABo-enc-refund"
USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 2},
    "output_tokens": 20,
    "output_tokens_details": {"reasoning_tokens": 8},
    "total_tokens": 30,
}


def _sse(*events: dict[str, Any]) -> Reply:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return Reply(body.encode())


def _completed(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "response.completed", "response": {"status": "completed", "output": output, "usage": USAGE}}


def _model(server: FakeOpenAIServer, **kw: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-5-mini", base_url=server.url, api_key="k", max_retries=0, **kw)


async def _chunks(model: OpenAIResponsesModel, messages: list[Any]) -> list[AgenticMessage]:
    reader = await model.stream(messages)
    return [chunk async for chunk in reader]  # type: ignore[misc]


REASONING_ITEM = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "Needs a refund."}],
    "encrypted_content": ENCRYPTED,
}
TEXT_ITEM = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Refunding.", "annotations": []}],
}
CALL_ITEM = {
    "id": "fc_1",
    "type": "function_call",
    "status": "completed",
    "call_id": "call_1",
    "name": "refund",
    "arguments": '{"amount": 30}',
}


def _reasoning_text_then_call() -> Reply:
    """A reasoning summary, a text and a function call, streamed as the API streams them."""
    return _sse(
        {"type": "response.created", "response": {"status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {"id": "rs_1", "type": "reasoning"}},
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": 0,
            "delta": "Needs ",
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": 0,
            "delta": "a refund.",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": REASONING_ITEM},
        {"type": "response.output_item.added", "output_index": 1, "item": {**TEXT_ITEM, "content": []}},
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "delta": "Refunding.",
        },
        {"type": "response.output_item.done", "output_index": 1, "item": TEXT_ITEM},
        {"type": "response.output_item.added", "output_index": 2, "item": {**CALL_ITEM, "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2, "delta": '{"amo'},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2, "delta": 'unt": 30}'},
        {"type": "response.function_call_arguments.done", "output_index": 2, "arguments": '{"amount": 30}'},
        {"type": "response.output_item.done", "output_index": 2, "item": CALL_ITEM},
        _completed([REASONING_ITEM, TEXT_ITEM, CALL_ITEM]),
    )


def _answer(text: str) -> Reply:
    item = {**TEXT_ITEM, "id": "msg_2", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return _sse(
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": text},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        _completed([item]),
    )


EXPECTED_BLOCKS = (
    ContentBlock("reasoning", text="Needs a refund.", signature=ENCRYPTED, extra={"item_id": "rs_1"}),
    ContentBlock.from_text("Refunding."),
    ContentBlock("tool_call", call_id="call_1", name="refund", arguments='{"amount": 30}', extra={"item_id": "fc_1"}),
)
EXPECTED_META = ResponseMeta("tool_calls", Usage(10, 20, 30, 2, 8))


# --- streamed replies ---------------------------------------------------------------------------


def test_a_streamed_reply_to_blocks_keeps_each_part_and_the_encrypted_reasoning(server: FakeOpenAIServer) -> None:
    server.script(_reasoning_text_then_call())
    chunks = run(_chunks(_model(server, store=False), [AgenticMessage.user("refund me")]))
    assert all(type(c) is AgenticMessage for c in chunks)
    assert chunks[0].role == "assistant"
    # one stream index per output item part, in the response's order
    assert [[b.index for b in c.blocks] for c in chunks] == [[0], [0], [0], [1], [2], [2], [2], []]
    whole = concat_messages(chunks)
    assert whole.blocks == EXPECTED_BLOCKS
    assert whole.response_meta == EXPECTED_META
    body = server.bodies()[-1]
    assert body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "refund me"}]}]
    assert body["include"] == ["reasoning.encrypted_content"] and body["stream"] is True


def test_the_recorded_transcripts_give_the_same_reply_as_blocks(server: FakeOpenAIServer) -> None:
    """The Message path's transcripts, read as blocks: the same text, reasoning, calls and usage."""
    for name in ("responses_tools", "responses_text"):
        server.script(Reply.sse(name))
        blocks_reply = concat_messages(run(_chunks(_model(server), [AgenticMessage.user("hi")])))
        server.script(Reply.sse(name))

        async def plain(model: OpenAIResponsesModel) -> list[Message]:
            return [c async for c in await model.stream([Message.user("hi")])]

        message_reply = concat_messages(run(plain(_model(server))))
        assert blocks_reply.content == message_reply.content
        assert [(c.id, c.function.name, c.function.arguments) for c in blocks_reply.tool_calls] == [
            (c.id, c.function.name, c.function.arguments) for c in message_reply.tool_calls
        ]
        reasoning = [b.text for b in blocks_reply.blocks if b.kind == "reasoning"]
        assert "\n\n".join(reasoning) == message_reply.reasoning_content
        assert blocks_reply.response_meta == message_reply.response_meta


def test_errors_in_the_stream_are_the_message_paths_errors(server: FakeOpenAIServer) -> None:
    server.script(Reply.sse("responses_failed"))

    async def main() -> tuple[list[AgenticMessage], BaseException | None]:
        chunks: list[AgenticMessage] = []
        try:
            async for chunk in await _model(server).stream([AgenticMessage.user("hi")]):  # type: ignore[list-item]
                chunks.append(chunk)  # type: ignore[arg-type]
        except Exception as e:
            return chunks, e
        return chunks, None

    chunks, err = run(main())
    assert concat_messages(chunks).content == "Par"
    assert isinstance(err, ModelStreamError) and err.code == "server_error" and err.base_url == server.url


# --- a streamed ReAct run, interrupted, checkpointed, resumed ----------------------------------


def test_a_streamed_agentic_react_run_is_checkpointed_and_resumed(server: FakeOpenAIServer) -> None:
    server.script(_reasoning_text_then_call())
    reply, messages = interrupt_then_resume(
        lambda: _model(server, store=False), lambda: server.script(_answer("Refunded 30 euros."))
    )
    assert reply.blocks == EXPECTED_BLOCKS
    assert messages[0].blocks == (ContentBlock.tool_result("refunded 30", "call_1", "refund"),)
    assert messages[1].content == "Refunded 30 euros."
    # the resumed call sent the reasoning item back verbatim (id, summary, encrypted content),
    # then the text, the function call with its item id, and the tool's output
    sent = server.bodies()[-1]["input"]
    assert sent == [
        {"role": "user", "content": [{"type": "input_text", "text": "refund me"}]},
        REASONING_ITEM,
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Refunding.", "annotations": []}],
        },
        {k: v for k, v in CALL_ITEM.items() if k != "status"},
        {"type": "function_call_output", "call_id": "call_1", "output": "refunded 30"},
    ]


# --- whole replies ------------------------------------------------------------------------------


def test_a_whole_reply_is_the_same_blocks_as_the_stream(server: FakeOpenAIServer) -> None:
    whole_body = {"status": "completed", "output": [REASONING_ITEM, TEXT_ITEM, CALL_ITEM], "usage": USAGE}
    server.script(Reply.json(whole_body))
    reply = run(_model(server).generate([AgenticMessage.user("refund me")]))  # type: ignore[list-item]
    assert type(reply) is AgenticMessage
    assert reply.role == "assistant" and reply.blocks == EXPECTED_BLOCKS
    assert reply.response_meta == EXPECTED_META
    assert "stream" not in server.bodies()[-1]
    # a server that streams what was asked whole, and one that answers a stream whole
    server.script(_reasoning_text_then_call())
    assert run(_model(server).generate([AgenticMessage.user("refund me")])) == reply  # type: ignore[list-item]
    server.script(Reply.json(whole_body))
    assert concat_messages(run(_chunks(_model(server), [AgenticMessage.user("refund me")]))) == reply


def test_a_whole_reply_that_failed_raises_as_for_a_message(server: FakeOpenAIServer) -> None:
    server.script(Reply.json({"status": "failed", "error": {"code": "server_error", "message": "boom"}}))
    with pytest.raises(ModelStreamError, match="boom") as info:
        run(_model(server).generate([AgenticMessage.user("hi")]))  # type: ignore[list-item]
    assert info.value.base_url == server.url


# --- reasoning, server-side tools, MCP and refusals round-trip ---------------------------------


SERVER_OUTPUT: list[dict[str, Any]] = [
    {
        "id": "rs_2",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Search first."}, {"type": "summary_text", "text": "Then read."}],
        "encrypted_content": "gAAAA-two-parts",
    },
    {"id": "rs_3", "type": "reasoning", "summary": []},  # an id only (store=True)
    {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "rillet rust"},
    },
    {
        "id": "fs_1",
        "type": "file_search_call",
        "status": "completed",
        "queries": ["refund policy"],
        "results": [{"file_id": "file-1", "filename": "policy.md", "score": 0.9, "text": "30 days"}],
    },
    {
        "id": "mcp_1",
        "type": "mcp_call",
        "server_label": "shop",
        "name": "order_status",
        "arguments": '{"order": 7}',
        "output": "shipped",
    },
    {
        "id": "msg_3",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "Within 30 days.", "annotations": []},
            {"type": "refusal", "refusal": "I cannot refund it myself."},
        ],
    },
]

SERVER_BLOCKS = (
    ContentBlock("reasoning", text="Search first.", signature="gAAAA-two-parts", extra={"item_id": "rs_2"}),
    ContentBlock("reasoning", text="Then read.", extra={"item_id": "rs_2"}),
    ContentBlock("reasoning", extra={"item_id": "rs_3"}),
    ContentBlock(
        "server_tool_call",
        call_id="ws_1",
        name="web_search",
        arguments='{"action": {"type": "search", "query": "rillet rust"}}',
        extra={"status": "completed"},
    ),
    ContentBlock(
        "server_tool_call",
        call_id="fs_1",
        name="file_search",
        arguments='{"queries": ["refund policy"]}',
        extra={"status": "completed"},
    ),
    ContentBlock(
        "server_tool_result",
        call_id="fs_1",
        name="file_search",
        text='{"results": [{"file_id": "file-1", "filename": "policy.md", "score": 0.9, "text": "30 days"}]}',
    ),
    ContentBlock("mcp_tool_call", server_label="shop", call_id="mcp_1", name="order_status", arguments='{"order": 7}'),
    ContentBlock("mcp_tool_result", server_label="shop", call_id="mcp_1", name="order_status", text="shipped"),
    ContentBlock.from_text("Within 30 days."),
    ContentBlock("refusal", text="I cannot refund it myself."),
)


def _server_tools_stream() -> Reply:
    """The items of SERVER_OUTPUT as a stream: deltas for the reasoning and the message,
    server-side tools reported when added and done only."""
    events: list[dict[str, Any]] = []
    for at, item in enumerate(SERVER_OUTPUT):
        events.append(
            {"type": "response.output_item.added", "output_index": at, "item": {**item, "status": "in_progress"}}
        )
        if item["type"] == "reasoning":
            for n, part in enumerate(item["summary"]):
                for piece in (part["text"][:4], part["text"][4:]):
                    events.append(
                        {
                            "type": "response.reasoning_summary_text.delta",
                            "item_id": item["id"],
                            "output_index": at,
                            "summary_index": n,
                            "delta": piece,
                        }
                    )
        if item["type"] == "web_search_call":
            events.append({"type": "response.web_search_call.searching", "output_index": at, "item_id": item["id"]})
        if item["type"] == "message":
            events.append(
                {"type": "response.output_text.delta", "output_index": at, "content_index": 0, "delta": "Within "}
            )
            events.append(
                {"type": "response.output_text.delta", "output_index": at, "content_index": 0, "delta": "30 days."}
            )
            events.append(
                {"type": "response.refusal.delta", "output_index": at, "content_index": 1, "delta": "I cannot "}
            )
            events.append(
                {"type": "response.refusal.delta", "output_index": at, "content_index": 1, "delta": "refund it myself."}
            )
        events.append({"type": "response.output_item.done", "output_index": at, "item": item})
    events.append(_completed(SERVER_OUTPUT))
    return _sse(*events)


def _parse(data: bytes, cuts: list[int]) -> AgenticMessage:
    parser = OpenAIResponsesModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")._agentic_parser()
    chunks: list[AgenticMessage] = []
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        chunks += parser.feed(data[start:end])
    whole = concat_messages([*chunks, *parser.finish()])
    assert isinstance(whole, AgenticMessage)
    return whole


def test_every_split_and_line_ending_gives_the_same_blocks() -> None:
    data = _server_tools_stream().body
    assert _parse(data, []).blocks == SERVER_BLOCKS
    for at in range(1, len(data), 7):
        assert _parse(data, [at, at + 1]).blocks == SERVER_BLOCKS, f"cut at byte {at}"
    for line_end in (b"\r\n", b"\r"):
        crlf = data.replace(b"\n", line_end)
        assert _parse(crlf, [crlf.index(b"\r") + 1]).blocks == SERVER_BLOCKS


def _as_sent(item: dict[str, Any]) -> dict[str, Any]:
    """An output item as the next request carries it: a message item without its id and
    status (as the Message path sends text), everything else as it came."""
    if item["type"] == "message":
        return {"type": "message", "role": "assistant", "content": item["content"]}
    return item


def test_reasoning_server_tools_mcp_and_refusals_round_trip(server: FakeOpenAIServer) -> None:
    whole_body = {"status": "completed", "output": SERVER_OUTPUT, "usage": USAGE}
    question = AgenticMessage.user("Can I get a refund?")
    server.script(Reply.json(whole_body), _server_tools_stream())
    whole = run(_model(server).generate([question]))  # type: ignore[list-item]
    streamed = concat_messages(run(_chunks(_model(server), [question])))
    assert whole.blocks == SERVER_BLOCKS
    assert streamed.blocks == SERVER_BLOCKS
    assert whole.response_meta == streamed.response_meta == ResponseMeta("stop", Usage(10, 20, 30, 2, 8))

    # what was received is sent back the same way on the next call
    server.script(_answer("Done."))
    run(_model(server).generate([question, whole, AgenticMessage.user("thanks")]))  # type: ignore[list-item]
    sent = server.bodies()[-1]["input"]
    assert sent[1:-1] == [_as_sent(item) for item in SERVER_OUTPUT]
    assert agentic_to_responses(streamed) == sent[1:-1]


def test_user_media_blocks_become_input_parts() -> None:
    message = AgenticMessage.user(
        [
            ContentBlock.from_text("what is this?"),
            ContentBlock.image("https://example.org/cat.png", detail="low"),
            ContentBlock.image(data="AA==", mime_type="image/jpeg"),
            ContentBlock("file", file_id="file-1"),
            ContentBlock("file", data="JVBE", mime_type="application/pdf", filename="a.pdf"),
            ContentBlock("file", url="https://example.org/a.pdf"),
        ]
    )
    assert agentic_to_responses(message) == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is this?"},
                {"type": "input_image", "image_url": "https://example.org/cat.png", "detail": "low"},
                {"type": "input_image", "image_url": "data:image/jpeg;base64,AA==", "detail": "auto"},
                {"type": "input_file", "file_id": "file-1"},
                {"type": "input_file", "file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"},
                {"type": "input_file", "file_url": "https://example.org/a.pdf"},
            ],
        }
    ]
    system = AgenticMessage.system("Be brief.")
    assert agentic_to_responses(system) == [
        {"role": "system", "content": [{"type": "input_text", "text": "Be brief."}]}
    ]


# --- blocks the API takes no input for ---------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "match"),
    [
        (
            AgenticMessage.user(
                [ContentBlock.from_text("listen"), ContentBlock("audio", data="UklG", mime_type="audio/wav")]
            ),
            r"block 1 of an AgenticMessage is an 'audio' block, which the Responses API takes no input item for.*"
            r"drop it from the conversation, or send a transcript as a text block",
        ),
        (
            AgenticMessage.assistant([ContentBlock.image("https://example.org/cat.png")]),
            r"block 0 .* 'image' block, in an assistant message.*put images and files in a user message",
        ),
        (
            AgenticMessage.user([ContentBlock("refusal", text="no")]),
            r"block 0 .* 'refusal' block, in a 'user' message; refusals come from the assistant",
        ),
        (
            AgenticMessage.assistant(
                [ContentBlock("server_tool_result", call_id="ws_9", name="web_search", text="{}")]
            ),
            r"block 0 .* 'server_tool_result' block, whose server_tool_call block \(call_id 'ws_9'\) is not in the message",
        ),
        (
            AgenticMessage.assistant(
                [ContentBlock("server_tool_call", call_id="ws_9", name="web_search", arguments="rillet rust")]
            ),
            r"block 0 .* 'server_tool_call' block, whose arguments are not a JSON object \('rillet rust'\)",
        ),
    ],
)
def test_an_unsendable_block_is_a_clear_error_before_any_request(
    server: FakeOpenAIServer, message: AgenticMessage, match: str
) -> None:
    before = len(server.requests)
    with pytest.raises(ValueError, match=f"OpenAIResponsesModel: {match}"):
        run(_model(server).generate([message, AgenticMessage.user("go on")]))  # type: ignore[list-item]
    assert len(server.requests) == before


def test_message_conversations_are_unchanged(server: FakeOpenAIServer) -> None:
    """A conversation whose last message is a Message still gets Messages."""
    server.script(Reply(transcript("responses_text")))
    reply = run(_model(server).generate([Message.user("hi")]))
    assert type(reply) is Message and reply.content.startswith("Bonjour")
