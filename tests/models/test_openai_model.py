"""OpenAIChatModel against a scripted OpenAI-compatible server on loopback.

The server (tests/support/openai_server.py) replays SSE transcripts written from the public protocol
(tests/support/transcripts/), one per server dialect. The tests assert the exact chunks, the
concatenated message and the exact request bodies; a differential test runs the openai SDK's
own stream accumulator over the same bytes from the same server.
"""

from __future__ import annotations

import email.utils
import json
import subprocess
import sys
import types
from dataclasses import dataclass
from typing import Any

import pytest
from rillet import (
    FunctionCall,
    Message,
    ResponseMeta,
    StreamReader,
    ToolCall,
    Usage,
    concat_messages,
)
from rillet._native import ChatStreamParser, parse_chat_completion
from rillet.models import openai as openai_module
from rillet.models.errors import (
    AuthenticationError,
    ContextLengthError,
    IncompleteStreamError,
    InvalidRequestError,
    MalformedChunkError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelStreamError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)
from rillet.models.openai import OpenAIChatModel, message_to_openai
from support.openai_server import FakeOpenAIServer, Reply, run, transcript
from support.waiting import until

DIALECTS = [
    "openai_text",
    "openai_tools",
    "ollama_tools",
    "ollama_no_index",
    "vllm_reasoning",
    "llamacpp_reasoning_content",
    "think_tags",
]


def make_model(server: FakeOpenAIServer, **kw: Any) -> OpenAIChatModel:
    kw.setdefault("api_key", "sk-test")
    kw.setdefault("max_retries", 0)
    return OpenAIChatModel("test-model", base_url=server.url, **kw)


async def drain(reader: StreamReader) -> tuple[list[Message], BaseException | None]:
    chunks: list[Message] = []
    try:
        async for chunk in reader:
            chunks.append(chunk)
    except Exception as e:
        return chunks, e
    return chunks, None


def stream_once(server: FakeOpenAIServer, reply: Reply, **kw: Any) -> tuple[list[Message], BaseException | None]:
    server.script(reply)
    model = make_model(server, **kw)

    async def main() -> tuple[list[Message], BaseException | None]:
        reader = await model.stream([Message.user("hi")])
        return await drain(reader)

    return run(main())


USER = [Message.user("hi")]


def usage(p: int, c: int, t: int, cached: int = 0, reasoning: int = 0) -> Usage:
    return Usage(p, c, t, cached, reasoning)


def delta(index: int, args: str, id: str = "", name: str = "") -> ToolCall:
    return ToolCall(index, id, "function" if id else "", FunctionCall(name, args))


# --- the parser on its own: every split of every transcript --------------------------------


def parse_all(data: bytes, cuts: list[int], **kw: Any) -> list[Message]:
    parser = ChatStreamParser(**kw)
    chunks: list[Message] = []
    for start, end in zip([0, *cuts], [*cuts, len(data)]):
        chunks += parser.feed(data[start:end])
    return chunks + parser.finish()


@pytest.mark.parametrize("name", DIALECTS)
def test_every_split_of_a_transcript_gives_the_same_chunks(name: str) -> None:
    data = transcript(name)
    whole = parse_all(data, [])
    assert whole
    for at in range(1, len(data)):
        assert parse_all(data, [at]) == whole, f"{name} cut at byte {at}"
    assert parse_all(data, list(range(1, len(data)))) == whole  # one byte at a time


@pytest.mark.parametrize("name", DIALECTS)
@pytest.mark.parametrize("line_end", [b"\r\n", b"\r"])
def test_every_line_ending_gives_the_same_chunks(name: str, line_end: bytes) -> None:
    data = transcript(name).replace(b"\r\n", b"\n")
    assert parse_all(data.replace(b"\n", line_end), []) == parse_all(data, [])


def test_parser_returns_chunks_before_a_bad_line_then_raises_every_time() -> None:
    parser = ChatStreamParser()
    good = b'data: {"choices":[{"delta":{"role":"assistant","content":"a"}}]}\n\n'
    assert parser.feed(good + b"data: {nope}\n\n") == [Message("assistant", "a")]
    for call in (lambda: parser.feed(good), parser.finish):
        with pytest.raises(MalformedChunkError, match="at line 3 of the event stream") as info:
            call()
        assert info.value.line == 3
    with pytest.raises(MalformedChunkError, match="line 1 of the event stream is not valid UTF-8"):
        ChatStreamParser().feed(b"data: \xc3\x28\n\n")


