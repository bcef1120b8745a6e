"""The foundation's contracts as the layers above rely on them: one address form, the in-task
agent API, sub-agent wiring by protocol, one exception-to-event rule."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import AgentEvent, AgentInput, BaseAgent, ChatModelAgent, Message, ScriptedModel, event_from_message
from rillet._core.address import AddressSegment, agent_segment, tool_segment
from rillet._core.interrupt import ResumeScope
from rillet.data.events import error_event
from rillet.flow import OnSubAgents, set_sub_agents
from rillet.run.agent import Agent


def test_segments_keep_the_saved_string_form_and_parse_back() -> None:
    assert agent_segment("trip") == "agent:trip"
    assert tool_segment("pay", "call_9") == "tool:pay:call_9"
    assert tool_segment("pay", "") == "tool:pay:"  # a call without an id, as checkpoints saved it
    for text in ("agent:trip", "agent:a:b", "tool:pay:call_9", "tool:pay:"):
        assert AddressSegment.parse(text).text() == text
    assert AddressSegment.parse("agent:a:b") == AddressSegment("agent", "a:b")  # an agent has no sub id
    assert AddressSegment.parse("tool:pay:c:1") == AddressSegment("tool", "pay", "c:1")
    assert str(AddressSegment("tool", "pay", "c")) == "tool:pay:c"


@pytest.mark.parametrize("bad", ["", "agent", ":x", "noseparator"])
def test_a_malformed_segment_is_refused_with_the_expected_form(bad: str) -> None:
    with pytest.raises(ValueError, match="expected 'kind:id' or 'kind:id:sub_id'"):
        AddressSegment.parse(bad)


def test_resume_scope_routes_by_the_segments_it_is_given() -> None:
    address = (agent_segment("trip"), tool_segment("pay", "c9"))
    scope = ResumeScope({"i1": address}, {"i1": {"amount": 9}}, {"i1": "yes"})
    assert scope.next_points((agent_segment("trip"),)) == [tool_segment("pay", "c9")]
    assert scope.enter((agent_segment("trip"),)).is_resume_target
    point = scope.enter(address)
    assert (point.was_interrupted, point.state, point.data) == (True, {"amount": 9}, "yes")
    assert not scope.enter(address).was_interrupted  # each state is handed out once


class _Fails(BaseAgent):
    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        yield event_from_message(Message.assistant("before"))
        raise ValueError("boom")


def test_events_runs_in_the_calling_task_with_authors_and_one_error_event() -> None:
    async def main() -> list[AgentEvent]:
        task = asyncio.current_task()
        seen = []
        async for ev in _Fails("f").events(AgentInput([Message.user("x")])):
            assert asyncio.current_task() is task
            seen.append(ev)
        return seen

    events = asyncio.run(main())
    assert [ev.agent_name for ev in events] == ["f", ""]
    assert isinstance(events[-1].error, ValueError) and len(events) == 2


def test_error_event_is_an_event_with_only_the_error() -> None:
    e = RuntimeError("x")
    ev = error_event(e, "a")
    assert (ev.agent_name, tuple(ev.run_path), ev.output, ev.action, ev.error) == ("a", (), None, None, e)


class _Wired(BaseAgent):
    def __init__(self, name: str) -> None:
        super().__init__(name, "")
        self.calls: list[Any] = []

    def on_set_sub_agents(self, sub_agents: list[Agent]) -> None:
        self.calls.append(("subs", [a.name for a in sub_agents]))

    def on_set_as_sub_agent(self, parent: Agent) -> None:
        self.calls.append(("parent", parent.name))

    def on_disallow_transfer_to_parent(self) -> None:
        self.calls.append("disallowed")

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        yield event_from_message(Message.assistant("ok"))


def test_sub_agent_wiring_goes_through_the_on_sub_agents_protocol() -> None:
    parent, child = _Wired("p"), _Wired("c")
    assert isinstance(parent, OnSubAgents)
    assert isinstance(ChatModelAgent("m", model=ScriptedModel(["x"])), OnSubAgents)
    assert not isinstance(_Fails("f"), OnSubAgents)
    set_sub_agents(parent, [child])
    assert parent.calls == [("subs", ["c"])] and child.calls == [("parent", "p")]
