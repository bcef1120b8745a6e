"""AgentTool: an agent called as a tool, its result, shared values, forwarded actions and events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from rillet import (
    AgentEvent,
    AgentInput,
    AgentTool,
    BaseAgent,
    ChatModelAgent,
    LoopAgent,
    Message,
    Runner,
    ScriptedModel,
    event_from_message,
    get_session_value,
    new_break_loop_action,
)
from rillet.tools import ExitTool
from support.calls import asks, tool_call
from support.multi_agent import agent, call, summary


def test_agent_tool_result_is_the_last_message_and_values_are_shared() -> None:
    inner = agent(
        "researcher",
        [
            "step one",
        ],
        output_key="found",
    )
    tool_ = AgentTool(inner)
    assert tool_.info.parameters["required"] == ["request"]
    outer_model = ScriptedModel([Message.assistant("", [call("researcher", {"request": "find rust"})]), "summary"])
    seen: list[Any] = []
    outer = ChatModelAgent(
        "outer", model=outer_model, tools=[tool_], after_agent=lambda state: seen.append(get_session_value("found"))
    )
    events = list(Runner(outer).query("research"))
    assert summary(events) == [
        ("outer", "outer", "assistant:"),
        ("outer", "outer", "tool:step one"),
        ("outer", "outer", "assistant:summary"),
    ]
    assert [m.content for m in inner.model.calls[0].messages] == ["find rust"]  # type: ignore[attr-defined]
    assert seen == ["step one"]  # the inner agent's session value reached the caller's session


def test_agent_tool_swallows_exit_and_turns_errors_into_tool_errors() -> None:
    exits = agent("quitter", [Message.assistant("", [call("exit", {"final_result": "bye"})])], exit_tool=ExitTool())
    broken = agent("broken", [Message.assistant("", [call("missing", {})])], max_iterations=1, tools=[ExitTool()])
    outer_model = ScriptedModel(
        [
            Message.assistant(
                "", [call("quitter", {"request": "x"}, "a", 0), call("broken", {"request": "y"}, "b", 1)]
            ),
            "ok",
        ]
    )
    outer = ChatModelAgent("outer", model=outer_model, tools=[AgentTool(exits), AgentTool(broken)])
    events = list(Runner(outer).query("go"))
    assert all(ev.action is None for ev in events)  # the inner exit never left the tool
    results = {m.tool_name: m.content for m in outer_model.calls[1].messages if m.role == "tool"}
    assert results["quitter"] == "bye"
    assert results["broken"].startswith("Error: agent tool 'broken'") and "exceeds max iterations" in results["broken"]
    assert summary(events)[-1][2] == "assistant:ok"


def test_agent_tool_full_history_matches_einos_rewrite() -> None:
    inner = agent("test-agent", ["inner answer"])
    outer_model = ScriptedModel([Message.assistant("", [call("test-agent", {"request": "r"})]), "end"])

    # A before-model callback feeds the history of Eino's test: user, assistant, tool call.
    outer = ChatModelAgent("react-agent", model=outer_model, tools=[AgentTool(inner, full_history=True)])
    history = [Message.user("first user message"), Message.assistant("first assistant response")]
    list(Runner(outer).run(history))
    got = [(m.role, m.content) for m in inner.model.calls[0].messages]  # type: ignore[attr-defined]
    assert got[0] == ("user", "first user message")
    assert got[1] == ("user", "For context: [react-agent] said: first assistant response.")
    assert got[-2] == (
        "user",
        "For context: [react-agent] called tool: `transfer_to_agent` with arguments: test-agent.",
    )
    assert got[-1] == (
        "user",
        "For context: [react-agent] `transfer_to_agent` tool returned result: successfully transferred to agent [test-agent].",
    )


def test_agent_tool_emits_internal_events_with_the_callers_run_path_prefixed() -> None:
    inner = agent("helper", ["inner says hi"])
    outer_model = ScriptedModel([Message.assistant("", [call("helper", {"request": "x"})]), "done"])
    outer = ChatModelAgent("outer", model=outer_model, tools=[AgentTool(inner, emit_internal_events=True)])
    runner = Runner(outer)
    events = list(runner.query("go"))
    assert summary(events) == [
        ("outer", "outer", "assistant:"),
        ("helper", "outer/helper", "assistant:inner says hi"),
        ("outer", "outer", "tool:inner says hi"),
        ("outer", "outer", "assistant:done"),
    ]


def test_agent_tool_result_is_only_the_last_events_message() -> None:
    from rillet import stream_from_list

    class TwoStreams(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            for a, b in (("1", "2"), ("a", "b")):
                chunks = [Message(role="assistant", content=a), Message(content=b)]
                yield event_from_message(None, stream_from_list(chunks))

    outer_model = ScriptedModel([Message.assistant("", [call("two", {"request": "x"})]), "done"])
    outer = ChatModelAgent("outer", model=outer_model, tools=[AgentTool(TwoStreams("two", "streams twice"))])
    list(Runner(outer).query("go"))
    assert [m.content for m in outer_model.calls[1].messages if m.role == "tool"] == ["ab"]


class LoopBreaker(BaseAgent):
    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        ev = event_from_message(Message.assistant("break!"))
        ev.action = new_break_loop_action(self.name)
        yield ev


def test_an_agent_tools_forwarded_break_loop_does_not_end_the_callers_loop() -> None:
    outer = ChatModelAgent(
        "caller",
        model=ScriptedModel(
            lambda messages, tools: asks(tool_call("brk", {"request": "x"})) if messages[-1].role != "tool" else "next"
        ),
        tools=[AgentTool(LoopBreaker("brk", "breaks"), emit_internal_events=True)],
    )
    events = list(Runner(LoopAgent("loop", sub_agents=[outer], max_iterations=3)).query("go"))
    assert (
        sum(
            1
            for e in events
            if e.message_output and e.message_output.message and e.message_output.message.content == "next"
        )
        == 3
    )
    forwarded = [e for e in events if e.agent_name == "brk"]
    assert forwarded and all(e.action is None for e in forwarded)


def test_a_failing_callback_or_plugin_hook_inside_an_agent_tool_ends_the_run() -> None:
    """A callback or plugin hook that raises ends the run with a MiddlewareError (callbacks.md,
    plugins.md, adk-go.md), but inside an agent tool's agent it became the tool's "Error: ..."
    result, and the calling agent's model went on as if the tool had failed: a broken policy
    check handed to the model."""
    from rillet import Plugin, ToolCallContext, tool
    from rillet.errors import MiddlewareError

    @tool
    def price(item: str) -> str:
        """The price of an item."""
        return "3"

    class Policy(Plugin):
        def before_tool(self, ctx: ToolCallContext, args: dict[str, Any]) -> None:
            if ctx.tool_name == "price":
                raise PermissionError("price lookups are forbidden")

    def build() -> tuple[ChatModelAgent, ScriptedModel]:
        inner = ChatModelAgent(
            "inner",
            description="prices",
            model=ScriptedModel([asks(tool_call("price", {"item": "tea"})), "3"]),
            tools=[price],
        )
        outer_model = ScriptedModel([asks(tool_call("inner", {"request": "tea"})), "never"])
        return ChatModelAgent("outer", model=outer_model, tools=[AgentTool(inner)]), outer_model

    outer, outer_model = build()
    events = list(Runner(outer, plugins=[Policy()]).query("price of tea"))
    assert isinstance(events[-1].error, MiddlewareError)
    assert "plugin 'Policy' (Policy.before_tool) failed: PermissionError" in str(events[-1].error)
    assert len(outer_model.calls) == 1  # the outer model is not told the tool failed


def test_full_history_from_a_block_list_caller_is_a_block_list_with_every_result_as_context() -> None:
    """An AgenticMessage caller's history for a full_history agent tool: its tool_result
    messages (user role) went through as they were, results without their calls (which were
    rewritten as context), and the transfer lines were Messages among AgenticMessages."""
    from rillet import AgenticMessage, ContentBlock, tool

    @tool
    def price(item: str) -> str:
        """The price of an item."""
        return "3 EUR"

    inner_model = ScriptedModel([AgenticMessage.assistant("inner answer")])
    inner = ChatModelAgent("inner", description="helps", model=inner_model)
    outer_model = ScriptedModel(
        [
            AgenticMessage.assistant([ContentBlock.tool_call("c1", "price", '{"item": "tea"}')]),
            AgenticMessage.assistant([ContentBlock.tool_call("c2", "inner", '{"request": "go"}')]),
            AgenticMessage.assistant("done"),
        ]
    )
    outer = ChatModelAgent("outer", model=outer_model, tools=[price, AgentTool(inner, full_history=True)])
    events = list(Runner(outer).run([AgenticMessage.user("tea?")]))
    assert [e.error for e in events if e.error is not None] == []
    seen = inner_model.calls[0].messages
    assert {type(m).__name__ for m in seen} == {"AgenticMessage"}
    assert [m.content for m in seen] == [
        "tea?",
        'For context: [outer] called tool: `price` with arguments: {"item": "tea"}.',
        "For context: [outer] `price` tool returned result: 3 EUR.",
        "For context: [outer] called tool: `transfer_to_agent` with arguments: inner.",
        "For context: [outer] `transfer_to_agent` tool returned result: successfully transferred to agent [inner].",
    ]


def test_an_agent_tools_state_delta_is_on_the_tools_event() -> None:
    """What an agent tool's agent writes to the shared session (its output_key) was in the
    session but on no event the caller's consumer sees: a consumer mirroring the session from
    the events' state deltas (multi-agent.md) missed it. ADK-Go reports it on the function
    response event; so does rillet now (emitted inner events carry it themselves)."""
    from rillet import get_session_value, tool

    @tool
    def peek() -> str:
        """Reads the inner agent's answer from the session."""
        return str(get_session_value("inner_out"))

    inner = ChatModelAgent("inner", description="d", model=ScriptedModel(["inner says"]), output_key="inner_out")
    outer_model = ScriptedModel([asks(tool_call("inner", {"request": "x"})), asks(tool_call("peek", {}, "c2")), "ok"])
    outer = ChatModelAgent("outer", model=outer_model, tools=[AgentTool(inner), peek])
    events = list(Runner(outer).query("go"))
    deltas = [(e.message_output.role if e.message_output else None, e.action.state_delta) for e in events if e.action]
    assert deltas == [("tool", {"inner_out": "inner says"})]
    assert events[3].message_output is not None and events[3].message_output.get_message().content == "inner says"