def test_model_errors_pickle_with_their_details() -> None:
    import pickle

    err = ContextLengthError(
        "too long", status_code=400, base_url="http://x/v1", body="{}", code="context_length_exceeded"
    )
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is ContextLengthError and str(back) == "too long"
    assert (back.status_code, back.base_url, back.code) == (400, "http://x/v1", "context_length_exceeded")


# --- exact chunks and requests, through HTTP --------------------------------------------


def test_openai_text_stream_exact_chunks_and_request(server: FakeOpenAIServer) -> None:
    data = transcript("openai_text")
    # cut inside 日 and inside 🙂, so each arrives in two reads
    splits = (data.index("日".encode()) + 1, data.index("🙂".encode()) + 2)
    chunks, err = stream_once(server, Reply(data, splits=splits), temperature=0.2, seed=7)
    assert err is None
    assert chunks == [
        Message("assistant", ""),
        Message(content="Bonjour"),
        Message(content=" à tous"),
        Message(content=" — 日本"),
        Message(content="語 🙂!"),
        Message(response_meta=ResponseMeta("stop")),
        Message(response_meta=ResponseMeta("", usage(19, 9, 28, cached=3))),
    ]
    assert concat_messages(chunks) == Message(
        "assistant",
        "Bonjour à tous — 日本語 🙂!",
        response_meta=ResponseMeta("stop", usage(19, 9, 28, cached=3)),
    )
    [request] = server.requests
    assert request.method == "POST" and request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {
        "model": "test-model",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.2,
        "seed": 7,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_openai_parallel_tool_calls_exact_chunks(server: FakeOpenAIServer) -> None:
    chunks, err = stream_once(server, Reply.sse("openai_tools", splits=(300, 301, 900)))
    assert err is None
    assert chunks == [
        Message("assistant", "", tool_calls=[delta(0, "", "call_Wx1Lisbon", "get_weather")]),
        Message(tool_calls=[delta(0, '{"ci')]),
        Message(tool_calls=[delta(0, 'ty": "Lis')]),
        Message(tool_calls=[delta(0, 'bon"}')]),
        Message(tool_calls=[delta(1, "", "call_Wx2Time", "get_time")]),
        Message(tool_calls=[delta(1, '{"tz": "Europe/')]),
        Message(tool_calls=[delta(1, 'Lisbon"}')]),
        Message(response_meta=ResponseMeta("tool_calls")),
        Message(response_meta=ResponseMeta("", usage(85, 41, 126))),
    ]
    whole = concat_messages(chunks)
    assert [(c.index, c.id, c.function.name, c.function.arguments) for c in whole.tool_calls] == [
        (0, "call_Wx1Lisbon", "get_weather", '{"city": "Lisbon"}'),
        (1, "call_Wx2Time", "get_time", '{"tz": "Europe/Lisbon"}'),
    ]


# --- each dialect, concatenated ---------------------------------------------------------------

CALL = tuple[int | None, str, str, str]


@dataclass
class Want:
    content: str = ""
    reasoning: str = ""
    calls: tuple[CALL, ...] = ()
    finish: str = "stop"
    usage: Usage | None = None


WANT = {
    "openai_text": Want("Bonjour à tous — 日本語 🙂!", usage=usage(19, 9, 28, cached=3)),
    "openai_tools": Want(
        calls=(
            (0, "call_Wx1Lisbon", "get_weather", '{"city": "Lisbon"}'),
            (1, "call_Wx2Time", "get_time", '{"tz": "Europe/Lisbon"}'),
        ),
        finish="tool_calls",
        usage=usage(85, 41, 126),
    ),
    # index 0 for both calls: the new id starts the second call
    "ollama_tools": Want(
        calls=(
            (0, "call_a1b2", "get_weather", '{"city":"Lisbon"}'),
            (1, "call_c3d4", "get_weather", '{"city":"Porto"}'),
        ),
        finish="tool_calls",
        usage=usage(140, 38, 178),
    ),
    # no index, no ids, finish "stop" despite the calls, no usage
    "ollama_no_index": Want(calls=((0, "call_0", "add", '{"a":1,"b":2}'), (1, "call_1", "add", '{"a":3,"b":4}'))),
    "vllm_reasoning": Want(
        "Soft rain on the roof,\nquiet streets — ça brille.",
        "The user wants a haiku about rain.",
        usage=usage(22, 31, 53),
    ),
    # usage on the last choice chunk, no [DONE], one event over two data lines
    "llamacpp_reasoning_content": Want("The answer is 4.", "Let me add: 2 + 2 = 4.", usage=usage(15, 12, 27)),
    "think_tags": Want("\n\n2 + 2 = 4 <- sure.", "\nOkay, 2+2 is 4.\n"),
}


def calls_of(m: Message) -> tuple[CALL, ...]:
    return tuple((c.index, c.id, c.function.name, c.function.arguments) for c in m.tool_calls)


@pytest.mark.parametrize("name", DIALECTS)
def test_each_dialect_concatenates_to_the_answer(server: FakeOpenAIServer, name: str) -> None:
    chunks, err = stream_once(server, Reply.sse(name))
    assert err is None
    assert chunks[0].role == "assistant" and all(c.role == "" for c in chunks[1:])
    for c in chunks:  # Eino's shape: an index on every tool-call delta
        assert all(t.index is not None for t in c.tool_calls)
    whole = concat_messages(chunks)
    want = WANT[name]
    assert (whole.role, whole.content, whole.reasoning_content) == ("assistant", want.content, want.reasoning)
    assert calls_of(whole) == want.calls
    assert whole.response_meta == ResponseMeta(want.finish, want.usage)


def test_think_tags_switch_off_keeps_the_text(server: FakeOpenAIServer) -> None:
    chunks, err = stream_once(server, Reply.sse("think_tags"), think_tags=False)
    assert err is None
    assert concat_messages(chunks).content == "<think>\nOkay, 2+2 is 4.\n</think>\n\n2 + 2 = 4 <- sure."


# --- failures in the middle of a stream are error items, never hangs -----------------------


def test_malformed_line_is_an_error_item_naming_the_line(server: FakeOpenAIServer) -> None:
    chunks, err = stream_once(server, Reply.sse("malformed"))
    assert chunks == [Message("assistant", ""), Message(content="Hel")]
    assert isinstance(err, MalformedChunkError) and isinstance(err, ValueError)
    assert err.line == 5
    assert str(err).startswith("malformed chunk at line 5 of the event stream (")
    assert 'data: {"id":"chatcmpl-AbC123","choices":[{"index":0,"delta":{"content":"lo"}]}' in str(err)
    assert err.base_url == server.url


def test_server_error_object_mid_stream(server: FakeOpenAIServer) -> None:
    chunks, err = stream_once(server, Reply.sse("error_midstream"))
    assert [c.content for c in chunks] == ["", "Hel"]
    assert isinstance(err, ModelStreamError)
    assert err.code == "server_error" and err.line == 5
    assert "The server had an error while processing your request." in str(err)


def test_connection_dropped_mid_stream_is_an_error_item(server: FakeOpenAIServer) -> None:
    data = transcript("openai_text")
    cut = data.index(b"Bonjour") + 30  # inside the second event
    chunks, err = stream_once(server, Reply(data, drop_at=cut, splits=(cut - 10,)))  # not a read timeout
    assert chunks[0] == Message("assistant", "")
    assert isinstance(err, IncompleteStreamError) and isinstance(err, ModelConnectionError)
    assert server.url in str(err)


def test_stream_that_ends_early_without_an_error_is_incomplete(server: FakeOpenAIServer) -> None:
    data = transcript("openai_text")
    cut = data.index(b"data:", data.index(b"Bonjour"))  # a clean end between two events
    chunks, err = stream_once(server, Reply(data[:cut]))
    assert [c.content for c in chunks] == ["", "Bonjour"]
    assert isinstance(err, IncompleteStreamError)
    assert "no finish_reason and no [DONE]" in str(err)


def test_read_timeout_mid_stream_is_an_error_item(server: FakeOpenAIServer) -> None:
    data = transcript("openai_text")
    chunks, err = stream_once(server, Reply(data, splits=(400,), pause=60.0), timeout=0.3)
    assert chunks == [Message("assistant", "")]
    assert isinstance(err, ModelTimeoutError) and isinstance(err, TimeoutError)


def test_closing_the_reader_closes_the_http_stream(server: FakeOpenAIServer) -> None:
    data = transcript("openai_text")
    server.script(Reply(data, splits=(400,), pause=60.0))
    model = make_model(server)

    async def main() -> None:
        reader = await model.stream(USER)
        assert await reader.arecv() == Message("assistant", "")
        reader.close()
        await until(lambda: not model._tasks, "the HTTP stream to close", 30)  # not the server's minute pause

    run(main(), timeout=60)


# --- request errors and retries ----------------------------------------------------------


def error_body(message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}


def generate_error(server: FakeOpenAIServer, *replies: Reply, **kw: Any) -> ModelError:
    server.script(*replies)
    model = make_model(server, **kw)
    with pytest.raises(ModelError) as info:
        run(model.generate(USER))
    return info.value


def test_authentication_error_names_the_base_url(server: FakeOpenAIServer) -> None:
    err = generate_error(server, Reply.json(error_body("Incorrect API key provided: sk-test."), 401))
    assert isinstance(err, AuthenticationError)
    assert err.status_code == 401 and err.base_url == server.url
    assert server.url in str(err) and "Incorrect API key provided" in str(err)
    assert "OPENAI_API_KEY" in str(err)
    assert len(server.requests) == 1  # not retried


def test_streaming_request_errors_raise_from_stream(server: FakeOpenAIServer) -> None:
    server.script(Reply.json(error_body("nope"), 403))
    model = make_model(server)
    with pytest.raises(AuthenticationError):
        run(model.stream(USER))


def test_model_not_found(server: FakeOpenAIServer) -> None:
    err = generate_error(server, Reply.json(error_body("model 'test-model' not found"), 404))
    assert isinstance(err, ModelNotFoundError)
    assert "'test-model'" in str(err) and "base_url" in str(err)


def test_context_length_and_invalid_request_carry_the_server_message(server: FakeOpenAIServer) -> None:
    message = "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."
    err = generate_error(server, Reply.json(error_body(message, "context_length_exceeded"), 400))
    assert isinstance(err, ContextLengthError) and isinstance(err, InvalidRequestError)
    assert message in str(err)
    err = generate_error(server, Reply(b"the request exceeds the available context size", 400, "text/plain"))
    assert isinstance(err, ContextLengthError)
    err = generate_error(server, Reply.json(error_body("Invalid value for 'temperature'."), 400))
    assert type(err) is InvalidRequestError and "Invalid value for 'temperature'." in str(err)
    assert err.code == "invalid_request_error" and err.body is not None and "temperature" in err.body


def test_429_with_retry_after_then_success(server: FakeOpenAIServer) -> None:
    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
    server.script(
        Reply.json(error_body("Rate limit reached"), 429, headers={"Retry-After": "1"}),
        Reply.json(completion),
    )
    model = make_model(server, max_retries=2)
    reply = run(model.generate(USER))
    assert reply.content == "ok"
    assert len(server.requests) == 2
    assert server.times[1] - server.times[0] >= 0.95  # waited as told
    assert server.bodies()[0] == server.bodies()[1]


def test_5xx_is_retried_with_backoff_then_raises(server: FakeOpenAIServer) -> None:
    replies = [Reply.json(error_body("upstream down"), 503, headers={"retry-after-ms": "50"}) for _ in range(3)]
    err = generate_error(server, *replies, max_retries=2)
    assert isinstance(err, ServerError) and err.status_code == 503
    assert "after 3 tries" in str(err)
    assert len(server.requests) == 3


def test_429_exhausted_reports_retry_after(server: FakeOpenAIServer) -> None:
    err = generate_error(server, Reply.json(error_body("slow down"), 429, headers={"Retry-After": "0"}), max_retries=0)
    assert isinstance(err, RateLimitError) and err.retry_after == 0.0


# --- the waits between tries, recorded instead of slept --------------------------------------

OK = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every wait the client asks for between tries, in order; nothing is actually slept."""
    recorded: list[float] = []

    async def record(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(openai_module, "_sleep", record)
    return recorded


def jitter(monkeypatch: pytest.MonkeyPatch, draw: float) -> None:
    """Fixes the client's random draw (in [0, 1)) that scales each backoff down by up to 25%."""
    monkeypatch.setattr(openai_module, "random", types.SimpleNamespace(random=lambda: draw))


def answered_after(server: FakeOpenAIServer, *failures: Reply, **kw: Any) -> None:
    server.script(*failures, Reply.json(OK))
    assert run(make_model(server, max_retries=len(failures), **kw).generate(USER)).content == "ok"
    assert len(server.requests) == len(failures) + 1


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "3"}, 3.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "Retry-After": "7"}, 0.25),  # the finer hint wins
        ({"retry-after-ms": "soon", "Retry-After": "7"}, 7.0),  # an unreadable one is skipped
        ({"Retry-After": "0"}, 0.0),
        ({"Retry-After": "-4"}, 0.0),
    ],
)
def test_429_waits_exactly_what_the_server_says(
    server: FakeOpenAIServer, waits: list[float], headers: dict[str, str], expected: float
) -> None:
    answered_after(server, Reply.json(error_body("Rate limit reached"), 429, headers=headers))
    assert waits == [expected]


