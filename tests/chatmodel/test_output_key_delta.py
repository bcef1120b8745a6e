"""output_key as a state delta on the stream (ADK-Go's EventActions.StateDelta), still in the session."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel
from rillet import (
    AgentAction,
    ChatModelAgent,
    FunctionCall,
    Message,
    Runner,
    ScriptedModel,
    SequentialAgent,
    StateDelta,
    ToolCall,
    tool,
)


def test_a_whole_answer_carries_its_output_key_on_its_own_event() -> None:
    agent = ChatModelAgent("w", description="d", model=ScriptedModel(["26 degrees"]), output_key="answer")
    (event,) = list(Runner(agent).query("weather"))
    assert event.message_output is not None and event.message_output.get_message().content == "26 degrees"
    assert event.action == AgentAction(state_delta={"answer": "26 degrees"})
    assert isinstance(event.action.state_delta, StateDelta)


def test_a_streamed_answer_is_followed_by_an_event_with_the_delta() -> None:
    agent = ChatModelAgent("w", description="d", model=ScriptedModel(["26 degrees"]), output_key="answer")
    answer, delta = list(Runner(agent, streaming=True).query("weather"))
    assert answer.message_output is not None and answer.message_output.is_streaming and answer.action is None
    assert delta.output is None and delta.agent_name == "w"
    assert delta.action == AgentAction(state_delta={"answer": "26 degrees"})


def test_the_value_is_in_the_session_for_the_next_agent_as_before() -> None:
    first = ChatModelAgent("first", description="d", model=ScriptedModel(["Lisbon"]), output_key="city")
    model = ScriptedModel(["ok"])
    second = ChatModelAgent("second", description="d", instruction="Plan a trip to {city}.", model=model)
    events = list(Runner(SequentialAgent("seq", sub_agents=[first, second])).query("go"))
    assert [ev.action.state_delta if ev.action else None for ev in events] == [{"city": "Lisbon"}, None]
    assert model.calls[0].messages[0].content == "Plan a trip to Lisbon."


def test_a_return_directly_result_is_the_answer_and_carries_the_delta() -> None:
    @tool
    def lookup(q: str) -> str:
        """Looks it up."""
        return f"found {q}"

    ask = Message.assistant(
        tool_calls=[ToolCall(index=0, id="c1", function=FunctionCall("lookup", json.dumps({"q": "x"})))]
    )
    agent = ChatModelAgent(
        "a", description="d", model=ScriptedModel([ask]), tools=[lookup], return_directly=["lookup"], output_key="out"
    )
    events = list(Runner(agent).query("go"))
    assert events[-1].message_output is not None and events[-1].message_output.tool_name == "lookup"
    assert events[-1].action == AgentAction(state_delta={"out": "found x"})
    assert events[0].action is None


class City(BaseModel):
    name: str


@pytest.mark.parametrize("streaming", [False, True])
def test_with_output_type_the_delta_holds_the_validated_object(streaming: bool) -> None:
    agent = ChatModelAgent(
        "c", description="d", model=ScriptedModel(['{"name": "Porto"}']), output_type=City, output_key="city"
    )
    deltas = [ev.action.state_delta for ev in Runner(agent, streaming=streaming).query("go") if ev.action]
    assert deltas == [{"city": City(name="Porto")}]


def test_without_output_key_no_event_has_an_action() -> None:
    agent = ChatModelAgent("w", description="d", model=ScriptedModel(["hi"]))
    assert all(ev.action is None for ev in Runner(agent, streaming=True).query("go"))
