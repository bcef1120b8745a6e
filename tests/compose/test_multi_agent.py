"""Multi-agent composition: transfer, AgentTool, workflow agents and ADK-Go agent callbacks."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    AgentOutput,
    AgentTool,
    BaseAgent,
    CallbackContext,
    ChatModelAgent,
    FunctionCall,
    FunctionTool,
    LoopAgent,
    Message,
    ParallelAgent,
    RunConfig,
    RunLimitExceededError,
    Runner,
    RunStep,
    ScriptedModel,
    SequentialAgent,
    StateDelta,
    ToolCall,
    event_from_message,
    get_session_value,
    new_break_loop_action,
    new_exit_action,
    new_transfer_to_agent_action,
    set_sub_agents,
    with_deterministic_transfer_to,
    with_disallow_transfer_to_parent,
)
from rillet.tools import ExitTool
from support.calls import asks, tool_call


def call(name: str, args: dict[str, Any], id: str = "c1", i: int = 0) -> ToolCall:
    return ToolCall(index=i, id=id, function=FunctionCall(name, json.dumps(args)))


def transfer(to: str, id: str = "t1") -> Message:
    return Message.assistant("", [call("transfer_to_agent", {"agent_name": to}, id)])


def path(*names: str) -> tuple[RunStep, ...]:
    return tuple(RunStep(n) for n in names)


def summary(events: list[AgentEvent]) -> list[tuple[str, str, str]]:
    out = []
    for ev in events:
        mv = ev.message_output
        if ev.error is not None:
            what = f"error:{ev.error}"
        elif mv is not None:
            what = f"{mv.role}:{mv.get_message().content}"
        else:
            what = "action"
        out.append((ev.agent_name, "/".join(s.agent_name for s in ev.run_path), what))
    return out


def agent(name: str, replies: list[Any], description: str = "", instruction: str = "", **kw: Any) -> ChatModelAgent:
    return ChatModelAgent(
        name,
        description=description or f"the {name} agent",
        instruction=instruction,
        model=ScriptedModel(replies),
        **kw,
    )


# --- transfer ------------------------------------------------------------------------------


def test_transfer_to_a_sub_agent_rewrites_history_in_einos_format() -> None:
    router = agent("router", [transfer("math")], instruction="Route.")
    math = agent("math", ["4"])
    root = set_sub_agents(router, [math, agent("poet", [])])
    events = list(Runner(root).query("2+2?"))
    assert summary(events) == [
        ("router", "router", "assistant:"),
        ("router", "router", "tool:successfully transferred to agent [math]"),
        ("math", "router/math", "assistant:4"),
    ]
    assert events[1].action.transfer_to_agent.dest_agent_name == "math"
    seen = [m.content for m in math.model.calls[0].messages]  # type: ignore[attr-defined]
    assert seen[1:] == [
        "2+2?",
        'For context: [router] called tool: `transfer_to_agent` with arguments: {"agent_name": "math"}.',
        "For context: [router] `transfer_to_agent` tool returned result: successfully transferred to agent [math].",
    ]
    assert all(m.role == "user" for m in math.model.calls[0].messages[1:])  # type: ignore[attr-defined]
    system = router.model.calls[0].messages[0].content  # type: ignore[attr-defined]
    assert system.startswith("Route.\n\n") and "- Agent name: math\n  Agent description: the math agent" in system
    assert "transfer_to_agent" in [t.name for t in router.model.calls[0].tools]  # type: ignore[attr-defined]


def test_transfer_chain_nests_run_paths_a_b_a_c() -> None:
    a = agent("A", [transfer("B"), transfer("C", "t3")])
    b = agent("B", [transfer("A", "t2")])
    c = agent("C", ["done"])
    root = set_sub_agents(a, [b, c])
    events = list(Runner(root).query("go"))
    paths = ["/".join(s.agent_name for s in e.run_path) for e in events]
    assert paths == ["A", "A", "A/B", "A/B", "A/B/A", "A/B/A", "A/B/A/C"]
    assert summary(events)[-1] == ("C", "A/B/A/C", "assistant:done")


def test_transfer_to_an_unknown_agent_is_an_error_event() -> None:
    root = set_sub_agents(agent("router", [transfer("nobody")]), [agent("math", [])])
    events = list(Runner(root).query("x"))
    assert isinstance(events[-1].error, Exception)
    assert str(events[-1].error) == (
        "transfer failed: agent 'nobody' not found when transferring from 'router'; it can transfer to: math"
    )


def test_a_child_that_may_not_transfer_to_its_parent_gets_no_transfer_tool() -> None:
    child = agent("child", ["hi"])
    set_sub_agents(agent("parent", []), [with_disallow_transfer_to_parent(child)])
    assert "transfer_to_agent" not in [t.info.name for t in child.tools]
    other = agent("other", ["hi"])
    set_sub_agents(agent("parent2", []), [other])
    assert "transfer_to_agent" in [t.info.name for t in other.tools]


def test_set_sub_agents_refuses_a_second_parent_and_duplicate_names() -> None:
    child = agent("c", [])
    set_sub_agents(agent("p1", []), [child])
    with pytest.raises(ValueError, match="already belongs to 'p1'"):
        set_sub_agents(agent("p2", []), [child])
    with pytest.raises(ValueError, match="unique"):
        set_sub_agents(agent("p3", []), [agent("x", []), agent("x", [])])


def test_deterministic_transfer_hands_over_after_a_normal_finish() -> None:
    first = with_deterministic_transfer_to(agent("first", ["I did my part."]), ["second"])
    second = agent("second", ["And I mine."])
    root = set_sub_agents(first, [second])
    events = list(Runner(root).query("go"))
    assert [s[2] for s in summary(events)] == [
        "assistant:I did my part.",
        "assistant:",
        "tool:successfully transferred to agent [second]",
        "assistant:And I mine.",
    ]
    assert events[2].message_output.message.tool_name == "transfer_to_agent"
    assert events[1].message_output.message.tool_calls[0].function.arguments == "second"  # the bare name


# --- transfer loops: constant depth, run limits -------------------------------------------


def _frames() -> int:
    """How many Python frames the calling code runs under."""
    n, frame = 0, sys._getframe(1)
    while frame is not None:
        n, frame = n + 1, frame.f_back
    return n


def ping_pong(depths: list[int] | None = None) -> Any:
    """Agents a and b, whose models always hand the conversation to the other; ``depths`` gets
    the frame depth of each model call."""

    def hand_to(other: str) -> Any:
        def reply(messages: list[Message], tools: Any) -> Message:
            if depths is not None:
                depths.append(_frames())
            return transfer(other, f"t{len(messages)}")

        return reply

    a = ChatModelAgent("a", description="A", model=ScriptedModel(hand_to("b"), record=False))
    b = ChatModelAgent("b", description="B", model=ScriptedModel(hand_to("a"), record=False))
    return set_sub_agents(a, [b])


def test_a_transfer_ping_pong_ends_at_the_default_limit_with_an_error_event_naming_the_loop() -> None:
    events = list(Runner(ping_pong()).query("go"))  # ends, and never raises
    err = events[-1].error
    assert isinstance(err, RunLimitExceededError), repr(err)
    assert [e.error for e in events[:-1] if e.error is not None] == []
    assert (err.limit, err.maximum, err.count) == ("max_transfers", 100, 101)
    assert err.loop.endswith("a -> b -> a -> b") and events[-1].agent_name == "a"  # the 101st: a to b
    text = str(err)
    # it says the transfer past the limit was not made ("stopped at 101 transfers" read as if it was)
    assert text.startswith("the run was stopped before transfer 101, over RunConfig(max_transfers=100)")
    assert "a -> b -> a -> b" in text  # the loop, as the agents went round it
    assert "run_config=RunConfig(max_transfers=200)" in text  # how to raise it
    moves = [e for e in events if e.action is not None and e.action.transfer_to_agent is not None]
    assert len(moves) == 101 and events[-2] is moves[-1]  # the 101st is answered by the error, not run


def test_a_model_call_past_max_llm_calls_ends_the_run_with_an_error_event() -> None:
    events = list(Runner(ping_pong()).query("go", run_config=RunConfig(max_transfers=0)))
    err = events[-1].error
    assert isinstance(err, RunLimitExceededError), repr(err)
    assert (err.limit, err.maximum, err.count) == ("max_llm_calls", 500, 501)
    text = str(err)
    assert text.startswith("the run was stopped before model call 501, over RunConfig(max_llm_calls=500)")
    assert "a: 250, b: 250" in text
    assert "a -> b -> a" in text and "run_config=RunConfig(max_llm_calls=1000)" in text


def test_max_llm_calls_counts_the_model_calls_of_agent_tools_and_zero_means_no_limit() -> None:
    def team() -> tuple[ChatModelAgent, ScriptedModel, ScriptedModel]:
        inner = ScriptedModel([Message.assistant("", [call("look", {}, "l1")]), "found"])
        helper = ChatModelAgent(
            "helper",
            description="looks",
            model=inner,
            tools=[FunctionTool(lambda: "x", name="look", description="looks")],
        )
        outer = ScriptedModel([Message.assistant("", [call("helper", {"request": "go"}, "h1")]), "done"])
        return ChatModelAgent("outer", model=outer, tools=[AgentTool(helper)]), outer, inner

    lead, outer, inner = team()
    events = list(Runner(lead).query("go", run_config=RunConfig(max_llm_calls=2)))
    err = events[-1].error
    # the helper's second call was refused (its tool result says so), then the outer agent's:
    # each refusal is the third call asked for, two having been made
    assert isinstance(err, RunLimitExceededError) and err.count == 3, repr(err)
    assert "(calls by agent: outer: 1, helper: 1)" in str(err)
    assert (outer.call_count, inner.call_count) == (1, 1)  # the refused calls were not made
    for unlimited in (0, None, -1):
        lead, outer, inner = team()
        events = list(Runner(lead).query("go", run_config=RunConfig(max_llm_calls=unlimited)))
        assert events[-1].error is None and summary(events)[-1][2] == "assistant:done"


def test_run_limits_are_checked_when_the_run_config_is_made() -> None:
    with pytest.raises(TypeError, match=r"RunConfig\(max_transfers=...\): expected an int or None, got '10'"):
        RunConfig(max_transfers="10")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"RunConfig\(max_llm_calls=...\): expected an int or None, got True"):
        RunConfig(max_llm_calls=True)


def test_every_transfer_runs_at_the_same_stack_depth() -> None:
    depths: list[int] = []
    config = RunConfig(max_transfers=1000, max_llm_calls=0)
    events = list(Runner(ping_pong(depths)).query("go", run_config=config))
    assert isinstance(events[-1].error, RunLimitExceededError) and len(depths) == 1001
    assert depths[9] == depths[999] == depths[1000], (depths[0], depths[9], depths[999])  # was 34 vs 814+


def test_10000_transfers_run_at_flat_cost_per_hop() -> None:
    """The work of a hop, counted as the Python calls made on the run's thread (a profile hook
    on for hops 1-1000 and again for hops 9001-10000), is the same at the end of a 10,000-hop
    chain as at its start: nothing of the framework rescans the chain or the log per hop. (Each
    agent's input still grows by two messages a hop: copying that list is the one cost per hop
    that grows, in C, and no Python calls.)"""
    hops, calls, marks = [0], [0], {}

    def counted(frame: Any, event: str, arg: Any) -> None:
        calls[0] += 1

    def hand_to(other: str) -> Any:
        def reply(messages: list[Message], tools: Any) -> Message:
            hops[0] += 1
            if hops[0] in (1, 1001, 9001, 10001):
                marks[hops[0]] = calls[0]
                sys.setprofile(counted if hops[0] in (1, 9001) else None)
            return transfer(other, f"t{hops[0]}")

        return reply

    a = ChatModelAgent("a", description="A", model=ScriptedModel(hand_to("b"), record=False))
    b = ChatModelAgent("b", description="B", model=ScriptedModel(hand_to("a"), record=False))
    config = RunConfig(max_transfers=10_000, max_llm_calls=0)
    events = list(Runner(set_sub_agents(a, [b])).query("go", run_config=config))
    assert isinstance(events[-1].error, RunLimitExceededError) and events[-1].error.count == 10_001
    first, last = marks[1001] - marks[1], marks[10001] - marks[9001]
    assert first > 1000 * 50  # the hook saw the hops' work
    assert last < 1.1 * first, (first, last)  # was 17x (and 2 minutes): every hop rewrote the whole history


def test_a_chains_run_contexts_build_their_nested_address_only_when_it_is_read() -> None:
    """Each hop's context nests under the last one's (Eino's addresses); built eagerly, 3,000
    of them held 4.5 million address segments (36 MB). Built when read, they hold one each."""
    import tracemalloc

    from rillet.run.context import RunContext, Session

    ctx = RunContext(Session())
    tracemalloc.start()
    try:
        chain = []
        for i in range(3000):
            ctx = ctx.child("a" if i % 2 == 0 else "b")
            chain.append(ctx)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 5_000_000, held
    assert chain[-1].address == ("agent:a", "agent:b") * 1500 and chain[2].address == ("agent:a", "agent:b", "agent:a")
    assert chain[-1].run_path == tuple(RunStep(n) for n in ["a", "b"] * 1500)
    with pytest.raises(AttributeError, match="immutable"):
        chain[0].point = chain[1].point


def test_a_transfer_loop_stops_at_the_limit_outside_a_runner_too() -> None:
    events = list(ping_pong().run(AgentInput([Message.user("go")])))
    assert isinstance(events[-1].error, RunLimitExceededError) and events[-1].error.count == 101


# --- AgentTool --------------------------------------------------------------------------


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


# --- workflows ------------------------------------------------------------------------------


def test_sequential_run_paths_accumulate_and_children_see_each_other_as_context() -> None:
    a = agent("a", ["draft"])
    b = agent("b", ["review"])
    seq = SequentialAgent("seq", description="writes then reviews", sub_agents=[a, b])
    events = list(Runner(seq).query("write"))
    assert summary(events) == [("a", "seq/a", "assistant:draft"), ("b", "seq/a/b", "assistant:review")]
    assert [m.content for m in b.model.calls[0].messages] == ["write", "For context: [a] said: draft."]  # type: ignore[attr-defined]


def test_sequential_stops_on_exit_and_on_error() -> None:
    quitter = agent("q", [Message.assistant("", [call("exit", {"final_result": "stop"})])], exit_tool=ExitTool())
    never = agent("never", ["unreachable"])
    events = list(Runner(SequentialAgent("s", sub_agents=[quitter, never])).query("x"))
    assert events[-1].action is not None and events[-1].action.exit
    assert never.model.call_count == 0  # type: ignore[attr-defined]

    failing = agent("f", [Message.assistant("", [call("nope", {})])], max_iterations=1, tools=[ExitTool()])
    never2 = agent("never2", ["unreachable"])
    events = list(Runner(SequentialAgent("s2", sub_agents=[failing, never2])).query("x"))
    assert events[-1].error is not None and never2.model.call_count == 0  # type: ignore[attr-defined]


class Breaker(BaseAgent):
    """Says something, and breaks the loop on its ``at``-th call (0: on every call)."""

    def __init__(self, name: str, at: int) -> None:
        super().__init__(name, "breaks")
        self.at = at
        self.calls = 0

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        self.calls += 1
        ev = event_from_message(Message.assistant(f"{self.name}#{self.calls}"))
        if self.at == 0 or self.calls == self.at:
            ev.action = new_break_loop_action(self.name)
        yield ev


def test_loop_runs_rounds_and_break_loop_ends_it_after_the_current_child() -> None:
    writer = agent("writer", ["v1", "v2", "v3"])
    reviewer = Breaker("reviewer", at=2)
    loop = LoopAgent("loop", sub_agents=[writer, reviewer], max_iterations=5)
    events = list(Runner(loop).query("write"))
    assert [s[2] for s in summary(events)] == [
        "assistant:v1",
        "assistant:reviewer#1",
        "assistant:v2",
        "assistant:reviewer#2",
    ]
    brk = events[-1].action.break_loop
    assert brk.done and brk.current_iterations == 1
    assert summary(events)[2][1] == "loop/writer/reviewer/writer"  # run paths accumulate across rounds


def test_loop_max_iterations_bounds_the_rounds() -> None:
    events = list(Runner(LoopAgent("l", sub_agents=[agent("w", ["1", "2", "3"])], max_iterations=2)).query("x"))
    assert [s[2] for s in summary(events)] == ["assistant:1", "assistant:2"]


def test_nested_loops_break_only_the_innermost() -> None:
    inner = LoopAgent("inner", sub_agents=[Breaker("b", at=0)], max_iterations=0)
    outer = LoopAgent("outer", sub_agents=[inner, agent("after", ["a1", "a2"])], max_iterations=2)
    events = list(Runner(outer).query("x"))
    texts = [s[2] for s in summary(events)]
    assert texts == ["assistant:b#1", "assistant:a1", "assistant:b#2", "assistant:a2"]


def test_parallel_children_run_at_once_in_isolated_lanes_then_join() -> None:
    both_started = asyncio.Barrier(2) if hasattr(asyncio, "Barrier") else None

    class Lane(BaseAgent):
        def __init__(self, name: str) -> None:
            super().__init__(name, "lane")
            self.saw: list[str] = []

        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            if both_started is not None:
                await asyncio.wait_for(both_started.wait(), 5)  # proves they run at the same time
            self.saw = [m.content for m in input.messages]
            yield event_from_message(Message.assistant(f"from {self.name}"))
            await asyncio.sleep(0)
            self.saw_later = [m.content for m in input.messages]

    x, y = Lane("x"), Lane("y")
    final = agent("final", ["merged"])
    seq = SequentialAgent("seq", sub_agents=[ParallelAgent("par", sub_agents=[x, y]), final])
    events = list(Runner(seq).query("go"))
    assert sorted(s[2] for s in summary(events)[:2]) == ["assistant:from x", "assistant:from y"]
    assert {s[1] for s in summary(events)[:2]} == {"seq/par/x", "seq/par/y"}
    assert x.saw == ["go"] and y.saw == ["go"]  # neither saw its sibling
    seen = [m.content for m in final.model.calls[0].messages]  # type: ignore[attr-defined]
    assert seen[0] == "go" and sorted(seen[1:]) == ["For context: [x] said: from x.", "For context: [y] said: from y."]


def test_parallel_forwards_a_childs_error_and_the_others_finish() -> None:
    failing = agent("f", [Message.assistant("", [call("nope", {})])], max_iterations=1, tools=[ExitTool()])
    fine = agent("ok", ["fine"])
    events = list(Runner(ParallelAgent("p", sub_agents=[failing, fine])).query("x"))
    kinds = sorted("error" if e.error else e.message_output.role for e in events)
    assert kinds.count("error") == 1 and "assistant" in kinds
    assert any(s[2] == "assistant:fine" for s in summary(events))


# --- ADK-Go agent callbacks ------------------------------------------------------------------


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
    assert isinstance(events[0].action.customized_action, StateDelta)
    assert events[0].action.customized_action == {"last_city": "Hangzhou"}
    assert summary(events)[1] == ("w", "w", "assistant:26 degrees")


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


# --- more of Eino's documented shapes ---------------------------------------------------------


def test_skip_transfer_messages_leaves_the_transfer_pair_out_of_the_history() -> None:
    from rillet import FlowAgent

    math = agent("math", ["4"])
    root = set_sub_agents(agent("router", [transfer("math")]), [FlowAgent(math, skip_transfer_messages=True)])
    list(Runner(root).query("2+2?"))
    assert [m.content for m in math.model.calls[0].messages][1:] == ["2+2?"]  # type: ignore[attr-defined]


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


def test_loop_stops_on_a_childs_error() -> None:
    failing = agent("f", [Message.assistant("", [call("nope", {})])], max_iterations=1, tools=[ExitTool()])
    events = list(Runner(LoopAgent("l", sub_agents=[failing, agent("never", ["x"])], max_iterations=0)).query("x"))
    assert events[-1].error is not None and "exceeds max iterations" in str(events[-1].error)


def test_sequential_forwards_break_loop_without_stopping() -> None:
    seq = SequentialAgent("s", sub_agents=[Breaker("b", at=0), agent("next", ["still runs"])])
    events = list(Runner(seq).query("x"))
    assert [s[2] for s in summary(events)] == ["assistant:b#1", "assistant:still runs"]
    assert events[0].action.break_loop is not None and not events[0].action.break_loop.done


def test_a_sequence_child_transfers_inside_its_own_flow() -> None:
    helper = agent("helper", ["helped"])
    lead = set_sub_agents(agent("lead", [transfer("helper")]), [helper])
    events = list(Runner(SequentialAgent("s", sub_agents=[lead, agent("last", ["end"])])).query("x"))
    assert [s[1] for s in summary(events)] == ["s/lead", "s/lead", "s/lead/helper", "s/lead/last"]


def test_parallel_forwards_exit_without_stopping_siblings() -> None:
    class Quit(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            ev = event_from_message(Message.assistant("bye"))
            ev.action = new_exit_action()
            yield ev

    events = list(Runner(ParallelAgent("p", sub_agents=[Quit("q"), agent("other", ["still here"])])).query("x"))
    assert sorted(s[2] for s in summary(events)) == ["assistant:bye", "assistant:still here"]


# --- run paths: Eino's values, shared prefixes ------------------------------------------------


def test_run_path_behaves_as_the_tuple_of_its_steps() -> None:
    import pickle

    from rillet import RunPath

    steps = path("loop", "a", "b", "a", "c")
    p = RunPath(steps)
    assert p == steps and steps == p and p != steps[:-1] and p != list(steps)
    by_path: dict[object, int] = {p: 1}
    assert hash(p) == hash(steps) and by_path[steps] == 1
    assert repr(p) == repr(steps) and str(p) == str(steps)
    assert len(p) == 5 and list(p) == list(steps) and tuple(p) == steps
    assert [p[i] for i in range(-5, 5)] == [steps[i] for i in range(-5, 5)]
    assert p[:2] == steps[:2] and p[1:4] == steps[1:4] and p[::2] == steps[::2] and p[9:] == ()
    assert list(reversed(p)) == list(reversed(steps)) and RunStep("c") in p and RunStep("z") not in p
    assert p.index(RunStep("b")) == 2 and p.count(RunStep("a")) == 2
    assert p + (RunStep("d"),) == (*steps, RunStep("d")) and steps[:1] + p[1:] == p
    assert pickle.loads(pickle.dumps(p)) == p and RunPath() == () and not RunPath()
    with pytest.raises(IndexError):
        p[5]
    assert RunPath(steps[:3]) == p[:3] and p[:3] is p[:3]  # a prefix is shared, not copied


def test_loop_events_carry_eino_run_paths_that_share_their_prefix() -> None:
    events = list(Runner(LoopAgent("l", sub_agents=[agent("w", ["1", "2", "3"])], max_iterations=3)).query("x"))
    assert [e.run_path for e in events] == [path("l", "w"), path("l", "w", "w"), path("l", "w", "w", "w")]
    assert events[2].run_path[:2] is events[0].run_path  # the third's prefix is the first's path


class _Tick(BaseAgent):
    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        yield AgentEvent(output=AgentOutput(customized_output=len(input.messages)))


@pytest.mark.slow
def test_a_6000_iteration_loop_costs_the_same_per_event_and_memory_grows_linearly() -> None:
    import time
    import tracemalloc

    n, window = 6000, 1000

    async def stamped() -> list[float]:
        # `async for`: the run and its consumer share this thread, whose CPU time counts the
        # work of both and none of the waiting for a core (a `for` consumer on another thread
        # only timed when it dequeued events the run had made long before)
        return [
            time.thread_time()
            async for _ev in Runner(LoopAgent("loop", sub_agents=[_Tick("t")], max_iterations=n)).query("go")
        ]

    firsts, lasts = [], []
    for _ in range(3):  # min over repetitions: a busy machine only ever adds time
        stamps = asyncio.run(stamped())
        assert len(stamps) == n
        firsts.append(stamps[window] - stamps[0])
        lasts.append(stamps[-1] - stamps[-1 - window])
    assert min(lasts) < 3 * min(firsts), (firsts, lasts)  # was 20x: each event copied its run path

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        held: dict[int, int] = {}
        events = []
        for i, ev in enumerate(Runner(LoopAgent("loop", sub_agents=[_Tick("t")], max_iterations=n)).query("go"), 1):
            events.append(ev)  # kept, as a consumer collecting the run would
            if i in (n // 2, n):
                held[i] = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert events[-1].run_path == path("loop", *["t"] * n)
    # linear: the second half costs what the first did (quadratic: three times as much)
    assert held[n] - held[n // 2] < 1.5 * held[n // 2], held
    assert held[n] < 20_000_000, held  # was 230 MB


class _Say(BaseAgent):
    """Says one thing a run and never reads its input."""

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        yield event_from_message(Message.assistant(self.name))


def test_loop_children_that_never_read_their_input_cost_the_same_at_8000_iterations_as_at_1000() -> None:
    import gc
    import time

    async def per_iteration(n: int) -> float:
        loop = LoopAgent("loop", sub_agents=[_Say("a")], max_iterations=n)
        gc.collect()
        start = time.thread_time()  # this thread's CPU time: the run is on this thread's loop
        count = 0
        async for _ in Runner(loop).query("go"):
            count += 1
        assert count == n
        return (time.thread_time() - start) / n

    async def measure() -> tuple[list[float], list[float]]:
        small, large = [], []
        for _ in range(3):
            small.append(await per_iteration(1000))
            large.append(await per_iteration(8000))
        return small, large

    # A ratio of two timings in one test (nothing to count covers the history copied for each
    # child); the min over repetitions, as a busy machine only ever adds time.
    small, large = asyncio.run(measure())
    assert min(large) < 1.5 * min(small), (small, large)  # was 3.6x: each child's history was rebuilt


def test_a_loop_child_is_not_handed_a_rewritten_history_it_does_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from rillet import flow

    rewritten: list[str] = []
    real = flow.rewrite_message

    def counted(msg: Message, agent_name: str) -> Message:
        rewritten.append(agent_name)
        return real(msg, agent_name)

    monkeypatch.setattr(flow, "rewrite_message", counted)
    n = 200
    events = list(Runner(LoopAgent("loop", sub_agents=[_Say("a"), _Say("b")], max_iterations=n)).query("go"))
    assert len(events) == 2 * n
    assert rewritten == []  # was n^2 (40,000): every child's history, rebuilt and never read


def test_a_loop_child_reading_its_input_late_sees_the_history_as_it_started() -> None:
    inputs: list[AgentInput] = []

    class Keeper(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            inputs.append(input)  # read only after the whole loop has run
            yield event_from_message(Message.assistant(f"{self.name}{len(inputs)}"))

    loop = LoopAgent("loop", sub_agents=[Keeper("k"), _Say("s")], max_iterations=3)
    assert len(list(Runner(loop).query("go"))) == 6
    seen = [[m.content for m in i.messages] for i in inputs]
    assert seen == [
        ["go"],
        ["go", "k1", "For context: [s] said: s."],
        ["go", "k1", "For context: [s] said: s.", "k2", "For context: [s] said: s."],
    ]
    assert inputs[0] == AgentInput([Message.user("go")]) and "go" in repr(inputs[0])


def test_an_agent_input_keeps_the_dataclass_api_it_had_deferred_or_not() -> None:
    """AgentInput was a dataclass: ``dataclasses.replace`` (a before_agent callback returning a
    changed input), ``asdict`` and ``is_dataclass`` still work, on a loop child's deferred input
    too (built when read). Before: TypeError 'replace() should be called on dataclass instances'."""
    import copy
    import dataclasses
    import pickle

    inputs: list[AgentInput] = []

    class Keeper(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            inputs.append(input)
            yield event_from_message(Message.assistant(self.name))

    list(Runner(LoopAgent("loop", sub_agents=[Keeper("k"), _Say("s")], max_iterations=2)).query("go"))
    deferred = inputs[1]
    assert dataclasses.is_dataclass(deferred) and [f.name for f in dataclasses.fields(AgentInput)] == [
        "messages",
        "enable_streaming",
    ]
    changed = dataclasses.replace(deferred, enable_streaming=True)
    assert type(changed) is AgentInput and changed.enable_streaming and changed.messages == deferred.messages
    assert [m.content for m in changed.messages] == ["go", "k", "For context: [s] said: s."]
    assert dataclasses.replace(deferred, messages=[Message.user("x")]).messages == [Message.user("x")]
    assert dataclasses.asdict(AgentInput([Message.user("q")])) == {
        "messages": [Message.user("q")],
        "enable_streaming": False,
    }
    assert copy.copy(deferred) == deferred == pickle.loads(pickle.dumps(deferred))


def test_the_history_kept_in_the_session_follows_the_log_and_starts_over_when_it_was_changed() -> None:
    from rillet.flow import _history_entries
    from rillet.run.context import Session

    def said(text: str) -> AgentEvent:
        ev = event_from_message(Message.assistant(text))
        ev.agent_name = "a"
        return ev

    async def texts(session: Session, root: AgentInput) -> list[str]:
        entries, n = await _history_entries(session, root, False)
        return [e.message.content for e in entries[:n]]

    root, session = AgentInput([Message.user("q")]), Session()
    session.record(said("1"))
    assert asyncio.run(texts(session, root)) == ["q", "1"]
    session.record(said("2"))
    assert asyncio.run(texts(session, root)) == ["q", "1", "2"]  # read on from where it was
    session.events[:] = [said("x")]  # changed under it (not by rillet): read again from the start
    assert asyncio.run(texts(session, root)) == ["q", "x"]
    assert asyncio.run(texts(session, AgentInput([Message.user("other")]))) == ["other", "x"]


def test_each_agents_rewritten_history_reads_on_and_drops_a_skipped_transfer_pair_across_reads() -> None:
    from rillet import FlowAgent, new_transfer_to_agent_action
    from rillet.flow import gen_transfer_messages
    from rillet.run.context import RunContext, Session

    def by(agent: str, message: Message, transfer_to: str | None = None) -> AgentEvent:
        ev = event_from_message(message, role="tool" if message.role == "tool" else "assistant")
        ev.agent_name = agent
        if transfer_to is not None:
            ev.action = new_transfer_to_agent_action(transfer_to)
        return ev

    async def seen(session: Session, root: AgentInput, reader: str, skip: bool) -> list[str]:
        flow = FlowAgent(BaseAgent(reader), skip_transfer_messages=skip)
        given = await flow._history_input(RunContext(session, (), (), root))
        return [m.content for m in given.messages]

    root, session = AgentInput([Message.user("q")]), Session()
    session.record(by("a", Message.assistant("hi")))
    asks, done = gen_transfer_messages("b")
    session.record(by("a", asks))
    assert asyncio.run(seen(session, root, "b", True))[:2] == ["q", "For context: [a] said: hi."]
    assert len(asyncio.run(seen(session, root, "b", True))) == 3  # the call, until its result comes
    session.record(by("a", done, transfer_to="b"))  # the result: the pair leaves the history
    assert asyncio.run(seen(session, root, "b", True)) == ["q", "For context: [a] said: hi."]
    session.record(by("b", Message.assistant("yes")))
    assert asyncio.run(seen(session, root, "b", True)) == ["q", "For context: [a] said: hi.", "yes"]
    assert asyncio.run(seen(session, root, "a", True)) == ["q", "hi", "For context: [b] said: yes."]
    assert len(asyncio.run(seen(session, root, "a", False))) == 5  # kept apart: with the pair


def test_a_history_handed_out_stays_as_it_was_when_a_later_transfer_result_leaves_its_call_out() -> None:
    from rillet.flow import TRANSFER_TOOL_NAME, _history_entries
    from rillet.run.context import Session

    root, session = AgentInput([Message.user("q")]), Session()
    call = event_from_message(transfer("b"))
    call.agent_name = "a"
    session.record(call)
    first, n = asyncio.run(_history_entries(session, root, True))
    assert [e.message.role for e in first[:n]] == ["user", "assistant"]  # the call's result is not in yet
    result = event_from_message(
        Message.tool_message("successfully transferred to agent [b]", "t1", TRANSFER_TOOL_NAME),
        role="tool",
        tool_name=TRANSFER_TOOL_NAME,
    )
    result.agent_name, result.action = "a", new_transfer_to_agent_action("b")
    session.record(result)
    second, m = asyncio.run(_history_entries(session, root, True))
    assert [e.message.role for e in second[:m]] == ["user"]  # the pair is left out
    assert [e.message.role for e in first[:n]] == ["user", "assistant"]  # what was handed out is unchanged


# --- an agent tool's forwarded actions ---------------------------------------------------------


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