def test_429_retry_after_as_an_http_date(
    server: FakeOpenAIServer, waits: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    now = 1_700_000_000.0
    monkeypatch.setattr(openai_module, "time", types.SimpleNamespace(time=lambda: now))
    later = email.utils.formatdate(now + 30, usegmt=True)
    past = email.utils.formatdate(now - 30, usegmt=True)
    answered_after(server, *(Reply.json(error_body("slow"), 429, headers={"Retry-After": d}) for d in (later, past)))
    assert waits == [30.0, 0.0]


def test_5xx_backoff_doubles_from_half_a_second_up_to_8_with_jitter_below(
    server: FakeOpenAIServer, waits: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = [Reply.json(error_body("upstream down"), 503) for _ in range(6)]
    jitter(monkeypatch, 0.0)
    answered_after(server, *failures)
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    waits.clear()
    jitter(monkeypatch, 0.999)
    answered_after(server, *failures)
    assert waits == pytest.approx([0.375, 0.75, 1.5, 3.0, 6.0, 6.0], rel=1e-3)


def test_5xx_backoff_with_real_jitter_stays_within_its_bounds(server: FakeOpenAIServer, waits: list[float]) -> None:
    answered_after(server, *(Reply.json(error_body("busy"), 500) for _ in range(5)))
    for wait, base in zip(waits, [0.5, 1.0, 2.0, 4.0, 8.0], strict=True):
        assert 0.75 * base <= wait <= base


def test_a_retry_after_over_a_minute_gets_the_usual_backoff(
    server: FakeOpenAIServer, waits: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    jitter(monkeypatch, 0.0)
    answered_after(
        server,
        Reply.json(error_body("slow"), 429, headers={"Retry-After": "61"}),
        Reply.json(error_body("slow"), 429, headers={"retry-after-ms": "60000"}),
    )
    assert waits == [0.5, 60.0]


def test_a_refused_connection_backs_off_too(waits: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    srv = FakeOpenAIServer()
    srv.close()
    jitter(monkeypatch, 0.0)
    with pytest.raises(ModelConnectionError, match="after 3 tries"):
        run(OpenAIChatModel("m", base_url=srv.url, max_retries=2).generate(USER))
    assert waits == [0.5, 1.0]


def test_streaming_retries_too(server: FakeOpenAIServer) -> None:
    server.script(Reply.json(error_body("busy"), 500, headers={"Retry-After": "0"}), Reply.sse("openai_text"))
    model = make_model(server, max_retries=1)

    async def main() -> Message:
        return concat_messages((await drain(await model.stream(USER)))[0])

    assert run(main()).content == "Bonjour à tous — 日本語 🙂!"
    assert len(server.requests) == 2


def test_connect_timeout_and_refused_connection() -> None:
    srv = FakeOpenAIServer()
    srv.script(Reply.sse("openai_text", delay=60.0))
    model = OpenAIChatModel("m", base_url=srv.url, timeout=0.2, max_retries=0)
    with pytest.raises(ModelTimeoutError, match="did not answer within 0.2s"):
        run(model.generate(USER))
    srv.close()
    model = OpenAIChatModel("m", base_url=srv.url, max_retries=1)
    with pytest.raises(ModelConnectionError, match="cannot reach .* after 2 tries"):
        run(model.generate(USER))


# --- generate, request shape ---------------------------------------------------------------


@dataclass(frozen=True)
class Info:
    """A stand-in for rillet.tools.ToolInfo: all a model reads is to_openai()."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


WEATHER = Info(
    "get_weather",
    "Tomorrow's forecast.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def test_generate_reads_a_whole_response_and_sends_the_conversation(server: FakeOpenAIServer) -> None:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1764550000,
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_9",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Porto"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }
    server.script(Reply.json(completion))
    model = make_model(server, temperature=0.0, max_tokens=64)
    history = [
        Message.system("Be brief."),
        Message.user("Weather in Lisbon?"),
        Message.assistant(
            tool_calls=[ToolCall(0, "call_1", function=FunctionCall("get_weather", '{"city":"Lisbon"}'))],
            reasoning_content="thinking",
        ),
        Message.tool_message("sunny", "call_1", "get_weather"),
        Message.user("And Porto?"),
    ]
    reply = run(
        model.generate(
            history,
            tools=[WEATHER],
            tool_choice="auto",
            parallel_tool_calls=False,
            top_p=0.9,
            stop=["\n\n"],
            max_tokens=32,
        )
    )
    assert reply == Message(
        "assistant",
        "",
        tool_calls=[ToolCall(None, "call_9", "function", FunctionCall("get_weather", '{"city":"Porto"}'))],
        response_meta=ResponseMeta("tool_calls", usage(50, 10, 60)),
    )
    assert server.bodies() == [
        {
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather in Lisbon?"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Lisbon"}'},
                        }
                    ],
                },
                {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
                {"role": "user", "content": "And Porto?"},
            ],
            "tools": [WEATHER.to_openai()],
            "temperature": 0.0,
            "max_tokens": 32,
            "tool_choice": "auto",
            "parallel_tool_calls": False,
            "top_p": 0.9,
            "stop": ["\n\n"],
        }
    ]


def test_request_body_switches() -> None:
    model = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", include_usage=False, tool_choice="required")
    body = model.request_body(USER, None, {"parallel_tool_calls": True, "seed": 1, "stop": None}, stream=True)
    # no tools: tool_choice and parallel_tool_calls are not sent; None values are not sent
    assert body == {"model": "m", "messages": [{"role": "user", "content": "hi"}], "seed": 1, "stream": True}
    schema = {"type": "json_schema", "json_schema": {"name": "A", "schema": {"type": "object"}, "strict": True}}
    body = model.request_body(USER, [WEATHER], {"response_format": schema, "model": "other"}, stream=False)
    assert body["model"] == "other" and body["response_format"] == schema and body["tool_choice"] == "required"


def test_response_format_from_a_pydantic_model() -> None:
    pydantic = pytest.importorskip("pydantic")

    class City(pydantic.BaseModel):
        name: str

    model = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1")
    body = model.request_body(USER, None, {"response_format": City}, stream=False)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "City",
            "schema": {**City.model_json_schema(), "additionalProperties": False},
            "strict": True,
        },
    }


def test_message_to_openai_multimodal_and_names() -> None:
    m = Message.user(
        [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
        ],
        name="ann",
    )
    assert message_to_openai(m) == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
        ],
        "name": "ann",
    }


def test_environment_variables_configure_the_client(monkeypatch: pytest.MonkeyPatch, server: FakeOpenAIServer) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    model = OpenAIChatModel("env-model")
    assert model.base_url == server.url
    server.script(Reply.sse("openai_text"))
    chunks = run(_collect(model))
    assert concat_messages(chunks).content.startswith("Bonjour")
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert OpenAIChatModel("m").api_key is None


async def _collect(model: OpenAIChatModel) -> list[Message]:
    chunks, err = await drain(await model.stream(USER))
    assert err is None
    return chunks


def test_a_server_that_ignores_stream_true_still_streams(server: FakeOpenAIServer) -> None:
    completion = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "whole",
                    "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}],
                },
                "finish_reason": "stop",
            }
        ]
    }
    chunks, err = stream_once(server, Reply.json(completion))
    assert err is None
    assert chunks == [
        Message(
            "assistant",
            "whole",
            tool_calls=[ToolCall(0, "call_0", "function", FunctionCall("f", "{}"))],
            response_meta=ResponseMeta("stop"),
        )
    ]


def test_generate_reads_a_stream_it_did_not_ask_for(server: FakeOpenAIServer) -> None:
    server.script(Reply.sse("openai_tools"))
    reply = run(make_model(server).generate(USER))
    assert [(c.index, c.id, c.function.name) for c in reply.tool_calls] == [
        (None, "call_Wx1Lisbon", "get_weather"),
        (None, "call_Wx2Time", "get_time"),
    ]
    assert reply.response_meta == ResponseMeta("tool_calls", usage(85, 41, 126))


def test_whole_response_parse_errors_are_clear() -> None:
    with pytest.raises(MalformedChunkError, match="line 2"):
        parse_chat_completion(b'{"choices": [\n nope]}')
    with pytest.raises(MalformedChunkError, match="not valid UTF-8"):
        parse_chat_completion(b'{"choices": []}\xff')


def test_import_rillet_does_not_import_httpx() -> None:
    code = "import sys, rillet, rillet.models, rillet.models.openai; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- differential: the openai SDK's accumulator over the same bytes ---------------------------


async def sdk_accumulate(server: FakeOpenAIServer) -> Any:
    openai = pytest.importorskip("openai")
    from openai.lib.streaming.chat import ChatCompletionStreamState

    client = openai.AsyncOpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
    state = ChatCompletionStreamState()
    stream = await client.chat.completions.create(
        model="test-model",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    async for chunk in stream:
        state.handle_chunk(chunk)
    await client.close()
    return state.current_completion_snapshot


# Where the SDK reads a dialect differently, the test says how.
SDK_SAME_CALLS = {"openai_text", "openai_tools", "vllm_reasoning", "llamacpp_reasoning_content", "think_tags"}


@pytest.mark.parametrize("name", DIALECTS)
def test_openai_sdk_agrees(server: FakeOpenAIServer, name: str) -> None:
    server.script(Reply.sse(name))
    if name == "ollama_no_index":
        # The SDK indexes its call list with the delta's index, which is missing here.
        with pytest.raises(TypeError, match="list indices must be integers"):
            run(sdk_accumulate(server))
        chunks, err = stream_once(server, Reply.sse(name))
        calls = [(c.id, c.function.name, c.function.arguments) for c in concat_messages(chunks).tool_calls]
        assert calls == [("call_0", "add", '{"a":1,"b":2}'), ("call_1", "add", '{"a":3,"b":4}')]
        return
    snapshot = run(sdk_accumulate(server))
    think = name != "think_tags"  # the SDK leaves <think> in the content: compare raw text
    chunks, err = stream_once(server, Reply.sse(name), think_tags=think)
    assert err is None
    ours = concat_messages(chunks)
    message = snapshot.choices[0].message
    assert (message.content or "") == ours.content
    extra = message.model_extra or {}
    sdk_reasoning = (extra.get("reasoning_content") or "") + (extra.get("reasoning") or "")
    assert sdk_reasoning == ours.reasoning_content
    sdk_calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
    our_calls = [(c.id, c.function.name, c.function.arguments) for c in ours.tool_calls]
    if name in SDK_SAME_CALLS:
        assert sdk_calls == our_calls
    elif name == "ollama_tools":
        # The SDK keys calls by index alone, so Ollama's two calls at index 0 merge into one.
        assert len(sdk_calls) == 1 and len(our_calls) == 2
        assert sdk_calls[0][2] == our_calls[0][2] + our_calls[1][2]
    else:
        raise AssertionError(f"no rule for {name}")
    sdk_usage = snapshot.usage
    if ours.response_meta.usage is None:
        assert sdk_usage is None
    else:
        u = ours.response_meta.usage
        assert (sdk_usage.prompt_tokens, sdk_usage.completion_tokens, sdk_usage.total_tokens) == (
            u.prompt_tokens,
            u.completion_tokens,
            u.total_tokens,
        )
    assert snapshot.choices[0].finish_reason == ours.response_meta.finish_reason


# --- an agent over the server ------------------------------------------------------------------


def agent_transcripts() -> list[Reply]:
    """Two model turns: a call to add(2, 3), then the answer."""

    def sse(*objs: dict[str, Any]) -> bytes:
        return b"".join(b"data: " + json.dumps(o).encode() + b"\n\n" for o in objs) + b"data: [DONE]\n\n"

    def ch(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    call = sse(
        ch(
            {
                "role": "assistant",
                "tool_calls": [
                    {"index": 0, "id": "call_add", "type": "function", "function": {"name": "add", "arguments": ""}}
                ],
            }
        ),
        ch({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 2, "b": 3}'}}]}),
        ch({}, "tool_calls"),
    )
    answer = sse(ch({"role": "assistant", "content": "2 + 3 = "}), ch({"content": "5"}), ch({}, "stop"))
    return [Reply(call), Reply(answer)]


def agent_completions() -> list[Reply]:
    call = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_add",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    answer = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "2 + 3 = 5"}, "finish_reason": "stop"}]
    }
    return [Reply.json(call), Reply.json(answer)]


@pytest.mark.parametrize("streaming", [False, True])
def test_chat_model_agent_runs_tools_against_the_server(server: FakeOpenAIServer, streaming: bool) -> None:
    from rillet import ChatModelAgent, Runner, tool

    @tool
    def add(a: int, b: int) -> int:
        """Adds two integers.

        Args:
            a: the first.
            b: the second.
        """
        return a + b

    server.script(*(agent_transcripts() if streaming else agent_completions()))
    agent = ChatModelAgent(
        "calc", description="adds", instruction="Use the tools.", model=make_model(server), tools=[add]
    )
    events = list(Runner(agent, streaming=streaming).query("What is 2 + 3?"))
    assert all(e.error is None for e in events), [e.error for e in events]
    messages = [e.message_output.get_message() for e in events]
    assert [m.role for m in messages] == ["assistant", "tool", "assistant"]
    assert messages[0].tool_calls[0].function.name == "add"
    assert messages[1].content == "5"
    assert messages[2].content == "2 + 3 = 5"
    first, second = server.bodies()
    assert [t["function"]["name"] for t in first["tools"]] == ["add"]
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_add"
    assert second["messages"][-1] == {"role": "tool", "content": "5", "tool_call_id": "call_add"}
    assert ("stream" in first) is streaming


# --- rillet demo --model openai ------------------------------------------------------------------


def test_demo_runs_on_an_openai_compatible_endpoint(server: FakeOpenAIServer, tmp_path: Any) -> None:
    def sse(*objs: dict[str, Any]) -> bytes:
        return b"".join(b"data: " + json.dumps(o).encode() + b"\n\n" for o in objs) + b"data: [DONE]\n\n"

    def ch(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "demo-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def call(i: int, id: str, name: str, args: str) -> dict[str, Any]:
        return {
            "tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": args}}]
        }

    calls = sse(
        ch({"role": "assistant", **call(0, "call_w", "get_weather", '{"city": "Lisbon"}')}),
        ch(call(1, "call_c", "convert_currency", '{"amount": 200, "from_currency": "USD", "to_currency": "EUR"}')),
        ch({}, "tool_calls"),
    )
    answer = sse(ch({"role": "assistant", "content": "Sunny, 24 °C; 200 USD is 184.00 EUR."}), ch({}, "stop"))
    server.script(Reply(calls), Reply(answer))
    env = {
        "OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "sk-demo",
        "OPENAI_MODEL": "demo-model",
        "PATH": "/usr/bin:/bin",
    }
    result = subprocess.run(
        [sys.executable, "-m", "rillet.cli", "demo", "--model", "openai", "--no-color", "--db", str(tmp_path / "d.db")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert f"demo-model at {server.url}" in result.stdout
    assert "Sunny, 24 °C; 200 USD is 184.00 EUR." in result.stdout
    first, second = server.bodies()
    assert first["model"] == "demo-model" and first["stream"] is True
    assert {t["function"]["name"] for t in first["tools"]} >= {"get_weather", "convert_currency"}
    assert [m["tool_call_id"] for m in second["messages"] if m["role"] == "tool"] == ["call_w", "call_c"]


def test_abandoning_a_streaming_agent_run_closes_the_http_stream(server: FakeOpenAIServer) -> None:
    from rillet import ChatModelAgent, Runner

    server.script(Reply(transcript("openai_text"), splits=(400,), pause=60.0))
    model = make_model(server)

    async def main() -> None:
        it = Runner(ChatModelAgent("a", model=model), streaming=True).query("hi")
        first = await it.__anext__()
        first.message_output.message_stream.close()  # the consumer stops reading
        it.close()  # and abandons the run
        await until(lambda: not model._tasks, "the HTTP stream to close", 30)  # not the server's minute pause

    run(main(), timeout=60)
