"""What a run keeps in its session log when nothing can save it (no checkpoint id, no
session): an agent run inside the root agent's own run with input None rebuilds its input
from the log, so it must see the root's messages whether or not the run is checkpointed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import (
    AgentAction,
    AgentEvent,
    AgentInput,
    BaseAgent,
    ChatModelAgent,
    FlowAgent,
    FunctionCall,
    InMemoryCheckpointStore,
    Message,
    ParallelAgent,
    Runner,
    ScriptedModel,
    ToolCall,
    event_from_message,
    tool,
)
from rillet.run.context import current_run


def seen(messages: list[Message], tools: Any) -> str:
    return "saw " + " / ".join(f"{m.role}:{m.content}" for m in messages)


class Planner(BaseAgent):
    """Says a plan, then hands the conversation to a helper that rebuilds it from the log."""

    def __init__(self) -> None:
        super().__init__("planner", "plans")
        self.helper = FlowAgent(ChatModelAgent("helper", model=ScriptedModel(seen)))

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        yield event_from_message(Message.assistant("PLAN: pay the bill"))
        async for ev in self.helper.events(None):
            yield ev


@pytest.mark.parametrize("checkpoint_id", [None, "c1"])
def test_an_agent_run_inside_the_root_with_input_none_sees_the_roots_messages(checkpoint_id: str | None) -> None:
    runner = Runner(Planner(), checkpoint_store=InMemoryCheckpointStore())
    said = [
        ev.message_output.get_message().content
        for ev in runner.query("hi", checkpoint_id=checkpoint_id)
        if ev.message_output
    ]
    assert said == ["PLAN: pay the bill", "saw user:hi / user:For context: [planner] said: PLAN: pay the bill."]


class Talker(BaseAgent):
    """Says plain messages and others (a tool result, one with a custom value, one with an
    action) around two helpers that each rebuild their input from the log: its own steps and
    theirs must come back in the order they were said, whatever form the log kept them in."""

    def __init__(self, parallel: bool = False) -> None:
        super().__init__("talker", "talks")
        self.first = FlowAgent(ChatModelAgent("first", model=ScriptedModel(seen)))
        second = ChatModelAgent("second", model=ScriptedModel(seen))
        self.second = FlowAgent(ParallelAgent("lanes", sub_agents=[second]) if parallel else second)

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        yield event_from_message(Message.assistant("one"))
        yield event_from_message(Message.tool_message("42", "c1", "add"), role="tool", tool_name="add")
        custom = event_from_message(Message.assistant("two"))
        assert custom.output is not None
        custom.output.customized_output = {"k": 1}
        yield custom
        acting = event_from_message(Message.assistant("three"))
        acting.action = AgentAction(customized_action="x")
        yield acting
        async for ev in self.first.events(None):
            yield ev
        yield event_from_message(Message.assistant("four"))
        async for ev in self.second.events(None):
            yield ev


@pytest.mark.parametrize("parallel", [False, True], ids=["plain", "in-a-parallel-lane"])
@pytest.mark.parametrize("checkpoint_id", [None, "c1"])
def test_helpers_see_every_message_of_the_root_and_each_other_in_order(
    checkpoint_id: str | None, parallel: bool
) -> None:
    runner = Runner(Talker(parallel), checkpoint_store=InMemoryCheckpointStore())
    said = [
        ev.message_output.get_message().content
        for ev in runner.query("hi", checkpoint_id=checkpoint_id)
        if ev.message_output and ev.agent_name in ("first", "second")
    ]
    context = "user:For context: [talker]"
    first = f"saw user:hi / {context} said: one. / {context} `add` tool returned result: 42. / {context} said: two. / {context} said: three."
    assert said == [first, f"{first} / user:For context: [first] said: {first}. / {context} said: four."]


@tool
def add(a: int, b: int) -> int:
    """Adds two numbers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


class Aside(BaseAgent):
    """Says something of its own while a parallel workflow it drives is running (between its
    lanes' start and their join), then asks a helper that rebuilds its input from the log."""

    def __init__(self, kind: str) -> None:
        super().__init__("aside", "talks over its lanes")
        call = Message.assistant(tool_calls=[ToolCall(id="c1", function=FunctionCall("add", '{"a": 2, "b": 40}'))])
        lane = ChatModelAgent("lane", model=ScriptedModel([call, "lane done"]), tools=[add])
        self.lanes = FlowAgent(ParallelAgent("lanes", sub_agents=[lane]))
        self.helper = FlowAgent(ChatModelAgent("helper", model=ScriptedModel(seen)))
        self.kind = kind

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        lanes = self.lanes.events(None)
        yield await anext(lanes)
        if self.kind == "plain":
            yield event_from_message(Message.assistant("meanwhile"))
        else:
            yield event_from_message(Message.tool_message("meanwhile", "c9", "note"), role="tool", tool_name="note")
        async for ev in lanes:
            yield ev
        async for ev in self.helper.events(None):
            yield ev


@pytest.mark.parametrize("kind", ["plain", "tool"])
@pytest.mark.parametrize("checkpoint_id", [None, "c1"])
def test_what_the_root_says_while_its_lanes_run_comes_before_them_and_no_lane_event_is_lost(
    checkpoint_id: str | None, kind: str
) -> None:
    runner = Runner(Aside(kind), checkpoint_store=InMemoryCheckpointStore())
    (said,) = [
        ev.message_output.get_message().content
        for ev in runner.query("hi", checkpoint_id=checkpoint_id)
        if ev.message_output and ev.agent_name == "helper"
    ]
    aside = "[aside] said: meanwhile." if kind == "plain" else "[aside] `note` tool returned result: meanwhile."
    lane = "user:For context: [lane]"
    assert said == (
        f"saw user:hi / user:For context: {aside} / {lane} called tool: `add` with arguments: "
        f'{{"a": 2, "b": 40}}. / {lane} `add` tool returned result: 42. / {lane} said: lane done.'
    )


class Failing(BaseAgent):
    """Yields a message event that also carries an error, then looks at its run's log."""

    def __init__(self) -> None:
        super().__init__("failing", "fails politely")
        self.logged: list[AgentEvent] = []

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        ev = event_from_message(Message.assistant("partial answer"))
        ev.error = ValueError("boom")
        yield ev
        run = current_run()
        assert run is not None
        self.logged = run.session.snapshot()


def test_a_logged_message_event_keeps_its_error() -> None:
    agent = Failing()
    list(Runner(agent).query("hi"))
    (logged,) = agent.logged
    assert logged.message_output is not None and logged.message_output.get_message().content == "partial answer"
    assert isinstance(logged.error, ValueError) and str(logged.error) == "boom"
