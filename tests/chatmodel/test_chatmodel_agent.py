"""ChatModelAgent's ReAct loop through the Runner: Eino's semantics (reference checklist 1-8, 17)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import AgentTool, FunctionCall, LoopAgent, Message, SequentialAgent, ToolCall, Usage, pipe, stream_from_list
from rillet.chatmodel import ChatModelAgent, ExceedMaxIterationsError, ModelContext, ToolCallContext
from rillet.data.events import AgentEvent, RunStep, new_break_loop_action
from rillet.models import ScriptedModel
from rillet.run.context import get_session_value, send_tool_gen_action
from rillet.runner import Runner
from rillet.tools import ExitTool, tool
from support.calls import tool_call


def call(i: int, name: str, args: dict[str, Any] | str, id: str | None = None) -> ToolCall:
    text = args if isinstance(args, str) else json.dumps(args)
    return ToolCall(index=i, id=id or f"call_{i}", function=FunctionCall(name, text))


def asks(*calls: ToolCall, content: str = "") -> Message:
    return Message.assistant(content, list(calls))


@tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@tool
async def echo(text: str) -> str:
    """Echoes text."""
    return text


def collect(runner: Runner, text: str = "go", **kw: Any) -> list[AgentEvent]:
    return list(runner.query(text, **kw))


def kinds(events: list[AgentEvent]) -> list[str]:
    out = []
    for ev in events:
        mv = ev.message_output
        if ev.error is not None:
            out.append("error")
        elif mv is not None and mv.role == "tool":
            out.append(f"tool:{mv.tool_name}")
        elif mv is not None:
            out.append("model")
        else:
            out.append("other")
    return out


def test_react_loop_model_sees_whole_state_and_events_in_order() -> None:
    model = ScriptedModel([asks(call(0, "add", {"a": 2, "b": 3})), asks(call(0, "echo", {"text": "hi"})), "done"])
    agent = ChatModelAgent(
        "calc", description="adds", instruction="You are a calculator.", model=model, tools=[add, echo]
    )
    events = collect(Runner(agent))
    assert kinds(events) == ["model", "tool:add", "model", "tool:echo", "model"]
    assert all(ev.agent_name == "calc" and ev.run_path == (RunStep("calc"),) for ev in events)
    assert events[1].message_output.message.content == "5"
    assert events[-1].message_output.message.content == "done"
    third = model.calls[2].messages
    assert [m.role for m in third] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert third[0].content == "You are a calculator."
    assert third[3].tool_call_id == "call_0" and third[3].tool_name == "add"
    assert [t.name for t in model.calls[0].tools] == ["add", "echo"]


def test_async_and_sync_consumption_of_the_same_workload_agree() -> None:
    def make() -> Runner:
        model = ScriptedModel([asks(call(0, "add", {"a": 1, "b": 1})), "two"])
        return Runner(ChatModelAgent("a", model=model, tools=[add]))

    sync_events = [repr(e) for e in make().query("x")]

    async def consume() -> list[str]:
        return [repr(e) async for e in make().query("x")]

    assert asyncio.run(consume()) == sync_events


def test_max_iterations_counts_model_calls_and_fails_on_the_next() -> None:
    model = ScriptedModel(lambda messages, tools: asks(call(0, "echo", {"text": "again"})))
    finished: list[Any] = []
    agent = ChatModelAgent("loop", model=model, tools=[echo], max_iterations=3, after_agent=finished.append)
    events = collect(Runner(agent))
    assert kinds(events) == ["model", "tool:echo"] * 3 + ["error"]
    assert isinstance(events[-1].error, ExceedMaxIterationsError)
    assert "exceeds max iterations" in str(events[-1].error)
    assert model.call_count == 3
    assert finished == []  # after-agent callbacks do not run on failure


def test_max_iterations_does_not_apply_without_tools() -> None:
    agent = ChatModelAgent("plain", model=ScriptedModel(["hello"]), max_iterations=1)
    events = collect(Runner(agent))
    assert kinds(events) == ["model"]


def test_tool_calls_of_one_round_run_concurrently_results_in_call_order() -> None:
    first_started = asyncio.Event()
    release = asyncio.Event()

    @tool
    async def slow(x: str) -> str:
        """Waits for fast to finish."""
        first_started.set()
        await release.wait()
        return "slow:" + x

    @tool
    async def fast(x: str) -> str:
        """Finishes first."""
        await first_started.wait()
        release.set()
        return "fast:" + x

    model = ScriptedModel([asks(call(0, "slow", {"x": "a"}), call(1, "fast", {"x": "b"})), "ok"])
    events = collect(Runner(ChatModelAgent("p", model=model, tools=[slow, fast])))
    assert kinds(events) == ["model", "tool:fast", "tool:slow", "model"]  # events: completion order
    state = model.calls[1].messages
    assert [m.content for m in state if m.role == "tool"] == ["slow:a", "fast:b"]  # state: call order


def test_execute_tools_sequentially_runs_in_call_order() -> None:
    order: list[str] = []

    @tool
    async def t(x: str) -> str:
        """Records."""
        order.append(x)
        await asyncio.sleep(0)
        return x

    calls = [call(i, "t", {"x": str(i)}) for i in range(4)]
    model = ScriptedModel([asks(*calls), "ok"])
    events = collect(Runner(ChatModelAgent("s", model=model, tools=[t], execute_tools_sequentially=True)))
    assert order == ["0", "1", "2", "3"]
    assert [e.message_output.message.content for e in events[1:5]] == ["0", "1", "2", "3"]


def test_return_directly_is_held_to_the_end_of_the_round_and_ends_the_run() -> None:
    finished, answers = asyncio.Event(), []

    @tool
    async def finish(answer: str) -> str:
        """Returns directly."""
        answers.append(answer)
        if len(answers) == 2:
            finished.set()
        return answer

    @tool
    async def other(x: str) -> str:
        """Ends last in its round."""
        await finished.wait()
        return x

    model = ScriptedModel(
        [
            asks(
                call(0, "finish", {"answer": "first"}),
                call(1, "other", {"x": "o"}),
                call(2, "finish", {"answer": "last"}),
            )
        ]
    )
    agent = ChatModelAgent("d", model=model, tools=[finish, other], return_directly={"finish"}, output_key="out")
    runner = Runner(agent)
    events = list(runner.query("go"))
    assert kinds(events)[0] == "model"
    assert kinds(events)[-1] == "tool:finish"
    assert events[-1].message_output.message.content == "last"  # the last return-directly call wins
    assert sorted(kinds(events)[1:-1]) == ["tool:finish", "tool:other"]
    assert model.call_count == 1  # no further model call


def test_exit_tool_ends_the_run_with_an_exit_action() -> None:
    model = ScriptedModel([asks(call(0, "exit", {"final_result": "bye"})), "never"])
    agent = ChatModelAgent("e", model=model, tools=[echo], exit_tool=ExitTool())
    events = collect(Runner(agent))
    assert kinds(events) == ["model", "tool:exit"]
    assert events[-1].action is not None and events[-1].action.exit
    assert events[-1].message_output.message.content == "bye"


def test_send_tool_gen_action_attaches_to_that_tools_event() -> None:
    @tool
    def breaker() -> str:
        """Breaks the loop."""
        send_tool_gen_action(new_break_loop_action("b"))
        return "broken"

    model = ScriptedModel([asks(call(0, "breaker", {}), call(1, "echo", {"text": "x"})), "done"])
    events = collect(Runner(ChatModelAgent("b", model=model, tools=[breaker, echo])))
    by_tool = {e.message_output.tool_name: e for e in events if e.message_output and e.message_output.role == "tool"}
    assert by_tool["breaker"].action is not None and by_tool["breaker"].action.break_loop.from_agent == "b"
    assert by_tool["echo"].action is None


def test_what_is_set_on_the_agent_between_runs_is_what_the_next_run_uses() -> None:
    """A run takes what it needs from its agent when it starts (and may reuse the last run's
    record of it): an attribute set since, or a list grown in place, counts."""
    agent = ChatModelAgent("a", instruction="First.", model=ScriptedModel(["one"]), tools=[add], output_key="k")
    assert kinds(collect(Runner(agent))) == ["model"]
    again = collect(Runner(agent))  # nothing changed: the same as the first run
    assert kinds(again) == ["error"] and "ScriptedModel" in str(again[0].error)  # its script is used up

    model = ScriptedModel(lambda messages, tools: asks(call(0, "add", {"a": 1, "b": 2})))
    agent.model, agent.instruction, agent.max_iterations = model, "Second.", 2
    wrapped: list[str] = []
    agent.wrap_tool_call.append(lambda ctx, call_next: (wrapped.append(ctx.tool_name), call_next(ctx.arguments))[1])
    events = collect(Runner(agent))
    assert kinds(events) == ["model", "tool:add", "model", "tool:add", "error"]
    assert isinstance(events[-1].error, ExceedMaxIterationsError) and "(2 model calls)" in str(events[-1].error)
    assert model.calls[0].messages[0].content == "Second." and wrapped == ["add", "add"]


def test_instruction_is_formatted_only_when_session_values_exist() -> None:
    def run(**kw: Any) -> ScriptedModel:
        model = ScriptedModel(["ok"])
        collect(Runner(ChatModelAgent("i", instruction="Hello {user}, JSON looks like {}", model=model)), **kw)
        return model

    assert run().calls[0].messages[0].content == "Hello {user}, JSON looks like {}"
    model = ScriptedModel(["ok"])
    events = collect(
        Runner(ChatModelAgent("i", instruction="Hello {user}", model=model)), session_values={"user": "Ann"}
    )
    assert model.calls[0].messages[0].content == "Hello Ann"
    assert kinds(events) == ["model"]
    bad = collect(
        Runner(ChatModelAgent("i", instruction="JSON: {}", model=ScriptedModel(["ok"]))), session_values={"user": "Ann"}
    )
    assert kinds(bad) == ["error"] and "gen_model_input" in str(bad[0].error)


def test_output_key_stores_the_final_text_in_the_session() -> None:
    seen: list[Any] = []

    def after(state: list[Message]) -> None:
        seen.append(get_session_value("answer"))

    agent = ChatModelAgent("o", model=ScriptedModel(["forty-two"]), output_key="answer", after_agent=after)
    collect(Runner(agent))
    assert seen == ["forty-two"]


def test_tool_errors_go_back_to_the_model_by_default() -> None:
    @tool
    def broken(x: int) -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    model = ScriptedModel(
        [
            asks(call(0, "broken", {"x": 1}), call(1, "missing", {}), call(2, "broken", {"x": "not a number"})),
            "sorry",
        ]
    )
    events = collect(Runner(ChatModelAgent("t", model=model, tools=[broken])))
    assert kinds(events)[-1] == "model"
    results = [m.content for m in model.calls[1].messages if m.role == "tool"]
    assert results[0] == "Error: disk on fire"
    assert "missing" in results[1] and "not found" in results[1]
    assert "broken" in results[2] and "x" in results[2]


def test_tool_error_raise_ends_the_run_with_einos_message() -> None:
    @tool
    def broken() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    model = ScriptedModel([asks(call(0, "broken", {}, id="c9")), "never"])
    events = collect(Runner(ChatModelAgent("t", model=model, tools=[broken], tool_error="raise")))
    assert kinds(events) == ["model", "error"]
    assert "failed to invoke tool[name:broken id:c9]: disk on fire" in str(events[-1].error)


def test_model_error_becomes_an_error_event() -> None:
    class Failing:
        async def generate(self, messages: list[Message], **kw: Any) -> Message:
            raise ConnectionError("model endpoint refused: 503")

        async def stream(self, messages: list[Message], **kw: Any) -> Any:
            raise ConnectionError("model endpoint refused: 503")

    for streaming in (False, True):
        events = collect(Runner(ChatModelAgent("m", model=Failing()), streaming=streaming))  # type: ignore[arg-type]
        assert kinds(events) == ["error"] and "503" in str(events[0].error)
        assert events[0].agent_name == "m"


def test_streaming_model_event_is_emitted_before_the_model_finishes() -> None:
    reader, writer = pipe()

    class Live:
        async def generate(self, messages: list[Message], **kw: Any) -> Message:
            raise AssertionError("streaming runs call stream()")

        async def stream(self, messages: list[Message], **kw: Any) -> Any:
            return reader

    async def main() -> list[str]:
        it = Runner(ChatModelAgent("s", model=Live()), streaming=True).query("x")  # type: ignore[arg-type]
        first = await it.__anext__()
        assert first.message_output is not None and first.message_output.is_streaming
        writer.send(Message(role="assistant", content="hel"))  # the model is still producing
        writer.send(Message(content="lo"))
        writer.close()
        chunks = [c.content async for c in first.message_output.message_stream]
        rest = [e async for e in it]
        assert rest == []
        return chunks

    assert asyncio.run(main()) == ["hel", "lo"]


def test_streaming_run_streams_model_output_and_concatenates_it_for_the_state() -> None:
    model = ScriptedModel([asks(call(0, "add", {"a": 20, "b": 22}), content="Adding."), "The answer is 42."])
    events = collect(Runner(ChatModelAgent("s", model=model, tools=[add]), streaming=True))
    assert kinds(events) == ["model", "tool:add", "model"]
    assert events[0].message_output.is_streaming and not events[1].message_output.is_streaming
    assert events[2].message_output.get_message().content == "The answer is 42."
    sent = model.calls[1].messages[1]
    assert sent.content == "Adding." and sent.tool_calls[0].function.arguments == '{"a": 20, "b": 22}'


def test_a_streaming_tool_emits_a_stream_even_in_a_non_streaming_run() -> None:
    @tool
    def countdown(n: int):  # type: ignore[no-untyped-def]
        """Counts down."""
        for i in range(n, 0, -1):
            yield f"{i}.."

    model = ScriptedModel([asks(call(0, "countdown", {"n": 3})), "liftoff"])
    events = collect(Runner(ChatModelAgent("c", model=model, tools=[countdown])))
    assert kinds(events) == ["model", "tool:countdown", "model"]
    mv = events[1].message_output
    assert mv.is_streaming
    assert mv.get_message().content == "3..2..1.."
    assert model.calls[1].messages[-1].content == "3..2..1.."


def test_callbacks_rewrite_messages_replace_replies_and_wrap_tools() -> None:
    log: list[str] = []

    def before(ctx: ModelContext) -> list[Message]:
        log.append(f"before:{ctx.iteration}")
        return [m for m in ctx.messages if m.role != "system"]  # persisted

    async def after(ctx: ModelContext, reply: Message) -> Message | None:
        log.append(f"after:{ctx.iteration}")
        if ctx.iteration == 2:
            return Message.assistant("replaced")
        return None

    async def outer(ctx: ToolCallContext, nxt: Any) -> str:
        log.append("outer")
        return "<" + await nxt(ctx.arguments) + ">"

    async def inner(ctx: ToolCallContext, nxt: Any) -> str:
        log.append("inner")
        return "[" + await nxt(ctx.arguments) + "]"

    model = ScriptedModel([asks(call(0, "echo", {"text": "x"})), "original"])
    agent = ChatModelAgent(
        "cb",
        instruction="system prompt",
        model=model,
        tools=[echo],
        before_model=before,
        after_model=after,
        wrap_tool_call=[outer, inner],
    )
    events = collect(Runner(agent))
    assert log == ["before:1", "after:1", "outer", "inner", "before:2", "after:2"]
    assert events[1].message_output.message.content == "<[x]>"
    assert [m.role for m in model.calls[1].messages] == ["user", "assistant", "tool"]
    assert events[-1].message_output.message.content == "replaced"  # the event shows the reply acted on (ADK)


def test_a_callback_exception_becomes_the_runs_error_event() -> None:
    def before_agent(input: Any) -> None:
        raise KeyError("no tenant")

    events = collect(Runner(ChatModelAgent("cb", model=ScriptedModel(["x"]), before_agent=before_agent)))
    assert kinds(events) == ["error"] and "no tenant" in str(events[0].error)


def test_usage_and_tool_names_survive_into_events() -> None:
    reply = Message.assistant("hi")
    from rillet import ResponseMeta

    reply.response_meta = ResponseMeta("stop", Usage(10, 5, 15))
    events = collect(Runner(ChatModelAgent("u", model=ScriptedModel([reply]))))
    assert events[0].message_output.message.response_meta.usage.total_tokens == 15


def test_constructor_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="model is required"):
        ChatModelAgent("x")
    with pytest.raises(ValueError, match="unique"):
        ChatModelAgent("x", model=ScriptedModel([]), tools=[add, add])
    with pytest.raises(ValueError, match="return_directly"):
        ChatModelAgent("x", model=ScriptedModel([]), tools=[add], return_directly={"nope"})
    with pytest.raises(ValueError, match="tool_error"):
        ChatModelAgent("x", model=ScriptedModel([]), tool_error="ignore")  # type: ignore[arg-type]


def test_stream_from_list_model_output_round_trips() -> None:
    # A model double written against the protocol, as users do in their own tests.
    class Two:
        async def generate(self, messages: list[Message], **kw: Any) -> Message:
            return Message.assistant("whole")

        async def stream(self, messages: list[Message], **kw: Any) -> Any:
            return stream_from_list([Message(role="assistant", content="wh"), Message(content="ole")])

    for streaming in (False, True):
        events = collect(Runner(ChatModelAgent("t", model=Two()), streaming=streaming))  # type: ignore[arg-type]
        assert events[0].message_output.get_message().content == "whole"


# --- repeated call ids, construction mistakes, models that are not rillet models -------------


def test_tool_calls_with_repeated_or_empty_ids_keep_every_result() -> None:
    @tool
    async def echo(text: str) -> str:
        """Echoes."""
        return text

    model = ScriptedModel(
        [asks(tool_call("echo", {"text": "A"}, "", 0), tool_call("echo", {"text": "B"}, "", 1)), "ok"]
    )
    list(Runner(ChatModelAgent("a", model=model, tools=[echo])).query("x"))
    assert [m.content for m in model.calls[1].messages if m.role == "tool"] == ["A", "B"]


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


def test_send_event_from_the_runs_loop_turning_on_another_thread_is_direct() -> None:
    """Temporal runs each turn of a workflow's loop on a thread of a pool, and that loop has
    no call_soon_threadsafe: a hook sending an event on a later turn is on the run's loop,
    so the event goes out directly (it raised NotImplementedError before)."""
    from rillet.chatmodel.state import ReactLoop
    from rillet.data.events import AgentEvent
    from support.loops import NoThreadsafeLoop, each_on_its_own_thread

    loop = NoThreadsafeLoop()
    state = ReactLoop(messages=[], remaining=1, iteration=0, streaming=False, model_options={})
    event = AgentEvent(agent_name="a")

    async def host() -> None:
        state.hosted()

    async def send() -> None:
        state.send_event(event)

    try:
        each_on_its_own_thread(lambda: loop.run_until_complete(host()), lambda: loop.run_until_complete(send()))
    finally:
        loop.close()
    assert state.out == [event]
