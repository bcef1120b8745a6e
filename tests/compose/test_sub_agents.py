"""set_sub_agents and the agent tree: the agent given to set_sub_agents runs with its sub-agents
(through the Runner, an AgentTool or a workflow), a transfer nowhere says how to wire one, and an
agent belongs to one tree only (by identity, holding none of them alive)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    AgentTool,
    BaseAgent,
    ChatModelAgent,
    FunctionCall,
    Message,
    Runner,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    event_from_message,
    set_sub_agents,
    with_deterministic_transfer_to,
)
from support.calls import texts, transfer


def agent(name: str, script: list[Any], tools: list[Any] | None = None) -> ChatModelAgent:
    return ChatModelAgent(name, description=f"the {name} agent", model=ScriptedModel(script), tools=tools or [])


def test_running_the_agent_given_to_set_sub_agents_keeps_its_sub_agents() -> None:
    router = agent("router", [transfer("billing")])
    billing = agent("billing", ["your bill is 12 EUR"])
    set_sub_agents(router, [billing])  # the returned wrapper is not kept
    events = list(Runner(router).query("my bill?"))
    assert texts(events)[-1] == ("billing", "your bill is 12 EUR")


def test_an_agent_tool_and_a_workflow_of_the_original_agent_keep_its_sub_agents() -> None:
    router = agent("router", [transfer("billing")])
    set_sub_agents(router, [agent("billing", ["12 EUR"])])
    seq = SequentialAgent("seq", description="one step", sub_agents=[router])
    assert texts(list(Runner(seq).query("bill?")))[-1] == ("billing", "12 EUR")

    router2 = agent("router2", [transfer("billing2")])
    set_sub_agents(router2, [agent("billing2", ["13 EUR"])])
    call = ToolCall(index=0, id="a1", function=FunctionCall("router2", '{"request": "bill?"}'))
    outer = agent("outer", [Message.assistant(tool_calls=[call]), "done"], [AgentTool(router2)])
    events = list(Runner(outer).query("bill?"))
    assert ("outer", "13 EUR") in texts(events)


def test_a_transfer_from_an_agent_without_sub_agents_says_how_to_wire_them() -> None:
    router = with_deterministic_transfer_to(agent("router", ["over to billing"]), ["billing"])
    events = list(Runner(router).query("x"))
    msg = str(events[-1].error)
    assert "agent 'billing' not found" in msg
    assert "set_sub_agents(router, [...]) and run the agent it returns" in msg


def test_an_agent_cannot_join_a_second_tree() -> None:
    b = ChatModelAgent("b", description="d", model=ScriptedModel([]))
    set_sub_agents(ChatModelAgent("router", description="d", model=ScriptedModel([])), [b])
    with pytest.raises(ValueError, match="already belongs to 'router'"):
        SequentialAgent("w", sub_agents=[b])
    assert "transfer_to_agent" in [t.info.name for t in b.tools]  # the first tree is untouched


class ByValue(BaseAgent):
    """An agent compared by value, so unhashable: the one-parent rule still knows it."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByValue) and other.name == self.name

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        yield event_from_message(Message.assistant(self.name))


def test_the_one_parent_rule_holds_for_unhashable_agents_and_keeps_no_agent_alive() -> None:
    child = ByValue("c", "d")
    first = SequentialAgent("w", sub_agents=[child])
    with pytest.raises(ValueError, match="already belongs to 'w'"):
        SequentialAgent("w2", sub_agents=[child])
    gone = weakref.ref(child), weakref.ref(first)
    del child, first
    gc.collect()
    assert [r() for r in gone] == [None, None]  # the flow layer's bookkeeping held neither
