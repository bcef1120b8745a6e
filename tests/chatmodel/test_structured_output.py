"""ChatModelAgent(output_type=...): the answer validated against a pydantic class, through
response_format (a model that declares supports_response_format) or the final_result tool,
with failures sent back to the model up to output_retries; ScriptedModel and OpenAIChatModel
(the loopback server of tests/support/openai_server.py), streaming and not."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pydantic
import pytest
from rillet import (
    AgentEvent,
    AgentTool,
    ChatModelAgent,
    FunctionCall,
    Message,
    OutputValidationError,
    Runner,
    ScriptedModel,
    ToolCall,
    tool,
)
from rillet.models.openai import OpenAIChatModel
from rillet.models.strict_schema import strict_json_schema
from rillet.run.context import get_session_value
from support.openai_server import FakeOpenAIServer, Reply


class City(pydantic.BaseModel):
    name: str
    population: int


GOOD = '{"name": "Lisbon", "population": 545000}'
LISBON = City(name="Lisbon", population=545000)
BAD = '{"name": "Lisbon", "population": "many"}'
BAD_PROBLEM = "population: Input should be a valid integer, unable to parse string as an integer (got 'many')"
RETRY_TEXT = f"Your answer is not a valid City: {BAD_PROBLEM}. Answer again with only the corrected JSON object."
MISSING_TOOL_TEXT = "Invalid City: population: Field required. Call final_result again with corrected arguments."

streaming = pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])


def final_call(arguments: str, call_id: str = "call_f") -> Message:
    return Message.assistant(tool_calls=[ToolCall(id=call_id, function=FunctionCall("final_result", arguments))])


def run(agent: ChatModelAgent, stream: bool) -> list[AgentEvent]:
    events = list(Runner(agent, streaming=stream).query("Biggest city of Portugal?"))
    for ev in events:  # read every streamed message, as a consumer does
        if ev.message_output is not None:
            ev.message_output.get_message()
    return events


def agent_over(model: Any, **kw: Any) -> tuple[ChatModelAgent, list[Any]]:
    """An agent with output_type=City and output_key; the list gets the session value at its end."""
    stored: list[Any] = []
    agent = ChatModelAgent(
        "geo",
        model=model,
        output_type=City,
        output_key="city",
        after_agent=lambda _: stored.append(get_session_value("city")),
        **kw,
    )
    return agent, stored


# --- ScriptedModel with response_format ---------------------------------------------------------


@streaming
def test_a_valid_first_answer_is_the_last_event_and_the_output_key(stream: bool) -> None:
    model = ScriptedModel([GOOD])
    agent, stored = agent_over(model)
    events = run(agent, stream)
    assert [ev.error for ev in events] == [None, None]
    last = events[-1]
    assert last.output is not None and last.output.customized_output == LISBON and last.message_output is None
    assert events[0].message_output is not None and events[0].message_output.get_message().content == GOOD
    assert stored == [LISBON]
    assert model.calls[0].options == {"response_format": City} and model.calls[0].tools == ()


@streaming
def test_an_invalid_answer_goes_back_to_the_model_with_its_problems(stream: bool) -> None:
    model = ScriptedModel([BAD, GOOD])
    agent, stored = agent_over(model)
    events = run(agent, stream)
    assert events[-1].output is not None and events[-1].output.customized_output == LISBON
    assert len(events) == 3 and stored == [LISBON]
    seen = model.calls[1].messages
    assert [(m.role, m.content) for m in seen] == [
        ("user", "Biggest city of Portugal?"),
        ("assistant", BAD),
        ("user", RETRY_TEXT),
    ]


@streaming
def test_a_clear_error_once_the_retries_ran_out(stream: bool) -> None:
    model = ScriptedModel([BAD, "not json at all", GOOD])
    agent, stored = agent_over(model, output_retries=1)
    events = run(agent, stream)
    err = events[-1].error
    assert isinstance(err, OutputValidationError)
    assert (err.agent_name, err.output_type, err.attempts) == ("geo", "City", 2)
    assert err.last_error == "Invalid JSON: expected ident at line 1 column 2"
    assert str(err) == (
        "ChatModelAgent 'geo': no valid City after 2 replies (raise output_retries to allow more); "
        "the last one failed with: Invalid JSON: expected ident at line 1 column 2"
    )
    assert model.call_count == 2 and stored == []
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.last_error == err.last_error


def test_output_retries_zero_fails_on_the_first_invalid_answer() -> None:
    model = ScriptedModel([BAD])
    events = run(ChatModelAgent("geo", model=model, output_type=City, output_retries=0), False)
    assert isinstance(events[-1].error, OutputValidationError) and events[-1].error.attempts == 1
    assert events[-1].error.last_error == BAD_PROBLEM


@streaming
def test_ordinary_tools_run_before_the_structured_answer(stream: bool) -> None:
    @tool
    def population(city: str) -> int:
        """The population of a city."""
        return 545000

    call = Message.assistant(tool_calls=[ToolCall(id="p1", function=FunctionCall("population", '{"city": "Lisbon"}'))])
    model = ScriptedModel([call, GOOD])
    agent, stored = agent_over(model, tools=[population])
    events = run(agent, stream)
    assert events[-1].output is not None and events[-1].output.customized_output == LISBON
    assert [m.role for m in model.calls[1].messages] == ["user", "assistant", "tool"]
    assert [t.name for t in model.calls[0].tools] == ["population"] and stored == [LISBON]


def test_retries_do_not_count_against_max_iterations() -> None:
    model = ScriptedModel([BAD, BAD, GOOD])
    events = run(ChatModelAgent("geo", model=model, output_type=City, output_retries=2), False)
    assert events[-1].output is not None and events[-1].output.customized_output == LISBON


# --- ScriptedModel without response_format: the final_result tool ------------------------------


@streaming
def test_the_tool_fallback_offers_final_result_and_validates_its_arguments(stream: bool) -> None:
    model = ScriptedModel(
        [final_call('{"name": "Lisbon"}', "c1"), final_call(GOOD, "c2")], supports_response_format=False
    )
    agent, stored = agent_over(model)
    events = run(agent, stream)
    (offered,) = model.calls[0].tools
    assert offered.name == "final_result" and offered.parameters == City.model_json_schema()
    assert model.calls[0].options == {}
    last = events[-1]
    assert last.output is not None and last.output.customized_output == LISBON and stored == [LISBON]
    assert last.message_output is not None and last.message_output.role == "tool"
    assert json.loads(last.message_output.get_message().content) == LISBON.model_dump()
    retry = model.calls[1].messages[-1]
    assert (retry.role, retry.tool_call_id, retry.tool_name, retry.content) == (
        "tool",
        "c1",
        "final_result",
        MISSING_TOOL_TEXT,
    )


@streaming
def test_the_tool_fallback_fails_clearly_after_the_retries(stream: bool) -> None:
    model = ScriptedModel([final_call("{}"), final_call('{"name": 3}')], supports_response_format=False)
    events = run(ChatModelAgent("geo", model=model, output_type=City), stream)
    err = events[-1].error
    assert isinstance(err, OutputValidationError) and err.attempts == 2
    assert err.last_error == "name: Input should be a valid string (got 3); population: Field required"


def test_a_text_answer_is_asked_to_call_final_result() -> None:
    model = ScriptedModel(["Lisbon, about half a million", final_call(GOOD)], supports_response_format=False)
    events = run(ChatModelAgent("geo", model=model, output_type=City), False)
    assert events[-1].output is not None and events[-1].output.customized_output == LISBON
    assert model.calls[1].messages[-1].content == (
        "Give your final answer by calling the final_result tool with arguments that match its schema."
    )


def test_other_calls_beside_final_result_are_answered_not_run() -> None:
    ran: list[str] = []

    @tool
    def population(city: str) -> int:
        """The population of a city."""
        ran.append(city)
        return 1

    both = Message.assistant(
        tool_calls=[
            ToolCall(id="p1", function=FunctionCall("population", '{"city": "Lisbon"}')),
            ToolCall(id="f1", function=FunctionCall("final_result", "{}")),
        ]
    )
    model = ScriptedModel([both, final_call(GOOD)], supports_response_format=False)
    events = run(ChatModelAgent("geo", model=model, output_type=City, tools=[population]), False)
    assert events[-1].output is not None and events[-1].output.customized_output == LISBON and ran == []
    answers = [(m.tool_call_id, m.content) for m in model.calls[1].messages if m.role == "tool"]
    assert answers[0] == (
        "p1",
        "Not run: final_result was called in the same reply. Call other tools before final_result.",
    )
    assert answers[1][0] == "f1" and answers[1][1].startswith("Invalid City: name: Field required")


# --- construction --------------------------------------------------------------------------------


def test_mistaken_arguments_are_refused_by_name() -> None:
    model = ScriptedModel(["x"])
    with pytest.raises(TypeError, match="output_type must be a pydantic model class"):
        ChatModelAgent("a", model=model, output_type=dict)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="output_retries must be an int >= 0, got -1"):
        ChatModelAgent("a", model=model, output_type=City, output_retries=-1)

    @tool
    def final_result(x: int) -> int:
        """Clashes with the final-answer tool."""
        return x

    no_rf = ScriptedModel(["x"], supports_response_format=False)
    with pytest.raises(ValueError, match="a tool is named 'final_result'"):
        ChatModelAgent("a", model=no_rf, output_type=City, tools=[final_result])
    ChatModelAgent("a", model=model, output_type=City, tools=[final_result])  # response_format: no clash


# --- OpenAIChatModel over the loopback server ----------------------------------------------------


def completion(stream: bool, content: str = "", call: tuple[str, str, str] | None = None) -> Reply:
    """One scripted answer: text, or one tool call (id, name, arguments); SSE when streaming."""
    calls = [{"id": call[0], "type": "function", "function": {"name": call[1], "arguments": call[2]}}] if call else None
    finish = "tool_calls" if call else "stop"
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = calls
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return Reply.json({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]})
    delta: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        delta["tool_calls"] = [{"index": 0, **calls[0]}]
    chunks = [delta, {}]
    body = b"".join(
        b"data: "
        + json.dumps(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": d, "finish_reason": finish if i else None}],
            }
        ).encode()
        + b"\n\n"
        for i, d in enumerate(chunks)
    )
    return Reply(body + b"data: [DONE]\n\n")


def openai_model(server: FakeOpenAIServer, **kw: Any) -> OpenAIChatModel:
    return OpenAIChatModel("test-model", base_url=server.url, api_key="sk-test", max_retries=0, **kw)


STRICT_CITY = {
    "type": "json_schema",
    "json_schema": {"name": "City", "schema": strict_json_schema(City.model_json_schema()), "strict": True},
}


@streaming
def test_openai_valid_first_time_sends_a_strict_response_format(server: FakeOpenAIServer, stream: bool) -> None:
    server.script(completion(stream, GOOD))
    agent, stored = agent_over(openai_model(server))
    events = run(agent, stream)
    assert events[-1].output is not None and events[-1].output.customized_output == LISBON and stored == [LISBON]
    (body,) = server.bodies()
    assert body["response_format"] == STRICT_CITY and "tools" not in body


@streaming
def test_openai_retry_shows_the_model_its_problems(server: FakeOpenAIServer, stream: bool) -> None:
    server.script(completion(stream, BAD), completion(stream, GOOD))
    agent, stored = agent_over(openai_model(server))
    events = run(agent, stream)
    assert events[-1].output is not None and events[-1].output.customized_output == LISBON and stored == [LISBON]
    first, second = server.bodies()
    assert second["messages"] == [
        {"role": "user", "content": "Biggest city of Portugal?"},
        {"role": "assistant", "content": BAD},
        {"role": "user", "content": RETRY_TEXT},
    ]
    assert second["response_format"] == STRICT_CITY


@streaming
def test_openai_a_clear_error_after_the_retries(server: FakeOpenAIServer, stream: bool) -> None:
    server.script(completion(stream, BAD), completion(stream, BAD), completion(stream, GOOD))
    events = run(ChatModelAgent("geo", model=openai_model(server), output_type=City), stream)
    err = events[-1].error
    assert isinstance(err, OutputValidationError) and err.last_error == BAD_PROBLEM and err.attempts == 2
    assert len(server.requests) == 2


@streaming
def test_openai_without_response_format_uses_the_final_result_tool(server: FakeOpenAIServer, stream: bool) -> None:
    server.script(
        completion(stream, call=("c1", "final_result", '{"name": "Lisbon"}')),
        completion(stream, call=("c2", "final_result", GOOD)),
    )
    agent, stored = agent_over(openai_model(server, supports_response_format=False))
    events = run(agent, stream)
    assert events[-1].output is not None and events[-1].output.customized_output == LISBON and stored == [LISBON]
    first, second = server.bodies()
    assert "response_format" not in first
    assert [t["function"]["name"] for t in first["tools"]] == ["final_result"]
    assert first["tools"][0]["function"]["parameters"] == City.model_json_schema()
    assert second["messages"][-1] == {"role": "tool", "content": MISSING_TOOL_TEXT, "tool_call_id": "c1"}


def test_an_agent_tool_over_a_typed_agent_returns_the_object_as_json() -> None:
    inner = ChatModelAgent("geo", description="finds cities", model=ScriptedModel([GOOD]), output_type=City)
    ask = Message.assistant(tool_calls=[ToolCall(id="a1", function=FunctionCall("geo", '{"request": "Portugal"}'))])
    outer_model = ScriptedModel([ask, "done"])
    run(ChatModelAgent("outer", model=outer_model, tools=[AgentTool(inner)]), False)
    result = outer_model.calls[1].messages[-1]
    assert result.role == "tool" and json.loads(result.content) == LISBON.model_dump()


@streaming
def test_a_session_keeps_every_final_result_call_answered(stream: bool) -> None:
    """A retried final_result call and a call skipped beside final_result are answered in the
    events, so the next turn of a session does not send a tool call without its tool message
    (which an OpenAI-compatible provider refuses)."""
    from rillet.sessions import InMemorySessionStore

    both = Message.assistant(
        tool_calls=[
            ToolCall(id="p1", function=FunctionCall("population", '{"city": "Lisbon"}')),
            ToolCall(id="f1", function=FunctionCall("final_result", '{"name": "Lisbon"}')),
        ]
    )

    @tool
    def population(city: str) -> int:
        """The population of a city."""
        return 1

    model = ScriptedModel([both, final_call(GOOD, "f2"), final_call(GOOD, "f3")], supports_response_format=False)
    agent = ChatModelAgent("geo", model=model, output_type=City, tools=[population])
    runner = Runner(agent, streaming=stream, session_store=InMemorySessionStore())
    run_events = list(runner.query("Biggest city of Portugal?", session_id="s"))
    assert run_events[-1].output is not None and run_events[-1].output.customized_output == LISBON
    list(runner.query("Thanks", session_id="s"))
    seen = model.calls[-1].messages
    called = [c.id for m in seen if m.role == "assistant" for c in m.tool_calls]
    answered = [m.tool_call_id for m in seen if m.role == "tool"]
    assert called == ["p1", "f1", "f2"] and answered == called


@pytest.mark.parametrize("native", [True, False])
def test_a_block_list_runs_retries_and_answers_stay_block_lists(native: bool) -> None:
    """An AgenticMessage run whose typed answer fails once: the feedback (a user message, or
    the final_result tool's answers) joined the conversation as Messages, so the retry sent
    the model a conversation of two message types."""
    from rillet import AgenticMessage, ContentBlock

    def reply(text: str, call_id: str) -> AgenticMessage:
        if native:
            return AgenticMessage.assistant(text)
        return AgenticMessage.assistant([ContentBlock.tool_call(call_id, "final_result", text)])

    model = ScriptedModel([reply(BAD, "c1"), reply(GOOD, "c2")], supports_response_format=native)
    agent = ChatModelAgent("a", model=model, output_type=City)
    events = list(Runner(agent).run([AgenticMessage.user("a city")]))
    assert [e.error for e in events if e.error is not None] == []
    assert events[-1].output is not None and events[-1].output.customized_output == LISBON
    assert {type(m).__name__ for m in model.calls[1].messages} == {"AgenticMessage"}
    for e in events:
        if e.message_output is not None:
            assert type(e.message_output.get_message()) is AgenticMessage
