"""AnthropicChatModel on AgenticMessage conversations: replies come as blocks (the thinking
block's signature kept on its reasoning block), the request maps blocks to the API's blocks
directly, and a streamed ReAct run on AgenticMessage interrupts for approval, is checkpointed
and resumes, sending the signed thinking block back verbatim."""

from __future__ import annotations

import json
from typing import Any

from rillet import (
    AgenticMessage,
    AnthropicChatModel,
    ContentBlock,
    concat_messages,
)
from support.agentic_refund import interrupt_then_resume
from support.openai_server import FakeOpenAIServer, Reply, run

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"


def _sse(*events: dict[str, Any]) -> Reply:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return Reply(body.encode())


def _start() -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {"role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}},
    }


def _stop(reason: str) -> list[dict[str, Any]]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 20}},
        {"type": "message_stop"},
    ]


def _thinking_then_tool() -> Reply:
    return _sse(
        _start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Needs "}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "a refund."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": SIGNATURE}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Refunding."}},
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "refund", "input": {}},
        },
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"amo'}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": 'unt": 30}'}},
        {"type": "content_block_stop", "index": 2},
        *_stop("tool_use"),
    )


def _answer(text: str) -> Reply:
    return _sse(
        _start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        *_stop("end_turn"),
    )


def _model(server: FakeOpenAIServer) -> AnthropicChatModel:
    return AnthropicChatModel("claude-test", base_url=f"http://127.0.0.1:{server.port}", api_key="k", max_retries=0)


def test_a_streamed_reply_to_blocks_keeps_each_block_and_the_signature(server: FakeOpenAIServer) -> None:
    server.script(_thinking_then_tool())

    async def main() -> list[AgenticMessage]:
        reader = await _model(server).stream([AgenticMessage.user("refund me")])  # type: ignore[list-item]
        return [chunk async for chunk in reader]  # type: ignore[misc]

    chunks = run(main())
    assert all(type(c) is AgenticMessage for c in chunks)
    whole = concat_messages(chunks)
    r, t, c = whole.blocks
    assert (r.kind, r.text, r.signature) == ("reasoning", "Needs a refund.", SIGNATURE)
    assert (t.kind, t.text) == ("text", "Refunding.")
    assert (c.kind, c.call_id, c.name, c.arguments) == ("tool_call", "toolu_1", "refund", '{"amount": 30}')
    assert whole.response_meta is not None and whole.response_meta.finish_reason == "tool_use"
    # the request carried the user's block as the API's block
    assert server.bodies()[-1]["messages"] == [{"role": "user", "content": [{"type": "text", "text": "refund me"}]}]


def test_a_streamed_agentic_react_run_is_checkpointed_and_resumed(server: FakeOpenAIServer) -> None:
    server.script(_thinking_then_tool())
    reply, messages = interrupt_then_resume(
        lambda: _model(server), lambda: server.script(_answer("Refunded 30 euros."))
    )
    assert reply.blocks[0].signature == SIGNATURE
    assert messages[0].blocks == (ContentBlock.tool_result("refunded 30", "toolu_1", "refund"),)
    assert messages[1].content == "Refunded 30 euros."
    # the resumed call sent the signed thinking block back verbatim, then the tool result
    sent = server.bodies()[-1]["messages"]
    assert sent[1]["role"] == "assistant"
    assert sent[1]["content"][0] == {"type": "thinking", "thinking": "Needs a refund.", "signature": SIGNATURE}
    assert sent[1]["content"][2] == {"type": "tool_use", "id": "toolu_1", "name": "refund", "input": {"amount": 30}}
    assert sent[2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "refunded 30"}],
    }
