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
    InMemoryCheckpointStore,
    Message,
    ParallelAgent,
    Runner,
    ScriptedModel,
    event_from_message,
)


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
