"""AnthropicChatModel against a scripted server on loopback.

The server (tests/support/openai_server.py, which serves any path) replays Messages API SSE
transcripts written from the public protocol (tests/support/transcripts/anthropic_*.sse). The tests
assert the exact chunks, the concatenated message and the exact request bodies; a
differential test runs the anthropic SDK's own stream accumulator over the same bytes from
the same server.
"""

from __future__ import annotations

import json
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet import ContentPart, FunctionCall, Message, ResponseMeta, StreamReader, ToolCall, Usage, concat_messages
from rillet._native import AnthropicStreamParser, parse_anthropic_message
from rillet.models import openai as openai_module
from rillet.models.anthropic import AnthropicChatModel, _assistant_blocks, content_part_to_anthropic
from rillet.models.errors import (
    AuthenticationError,
    IncompleteStreamError,
    MalformedChunkError,
    ModelStreamError,
    OverloadedError,
    RateLimitError,
    ServerError,
    StreamLimitError,
)
from rillet.tools import ToolInfo
from support.openai_server import FakeOpenAIServer, Reply, run, transcript
from support.optional import need

TRANSCRIPTS = ["anthropic_text", "anthropic_tools", "anthropic_thinking"]
USER = [Message.user("hi")]
SIG = "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4a"


def root(server: FakeOpenAIServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def make_model(server: FakeOpenAIServer, **kw: Any) -> AnthropicChatModel:
    kw.setdefault("api_key", "sk-ant-test")
    kw.setdefault("max_retries", 0)
    return AnthropicChatModel("claude-test", base_url=root(server), **kw)


async def drain(reader: StreamReader[Message]) -> tuple[list[Message], BaseException | None]:
    chunks: list[Message] = []
    try:
        async for chunk in reader:
            chunks.append(chunk)
    except Exception as e:  # the test inspects it
        return chunks, e
    return chunks, None


def stream_once(
    server: FakeOpenAIServer, reply: Reply, messages: list[Message] = USER, **kw: Any
) -> tuple[list[Message], BaseException | None]:
    server.script(reply)
    model = make_model(server)

    async def main() -> tuple[list[Message], BaseException | None]:
        return await drain(await model.stream(messages, **kw))

    return run(main())


def call(index: int, args: str, id: str = "", name: str = "") -> Message:
    return Message(tool_calls=[ToolCall(index, id, "function" if id else "", FunctionCall(name, args))])


def meta(reason: str, prompt: int, completion: int, cached: int = 0) -> Message:
    return Message(response_meta=ResponseMeta(reason, Usage(prompt, completion, prompt + completion, cached)))


def thinking(block: str, entry: dict[str, Any]) -> Message:
    return Message(extra={"anthropic_thinking": {block: entry}})


EXPECTED: dict[str, list[Message]] = {
    "anthropic_text": [
        Message("assistant", ""),
        Message(content="Hello"),
        Message(content=", wörld"),
        Message(content=" ✓"),
        meta("end_turn", 12, 6),
    ],
    "anthropic_tools": [
        Message("assistant", ""),
        Message(content="Checking both."),
        call(0, "", "toolu_01A", "get_weather"),
        call(0, '{"city": "Pa'),
        call(0, 'ris"}'),
        call(1, "", "toolu_01B", "get_time"),
        call(1, '{"tz": "Europe/Paris"}'),
        meta("tool_use", 410, 71, cached=100),
    ],
    "anthropic_thinking": [
        Message("assistant", ""),
        Message(reasoning_content="The user wants "),
        Message(reasoning_content="a sum: 2+2."),
        thinking("0", {"signature": SIG, "chars": 26}),
        thinking("1", {"redacted": REDACTED}),
        Message(content="Let me add."),
        call(0, "", "toolu_01C", "add"),
        call(0, '{"a": 2, "b": 2}'),
        meta("tool_use", 40, 88),
    ],
}


# --- the parser on its own ---------------------------------------------------------------------


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_every_split_of_a_transcript_gives_the_same_chunks(name: str) -> None:
    data = transcript(name)
    for at in range(0, len(data) + 1, 5):
        parser = AnthropicStreamParser()
        chunks = [*parser.feed(data[:at]), *parser.feed(data[at:]), *parser.finish()]
        assert chunks == EXPECTED[name], f"split at {at}"
        assert parser.done


def test_malformed_and_oversized_events_name_the_line_and_the_fix() -> None:
    parser = AnthropicStreamParser()
    good = b'event: message_start\ndata: {"type":"message_start","message":{}}\n\n'
    assert parser.feed(good + b"event: content_block_delta\ndata: {oops\n\n") == [Message("assistant", "")]
    with pytest.raises(MalformedChunkError, match="line 5") as info:
        parser.feed(b"")
    assert info.value.line == 5
    with pytest.raises(MalformedChunkError, match="content block 3, which has not started"):
        AnthropicStreamParser().feed(b'data: {"type":"content_block_delta","index":3,"delta":{}}\n\n')
    with pytest.raises(StreamLimitError, match="max_sse_line_bytes=64") as limit:
        AnthropicStreamParser(max_sse_line_bytes=64).feed(b"data: " + b"x" * 100)
    assert limit.value.limit == "max_sse_line_bytes"


def test_a_hostile_block_index_is_read_not_a_panic() -> None:
    # The index was a vector position: 2**64-1 panicked, 10**11 tried to allocate terabytes.
    for index in (2**64 - 1, 10**11):
        start = {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": "a"}}
        delta = {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": "b"}}
        data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in (start, delta))
        assert AnthropicStreamParser().feed(data) == [Message("assistant", "a"), Message(content="b")]


EVENTS = [e + b"\n\n" for name in TRANSCRIPTS for e in transcript(name).split(b"\n\n") if e]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(EVENTS), st.binary(max_size=40)), max_size=12),
    st.integers(min_value=1, max_value=64),
)
def test_any_bytes_give_chunks_or_a_named_model_error(pieces: list[bytes], read: int) -> None:
    data = b"".join(pieces)
    parser = AnthropicStreamParser()
    try:
        for at in range(0, len(data), read):
            for chunk in parser.feed(data[at : at + read]):
                assert isinstance(chunk, Message)
        parser.finish()
    except (MalformedChunkError, ModelStreamError, IncompleteStreamError) as e:
        assert e.line >= 0 and str(e)


