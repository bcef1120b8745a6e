"""What a run keeps in its session log when nothing can save it (no checkpoint id, no
session): an agent run inside the root agent's own run with input None rebuilds its input
from the log, so it must see the root's messages whether or not the run is checkpointed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    BaseAgent,
    ChatModelAgent,
    FlowAgent,
    InMemoryCheckpointStore,
    Message,
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
