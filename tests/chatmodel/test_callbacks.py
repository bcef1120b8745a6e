"""ChatModelAgent's ADK-style model and tool callbacks: short-circuit, replace (what the stream
shows, whole and streamed), recover, order (the first non-None wins), sync and async, errors,
and every tool path (the common round, concurrent rounds, inline rounds, streaming tools)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import FunctionCall, Message, ToolCall, concat_message_stream
from rillet.chatmodel import ChatModelAgent, ModelContext, ToolCallContext
from rillet.data.events import AgentEvent
from rillet.errors import MiddlewareError, ToolCallError
from rillet.models import ScriptedModel
from rillet.runner import Runner
from rillet.tools import tool


def call(i: int, name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(index=i, id=f"call_{i}", function=FunctionCall(name, json.dumps(args)))


def asks(*calls: ToolCall) -> Message:
    return Message.assistant("", list(calls))


@tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@tool
def fail(text: str) -> str:
    """Always fails."""
    raise RuntimeError(f"no {text}")


def run(agent: ChatModelAgent, streaming: bool = False) -> list[AgentEvent]:
    return list(Runner(agent, streaming=streaming).query("go"))


def texts(events: list[AgentEvent]) -> list[str]:
    """Each event as role:content, a streamed one read to its end."""
    out = []
    for ev in events:
        if ev.error is not None:
            out.append(f"error:{ev.error}")
            continue
        mv = ev.message_output
        assert mv is not None
        msg = concat_message_stream(mv.message_stream) if mv.is_streaming else mv.message
        assert msg is not None
        calls = ",".join(c.function.name for c in msg.tool_calls)
        out.append(f"{msg.role}:{msg.content}" + (f"[{calls}]" if calls else ""))
    return out


# --- model callbacks --------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True])
def test_before_model_response_replaces_the_call_and_its_tool_calls_run(streaming: bool) -> None:
    model = ScriptedModel(["the model's answer"])

    def cached(ctx: ModelContext) -> Message | None:
        if ctx.iteration == 1:
            return Message.assistant("", [call(0, "add", {"a": 2, "b": 3})])
        return None

    events = run(ChatModelAgent("a", model=model, tools=[add], before_model=cached), streaming)
    assert texts(events) == ["assistant:[add]", "tool:5", "assistant:the model's answer"]
    assert model.call_count == 1  # the first call was never made
    assert all(ev.message_output.is_streaming == streaming for ev in events if ev.message_output.role == "assistant")


def test_before_model_messages_rewrite_and_the_next_callback_runs() -> None:
    model = ScriptedModel(["ok"])
    seen: list[int] = []

    def trim(ctx: ModelContext) -> list[Message]:
        return [m for m in ctx.messages if m.role != "system"]

    def count(ctx: ModelContext) -> None:
        seen.append(len(ctx.messages))

    run(ChatModelAgent("a", instruction="sys", model=model, before_model=[trim, count]))
    assert seen == [1]
    assert [m.role for m in model.calls[0].messages] == ["user"]


@pytest.mark.parametrize("streaming", [False, True])
def test_after_model_replacement_is_what_the_stream_shows_and_the_agent_acts_on(streaming: bool) -> None:
    model = ScriptedModel(["original", "after the tool"])

    async def replace(ctx: ModelContext, reply: Message) -> Message | None:
        if ctx.iteration == 1:
            assert reply.content == "original"  # a streamed reply is whole here
            return Message.assistant("", [call(0, "add", {"a": 1, "b": 1})])
        return None

    agent = ChatModelAgent("a", model=model, tools=[add], after_model=replace, output_key="answer")
    events = run(agent, streaming)
    assert texts(events) == ["assistant:[add]", "tool:2", "assistant:after the tool"]
    assert events[0].message_output.is_streaming == streaming  # the same event shape either way


def test_a_streamed_reply_not_replaced_goes_out_as_the_models_own_chunks() -> None:
    model = ScriptedModel(["several words of an answer"])
    agent = ChatModelAgent("a", model=model, after_model=lambda ctx, reply: None)
    events = run(agent, streaming=True)
    mv = events[0].message_output
    assert mv is not None and mv.is_streaming
    chunks = list(mv.message_stream)
    assert len(chunks) > 1 and "".join(c.content for c in chunks) == "several words of an answer"


class Broken:
    """A model whose calls fail."""

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, messages: list[Message], **kw: Any) -> Message:
        self.calls += 1
        raise ConnectionError("model down")

    async def stream(self, messages: list[Message], **kw: Any) -> Any:
        self.calls += 1
        raise ConnectionError("model down")


@pytest.mark.parametrize("streaming", [False, True])
def test_on_model_error_recovers_with_a_reply(streaming: bool) -> None:
    errors: list[str] = []

    def recover(ctx: ModelContext, error: Exception) -> Message:
        errors.append(str(error))
        return Message.assistant("fallback answer")

    events = run(ChatModelAgent("a", model=Broken(), on_model_error=recover), streaming)
    assert texts(events) == ["assistant:fallback answer"]
    assert errors == ["model down"]


def test_on_model_error_returning_none_lets_the_error_stand() -> None:
    events = run(ChatModelAgent("a", model=Broken(), on_model_error=lambda ctx, e: None))
    assert len(events) == 1 and isinstance(events[0].error, ConnectionError)


def test_callbacks_run_in_order_and_the_first_non_none_wins_sync_and_async() -> None:
    order: list[str] = []

    def first(ctx: ModelContext, reply: Message) -> None:
        order.append("first")

    async def second(ctx: ModelContext, reply: Message) -> Message:
        order.append("second")
        return Message.assistant("from second")

    def third(ctx: ModelContext, reply: Message) -> Message:
        order.append("third")
        return Message.assistant("from third")

    events = run(ChatModelAgent("a", model=ScriptedModel(["x"]), after_model=[first, second, third]))
    assert texts(events) == ["assistant:from second"]
    assert order == ["first", "second"]


def test_a_callback_that_raises_ends_the_run_with_an_error_naming_it() -> None:
    def boom(ctx: ModelContext) -> None:
        raise KeyError("no tenant")

    events = run(ChatModelAgent("a", model=ScriptedModel(["x"]), before_model=boom))
    err = events[-1].error
    assert isinstance(err, MiddlewareError)
    assert "before_model callback" in str(err) and "boom" in str(err) and "no tenant" in str(err)


def test_a_callback_returning_the_wrong_type_is_a_clear_error() -> None:
    events = run(ChatModelAgent("a", model=ScriptedModel(["x"]), after_model=lambda ctx, reply: "text"))  # type: ignore[arg-type,return-value]
    assert isinstance(events[-1].error, MiddlewareError) and "return a rillet.Message" in str(events[-1].error)


def test_a_callback_that_cannot_take_its_arguments_is_refused_when_the_agent_is_made() -> None:
    """Google ADK's signatures (keywords, or the tool first) fail when given, not in the middle
    of a run after a model call was paid for."""

    def adk_before_tool(tool: Any, args: dict[str, Any], tool_context: Any) -> None:
        return None

    with pytest.raises(
        TypeError, match=r"before_tool callback .*adk_before_tool cannot be called as before_tool\(ctx, args\)"
    ):
        ChatModelAgent("a", model=ScriptedModel(["x"]), tools=[add], before_tool=adk_before_tool)
    with pytest.raises(TypeError, match=r"ChatModelAgent 'a': the after_model callback .*<lambda> cannot be called"):
        ChatModelAgent("a", model=ScriptedModel(["x"]), after_model=lambda *, callback_context, llm_response: None)  # type: ignore[misc]
    with pytest.raises(TypeError, match="is not callable"):
        ChatModelAgent("a", model=ScriptedModel(["x"]), on_tool_error=["not a function"])  # type: ignore[list-item]
    ok = ChatModelAgent("a", model=ScriptedModel(["x"]), after_tool=lambda *args: None, before_model=print)
    assert texts(run(ok)) == ["assistant:x"]


def test_callbacks_and_middlewares_together() -> None:
    from rillet import ChatModelAgentMiddleware, ChatModelAgentState

    class Tag(ChatModelAgentMiddleware):
        async def after_model(self, state: ChatModelAgentState, ctx: ModelContext) -> None:
            state.messages[-1] = Message.assistant(state.messages[-1].content + " (tagged)")

    model = ScriptedModel(["raw"])
    agent = ChatModelAgent(
        "a", model=model, after_model=lambda ctx, reply: Message.assistant("replaced"), middlewares=[Tag()]
    )
    events = run(agent)
    assert texts(events) == ["assistant:replaced"]  # the event: the callback's reply, before the middleware's rewrite


# --- tool callbacks ---------------------------------------------------------------------------


def test_before_tool_result_skips_the_tool() -> None:
    ran: list[str] = []

    @tool
    def lookup(key: str) -> str:
        """Looks a key up."""
        ran.append(key)
        return "fresh"

    def cached(ctx: ToolCallContext, args: dict[str, Any]) -> str | None:
        return "cached" if args["key"] == "k1" else None

    model = ScriptedModel([asks(call(0, "lookup", {"key": "k1"})), asks(call(0, "lookup", {"key": "k2"})), "done"])
    events = run(ChatModelAgent("a", model=model, tools=[lookup], before_tool=cached))
    assert texts(events)[1] == "tool:cached" and texts(events)[3] == "tool:fresh"
    assert ran == ["k2"]


def test_after_tool_replaces_the_result_and_json_values_are_encoded() -> None:
    async def wrap(ctx: ToolCallContext, args: dict[str, Any], result: str) -> dict[str, Any]:
        return {"sum": int(result), "args": args}

    model = ScriptedModel([asks(call(0, "add", {"a": 2, "b": 2})), "done"])
    events = run(ChatModelAgent("a", model=model, tools=[add], after_tool=wrap))
    assert json.loads(events[1].message_output.message.content) == {"sum": 4, "args": {"a": 2, "b": 2}}
    assert json.loads(model.calls[1].messages[-1].content)["sum"] == 4  # what the model got


def test_on_tool_error_recovers_and_none_leaves_the_tool_error_policy() -> None:
    def recover(ctx: ToolCallContext, args: dict[str, Any], error: Exception) -> str | None:
        return f"recovered from {error}" if args["text"] == "a" else None

    model = ScriptedModel([asks(call(0, "fail", {"text": "a"})), asks(call(0, "fail", {"text": "b"})), "done"])
    events = run(ChatModelAgent("a", model=model, tools=[fail], on_tool_error=recover))
    assert texts(events)[1] == "tool:recovered from no a"
    assert texts(events)[3] == "tool:Error: no b"  # tool_error="return": the error text goes to the model

    model = ScriptedModel([asks(call(0, "fail", {"text": "b"}))])
    events = run(ChatModelAgent("a", model=model, tools=[fail], on_tool_error=recover, tool_error="raise"))
    assert isinstance(events[-1].error, ToolCallError)


@pytest.mark.parametrize("sequential", [False, True])
def test_tool_callbacks_apply_to_every_call_of_a_round(sequential: bool) -> None:
    seen: list[str] = []

    def before(ctx: ToolCallContext, args: dict[str, Any]) -> str | None:
        seen.append(ctx.call_id)
        return "skipped" if ctx.call_id == "call_1" else None

    model = ScriptedModel([asks(call(0, "add", {"a": 1, "b": 1}), call(1, "add", {"a": 2, "b": 2})), "done"])
    agent = ChatModelAgent("a", model=model, tools=[add], before_tool=before, execute_tools_sequentially=sequential)
    events = run(agent)
    assert sorted(texts(events)[1:3]) == ["tool:2", "tool:skipped"]
    assert sorted(seen) == ["call_0", "call_1"]


@tool
async def count_up(n: int) -> AsyncIterator[str]:
    """Streams the numbers up to n."""
    for i in range(1, n + 1):
        yield str(i)


@pytest.mark.parametrize("streaming", [False, True])
def test_a_streaming_tool_is_read_whole_for_its_callbacks_and_still_streams(streaming: bool) -> None:
    def after(ctx: ToolCallContext, args: dict[str, Any], result: str) -> str:
        return f"{result}!"

    model = ScriptedModel([asks(call(0, "count_up", {"n": 3})), "done"])
    events = run(ChatModelAgent("a", model=model, tools=[count_up], after_tool=after), streaming)
    assert events[1].message_output.is_streaming
    assert texts(events)[1] == "tool:123!"
    assert model.calls[1].messages[-1].content == "123!"


class FailsOnce:
    """Asks for ``add`` first; the second call fails the first time it is made."""

    def __init__(self) -> None:
        self.calls = 0
        self.failed = False

    async def generate(self, messages: list[Message], **kw: Any) -> Message:
        self.calls += 1
        if messages[-1].role == "user":
            return asks(call(0, "add", {"a": 1, "b": 2}))
        if not self.failed:
            self.failed = True
            raise ConnectionError("dropped")
        return Message.assistant("done")

    async def stream(self, messages: list[Message], **kw: Any) -> Any:
        raise NotImplementedError


def test_a_step_runs_replay_uses_the_reply_the_callbacks_decided_without_running_them_again() -> None:
    from rillet import InMemoryCheckpointStore

    seen: list[int] = []

    def stamp(ctx: ModelContext, reply: Message) -> Message:
        seen.append(ctx.iteration)
        return Message.assistant(f"v{len(seen)}", list(reply.tool_calls))

    model = FailsOnce()
    agent = ChatModelAgent("a", model=model, tools=[add], after_model=stamp)
    runner = Runner(agent, checkpoint_store=InMemoryCheckpointStore(), durability="step")
    first = list(runner.query("go", checkpoint_id="run"))
    assert texts(first) == ["assistant:v1[add]", "tool:3", "error:dropped"]
    resumed = list(runner.resume("run"))
    assert texts(resumed) == ["assistant:v1[add]", "tool:3", "assistant:v2"]  # the first reply replayed as recorded
    assert seen == [1, 2] and model.calls == 3  # iteration 1's callback and model call were not made again


def test_observers_are_told_of_the_model_calls_made_not_of_the_short_circuited_ones() -> None:
    from rillet import RunObserver

    class Count(RunObserver):
        def __init__(self) -> None:
            self.starts = self.ends = 0

        def on_model_start(self, run: Any, model: Any, messages: Any) -> None:
            self.starts += 1

        def on_model_end(self, run: Any, model: Any, reply: Any, usage: Any, finish_reason: str) -> None:
            self.ends += 1

    def first_cached(ctx: ModelContext) -> Message | None:
        return asks(call(0, "add", {"a": 1, "b": 1})) if ctx.iteration == 1 else None

    count = Count()
    agent = ChatModelAgent("a", model=ScriptedModel(["two"]), tools=[add], before_model=first_cached)
    list(Runner(agent, observers=[count]).query("go"))
    assert (count.starts, count.ends) == (1, 1)


def test_after_tool_sees_a_result_before_tool_gave_as_in_adk_go() -> None:
    def given(ctx: ToolCallContext, args: dict[str, Any]) -> str:
        return "from before_tool"

    def shout(ctx: ToolCallContext, args: dict[str, Any], result: str) -> str:
        return result.upper()

    model = ScriptedModel([asks(call(0, "add", {"a": 1, "b": 1})), "done"])
    events = run(ChatModelAgent("a", model=model, tools=[add], before_tool=given, after_tool=shout))
    assert texts(events)[1] == "tool:FROM BEFORE_TOOL"


def test_a_replayed_before_model_response_counts_no_model_call_and_runs_no_model_hook() -> None:
    """Replayed, a before_model response is what it was: no model call (the run's
    max_llm_calls, the observers) and no middleware model hook, as in the run that recorded it."""
    from rillet import ChatModelAgentMiddleware, ChatModelAgentState, InMemoryCheckpointStore, RunConfig, RunObserver

    class Tag(ChatModelAgentMiddleware):
        async def after_model(self, state: ChatModelAgentState, ctx: ModelContext) -> None:
            last = state.messages[-1]
            state.messages[-1] = Message.assistant(last.content + "+tag", list(last.tool_calls))

    class Count(RunObserver):
        starts = 0

        def on_model_start(self, run: Any, model: Any, messages: Any) -> None:
            Count.starts += 1

    def first_given(ctx: ModelContext) -> Message | None:
        return asks(call(0, "add", {"a": 1, "b": 2})) if ctx.iteration == 1 else None

    model = FailsOnce()
    agent = ChatModelAgent("a", model=model, tools=[add], before_model=first_given, middlewares=[Tag()])
    runner = Runner(agent, checkpoint_store=InMemoryCheckpointStore(), durability="step", observers=[Count()])
    config = RunConfig(max_llm_calls=1)  # the one model call the run makes
    first = list(runner.query("go", checkpoint_id="run", run_config=config))
    assert texts(first) == ["assistant:[add]", "tool:3", "error:dropped"]
    assert Count.starts == 1
    resumed = list(runner.resume("run", run_config=config))
    assert texts(resumed) == ["assistant:[add]", "tool:3", "assistant:done"]
    assert Count.starts == 2 and model.calls == 2


# --- AgenticMessage runs ----------------------------------------------------------------------


def test_before_model_rewrites_a_block_list_conversation() -> None:
    """The list form of before_model in an AgenticMessage run: it was refused ("a list of
    Message") though the conversation it rewrites is a list of AgenticMessage."""
    from rillet import AgenticMessage

    def brief(ctx: ModelContext) -> list[AgenticMessage]:
        return [*ctx.messages, AgenticMessage.user("be brief")]  # type: ignore[list-item]

    model = ScriptedModel([AgenticMessage.assistant("ok")])
    agent = ChatModelAgent("a", model=model, before_model=brief)
    events = list(Runner(agent).run([AgenticMessage.user("go")]))
    assert [e.error for e in events] == [None]
    assert [m.content for m in model.calls[0].messages] == ["go", "be brief"]
    mixed = ChatModelAgent(
        "b", model=ScriptedModel(["x"]), before_model=lambda ctx: [Message.user("a"), AgenticMessage.user("b")]
    )
    [ev] = list(Runner(mixed).query("go"))
    assert "a list of Message (or of AgenticMessage)" in str(ev.error)


def test_callbacks_typed_for_agentic_message_type_check(tmp_path: Any) -> None:
    """A user's callbacks typed for AgenticMessage (as a block-list run calls them) pass
    ``mypy --strict``: ChatModelAgent's keywords took Message-typed callbacks only."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("mypy", reason="mypy is not installed")
    code = """
from rillet import AgenticMessage, ChatModelAgent, Message, ModelContext, ScriptedModel


def cached(ctx: ModelContext) -> AgenticMessage | None:
    return None


def rewrite(ctx: ModelContext) -> list[AgenticMessage] | None:
    return None


async def sign(ctx: ModelContext, reply: AgenticMessage) -> AgenticMessage | None:
    return None


def sign_any(ctx: ModelContext, reply: Message | AgenticMessage) -> Message | AgenticMessage | None:
    return None


def old(ctx: ModelContext, reply: Message) -> Message | None:
    return None


def recover(ctx: ModelContext, error: Exception) -> AgenticMessage | None:
    return None


ChatModelAgent(
    "a",
    model=ScriptedModel(["x"]),
    before_model=[cached, rewrite],
    after_model=[sign, sign_any, old],
    on_model_error=recover,
)
"""
    (tmp_path / "user.py").write_text(code, encoding="utf-8")
    python = str(Path(__file__).resolve().parents[2] / "python")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-color-output", "--cache-dir", str(tmp_path / "c"), "user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "MYPYPATH": python},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("streaming", [False, True])
def test_a_callbacks_message_joins_a_block_list_run_as_a_block_list(streaming: bool) -> None:
    """A before_model/after_model/on_model_error Message in an AgenticMessage run (an ADK user's
    callback written for Message) went out and joined the conversation as a Message: one run,
    two message types, a model then sent both."""
    from rillet import AgenticMessage

    def cached(ctx: ModelContext) -> Message | None:
        return asks(call(0, "add", {"a": 1, "b": 2})) if ctx.iteration == 1 else None

    def signed(ctx: ModelContext, reply: Message | AgenticMessage) -> Message:
        return Message.assistant(reply.content + " -- signed")

    model = ScriptedModel([AgenticMessage.assistant("3")])
    agent = ChatModelAgent("a", model=model, tools=[add], before_model=cached, after_model=signed)
    events = list(Runner(agent, streaming=streaming).run([AgenticMessage.user("go")]))
    kinds = []
    for ev in events:
        assert ev.message_output is not None, ev.error
        kinds.append(type(ev.message_output.get_message()).__name__)
    assert kinds == ["AgenticMessage"] * 3
    assert {type(m).__name__ for m in model.calls[0].messages} == {"AgenticMessage"}
    assert events[-1].message_output is not None
    assert events[-1].message_output.get_message().content == "3 -- signed"


@pytest.mark.parametrize("streams", [False, True])
def test_before_tool_editing_the_arguments_in_place_changes_what_the_tool_gets(streams: bool) -> None:
    """Google ADK (Python and Go) lets before_tool edit the arguments dict in place, and the
    tool runs with the edited ones; here the edit was silently dropped (the tool got the
    model's JSON). after_tool and on_tool_error see the edited arguments too."""

    def clamp(ctx: ToolCallContext, args: dict[str, Any]) -> None:
        args["n"] = min(args["n"], 2)

    seen: list[Any] = []

    def after(ctx: ToolCallContext, args: dict[str, Any], result: str) -> None:
        seen.append((ctx.arguments, args))

    given: dict[str, Any] = {"n": 5} if streams else {"n": 5, "a": 1, "b": 5}
    model = ScriptedModel([asks(call(0, "count_up" if streams else "add", given)), "done"])

    @tool
    def add(a: int, b: int, n: int) -> int:
        """Adds."""
        return n

    tools = [count_up] if streams else [add]
    events = run(ChatModelAgent("a", model=model, tools=tools, before_tool=clamp, after_tool=after), streaming=True)
    assert texts(events)[1] == ("tool:12" if streams else "tool:2")
    edited = {**given, "n": 2}
    assert seen == [(json.dumps(edited), edited)]


@pytest.mark.parametrize("streaming", [False, True])
def test_after_model_editing_the_reply_in_place_is_what_the_stream_shows(streaming: bool) -> None:
    """Google ADK's after_model may edit the response in place and return None. Streamed, the
    event went out as the model's own chunks (the secret) while the agent acted on, and stored
    under output_key, the edited reply."""

    def redact(ctx: ModelContext, reply: Message) -> None:
        reply.content = reply.content.replace("secret", "[redacted]")

    agent = ChatModelAgent("a", model=ScriptedModel(["the secret is 42"]), after_model=redact, output_key="out")
    events = run(agent, streaming)
    assert texts(events) == ["assistant:the [redacted] is 42"]
    assert events[-1].action is not None and events[-1].action.state_delta == {"out": "the [redacted] is 42"}


def test_before_model_editing_the_tools_changes_that_call_not_the_agent() -> None:
    """A before_model callback that edited ``ctx.tools`` in place (no refund tool for a guest)
    edited the agent's own tool list: every later run, a non-guest's too, lost the tool."""
    from rillet import get_session_value

    @tool
    def refund(order: str) -> str:
        """Refunds an order."""
        return "ok"

    def no_refunds_for_guests(ctx: ModelContext) -> None:
        if get_session_value("guest"):
            ctx.tools[:] = [t for t in ctx.tools if t.name != "refund"]

    model = ScriptedModel(["a", "b"])
    agent = ChatModelAgent("a", model=model, tools=[add, refund], before_model=no_refunds_for_guests)
    list(Runner(agent).query("q", session_values={"guest": True}))
    list(Runner(agent).query("q", session_values={"guest": False}))
    assert [[t.name for t in c.tools] for c in model.calls] == [["add"], ["add", "refund"]]


def test_callbacks_read_and_write_the_session_through_ctx_state() -> None:
    """Google ADK's ``tool_context.state`` / ``callback_context.state``: the run's session values."""
    from rillet import get_session_value

    seen: list[Any] = []

    def counting(ctx: ToolCallContext, args: dict[str, Any]) -> None:
        ctx.state["calls"] = ctx.state.get("calls", 0) + 1
        seen.append(("user" in ctx.state, ctx.state["user"]))
        assert dict(ctx.state)["user"] == "ann" and "user" in list(ctx.state) and len(ctx.state) >= 1

    def tell(ctx: ModelContext) -> None:
        seen.append(ctx.state.get("calls"))

    def after(ctx: ModelContext, reply: Message) -> None:
        seen.append(get_session_value("calls"))

    model = ScriptedModel([asks(call(0, "add", {"a": 1, "b": 2}), call(1, "add", {"a": 3, "b": 4})), "done"])
    agent = ChatModelAgent("a", model=model, tools=[add], before_tool=counting, before_model=tell, after_model=after)
    events = list(Runner(agent).query("go", session_values={"user": "ann"}))
    assert texts(events)[-1] == "assistant:done"
    assert seen[:2] == [None, None] and seen[-2:] == [2, 2]
    assert seen[2:4] == [(True, "ann"), (True, "ann")]
    ctx = ToolCallContext("a", "add", "c", "{}")
    assert "calls" not in ctx.state and ctx.state.get("calls", 7) == 7 and ctx.state.to_dict() == {}
    with pytest.raises(RuntimeError, match="outside a run"):
        ctx.state["x"] = 1