def test_a_whole_message_parses_like_the_stream_concatenated() -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "The user wants a sum: 2+2.", "signature": SIG},
            {"type": "redacted_thinking", "data": REDACTED},
            {"type": "text", "text": "Let me add."},
            {"type": "tool_use", "id": "toolu_01C", "name": "add", "input": {"a": 2, "b": 2}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 40, "output_tokens": 88},
    }
    whole = parse_anthropic_message(json.dumps(body).encode())
    streamed = concat_messages(EXPECTED["anthropic_thinking"])
    assert whole.tool_calls[0].index is None
    assert _assistant_blocks(whole) == _assistant_blocks(streamed)
    assert whole.response_meta == streamed.response_meta
    with pytest.raises(ModelStreamError, match="overloaded_error"):
        parse_anthropic_message(b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')


# --- streaming against the server: chunks and request bodies -------------------------------


WEATHER = ToolInfo(
    "get_weather", "The weather in a city.", {"type": "object", "properties": {"city": {"type": "string"}}}
)


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_streams_replay_as_exact_chunks(server: FakeOpenAIServer, name: str) -> None:
    data = transcript(name)
    chunks, err = stream_once(server, Reply(data, splits=tuple(range(7, len(data), 97))))
    assert err is None
    assert chunks == EXPECTED[name]
    request = server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == "sk-ant-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.json() == {
        "model": "claude-test",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "stream": True,
    }


def test_request_body_with_system_tools_choice_cache_and_parallel_off(server: FakeOpenAIServer) -> None:
    system = Message.system("Be brief.")
    system.extra = {"cache_control": {"type": "ephemeral"}}
    chunks, err = stream_once(
        server,
        Reply.sse("anthropic_tools"),
        [system, Message.user("weather in Paris?")],
        tools=[WEATHER],
        tool_choice="required",
        parallel_tool_calls=False,
        temperature=0.2,
        stop="END",
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    assert err is None and chunks == EXPECTED["anthropic_tools"]
    assert server.bodies()[0] == {
        "model": "claude-test",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "weather in Paris?"}]}],
        "tools": [
            {
                "name": "get_weather",
                "description": "The weather in a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "temperature": 0.2,
        "stop_sequences": ["END"],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "stream": True,
    }


def test_thinking_and_parallel_tool_results_go_back_on_the_next_turn(server: FakeOpenAIServer) -> None:
    reply = concat_messages(EXPECTED["anthropic_thinking"])
    model = make_model(server)
    history = [
        Message.user("2+2?"),
        reply,
        Message.tool_message("4", "toolu_01C", "add"),
        Message.tool_message("ok", "toolu_01D", "log"),
        Message.user("and now?"),
    ]
    assert model.request_body(history, None, {}, stream=False)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "2+2?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "The user wants a sum: 2+2.", "signature": SIG},
                {"type": "redacted_thinking", "data": REDACTED},
                {"type": "text", "text": "Let me add."},
                {"type": "tool_use", "id": "toolu_01C", "name": "add", "input": {"a": 2, "b": 2}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01C", "content": "4"},
                {"type": "tool_result", "tool_use_id": "toolu_01D", "content": "ok"},
                {"type": "text", "text": "and now?"},
            ],
        },
    ]


