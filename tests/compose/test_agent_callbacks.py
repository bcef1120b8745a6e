"""ADK-Go's agent callbacks (before/after agent) on agents and workflows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from rillet import (
    AgentEvent,
    AgentInput,
    BaseAgent,
    CallbackContext,
    Message,
    Runner,
    SequentialAgent,
    StateDelta,
    event_from_message,
    new_exit_action,
)
from support.multi_agent import agent, summary


def test_before_agent_callback_content_skips_the_body_and_after_callbacks() -> None:
    after_calls: list[str] = []
    a = agent(
        "cached",
        ["never"],
        before_agent_callbacks=[lambda ctx: None, lambda ctx: "cached answer", lambda ctx: "not reached"],
        after_agent_callbacks=[lambda ctx: after_calls.append("x")],  # type: ignore[arg-type,func-returns-value]
    )
    events = list(Runner(a).query("x"))
    assert summary(events) == [("cached", "cached", "assistant:cached answer")]
    assert a.model.call_count == 0 and after_calls == []  # type: ignore[attr-defined]


def test_before_agent_state_changes_are_an_event_then_the_body_runs() -> None:
    def remember(ctx: CallbackContext) -> None:
        ctx.state["last_city"] = "Hangzhou"

    a = agent("w", ["26 degrees"], before_agent_callbacks=[remember], output_key="answer")
    events = list(Runner(a).query("weather"))
    assert isinstance(events[0].action.state_delta, StateDelta)
    assert events[0].action.state_delta == {"last_city": "Hangzhou"}
    assert events[0].action.customized_action is None  # where it was before 0.x: see CHANGELOG.md
    assert summary(events)[1] == ("w", "w", "assistant:26 degrees")
    assert events[1].action is not None and events[1].action.state_delta == {"answer": "26 degrees"}


def test_after_agent_callback_adds_a_new_event_and_errors_become_events() -> None:
    async def sign(ctx: CallbackContext) -> Message:
        return Message.assistant("-- signed")

    a = agent("s", ["answer"], after_agent_callbacks=[sign])
    assert [s[2] for s in summary(list(Runner(a).query("x")))] == ["assistant:answer", "assistant:-- signed"]

    def boom(ctx: CallbackContext) -> None:
        raise PermissionError("not allowed")

    b = agent("b", ["never"], before_agent_callbacks=[boom])
    events = list(Runner(b).query("x"))
    assert len(events) == 1 and isinstance(events[0].error, PermissionError)


def test_events_without_an_author_get_one_by_adks_rule() -> None:
    class Echo(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            yield event_from_message(Message.user("from the user"))
            yield event_from_message(Message.assistant("from me"))

    events = list(Runner(Echo("echo")).query("x"))
    assert [e.agent_name for e in events] == ["user", "echo"]


def test_workflow_callbacks_wrap_the_whole_workflow() -> None:
    seq = SequentialAgent(
        "seq", sub_agents=[agent("a", ["A"]), agent("b", ["B"])], after_agent_callbacks=[lambda ctx: "workflow done"]
    )
    assert [s[2] for s in summary(list(Runner(seq).query("x")))] == [
        "assistant:A",
        "assistant:B",
        "assistant:workflow done",
    ]


def test_exit_inside_a_sequence_child_via_new_exit_action() -> None:
    class Quit(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            ev = event_from_message(Message.assistant("bye"))
            ev.action = new_exit_action()
            yield ev

    nxt = agent("next", ["unreached"])
    events = list(Runner(SequentialAgent("s", sub_agents=[Quit("q"), nxt])).query("x"))
    assert summary(events) == [("q", "s/q", "assistant:bye")] and nxt.model.call_count == 0  # type: ignore[attr-defined]


def test_one_agent_callback_is_taken_as_a_list_of_one() -> None:
    """``before_agent_callbacks=fn`` (one function, as the model and tool callbacks take it and
    as Google ADK Python's ``before_agent_callback`` does) failed with "'function' object is
    not iterable"."""
    from rillet import ChatModelAgent, ScriptedModel

    def canned(ctx: CallbackContext) -> str:
        return "canned"

    def note(ctx: CallbackContext) -> None:
        ctx.state["seen"] = True

    chat = ChatModelAgent(
        "a", model=ScriptedModel(["never"]), before_agent_callbacks=canned, after_agent_callbacks=note
    )
    assert chat.before_agent_callbacks == [canned] and chat.after_agent_callbacks == [note]
    events = list(Runner(chat).query("go"))
    assert [e.message_output.get_message().content for e in events if e.message_output] == ["canned"]
    seq = SequentialAgent("s", sub_agents=[agent("x", ["hi"])], before_agent_callbacks=canned)
    assert seq.before_agent_callbacks == [canned]
