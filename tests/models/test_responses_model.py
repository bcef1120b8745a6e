"""OpenAIResponsesModel against a scripted Responses API server on 127.0.0.1.

Recorded-shape transcripts (tests/support/transcripts/responses_*.sse) are replayed over HTTP; the
tests assert the exact Message chunks, the concatenated message and the exact request
bodies, including the second turn that sends reasoning items and function calls back. A
differential test runs the openai SDK's own Responses stream handling over the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet import ContentPart, FunctionCall, Message, ResponseMeta, StreamReader, ToolCall, Usage, concat_messages
from rillet.models import openai as openai_module
from rillet.models.errors import (
    IncompleteStreamError,
    MalformedChunkError,
    ModelError,
    ModelStreamError,
    RateLimitError,
    StreamLimitError,
)
from rillet.models.responses import (
    OpenAIResponsesModel,
    ResponsesStreamParser,
    _part,
    message_to_responses,
    parse_response,
)
from support.openai_server import FakeOpenAIServer, Reply, run, transcript
from support.optional import need

TRANSCRIPTS = ["responses_text", "responses_tools", "responses_failed", "responses_error_event"]


def make_model(server: FakeOpenAIServer, **kw: Any) -> OpenAIResponsesModel:
    kw.setdefault("api_key", "sk-test")
    kw.setdefault("max_retries", 0)
    return OpenAIResponsesModel("gpt-5-mini", base_url=server.url, **kw)


async def drain(reader: StreamReader[Message]) -> tuple[list[Message], BaseException | None]:
    chunks: list[Message] = []
    try:
        async for chunk in reader:
            chunks.append(chunk)
    except Exception as e:
        return chunks, e
    return chunks, None


def stream_once(
    server: FakeOpenAIServer, reply: Reply, messages: list[Message] | None = None, **kw: Any
) -> tuple[list[Message], BaseException | None]:
    server.script(reply)
    model = make_model(server, **kw)

    async def main() -> tuple[list[Message], BaseException | None]:
        return await drain(await model.stream(messages or [Message.user("hi")]))

    result: tuple[list[Message], BaseException | None] = run(main())
    return result


def parse_all(data: bytes, cuts: list[int]) -> list[Message]:
    parser = ResponsesStreamParser()
    chunks: list[Message] = []
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        chunks += parser.feed(data[start:end])
    return chunks + parser.finish()


TEXT_USAGE = Usage(21, 9, 30, 4, 0)
TOOLS_USAGE = Usage(60, 80, 140, 0, 48)
REASONING = {
    "openai_reasoning": {
        "rs_01": {
            "summary": {"0": "**Weather** Need both cities.", "1": "Call in parallel."},
            "encrypted_content": "gAAAAABo-enc",
        }
    }
}


# --- the parser on its own --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["responses_text", "responses_tools"])
def test_every_split_and_line_ending_gives_the_same_chunks(name: str) -> None:
    data = transcript(name)
    whole = parse_all(data, [])
    for at in range(1, len(data)):
        assert parse_all(data, [at]) == whole, f"{name} cut at byte {at}"
    for line_end in (b"\r\n", b"\r"):
        assert parse_all(data.replace(b"\n", line_end), []) == whole


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["responses_text", "responses_tools"]), st.data())
def test_damaged_streams_raise_model_errors_only(name: str, data: st.DataObject) -> None:
    """Bytes flipped, dropped or cut anywhere: chunks or a rillet model error, never a crash."""
    raw = bytearray(transcript(name))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        if data.draw(st.booleans()):
            raw[at] = data.draw(st.integers(0, 255))
        else:
            del raw[at : at + data.draw(st.integers(1, 64))]
    try:
        parse_all(bytes(raw), [len(raw) // 2])
    except ModelError:
        pass


def test_parser_errors_name_the_line_and_repeat() -> None:
    parser = ResponsesStreamParser()
    good = b'data: {"type":"response.output_text.delta","output_index":0,"delta":"a"}\n\n'
    assert parser.feed(good + b"data: {nope}\n\n") == [Message("assistant", "a")]
    calls: list[Callable[[], list[Message]]] = [lambda: parser.feed(good), parser.finish]
    for call in calls:
        with pytest.raises(MalformedChunkError, match="at line 3 of the event stream") as info:
            call()
        assert info.value.line == 3
    with pytest.raises(StreamLimitError, match="max_sse_line_bytes=10"):
        ResponsesStreamParser(max_sse_line_bytes=10).feed(good)
    with pytest.raises(ValueError, match="must be positive"):
        ResponsesStreamParser(max_sse_event_bytes=0)


# --- exact chunks and requests, through HTTP -----------------------------------------------------


def test_text_stream_exact_chunks_and_request(server: FakeOpenAIServer) -> None:
    data = transcript("responses_text")
    splits = (data.index("日".encode()) + 1, data.index("🙂".encode()) + 2)  # characters cut in two reads
    chunks, err = stream_once(server, Reply(data, splits=splits), temperature=0.2, max_tokens=50)
    assert err is None
    assert chunks == [
        Message("assistant", "Bonjour"),
        Message(content=" à tous"),
        Message(content=" — 日本"),
        Message(content="語 🙂!"),
        Message(response_meta=ResponseMeta("stop", TEXT_USAGE)),
    ]
    assert concat_messages(chunks) == Message(
        "assistant", "Bonjour à tous — 日本語 🙂!", response_meta=ResponseMeta("stop", TEXT_USAGE)
    )
    [request] = server.requests
    assert request.method == "POST" and request.path == "/v1/responses"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.json() == {
        "model": "gpt-5-mini",
        "input": [{"role": "user", "content": "hi"}],
        "temperature": 0.2,
        "max_output_tokens": 50,
        "stream": True,
    }


class Weather:
    """A stand-in for rillet.tools.ToolInfo: all a model reads is to_openai()."""

    name = "get_weather"

    def to_openai(self) -> dict[str, Any]:
        params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        return {"type": "function", "function": {"name": self.name, "description": "Weather", "parameters": params}}


def test_parallel_calls_and_reasoning_exact_chunks_then_sent_back(server: FakeOpenAIServer) -> None:
    server.script(Reply.sse("responses_tools"), Reply.sse("responses_text"))
    model = make_model(server, reasoning={"effort": "low", "summary": "auto"}, store=False)
    tools: Any = [Weather()]
    conversation = [Message.system("Be brief."), Message.user("Weather in Lisbon and Paris?")]

    async def first() -> tuple[list[Message], BaseException | None]:
        return await drain(await model.stream(conversation, tools=tools, tool_choice="auto"))

    chunks, err = run(first())
    assert err is None
    fc1, fc2 = {"item_id": "fc_01"}, {"item_id": "fc_02"}
    assert chunks == [
        Message("assistant", reasoning_content="**Weather** Need"),
        Message(reasoning_content=" both cities."),
        Message(reasoning_content="\n\nCall in parallel."),
        Message(extra=REASONING),
        Message(tool_calls=[ToolCall(0, "call_Lis", "function", FunctionCall("get_weather", ""), fc1)]),
        Message(tool_calls=[ToolCall(0, "", "", FunctionCall("", '{"city":'))]),
        Message(tool_calls=[ToolCall(0, "", "", FunctionCall("", '"Lisbon"}'))]),
        Message(tool_calls=[ToolCall(1, "call_Par", "function", FunctionCall("get_weather", ""), fc2)]),
        Message(tool_calls=[ToolCall(1, "", "", FunctionCall("", '{"city":"Paris"}'))]),
        Message(response_meta=ResponseMeta("tool_calls", TOOLS_USAGE)),
    ]
    answer = concat_messages(chunks)
    assert answer.reasoning_content == "**Weather** Need both cities.\n\nCall in parallel."
    assert [(c.id, c.function.arguments) for c in answer.tool_calls] == [
        ("call_Lis", '{"city":"Lisbon"}'),
        ("call_Par", '{"city":"Paris"}'),
    ]
    results = [
        Message("tool", "sunny", tool_call_id="call_Lis"),
        Message("tool", "rain", tool_call_id="call_Par"),
    ]
    reply = run(model.generate([*conversation, answer, *results], tools=tools))
    assert reply == Message("assistant", "Bonjour à tous — 日本語 🙂!", response_meta=ResponseMeta("stop", TEXT_USAGE))
    first_body, second_body = server.bodies()
    weather = {"type": "function", "strict": False, **Weather().to_openai()["function"]}
    assert first_body == {
        "model": "gpt-5-mini",
        "input": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Lisbon and Paris?"},
        ],
        "tools": [weather],
        "reasoning": {"effort": "low", "summary": "auto"},
        "store": False,
        "tool_choice": "auto",
        "include": ["reasoning.encrypted_content"],
        "stream": True,
    }
    assert second_body["input"][2:] == [
        {
            "type": "reasoning",
            "id": "rs_01",
            "summary": [
                {"type": "summary_text", "text": "**Weather** Need both cities."},
                {"type": "summary_text", "text": "Call in parallel."},
            ],
            "encrypted_content": "gAAAAABo-enc",
        },
        {
            "type": "function_call",
            "call_id": "call_Lis",
            "name": "get_weather",
            "arguments": '{"city":"Lisbon"}',
            "id": "fc_01",
        },
        {
            "type": "function_call",
            "call_id": "call_Par",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
            "id": "fc_02",
        },
        {"type": "function_call_output", "call_id": "call_Lis", "output": "sunny"},
        {"type": "function_call_output", "call_id": "call_Par", "output": "rain"},
    ]
    assert "stream" not in second_body


def test_response_failed_mid_stream_is_an_error_item_after_the_chunks(server: FakeOpenAIServer) -> None:
    chunks, err = stream_once(server, Reply.sse("responses_failed"))
    assert chunks == [Message("assistant", "Par")]
    assert isinstance(err, ModelStreamError) and err.code == "server_error"
    assert "The model failed to generate a response." in str(err) and err.base_url == server.url


def test_error_event_is_an_error_item(server: FakeOpenAIServer) -> None:
    chunks, err = stream_once(server, Reply.sse("responses_error_event"))
    assert chunks == []
    assert isinstance(err, ModelStreamError) and err.code == "rate_limit_exceeded" and err.line == 2


def test_stream_cut_mid_way_is_incomplete(server: FakeOpenAIServer) -> None:
    data = transcript("responses_text")
    cut = data.index(b"event: response.output_text.done")
    chunks, err = stream_once(server, Reply(data, drop_at=cut))
    assert concat_messages(chunks).content == "Bonjour à tous — 日本語 🙂!"
    assert isinstance(err, IncompleteStreamError)
    chunks, err = stream_once(server, Reply(data[:cut]))  # ends cleanly, but early
    assert isinstance(err, IncompleteStreamError) and "before the model finished" in str(err)


def test_rate_limit_is_retried_on_the_responses_endpoint(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(openai_module, "_sleep", record)
    body = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    server.script(Reply.json(body, 429, headers={"Retry-After": "2"}), Reply.sse("responses_text"))
    model = make_model(server, max_retries=1)
    chunks, err = run(_stream_and_drain(model))
    assert err is None and concat_messages(chunks).content.startswith("Bonjour")
    assert waits == [2.0]
    server.script(Reply.json(body, 429, headers={"Retry-After": "0"}))
    with pytest.raises(RateLimitError, match=r"/responses \(HTTP 429\)") as info:
        run(make_model(server).generate([Message.user("hi")]))
    assert info.value.retry_after == 0.0


async def _stream_and_drain(model: OpenAIResponsesModel) -> tuple[list[Message], BaseException | None]:
    return await drain(await model.stream([Message.user("hi")]))


# --- whole responses, request building ---------------------------------------------------------


WHOLE = {
    "id": "resp_1",
    "object": "response",
    "status": "incomplete",
    "incomplete_details": {"reason": "max_output_tokens"},
    "output": [
        {"type": "reasoning", "id": "rs_9", "summary": [{"type": "summary_text", "text": "hm"}]},
        {
            "type": "message",
            "id": "msg_9",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Hel", "annotations": []}],
        },
    ],
    "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
}


def test_generate_reads_a_whole_response(server: FakeOpenAIServer) -> None:
    server.script(Reply.json(WHOLE))
    reply = run(make_model(server).generate([Message.user("hi")], max_tokens=4))
    assert reply == Message(
        "assistant",
        "Hel",
        reasoning_content="hm",
        response_meta=ResponseMeta("length", Usage(3, 4, 7, 0, 0)),
        extra={"openai_reasoning": {"rs_9": {"summary": {"0": "hm"}}}},
    )
    assert server.bodies()[-1] == {
        "model": "gpt-5-mini",
        "input": [{"role": "user", "content": "hi"}],
        "max_output_tokens": 4,
    }
    with pytest.raises(ModelStreamError, match="boom") as info:
        parse_response(b'{"status":"failed","error":{"code":"server_error","message":"boom"}}')
    assert info.value.code == "server_error"
    with pytest.raises(MalformedChunkError, match="line 1"):
        parse_response(b'{"output": nope}')


def test_request_body_translates_chat_completion_options() -> None:
    model = OpenAIResponsesModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    tools: Any = [Weather()]
    choice = {"type": "function", "function": {"name": "get_weather"}}
    fmt = {"type": "json_schema", "json_schema": {"name": "Out", "schema": {"type": "object"}, "strict": True}}
    body = model.request_body([Message.user("x")], tools, {"tool_choice": choice, "response_format": fmt}, stream=False)
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    # The Responses API makes a function strict unless told otherwise, and a strict function
    # refuses a schema with optional properties: sent not strict, as chat completions is.
    assert [t["strict"] for t in body["tools"]] == [False]
    # Both chat-completions spellings of the token limit (reasoning models take the second).
    for spelling in ("max_tokens", "max_completion_tokens"):
        limited = model.request_body([], None, {spelling: 50}, stream=False)
        assert (limited["max_output_tokens"], spelling in limited) == (50, False)
    assert body["text"] == {
        "format": {"type": "json_schema", "name": "Out", "schema": {"type": "object"}, "strict": True}
    }
    assert "response_format" not in body
    body = model.request_body(
        [Message.user("x")], None, {"tool_choice": "auto", "parallel_tool_calls": True}, stream=False
    )
    assert body == {"model": "m", "input": [{"role": "user", "content": "x"}]}
    body = model.request_body([], None, {"store": False, "include": ["file_search_call.results"]}, stream=True)
    assert body["include"] == ["file_search_call.results", "reasoning.encrypted_content"]
    assert repr(model) == "OpenAIResponsesModel('m', base_url='http://127.0.0.1:9/v1')"
    with pytest.raises(ValueError, match="OpenAIResponsesModel: max_retries must be >= 0"):
        OpenAIResponsesModel("m", max_retries=-1)


def test_images_and_files_map_to_input_parts() -> None:
    m = Message.user(
        [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "https://example.org/cat.png", "detail": "low"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
        ]
    )
    assert message_to_responses(m) == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is this?"},
                {"type": "input_image", "image_url": "https://example.org/cat.png", "detail": "low"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA==", "detail": "auto"},
            ],
        }
    ]
    pdf = {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBE"}}
    assert _part(pdf) == {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBE"}
    assert _part({"type": "file", "file": {"file_id": "file-1"}}) == {"type": "input_file", "file_id": "file-1"}
    with pytest.raises(ValueError, match="cannot send a content part of type 'audio'"):
        _part({"type": "audio"})


def test_a_message_with_text_and_parts_sends_both() -> None:
    # A tool returning ["the screen:", image] keeps its text as content and the image as a
    # part; only the parts were sent before.
    image = ContentPart.image("https://example.org/shot.png")
    result = Message(role="tool", content="the screen:", tool_call_id="call_1")
    result.user_input_multi_content = [image]
    question = Message.user("and this?")
    question.user_input_multi_content = [image]
    wire = {"type": "input_image", "image_url": "https://example.org/shot.png", "detail": "auto"}
    assert message_to_responses(result) == [
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": [{"type": "input_text", "text": "the screen:"}, wire],
        }
    ]
    assert message_to_responses(question) == [
        {"role": "user", "content": [{"type": "input_text", "text": "and this?"}, wire]}
    ]


# --- differential: the openai SDK's Responses stream handling over the same bytes ---------------


async def sdk_events(server: FakeOpenAIServer) -> list[Any]:
    openai = need("openai")
    from openai.lib.streaming.responses import ResponseStreamState

    client = openai.AsyncOpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
    state: Any = ResponseStreamState(input_tools=openai.omit, text_format=openai.omit)
    out: list[Any] = []
    stream = await client.responses.create(model="gpt-5-mini", input="hi", stream=True)
    async for event in stream:
        out += state.handle_event(event)
    await client.close()
    return out


@pytest.mark.parametrize("name", ["responses_text", "responses_tools"])
def test_openai_sdk_agrees(server: FakeOpenAIServer, name: str) -> None:
    server.script(Reply.sse(name))
    events = run(sdk_events(server))
    chunks, err = stream_once(server, Reply.sse(name))
    assert err is None
    ours = concat_messages(chunks)
    # The SDK's accumulated snapshots, as its delta events carry them.
    text = [e.snapshot for e in events if e.type == "response.output_text.delta"]
    assert (text[-1] if text else "") == ours.content
    args: dict[str, str] = {}
    for e in events:
        if e.type == "response.function_call_arguments.delta":
            args[e.item_id] = e.snapshot
    assert list(args.values()) == [c.function.arguments for c in ours.tool_calls]
    [done] = [e for e in events if e.type == "response.completed"]
    calls = [(o.call_id, o.name, o.arguments, o.id) for o in done.response.output if o.type == "function_call"]
    assert calls == [(c.id, c.function.name, c.function.arguments, (c.extra or {})["item_id"]) for c in ours.tool_calls]
    summaries = ["\n\n".join(s.text for s in o.summary) for o in done.response.output if o.type == "reasoning"]
    assert "\n\n".join(summaries) == ours.reasoning_content
    assert done.response.output_text == ours.content
    usage = done.response.usage
    assert ours.response_meta is not None and ours.response_meta.usage is not None
    u = ours.response_meta.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
        u.prompt_tokens,
        u.completion_tokens,
        u.total_tokens,
    )
    assert usage.output_tokens_details.reasoning_tokens == u.reasoning_tokens


# --- through an agent: reasoning items survive the tool loop ------------------------------------


def test_agent_tool_loop_sends_the_reasoning_items_back(server: FakeOpenAIServer) -> None:
    from rillet import ChatModelAgent, Runner, tool

    @tool
    def get_weather(city: str) -> str:
        """Tomorrow's forecast for a city.

        Args:
            city: the city's name.
        """
        return f"sunny in {city}"

    server.script(Reply.sse("responses_tools"), Reply.sse("responses_text"))
    agent = ChatModelAgent(
        "assistant", description="weather", instruction="Be brief.", model=make_model(server), tools=[get_weather]
    )
    events = list(Runner(agent, streaming=True).query("Weather in Lisbon and Paris?"))
    assert all(e.error is None for e in events)
    last = events[-1].message_output
    assert last is not None and last.get_message().content == "Bonjour à tous — 日本語 🙂!"
    second = server.bodies()[1]["input"]
    assert [item.get("type", item.get("role")) for item in second] == [
        "system",
        "user",
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert second[2]["id"] == "rs_01" and second[2]["encrypted_content"] == "gAAAAABo-enc"
    assert [item["output"] for item in second[5:]] == ["sunny in Lisbon", "sunny in Paris"]


def test_a_server_that_ignores_stream_true_still_streams(server: FakeOpenAIServer) -> None:
    chunks, err = stream_once(server, Reply.json(WHOLE))
    assert err is None and len(chunks) == 1
    assert chunks[0].content == "Hel" and chunks[0].response_meta == ResponseMeta("length", Usage(3, 4, 7, 0, 0))