def test_tool_choice_forms() -> None:
    model = AnthropicChatModel("m", api_key="k")
    tools = [WEATHER]

    def choice(value: Any) -> Any:
        return model.request_body(USER, tools, {"tool_choice": value}, stream=False)["tool_choice"]

    assert choice("auto") == {"type": "auto"}
    assert choice("none") == {"type": "none"}
    assert choice("get_weather") == {"type": "tool", "name": "get_weather"}
    assert choice({"type": "function", "function": {"name": "get_weather"}}) == {"type": "tool", "name": "get_weather"}
    assert choice({"type": "any"}) == {"type": "any"}
    assert "tool_choice" not in model.request_body(USER, None, {"tool_choice": "auto"}, stream=False)


def test_images_and_files_map_to_anthropic_blocks(server: FakeOpenAIServer) -> None:
    assert content_part_to_anthropic({"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}) == {
        "type": "image",
        "source": {"type": "url", "url": "https://x.test/a.png"},
    }
    assert content_part_to_anthropic({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}) == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
    }
    pdf = {"type": "file", "file": {"filename": "r.pdf", "file_data": "data:application/pdf;base64,JVBE"}}
    assert content_part_to_anthropic(pdf) == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"},
        "title": "r.pdf",
    }
    assert content_part_to_anthropic({"type": "file", "file": {"file_id": "file_01"}}) == {
        "type": "document",
        "source": {"type": "file", "file_id": "file_01"},
    }
    with pytest.raises(ValueError, match="base64"):
        content_part_to_anthropic({"type": "image_url", "image_url": {"url": "data:image/png,raw"}})
    with pytest.raises(ValueError, match="text, image_url or file"):
        content_part_to_anthropic({"type": "audio"})
    image = Message.user(["what is this?", {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}])
    chunks, err = stream_once(server, Reply.sse("anthropic_text"), [image])
    assert err is None
    assert server.bodies()[0]["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
            ],
        }
    ]


def test_a_message_with_text_and_parts_sends_both() -> None:
    # A tool that returns ["the screen:", image] gives a tool message whose text is its content
    # and whose image is a part: the text was dropped before (only the parts were sent).
    image = ContentPart.image("https://x.test/a.png")
    result = Message(role="tool", content="the screen:", tool_call_id="toolu_1")
    result.user_input_multi_content = [image]
    question = Message.user("and this?")
    question.user_input_multi_content = [image]
    texts = Message(role="tool", content="a", tool_call_id="toolu_2")
    texts.user_input_multi_content = ["b"]
    body = make_model_offline().request_body([result, texts, question], None, {}, stream=False)
    url = {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "the screen:"}, url],
                },
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "a\nb"},
                {"type": "text", "text": "and this?"},
                url,
            ],
        }
    ]


def make_model_offline() -> AnthropicChatModel:
    return AnthropicChatModel("claude-test", api_key="sk-ant-test")


def test_generate_reads_a_whole_message(server: FakeOpenAIServer) -> None:
    body = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": 2},
    }
    server.script(Reply.json(body))
    reply = run(make_model(server).generate(USER))
    assert reply == Message("assistant", "ok", response_meta=ResponseMeta("end_turn", Usage(7, 1, 8, 2)))
    assert "stream" not in server.bodies()[0]
    server.script(Reply.sse("anthropic_tools"))
    whole = run(make_model(server).generate(USER))
    assert [(c.index, c.id, c.function.arguments) for c in whole.tool_calls] == [
        (None, "toolu_01A", '{"city": "Paris"}'),
        (None, "toolu_01B", '{"tz": "Europe/Paris"}'),
    ]


# --- errors mid-stream and on the request ------------------------------------------------------


def test_an_error_event_ends_the_stream_after_the_chunks_before_it(server: FakeOpenAIServer) -> None:
    chunks, err = stream_once(server, Reply.sse("anthropic_error"))
    assert chunks == [Message("assistant", ""), Message(content="Partial")]
    assert isinstance(err, ModelStreamError) and err.code == "overloaded_error" and err.line == 11
    assert "Overloaded" in str(err)


