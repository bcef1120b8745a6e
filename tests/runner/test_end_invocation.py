"""rillet.end_invocation: a tool (inside an agent tool too, sync on its worker thread or
async), a callback or a plugin ends the whole run cleanly: the current step finishes, nothing
else runs, and the stream ends with an event that says who ended it. Not an error, not an
interrupt; no checkpoint is kept."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rillet import (
    AgentTool,
    FunctionCall,
    InMemoryCheckpointStore,
    InvocationEnded,
    Message,
    Plugin,
    SequentialAgent,
    ToolCall,
    end_invocation,
    set_sub_agents,
    tool,
)
from rillet.chatmodel import ChatModelAgent, ModelContext, ToolCallContext
from rillet.data.events import AgentEvent
from rillet.models import ScriptedModel
from rillet.runner import Runner


def calls(name: str, args: dict[str, Any]) -> Message:
    return Message.assistant("", [ToolCall(index=0, id=f"c_{name}", function=FunctionCall(name, json.dumps(args)))])


def ended(events: list[AgentEvent]) -> InvocationEnded:
    last = events[-1]
    assert last.error is None and last.action is not None
    assert last.action.interrupted is None
    info = last.action.customized_action
    assert isinstance(info, InvocationEnded)
    return info


@tool
def stop_here(reason: str) -> str:
    """Ends the whole run (a sync tool: it runs on a worker thread)."""
    end_invocation(reason)
    return "stopping"


def test_a_tool_inside_an_agent_tool_ends_the_whole_invocation() -> None:
    inner_model = ScriptedModel([calls("stop_here", {"reason": "enough"}), "inner never says this"])
    inner = ChatModelAgent("inner", description="stops", model=inner_model, tools=[stop_here])
    outer_model = ScriptedModel([calls("inner", {"request": "go"}), "outer never says this"])
    outer = ChatModelAgent("outer", model=outer_model, tools=[AgentTool(inner)], output_key="answer")
    store = InMemoryCheckpointStore()
    events = list(Runner(outer, checkpoint_store=store).query("x", checkpoint_id="k"))
    assert ended(events) == InvocationEnded("inner", "stop_here", None, "enough")
    assert inner_model.call_count == 1 and outer_model.call_count == 1  # no model call after the tool
    # the outer agent's current step (its tool round) finished: the agent tool's event went out
    assert [ev.message_output.tool_name for ev in events[:-1] if ev.message_output is not None] == ["", "inner"]
    assert store.get("k") is None  # not an interrupt: nothing saved


def test_before_model_callback_ends_the_invocation_and_no_model_call_follows() -> None:
    async def budget_guard(ctx: ModelContext) -> Message | None:
        if ctx.iteration == 2:
            end_invocation("over budget")
            return Message.assistant("stopped before the second call")
        return None

    model = ScriptedModel([calls("stop_after", {}), "never"])

    @tool
    async def stop_after() -> str:
        """Does nothing."""
        return "ok"

    agent = ChatModelAgent("a", model=model, tools=[stop_after], before_model=budget_guard)
    events = list(Runner(agent).query("x"))
    info = ended(events)
    assert info.agent_name == "a" and info.tool_name is None and info.reason == "over budget"
    assert info.callback is not None and "before_model callback" in info.callback and "budget_guard" in info.callback
    assert model.call_count == 1
    assert events[-2].message_output.message.content == "stopped before the second call"


def test_a_plugin_ends_the_invocation_and_no_workflow_child_or_transfer_runs() -> None:
    class StopAfterTool(Plugin):
        def after_tool(self, ctx: ToolCallContext, args: dict[str, Any], result: str) -> None:
            end_invocation()

    @tool
    async def work() -> str:
        """Works."""
        return "worked"

    first = ChatModelAgent("first", model=ScriptedModel([calls("work", {}), "never"]), tools=[work])
    second_model = ScriptedModel(["never"])
    second = ChatModelAgent("second", model=second_model)
    events = list(Runner(SequentialAgent("seq", sub_agents=[first, second]), plugins=[StopAfterTool()]).query("x"))
    info = ended(events)
    assert info.agent_name == "first" and info.tool_name == "work"
    assert info.callback == "plugin 'StopAfterTool' (StopAfterTool.after_tool)"
    assert second_model.call_count == 0


def test_a_transfer_is_not_made_once_the_invocation_ended() -> None:
    @tool
    async def halt() -> str:
        """Halts."""
        end_invocation()
        return "halted"

    helper_model = ScriptedModel(["never"])
    helper = ChatModelAgent("helper", description="helps", model=helper_model)
    boss_model = ScriptedModel(
        [
            Message.assistant(
                "",
                [
                    ToolCall(index=0, id="c0", function=FunctionCall("halt", "{}")),
                    ToolCall(index=1, id="c1", function=FunctionCall("transfer_to_agent", '{"agent_name": "helper"}')),
                ],
            )
        ]
    )
    boss = ChatModelAgent("boss", model=boss_model, tools=[halt])
    set_sub_agents(boss, [helper])
    events = list(Runner(boss).query("x"))
    assert ended(events).agent_name == "boss"
    assert helper_model.call_count == 0


def test_end_invocation_outside_a_runner_run_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="outside a Runner run"):
        end_invocation()


@pytest.mark.parametrize("streaming", [False, True])
def test_the_first_call_counts(streaming: bool) -> None:
    @tool
    async def twice() -> str:
        """Ends twice."""
        end_invocation("first")
        end_invocation("second")
        return "done"

    agent = ChatModelAgent("a", model=ScriptedModel([calls("twice", {})]), tools=[twice])
    assert ended(list(Runner(agent, streaming=streaming).query("x"))).reason == "first"


def test_an_agent_callback_ends_the_invocation_through_its_context() -> None:
    from rillet import CallbackContext

    def closed(ctx: CallbackContext) -> None:
        ctx.end_invocation("closed on Sundays")

    first_model = ScriptedModel(["never"])
    first = ChatModelAgent("first", model=first_model, before_agent_callbacks=[closed])
    second_model = ScriptedModel(["never"])
    second = ChatModelAgent("second", model=second_model)
    events = list(Runner(SequentialAgent("seq", sub_agents=[first, second])).query("x"))
    info = ended(events)
    assert info.agent_name == "first" and info.reason == "closed on Sundays"
    assert info.callback is not None and "closed" in info.callback
    assert first_model.call_count == 0 and second_model.call_count == 0
    assert len(events) == 1  # nothing ran: the end event alone


def test_the_round_under_way_finishes_then_nothing_else_runs() -> None:
    @tool
    async def halt() -> str:
        """Halts."""
        end_invocation("done early")
        return "halted"

    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    model = ScriptedModel(
        [
            Message.assistant(
                "",
                [
                    ToolCall(index=0, id="c0", function=FunctionCall("halt", "{}")),
                    ToolCall(index=1, id="c1", function=FunctionCall("add", '{"a": 1, "b": 2}')),
                ],
            ),
            "never",
        ]
    )
    agent = ChatModelAgent("a", model=model, tools=[halt, add], output_key="answer")
    events = list(Runner(agent).query("x", session_values={}))
    assert sorted(ev.message_output.message.content for ev in events[1:-1] if ev.message_output) == ["3", "halted"]
    assert ended(events).reason == "done early" and model.call_count == 1


def test_a_plugins_on_run_start_ending_the_invocation_leaves_no_model_call() -> None:
    class Closed(Plugin):
        def on_run_start(self, agent_name: str, input: Any) -> None:
            end_invocation("closed")

    model = ScriptedModel(["never"])
    events = list(Runner(ChatModelAgent("a", model=model), plugins=[Closed()]).query("x"))
    assert ended(events).reason == "closed" and ended(events).agent_name == "a" and events[-1].agent_name == "a"
    assert model.call_count == 0 and len(events) == 1  # nothing ran: the end event alone
