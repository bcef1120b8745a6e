"""FallbackModel: the next model answers when one fails with a fallback error; a stream falls
back only before its first chunk; the reply names the model that answered.

Against loopback OpenAI-compatible servers (tests/support/openai_server.py) for the wire, and test
doubles for the rules."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
import rillet.models.openai as openai_module
from rillet import (
    ChatModelAgent,
    FallbackModel,
    Message,
    OpenAIChatModel,
    Runner,
    ScriptedModel,
    StreamReader,
    pipe,
)
from rillet.errors import (
    AuthenticationError,
    IncompleteStreamError,
    ModelError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)
from support.openai_server import FakeOpenAIServer, Reply, run, transcript

OK = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
OVERLOADED = {"error": {"message": "Overloaded", "type": "overloaded_error"}}
RATE_LIMITED = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}
BONJOUR = "Bonjour à tous — 日本語 🙂!"  # the text of tests/support/transcripts/openai_text.sse


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    first, second = FakeOpenAIServer(), FakeOpenAIServer()
    try:
        yield first, second
    finally:
        first.close()
        second.close()


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The first model's retry waits are recorded, not slept."""
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(openai_module, "_sleep", record)
    return waits


def overloaded_then_rate_limited(first: FakeOpenAIServer) -> None:
    first.script(
        Reply.json(OVERLOADED, status=529, headers={"Retry-After": "0"}),
        Reply.json(RATE_LIMITED, status=429, headers={"Retry-After": "0"}),
    )


def two_models(servers: tuple[FakeOpenAIServer, FakeOpenAIServer]) -> FallbackModel:
    first, second = servers
    return FallbackModel(
        [
            OpenAIChatModel("big-model", base_url=first.url, api_key="sk-test", max_retries=1),
            OpenAIChatModel("small-model", base_url=second.url, api_key="sk-test", max_retries=0),
        ]
    )


# --- over HTTP: the first model answers 529, then 429; the second one answers --------------


def test_529_then_429_from_the_first_model_and_the_second_answers(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer], no_sleep: list[float]
) -> None:
    first, second = servers
    overloaded_then_rate_limited(first)
    second.script(Reply.json(OK))
    reply = run(two_models(servers).generate([Message.user("hi")]))
    assert (reply.content, dict(reply.extra or {})) == ("ok", {"model": "small-model", "fallback_index": 1})
    assert [b["model"] for b in first.bodies()] == ["big-model", "big-model"]  # its own retry, then it gave up
    assert [b["model"] for b in second.bodies()] == ["small-model"]
    assert no_sleep == [0.0]  # the first model's one retry honoured Retry-After: 0


@pytest.mark.parametrize("streaming", [False, True])
def test_a_runs_events_say_which_model_answered(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer], streaming: bool
) -> None:
    first, second = servers
    overloaded_then_rate_limited(first)
    second.script(Reply.sse("openai_text") if streaming else Reply.json(OK))
    agent = ChatModelAgent("assistant", model=two_models(servers))
    events = list(Runner(agent, streaming=streaming).query("hi"))
    rows = []
    for ev in events:
        mv = ev.message_output
        assert mv is not None and ev.error is None
        msg = mv.get_message()
        rows.append((ev.agent_name, mv.role, mv.is_streaming, msg.content, dict(msg.extra or {})))
    text = BONJOUR if streaming else "ok"
    assert rows == [("assistant", "assistant", streaming, text, {"model": "small-model", "fallback_index": 1})]
    assert len(first.requests) == 2 and len(second.requests) == 1


def test_a_stream_cut_before_its_first_chunk_falls_back(servers: tuple[FakeOpenAIServer, FakeOpenAIServer]) -> None:
    first, second = servers
    first.script(Reply.sse("openai_text", drop_at=0))  # 200, then the connection closes: no chunk
    second.script(Reply.sse("openai_text"))

    async def main() -> list[Message]:
        reader = await two_models(servers).stream([Message.user("hi")])
        return [chunk async for chunk in reader]

    chunks = run(main())
    assert "".join(c.content for c in chunks) == BONJOUR
    assert dict(chunks[0].extra or {}) == {"model": "small-model", "fallback_index": 1}
    assert all(c.extra is None for c in chunks[1:])
    assert len(first.requests) == 1 and len(second.requests) == 1