def test_a_stream_cut_midway_is_incomplete_not_a_short_answer(server: FakeOpenAIServer) -> None:
    data = transcript("anthropic_tools")
    cut = data.index(b"event: content_block_start", data.index(b"toolu_01A"))
    chunks, err = stream_once(server, Reply(data, drop_at=cut))
    assert chunks == EXPECTED["anthropic_tools"][:5]
    assert isinstance(err, IncompleteStreamError)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    recorded: list[float] = []

    async def record(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(openai_module, "_sleep", record)
    monkeypatch.setattr(openai_module, "random", types.SimpleNamespace(random=lambda: 0.0))
    return recorded


def error_reply(status: int, kind: str, message: str, **headers: str) -> Reply:
    return Reply.json({"type": "error", "error": {"type": kind, "message": message}}, status, headers=headers)


def test_429_and_529_are_retried_with_retry_after(server: FakeOpenAIServer, waits: list[float]) -> None:
    server.script(
        error_reply(429, "rate_limit_error", "slow down", **{"retry-after": "2"}),
        error_reply(529, "overloaded_error", "Overloaded", **{"retry-after": "1"}),
        error_reply(503, "api_error", "busy"),
        Reply.sse("anthropic_text"),
    )

    async def main() -> tuple[list[Message], BaseException | None]:
        return await drain(await make_model(server, max_retries=3).stream(USER))

    chunks, err = run(main())
    assert err is None and chunks == EXPECTED["anthropic_text"]
    assert waits == [2.0, 1.0, 2.0]  # the hints, then the third try's backoff
    assert len(server.requests) == 4 and server.bodies()[0] == server.bodies()[3]


def test_exhausted_retries_raise_typed_errors(server: FakeOpenAIServer, waits: list[float]) -> None:
    server.script(*[error_reply(529, "overloaded_error", "Overloaded", **{"retry-after": "3"})] * 2)
    with pytest.raises(OverloadedError, match=r"overloaded \(HTTP 529\) after 2 tries") as info:
        run(make_model(server, max_retries=1).generate(USER))
    assert isinstance(info.value, ServerError)
    assert (info.value.status_code, info.value.code, info.value.retry_after) == (529, "overloaded_error", 3.0)
    server.script(error_reply(429, "rate_limit_error", "slow down", **{"retry-after": "4"}))
    with pytest.raises(RateLimitError) as rate:
        run(make_model(server).generate(USER))
    assert rate.value.retry_after == 4.0 and rate.value.code == "rate_limit_error"
    server.script(error_reply(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(AuthenticationError, match="Set ANTHROPIC_API_KEY") as auth:
        run(make_model(server).generate(USER))
    assert "/v1/messages" in str(auth.value) and "invalid x-api-key" in str(auth.value)


def test_options_are_checked_when_the_model_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.test/")
    model = AnthropicChatModel("m")
    assert (model.api_key, model.base_url, model.supports_response_format) == ("from-env", "https://proxy.test", False)
    for bad in ({"max_tokens": 0}, {"max_retries": -1}, {"max_sse_line_bytes": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            AnthropicChatModel("m", **bad)
    with pytest.raises(ValueError, match="non-empty"):
        AnthropicChatModel("")
    assert AnthropicChatModel("m", headers={"anthropic-beta": "b1"}).headers == {
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "b1",
    }
    assert AnthropicChatModel("m", headers={"anthropic-version": "v2"}).headers == {"anthropic-version": "v2"}


# --- the anthropic SDK reads the same bytes the same way --------------------------------------


def sdk_final(server: FakeOpenAIServer) -> Any:
    anthropic = need("anthropic")
    client = anthropic.Anthropic(base_url=root(server), api_key="sk-ant-test", max_retries=0)
    with client.messages.stream(model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as s:
        final = s.get_final_message()
    client.close()
    return final


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_anthropic_sdk_agrees(server: FakeOpenAIServer, name: str) -> None:
    server.script(Reply.sse(name))
    final = sdk_final(server)
    chunks, err = stream_once(server, Reply.sse(name))
    assert err is None
    ours = concat_messages(chunks)
    keep = {"text": ("text",), "tool_use": ("id", "name", "input"), "thinking": ("thinking", "signature")}
    sdk_blocks = [{"type": b.type, **{k: getattr(b, k) for k in keep.get(b.type, ("data",))}} for b in final.content]
    assert _assistant_blocks(ours) == sdk_blocks
    assert ours.response_meta is not None and ours.response_meta.usage is not None
    assert ours.response_meta.finish_reason == final.stop_reason
    u = final.usage
    prompt = u.input_tokens + (u.cache_creation_input_tokens or 0) + (u.cache_read_input_tokens or 0)
    assert ours.response_meta.usage == Usage(
        prompt, u.output_tokens, prompt + u.output_tokens, u.cache_read_input_tokens or 0
    )
