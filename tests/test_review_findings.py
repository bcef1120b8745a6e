"""Regression tests for what a hostile review of the agent layer found."""

from __future__ import annotations

import asyncio
import gc
import json
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    AgentTool,
    BaseAgent,
    ChatModelAgent,
    CheckpointNotFoundError,
    ExitTool,
    FunctionCall,
    InMemoryCheckpointStore,
    LoopAgent,
    Message,
    Runner,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    event_from_message,
    get_interrupt_state,
    interrupt,
    new_break_loop_action,
    new_exit_action,
    send_tool_gen_action,
    set_sub_agents,
    tool,
)


def call(name: str, args: dict[str, Any], id: str = "c1", i: int = 0) -> ToolCall:
    return ToolCall(index=i, id=id, function=FunctionCall(name, json.dumps(args)))


def asks(*calls: ToolCall) -> Message:
    return Message.assistant("", list(calls))


def test_keyboard_interrupt_and_stray_cancellation_in_a_tool_are_error_events() -> None:
    @tool
    async def ctrl_c() -> str:
        """Raises KeyboardInterrupt."""
        raise KeyboardInterrupt

    @tool
    async def cancelled() -> str:
        """Awaits a future cancelled elsewhere."""
        fut = asyncio.get_running_loop().create_future()
        fut.cancel()
        return await fut  # type: ignore[no-any-return]

    for t in (ctrl_c, cancelled):
        model = ScriptedModel([asks(call(t.info.name, {})), "never"])
        events = list(Runner(ChatModelAgent("a", model=model, tools=[t])).query("x"))
        assert isinstance(events[-1].error, (KeyboardInterrupt, asyncio.CancelledError))
    # the background loop survived: later sync runs still work
    assert [
        e.message_output.message.content for e in Runner(ChatModelAgent("b", model=ScriptedModel(["ok"]))).query("x")
    ] == ["ok"]


def test_sync_tools_running_nested_runners_do_not_starve_the_worker_pool() -> None:
    @tool
    def leaf() -> str:
        """A sync leaf."""
        return "leaf"

    @tool
    def nested() -> str:
        """Runs a whole inner agent synchronously, from a worker thread."""
        inner = ChatModelAgent("inner", model=ScriptedModel([asks(call("leaf", {})), "inner done"]), tools=[leaf])
        return [e.message_output.message.content for e in Runner(inner).query("go")][-1]

    n = 12
    model = ScriptedModel([asks(*[call("nested", {}, f"c{i}", i) for i in range(n)]), "outer done"])
    list(Runner(ChatModelAgent("outer", model=model, tools=[nested])).query("x"))
    assert [m.content for m in model.calls[1].messages if m.role == "tool"] == ["inner done"] * n


def test_agent_callback_state_deltas_are_saved_in_checkpoints() -> None:
    @tool
    def ask() -> str:
        """Interrupts."""
        was, _, _ = get_interrupt_state()
        if not was:
            raise interrupt("ok?")
        return "yes"

    def remember(ctx: Any) -> None:
        ctx.state["v"] = 1

    agent = ChatModelAgent(
        "a", model=ScriptedModel([asks(call("ask", {})), "done"]), tools=[ask], before_agent_callbacks=[remember]
    )
    runner = Runner(agent, checkpoint_store=InMemoryCheckpointStore())
    events = list(runner.query("x", checkpoint_id="k"))
    assert all(e.error is None for e in events)
    ctx = events[-1].action.interrupted.interrupt_contexts[0]
    assert [
        e.message_output.get_message().content for e in runner.resume("k", targets={ctx.id: 1}) if e.message_output
    ][-1] == "done"


def test_streaming_tools_can_interrupt_and_send_actions_before_their_first_chunk() -> None:
    @tool
    def slow_stream() -> Iterator[str]:
        """Streams; exits the run."""
        send_tool_gen_action(new_exit_action())
        yield "a"
        yield "b"

    @tool
    def ask_stream() -> Iterator[str]:
        """Interrupts before streaming."""
        was, _, _ = get_interrupt_state()
        if not was:
            raise interrupt("approve the stream?")
        yield "streamed after approval"

    model = ScriptedModel([asks(call("slow_stream", {})), "never"])
    events = list(
        Runner(ChatModelAgent("a", model=model, tools=[slow_stream], return_directly={"slow_stream"})).query("x")
    )
    assert events[-1].action is not None and events[-1].action.exit
    assert events[-1].message_output.get_message().content == "ab"

    model = ScriptedModel([asks(call("ask_stream", {})), "done"])
    runner = Runner(ChatModelAgent("b", model=model, tools=[ask_stream]), checkpoint_store=InMemoryCheckpointStore())
    events = list(runner.query("x", checkpoint_id="s"))
    intr = events[-1].action.interrupted
    assert intr is not None and intr.interrupt_contexts[0].info == "approve the stream?"
    resumed = list(runner.resume("s", targets={intr.interrupt_contexts[0].id: True}))
    assert [e.message_output.get_message().content for e in resumed] == ["streamed after approval", "done"]


