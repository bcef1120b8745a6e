"""ADK-Go's Event.branch on the events of Parallel lanes, and ``sub_agents`` on every agent kind."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    AgentTool,
    BaseAgent,
    ChatModelAgent,
    LoopAgent,
    Message,
    ParallelAgent,
    Runner,
    ScriptedModel,
    SequentialAgent,
    event_from_message,
    set_sub_agents,
)
from rillet.cli.jsonout import event_json


def chat(name: str, *replies: str) -> ChatModelAgent:
    return ChatModelAgent(name, description=name, model=ScriptedModel(list(replies or [name])))


def branches(agent: Any, streaming: bool = False) -> list[tuple[str, str | None]]:
    return sorted((ev.agent_name, ev.branch) for ev in Runner(agent, streaming=streaming).query("go"))


@pytest.mark.parametrize("streaming", [False, True])
def test_each_lane_names_its_branch_and_events_outside_a_parallel_have_none(streaming: bool) -> None:
    flow = SequentialAgent(
        "seq", sub_agents=[chat("first"), ParallelAgent("par", sub_agents=[chat("a"), chat("b")]), chat("last")]
    )
    assert branches(flow, streaming) == [("a", "par.a"), ("b", "par.b"), ("first", None), ("last", None)]


def test_a_lane_inside_a_lane_adds_to_the_outer_name_through_a_sequential() -> None:
    inner = ParallelAgent("inner", sub_agents=[chat("x"), chat("y")])
    outer = ParallelAgent("outer", sub_agents=[SequentialAgent("s", sub_agents=[chat("pre"), inner]), chat("c")])
    assert branches(outer) == [("c", "outer.c"), ("pre", "outer.s"), ("x", "outer.s.inner.x"), ("y", "outer.s.inner.y")]


def test_a_custom_agents_events_in_a_lane_carry_it_and_the_json_output_shows_it() -> None:
    class Echo(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            yield event_from_message(Message.assistant("one"))
            yield event_from_message(Message.assistant("two"))

    events = list(Runner(ParallelAgent("p", sub_agents=[Echo("e"), chat("c")])).query("go"))
    assert sorted((ev.agent_name, ev.branch) for ev in events) == [("c", "p.c"), ("e", "p.e"), ("e", "p.e")]
    shown = [json.loads(json.dumps(event_json(ev), default=str)) for ev in events]
    assert {s["branch"] for s in shown} == {"p.c", "p.e"}
    assert "branch" not in event_json(next(iter(Runner(chat("solo")).query("go"))))


def test_a_parallel_inside_a_loop_names_the_same_branches_every_round() -> None:
    loop = LoopAgent(
        "loop",
        sub_agents=[ParallelAgent("par", sub_agents=[chat("a", "1", "2"), chat("b", "1", "2")])],
        max_iterations=2,
    )
    assert branches(loop) == [("a", "par.a"), ("a", "par.a"), ("b", "par.b"), ("b", "par.b")]


# --- sub_agents ------------------------------------------------------------------------------


def test_every_agent_kind_has_sub_agents_as_built_read_only() -> None:
    a, b, c = chat("a"), chat("b"), chat("c")
    seq = SequentialAgent("seq", sub_agents=[a, b])
    assert seq.sub_agents == [a, b]  # the agents you built, not their flow wrappers
    assert ParallelAgent("par", sub_agents=[c]).sub_agents == [c]
    assert LoopAgent("loop", sub_agents=[chat("d")]).sub_agents[0].name == "d"
    assert chat("leaf").sub_agents == []

    boss, x, y = chat("boss"), chat("x"), chat("y")
    flow = set_sub_agents(boss, [x, y])
    assert boss.sub_agents == [x, y] and flow.sub_agents == [x, y]
    assert x.sub_agents == []  # its parent is not below it

    listed = seq.sub_agents
    listed.append(c)  # a copy: the workflow keeps its children
    assert seq.sub_agents == [a, b]
    with pytest.raises(AttributeError, match="SequentialAgent 'seq': sub_agents is read-only"):
        seq.sub_agents = [c]  # type: ignore[misc]
    with pytest.raises(AttributeError, match="read-only"):
        flow.sub_agents = [c]  # type: ignore[misc]


def test_setting_a_chat_model_agents_sub_agents_is_refused_not_ignored() -> None:
    """ADK's ``agent.sub_agents = [...]`` on a ChatModelAgent was taken: the agents read back,
    and the model was never offered a transfer to them (set_sub_agents wires transfers)."""
    boss, helper = chat("boss"), chat("helper")
    with pytest.raises(AttributeError, match=r"ChatModelAgent 'boss': sub_agents is read-only.*set_sub_agents"):
        boss.sub_agents = [helper]  # type: ignore[misc]
    assert boss.sub_agents == []
    set_sub_agents(boss, [helper])
    assert boss.sub_agents == [helper]


def test_an_agent_tool_is_a_tool_not_a_sub_agent() -> None:
    helper = chat("helper")
    agent = ChatModelAgent("main", description="m", model=ScriptedModel(["x"]), tools=[AgentTool(helper)])
    assert agent.sub_agents == []


def test_a_custom_agent_names_its_own_children_and_find_agent_reaches_them() -> None:
    class Both(BaseAgent):
        def __init__(self, *children: BaseAgent) -> None:
            super().__init__("both", "runs two agents")
            self.sub_agents = list(children)

        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            for child in self.sub_agents:
                async for ev in child.run(input):
                    yield ev

    first, second = chat("first"), chat("second")
    both = Both(first, second)
    assert both.sub_agents == [first, second]
    assert both.find_agent("second") is second