def test_a_stream_cut_after_its_first_chunk_is_an_error_not_a_switch(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    first, second = servers
    body = transcript("openai_text")
    cut = body.index(b"\n\n", body.index(b"Bonjour")) + 2  # after the chunk that carries "Bonjour"
    first.script(Reply(body, drop_at=cut))
    second.script(Reply.json(OK))

    async def main() -> tuple[list[Message], BaseException | None]:
        reader = await two_models(servers).stream([Message.user("hi")])
        chunks: list[Message] = []
        try:
            async for chunk in reader:
                chunks.append(chunk)
        except Exception as e:
            return chunks, e
        return chunks, None

    chunks, error = run(main())
    assert [c.content for c in chunks] == ["", "Bonjour"]
    assert dict(chunks[0].extra or {}) == {"model": "big-model", "fallback_index": 0}
    assert isinstance(error, IncompleteStreamError)
    assert len(second.requests) == 0  # never a silent switch to the second model


def test_a_run_whose_stream_is_cut_after_its_first_chunk_ends_with_the_error(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    first, second = servers
    body = transcript("openai_text")
    first.script(Reply(body, drop_at=body.index(b"\n\n", body.index(b"Bonjour")) + 2))
    agent = ChatModelAgent("assistant", model=two_models(servers))
    events = list(Runner(agent, streaming=True).query("hi"))
    assert [(ev.agent_name, ev.message_output is not None, type(ev.error).__name__) for ev in events] == [
        ("assistant", True, "NoneType"),
        ("assistant", False, "IncompleteStreamError"),
    ]
    mv = events[0].message_output
    assert mv is not None and mv.is_streaming
    with pytest.raises(IncompleteStreamError):
        mv.get_message()
    assert len(second.requests) == 0


def test_an_authentication_error_is_raised_at_once(servers: tuple[FakeOpenAIServer, FakeOpenAIServer]) -> None:
    first, second = servers
    first.script(Reply.json({"error": {"message": "Incorrect API key"}}, status=401))
    second.script(Reply.json(OK))
    with pytest.raises(AuthenticationError):
        run(two_models(servers).generate([Message.user("hi")]))
    assert len(second.requests) == 0


def test_when_every_model_fails_the_last_error_says_what_the_others_did(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    first, second = servers
    overloaded_then_rate_limited(first)
    second.script(Reply.json({"error": {"message": "boom"}}, status=503))
    with pytest.raises(ServerError) as info:
        run(two_models(servers).generate([Message.user("hi")]))
    assert info.value.status_code == 503
    (note,) = info.value.__notes__
    assert note.startswith(
        "FallbackModel: every model failed; the earlier ones:\nmodels[0] 'big-model': RateLimitError: "
    )


# --- the rules, on test doubles --------------------------------------------------------------


class Failing:
    """A model that fails: at once, or on its stream after ``chunks`` chunks."""

    def __init__(self, error: Exception, *, chunks: int = -1, name: str = "failing") -> None:
        self.error, self.chunks, self.name, self.calls = error, chunks, name, 0

    async def generate(self, messages: list[Message], *, tools: Sequence[Any] | None = None, **o: Any) -> Message:
        self.calls += 1
        raise self.error

    async def stream(
        self, messages: list[Message], *, tools: Sequence[Any] | None = None, **o: Any
    ) -> StreamReader[Message]:
        self.calls += 1
        if self.chunks < 0:
            raise self.error
        reader, writer = pipe()
        for i in range(self.chunks):
            writer.send(Message.assistant(f"part {i} "))
        writer.send_error(self.error)
        writer.close()
        return reader


async def collect(reader: StreamReader[Message]) -> tuple[list[str], str]:
    out: list[str] = []
    try:
        async for chunk in reader:
            out.append(chunk.content)
    except Exception as e:
        return out, type(e).__name__
    return out, ""


@pytest.mark.parametrize(
    "error",
    [
        RateLimitError("429", status_code=429),
        ServerError("529 overloaded", status_code=529),
        ServerError("502", status_code=502),
        ModelTimeoutError("slow"),
        TimeoutError("slow"),
        ConnectionRefusedError("down"),
        ModelError("HTTP 529 from a client that has no class for it", status_code=529),
    ],
    ids=["429", "529", "502", "timeout", "builtin-timeout", "connection", "status-only"],
)
def test_the_default_fallback_errors(error: Exception) -> None:
    second = ScriptedModel(["from the second"], name="second")
    model = FallbackModel([Failing(error), second])
    reply = run(model.generate([Message.user("hi")]))
    assert (reply.content, dict(reply.extra or {})) == ("from the second", {"model": "second", "fallback_index": 1})


@pytest.mark.parametrize(
    "error", [ValueError("a bug"), ModelError("HTTP 400", status_code=400), AuthenticationError("401", status_code=401)]
)
def test_other_errors_are_raised_without_trying_the_next_model(error: Exception) -> None:
    second = ScriptedModel(["unused"])
    with pytest.raises(type(error)):
        run(FallbackModel([Failing(error), second]).generate([Message.user("hi")]))
    assert second.call_count == 0


def test_on_and_on_status_choose_the_errors() -> None:
    only_values = FallbackModel([Failing(ValueError("x")), ScriptedModel(["b"])], on=ValueError, on_status=None)
    assert run(only_values.generate([Message.user("hi")])).content == "b"
    no_status = FallbackModel([Failing(ModelError("503", status_code=503)), ScriptedModel(["b"])], on_status=None)
    with pytest.raises(ModelError):
        run(no_status.generate([Message.user("hi")]))
    teapot = FallbackModel(
        [Failing(ModelError("418", status_code=418)), ScriptedModel(["b"])], on_status=lambda s: s == 418
    )
    assert run(teapot.generate([Message.user("hi")])).content == "b"


def test_streams_fall_back_before_their_first_chunk_only() -> None:
    failing_at_start = Failing(RateLimitError("429", status_code=429), chunks=0)
    refused = Failing(ServerError("500", status_code=500))
    model = FallbackModel([refused, failing_at_start, ScriptedModel(["abcdef"], chunk_size=3, name="third")])
    chunks, error = run(_stream(model))
    assert (chunks, error) == (["abc", "def"], "")
    assert refused.calls == failing_at_start.calls == 1

    late = Failing(RateLimitError("429", status_code=429), chunks=2, name="late")
    third = ScriptedModel(["unused"])
    chunks, error = run(_stream(FallbackModel([late, third])))
    assert (chunks, error) == (["part 0 ", "part 1 "], "RateLimitError")
    assert third.call_count == 0


async def _stream(model: FallbackModel) -> tuple[list[str], str]:
    return await collect(await model.stream([Message.user("hi")]))


def test_an_empty_stream_is_an_answer() -> None:
    async def main() -> tuple[list[str], str]:
        empty, _ = pipe()

        class Empty:
            name = "empty"

            async def generate(self, messages: list[Message], **o: Any) -> Message:
                raise AssertionError

            async def stream(self, messages: list[Message], **o: Any) -> StreamReader[Message]:
                _.close()
                return empty

        second = ScriptedModel(["unused"])
        out = await collect(await FallbackModel([Empty(), second]).stream([Message.user("hi")]))
        assert second.call_count == 0
        return out

    assert run(main()) == ([], "")


def test_names_and_response_format() -> None:
    class Anonymous(ScriptedModel):
        pass

    model = FallbackModel([OpenAIChatModel("gpt-4o", api_key="k"), ScriptedModel(["x"], name="s")])
    assert model.names == ("gpt-4o", "s") and model.supports_response_format
    assert repr(model) == "FallbackModel(['gpt-4o', 's'])"
    mixed = FallbackModel([ScriptedModel(["x"]), ScriptedModel(["x"], supports_response_format=False)])
    assert not mixed.supports_response_format


@pytest.mark.parametrize(
    ("models", "kw", "error", "match"),
    [
        ([], {}, ValueError, "models is empty"),
        (ScriptedModel(["x"]), {}, TypeError, "must be a list of chat models"),
        (["gpt-4o"], {}, TypeError, r"models\[0\] is a str, not a ChatModel"),
        ([ScriptedModel(["x"])], {"on": "RateLimitError"}, TypeError, "on= must be exception classes"),
        ([ScriptedModel(["x"])], {"on_status": 429}, TypeError, "on_status= must be a function"),
    ],
)
def test_bad_arguments_are_named(models: Any, kw: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        FallbackModel(models, **kw)