def test_tool_calls_with_repeated_or_empty_ids_keep_every_result() -> None:
    @tool
    async def echo(text: str) -> str:
        """Echoes."""
        return text

    model = ScriptedModel([asks(call("echo", {"text": "A"}, "", 0), call("echo", {"text": "B"}, "", 1)), "ok"])
    list(Runner(ChatModelAgent("a", model=model, tools=[echo])).query("x"))
    assert [m.content for m in model.calls[1].messages if m.role == "tool"] == ["A", "B"]


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


class Breaker(BaseAgent):
    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        ev = event_from_message(Message.assistant("break!"))
        ev.action = new_break_loop_action(self.name)
        yield ev


def test_an_agent_tools_forwarded_break_loop_does_not_end_the_callers_loop() -> None:
    outer = ChatModelAgent(
        "caller",
        model=ScriptedModel(
            lambda messages, tools: asks(call("brk", {"request": "x"})) if messages[-1].role != "tool" else "next"
        ),
        tools=[AgentTool(Breaker("brk", "breaks"), emit_internal_events=True)],
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


def test_misspelled_run_options_are_refused() -> None:
    runner = Runner(ChatModelAgent("a", model=ScriptedModel(["x"])), checkpoint_store=InMemoryCheckpointStore())
    with pytest.raises(TypeError, match="chekpoint_id"):
        runner.query("x", chekpoint_id="k")  # type: ignore[call-arg]


def test_a_finished_resumed_run_deletes_its_checkpoint() -> None:
    @tool
    def ask() -> str:
        """Interrupts once."""
        was, _, _ = get_interrupt_state()
        if not was:
            raise interrupt("ok?")
        return "yes"

    store = InMemoryCheckpointStore()
    runner = Runner(
        ChatModelAgent("a", model=ScriptedModel([asks(call("ask", {})), "done"]), tools=[ask]), checkpoint_store=store
    )
    ctx = list(runner.query("x", checkpoint_id="k"))[-1].action.interrupted.interrupt_contexts[0]
    list(runner.resume("k", targets={ctx.id: 1}))
    assert store.get("k") is None
    with pytest.raises(CheckpointNotFoundError):
        runner.resume("k", targets={ctx.id: 1})


def test_construction_mistakes_get_clear_errors() -> None:
    model = ScriptedModel(["x"])
    with pytest.raises(TypeError, match="instruction must be str"):
        ChatModelAgent("a", description="d", instruction=model)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="OpenAIChatModel"):
        ChatModelAgent("a", model="gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tools must be a list"):
        ChatModelAgent("a", model=model, tools=tool(lambda: 1, name="one"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_iterations must be an int"):
        ChatModelAgent("a", model=model, max_iterations="5")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="set of tool names"):
        ChatModelAgent("a", model=model, return_directly="t")
    with pytest.raises(TypeError, match="pass an instance"):
        ChatModelAgent("a", model=model, exit_tool=ExitTool)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sub_agents"):
        SequentialAgent("s", description=[ChatModelAgent("a", model=model)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_iterations"):
        LoopAgent("l", sub_agents=[ChatModelAgent("b", model=model)], max_iterations=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected an agent"):
        AgentTool(model)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected an agent"):
        Runner(ChatModelAgent)  # type: ignore[arg-type]


def test_a_model_that_is_not_async_or_returns_text_is_named() -> None:
    class SyncModel:
        def generate(self, messages: Any, **kw: Any) -> Message:
            return Message.assistant("hi")

        def stream(self, messages: Any, **kw: Any) -> Any:
            raise AssertionError

    class TextModel:
        async def generate(self, messages: Any, **kw: Any) -> str:
            return "hi"

        async def stream(self, messages: Any, **kw: Any) -> Any:
            raise AssertionError

    (ev,) = list(Runner(ChatModelAgent("a", model=SyncModel())).query("x"))  # type: ignore[arg-type]
    assert "must be `async def`" in str(ev.error)
    (ev,) = list(Runner(ChatModelAgent("a", model=TextModel())).query("x"))  # type: ignore[arg-type]
    assert "must return a rillet.Message" in str(ev.error)


def test_a_run_whose_event_loop_closes_ends_with_an_error_not_a_silent_end() -> None:
    going = asyncio.Event()

    @tool
    async def slow() -> str:
        """Takes a while."""
        going.set()
        await asyncio.sleep(60)
        return "late"

    held: dict[str, Any] = {}

    async def start() -> None:
        model = ScriptedModel([asks(call("slow", {})), "fin"])
        held["it"] = Runner(ChatModelAgent("a", model=model, tools=[slow])).query("q")
        await going.wait()  # the run gets going, then this loop ends and cancels it

    asyncio.run(start())
    events = list(held["it"])
    assert events[-1].error is not None and "cancelled" in str(events[-1].error)


def test_a_model_stream_that_is_not_a_stream_reader_is_named() -> None:
    class Gen:
        async def generate(self, messages: Any, **kw: Any) -> Message:
            raise AssertionError

        async def stream(self, messages: Any, **kw: Any) -> Any:
            async def chunks() -> AsyncIterator[Message]:
                yield Message.assistant("x")

            return chunks()

    (ev,) = list(Runner(ChatModelAgent("a", model=Gen()), streaming=True).query("x"))  # type: ignore[arg-type]
    assert "Gen.stream returned async_generator" in str(ev.error) and "StreamReader" in str(ev.error)
