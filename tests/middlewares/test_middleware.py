"""ChatModelAgent middlewares: hook and wrap order, state rewrites that persist (into the next
model call and through a checkpoint), after_agent on success only, send_event and run-local
values, and the three shipped middlewares."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentOutput,
    ChatModelAgent,
    ChatModelAgentContext,
    ChatModelAgentMiddleware,
    ChatModelAgentState,
    FunctionCall,
    Message,
    MiddlewareError,
    ModelContext,
    Runner,
    RunStep,
    ScriptedModel,
    SequentialAgent,
    SqliteCheckpointStore,
    StreamReader,
    ToolCall,
    ToolCallContext,
    ToolInfo,
    get_run_local_value,
    send_event,
    set_run_local_value,
    stateful_interrupt,
    tool,
)
from rillet.chatmodel.middleware import ToolEndpoint
from rillet.middlewares import PatchToolCalls, Summarization, ToolResultReduction
from rillet.models.base import ChatModel
from rillet.run.interrupts import get_interrupt_state, get_resume_context


def call(name: str, args: dict[str, Any], id: str, i: int = 0) -> ToolCall:
    return ToolCall(index=i, id=id, function=FunctionCall(name, json.dumps(args)))


def asks(*calls: ToolCall, content: str = "") -> Message:
    return Message.assistant(content, list(calls))


@tool
async def echo(text: str) -> str:
    """Echoes text."""
    return text


def texts(events: list[AgentEvent]) -> list[str]:
    out = []
    for ev in events:
        mv = ev.message_output
        if ev.error is not None:
            out.append(f"error:{ev.error}")
        elif mv is not None:
            out.append(f"{mv.role}:{mv.get_message().content}")
        elif ev.output is not None:
            out.append(f"custom:{ev.output.customized_output}")
        elif ev.action is not None and ev.action.interrupted is not None:
            out.append("interrupt")
    return out


# --- order ------------------------------------------------------------------------------------


class _Logged:
    """A model that logs its calls, wrapped around another."""

    def __init__(self, log: list[str], tag: str, inner: ChatModel) -> None:
        self.log, self.tag, self.inner = log, tag, inner

    async def generate(self, messages: list[Message], *, tools: Sequence[ToolInfo] | None = None, **kw: Any) -> Message:
        self.log.append(f"{self.tag}:model>")
        reply = await self.inner.generate(messages, tools=tools, **kw)
        self.log.append(f"{self.tag}:model<")
        return reply

    async def stream(
        self, messages: list[Message], *, tools: Sequence[ToolInfo] | None = None, **kw: Any
    ) -> StreamReader[Message]:
        return await self.inner.stream(messages, tools=tools, **kw)


class Tracer(ChatModelAgentMiddleware):
    """Logs every hook, with its tag."""

    def __init__(self, tag: str, log: list[str]) -> None:
        self.tag, self.log = tag, log

    async def before_agent(self, ctx: ChatModelAgentContext) -> ChatModelAgentContext | None:
        self.log.append(f"{self.tag}:before_agent")
        return None

    async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        self.log.append(f"{self.tag}:before_model:{ctx.iteration}")
        return None

    def wrap_model(self, model: ChatModel, ctx: ModelContext) -> ChatModel:
        return _Logged(self.log, self.tag, model)

    async def after_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        self.log.append(f"{self.tag}:after_model:{ctx.iteration}")
        return None

    async def wrap_tool_call(self, ctx: ToolCallContext, call: ToolEndpoint) -> str:
        self.log.append(f"{self.tag}:tool>")
        result = await call(ctx.arguments)
        self.log.append(f"{self.tag}:tool<")
        return f"{self.tag}({result})"

    async def after_agent(self, state: ChatModelAgentState) -> None:
        self.log.append(f"{self.tag}:after_agent:{state.messages[-1].content}")


def test_two_middlewares_run_in_registration_order_and_the_first_wraps_outermost() -> None:
    log: list[str] = []
    model = ScriptedModel([asks(call("echo", {"text": "x"}, "c1")), "done"])
    agent = ChatModelAgent("a", model=model, tools=[echo], middlewares=[Tracer("A", log), Tracer("B", log)])
    events = list(Runner(agent).query("go"))
    assert log == [
        "A:before_agent", "B:before_agent",
        "A:before_model:1", "B:before_model:1", "A:model>", "B:model>", "B:model<", "A:model<",
        "A:after_model:1", "B:after_model:1",
        "A:tool>", "B:tool>", "B:tool<", "A:tool<",
        "A:before_model:2", "B:before_model:2", "A:model>", "B:model>", "B:model<", "A:model<",
        "A:after_model:2", "B:after_model:2",
        "A:after_agent:done", "B:after_agent:done",
    ]  # fmt: skip
    assert texts(events) == ["assistant:", "tool:A(B(x))", "assistant:done"]
    assert model.calls[1].messages[-1].content == "A(B(x))"


def test_callback_keywords_are_middlewares_that_run_before_the_middlewares_argument() -> None:
    log: list[str] = []

    def before(ctx: ModelContext) -> None:
        log.append(f"callback:before_model:{ctx.iteration}")

    async def wrap(ctx: ToolCallContext, nxt: Any) -> str:
        log.append("callback:tool>")
        return str(await nxt(ctx.arguments))

    model = ScriptedModel([asks(call("echo", {"text": "x"}, "c1")), "done"])
    agent = ChatModelAgent(
        "a",
        model=model,
        tools=[echo],
        before_model=before,
        wrap_tool_call=wrap,
        after_agent=lambda messages: log.append(f"callback:after_agent:{len(messages)}"),
        middlewares=[Tracer("M", log)],
    )
    list(Runner(agent).query("go"))
    assert [entry for entry in log if "model>" not in entry and "model<" not in entry] == [
        "M:before_agent",
        "callback:before_model:1", "M:before_model:1", "M:after_model:1",
        "callback:tool>", "M:tool>", "M:tool<",
        "callback:before_model:2", "M:before_model:2", "M:after_model:2",
        "callback:after_agent:4", "M:after_agent:done",
    ]  # fmt: skip


def test_callbacks_and_middlewares_added_after_the_agent_is_made_run_on_its_next_run() -> None:
    log: list[str] = []
    agent = ChatModelAgent("a", model=ScriptedModel(["one", "two"]))
    list(Runner(agent).query("go"))
    agent.after_agent.append(lambda messages: log.append(f"callback:after_agent:{len(messages)}"))
    agent.middlewares.append(Tracer("M", log))
    list(Runner(agent).query("go"))
    assert "callback:after_agent:2" in log and "M:after_agent:two" in log


def test_a_middleware_that_is_not_an_instance_is_refused() -> None:
    with pytest.raises(TypeError, match="middlewares must be ChatModelAgentMiddleware instances, got the class"):
        ChatModelAgent("a", model=ScriptedModel(["x"]), middlewares=[Tracer])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="got function"):
        ChatModelAgent("a", model=ScriptedModel(["x"]), middlewares=[lambda s: s])  # type: ignore[list-item]


# --- state rewrites that persist -----------------------------------------------------------------

approvals: list[str] = []


@tool
def pay(amount: int) -> str:
    """Pays after a person approves."""
    was, _, state = get_interrupt_state()
    if not was:
        raise stateful_interrupt({"question": f"pay {amount}?"}, {"amount": amount})
    _, _, answer = get_resume_context()
    approvals.append(str(answer))
    return f"paid {state['amount']}"


class Redact(ChatModelAgentMiddleware):
    """Before the first model call only: the card number in the user's message is masked.
    That later calls see it masked proves the rewrite was kept."""

    async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        if ctx.iteration == 1:
            masked = [
                Message.user(m.content.replace("4111", "****")) if m.role == "user" else m for m in state.messages
            ]
            set_run_local_value("redacted", get_run_local_value("redacted", 0) + 1)
            return ChatModelAgentState(masked, state.tools)
        return None


class Stamp(ChatModelAgentMiddleware):
    """After each model call: the reply is stamped with the call's number (in place)."""

    async def after_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        last = state.messages[-1]
        state.messages[-1] = Message.assistant(f"{last.content}#{ctx.iteration}", list(last.tool_calls or []))
        return None

    async def after_agent(self, state: ChatModelAgentState) -> None:
        send_event(AgentEvent("", (), AgentOutput(None, {"redacted": get_run_local_value("redacted")})))


def payer(*replies: Any) -> ChatModelAgent:
    model = ScriptedModel(list(replies))
    return ChatModelAgent("payer", model=model, tools=[pay], middlewares=[Redact(), Stamp()])


def test_two_middlewares_rewrite_the_state_and_the_next_model_call_sees_both_rewrites() -> None:
    model = ScriptedModel([asks(call("echo", {"text": "ok"}, "c1"), content="checking"), "done"])
    agent = ChatModelAgent("a", model=model, tools=[echo], middlewares=[Redact(), Stamp()])
    events = list(Runner(agent).query("card 4111 please"))
    first, second = (c.messages for c in model.calls)
    assert [m.content for m in first] == ["card **** please"]
    assert [m.content for m in second] == ["card **** please", "checking#1", "ok"]
    assert second[1].tool_calls[0].id == "c1"  # the stamped reply kept its tool call
    # the events show what the model said; after_agent's event comes last
    assert texts(events) == ["assistant:checking", "tool:ok", "assistant:done", "custom:{'redacted': 1}"]


def test_the_rewritten_state_and_run_local_values_survive_an_interrupt_and_resume_from_sqlite(
    tmp_path: Path,
) -> None:
    approvals.clear()
    db = tmp_path / "cp.db"
    first = Runner(
        payer(asks(call("pay", {"amount": 5}, "p1"), content="paying")), checkpoint_store=SqliteCheckpointStore(db)
    )
    events = list(first.query("card 4111: pay 5", checkpoint_id="job"))
    assert texts(events) == ["assistant:paying", "interrupt"]
    (ctx,) = events[-1].action.interrupted.interrupt_contexts

    agent = payer("paid")  # a fresh agent and store, as another process would have
    second = Runner(agent, checkpoint_store=SqliteCheckpointStore(db))
    resumed = list(second.resume("job", targets={ctx.id: "yes"}))
    assert approvals == ["yes"]
    assert texts(resumed) == ["tool:paid 5", "assistant:paid", "custom:{'redacted': 1}"]
    (after,) = agent.model.calls  # type: ignore[attr-defined]  # the resumed run's only model call
    assert [m.content for m in after.messages] == ["card ****: pay 5", "paying#1", "paid 5"]
    assert all(ev.agent_name == "payer" for ev in resumed)


# --- before_agent, wrap_model, after_agent ------------------------------------------------------


@tool
def lookup(what: str) -> str:
    """Looks something up."""
    return f"found {what}"


class Reconfigure(ChatModelAgentMiddleware):
    async def before_agent(self, ctx: ChatModelAgentContext) -> ChatModelAgentContext | None:
        ctx.instruction += " Use lookup."
        ctx.tools.append(lookup)
        ctx.return_directly.add("lookup")
        return ctx


def test_before_agent_changes_this_runs_instruction_tools_and_return_directly_only() -> None:
    model = ScriptedModel([asks(call("lookup", {"what": "keys"}, "l1")), "never"])
    agent = ChatModelAgent("a", instruction="Be brief.", model=model, tools=[echo], middlewares=[Reconfigure()])
    events = list(Runner(agent).query("where?"))
    assert texts(events) == ["assistant:", "tool:found keys"]  # lookup returned directly
    assert model.calls[0].messages[0].content == "Be brief. Use lookup."
    assert [t.name for t in model.calls[0].tools] == ["echo", "lookup"]
    assert agent.instruction == "Be brief." and [t.info.name for t in agent.tools] == ["echo"]
    assert agent.return_directly == set()


def test_a_before_agent_hook_naming_an_unknown_return_directly_tool_fails_the_run_clearly() -> None:
    class Bad(ChatModelAgentMiddleware):
        async def before_agent(self, ctx: ChatModelAgentContext) -> ChatModelAgentContext | None:
            ctx.return_directly.add("nope")
            return None

    events = list(Runner(ChatModelAgent("a", model=ScriptedModel(["x"]), middlewares=[Bad()])).query("go"))
    assert len(events) == 1 and "return_directly names tools it does not have: ['nope']" in str(events[0].error)


class Shout(ChatModelAgentMiddleware):
    """Wraps the model: this call's input is upper-cased (not kept in the state)."""

    seen: list[str]

    def wrap_model(self, model: ChatModel, ctx: ModelContext) -> ChatModel:
        outer = self

        class Upper:
            async def generate(
                self, messages: list[Message], *, tools: Sequence[ToolInfo] | None = None, **kw: Any
            ) -> Message:
                outer.seen = [m.content for m in messages]
                return await model.generate([Message.user(m.content.upper()) for m in messages], tools=tools, **kw)

            async def stream(
                self, messages: list[Message], *, tools: Sequence[ToolInfo] | None = None, **kw: Any
            ) -> StreamReader[Message]:
                return await model.stream(messages, tools=tools, **kw)

        return Upper()


def test_wrap_model_changes_one_call_and_the_state_keeps_what_it_was() -> None:
    model = ScriptedModel([asks(call("echo", {"text": "x"}, "c1")), "done"])
    shout = Shout()
    list(Runner(ChatModelAgent("a", model=model, tools=[echo], middlewares=[shout])).query("hi"))
    assert model.calls[0].messages[0].content == "HI"
    assert shout.seen[0] == "hi"  # the state the second call was built from still says "hi"


def test_after_agent_runs_on_success_only() -> None:
    log: list[str] = []
    failing = ScriptedModel([asks(call("echo", {"text": "x"}, "c1"))] * 3)
    agent = ChatModelAgent(
        "a",
        model=failing,
        tools=[echo],
        max_iterations=2,
        after_agent=lambda messages: log.append("callback"),
        middlewares=[Tracer("M", log)],
    )
    events = list(Runner(agent).query("go"))
    assert "exceeds max iterations" in str(events[-1].error)
    assert not [entry for entry in log if "after_agent" in entry or entry == "callback"]

    class Boom(ChatModelAgentMiddleware):
        async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
            raise RuntimeError("boom")

    log.clear()
    agent = ChatModelAgent("b", model=ScriptedModel(["x"]), middlewares=[Tracer("M", log), Boom()])
    events = list(Runner(agent).query("go"))
    assert texts(events) == ["error:ChatModelAgent 'b': middleware Boom.before_model failed: RuntimeError: boom"]
    assert log == ["M:before_agent", "M:before_model:1"]


# --- send_event and run-local values -------------------------------------------------------------


def note(text: str) -> AgentEvent:
    return AgentEvent("", (), AgentOutput(None, text))


@tool
def slow_sync(text: str) -> str:
    """A sync tool (a worker thread) that reports progress."""
    send_event(note(f"sync:{text}"))
    set_run_local_value("last", text)
    return text


@tool
async def reporting(text: str) -> str:
    """An async tool that reports progress."""
    send_event(note(f"async:{text}:{get_run_local_value('last')}"))
    return text


class Announce(ChatModelAgentMiddleware):
    async def before_agent(self, ctx: ChatModelAgentContext) -> ChatModelAgentContext | None:
        send_event(note("start"))
        return None

    async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        send_event(note(f"model {ctx.iteration}"))
        return None


@pytest.mark.parametrize("sequential", [True, False])
def test_send_event_from_hooks_and_tools_arrives_in_order_with_the_agents_author_and_run_path(
    sequential: bool,
) -> None:
    model = ScriptedModel(
        [
            asks(call("slow_sync", {"text": "a"}, "s1")),
            asks(call("slow_sync", {"text": "b"}, "s2"), call("reporting", {"text": "c"}, "r1", 1)),
            "done",
        ]
    )
    worker = ChatModelAgent(
        "worker",
        model=model,
        tools=[slow_sync, reporting],
        execute_tools_sequentially=sequential,
        middlewares=[Announce()],
    )
    events = list(Runner(SequentialAgent("team", description="runs the worker", sub_agents=[worker])).query("go"))
    got = texts(events)
    assert got[:5] == ["custom:start", "custom:model 1", "assistant:", "custom:sync:a", "tool:a"]
    assert got[5:7] == ["custom:model 2", "assistant:"]
    round_two = got[7:11]
    if sequential:
        assert round_two == ["custom:sync:b", "tool:b", "custom:async:c:b", "tool:c"]
    else:  # at once: each call's progress comes before its result; "last" is a or b by timing
        (progress,) = [e for e in round_two if e.startswith("custom:async:c:")]
        assert sorted(round_two) == sorted(["custom:sync:b", "tool:b", progress, "tool:c"])
        assert round_two.index("custom:sync:b") < round_two.index("tool:b")
        assert round_two.index(progress) < round_two.index("tool:c")
    assert got[11:] == ["custom:model 3", "assistant:done"]
    assert {ev.agent_name for ev in events} == {"worker"}
    assert {tuple(ev.run_path) for ev in events} == {(RunStep("team"), RunStep("worker"))}


def test_send_event_and_run_local_values_outside_a_run_say_where_to_call_them() -> None:
    with pytest.raises(RuntimeError, match=r"send_event\(\) was called outside a ChatModelAgent run"):
        send_event(note("x"))
    with pytest.raises(RuntimeError, match="outside a ChatModelAgent run"):
        get_run_local_value("x")


def test_a_run_local_value_the_codec_cannot_save_is_refused_when_it_is_set() -> None:
    class Opaque:
        pass

    class Keeps(ChatModelAgentMiddleware):
        async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
            set_run_local_value("thing", Opaque())
            return None

    events = list(Runner(ChatModelAgent("a", model=ScriptedModel(["x"]), middlewares=[Keeps()])).query("go"))
    assert "set_run_local_value('thing', ...): the value (Opaque) cannot be saved" in str(events[0].error)
    assert "register_type" in str(events[0].error)


def test_run_local_values_belong_to_one_run() -> None:
    seen: list[Any] = []

    class Count(ChatModelAgentMiddleware):
        async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
            seen.append(get_run_local_value("n"))
            set_run_local_value("n", ctx.iteration)
            return None

    runner = Runner(ChatModelAgent("a", model=ScriptedModel(["x", "y"]), middlewares=[Count()]))
    list(runner.query("one"))
    list(runner.query("two"))
    assert seen == [None, None]


# --- the shipped middlewares ---------------------------------------------------------------------


def test_patch_tool_calls_answers_dangling_calls_before_the_model_is_called() -> None:
    model = ScriptedModel(["ok"])
    history = [
        Message.user("find two things"),
        asks(call("lookup", {"what": "a"}, "d1"), call("lookup", {"what": "b"}, "d2", 1)),
        Message.tool_message("found b", "d2", "lookup"),
        Message.user("never mind"),
    ]
    agent = ChatModelAgent("a", model=model, tools=[lookup], middlewares=[PatchToolCalls()])
    assert texts(list(Runner(agent).run(history))) == ["assistant:ok"]
    sent = model.calls[0].messages
    assert [(m.role, m.tool_call_id, m.content) for m in sent[1:4]] == [
        ("assistant", "", ""),
        ("tool", "d1", "Tool call lookup (id d1) has no result: it was cancelled before it finished."),
        ("tool", "d2", "found b"),
    ]
    assert sent[2].tool_name == "lookup" and len(sent) == 5

    custom = ScriptedModel(["ok"])
    patch = PatchToolCalls(lambda name, call_id: f"{name}/{call_id} skipped")
    list(Runner(ChatModelAgent("a", model=custom, tools=[lookup], middlewares=[patch])).run(history))
    assert custom.calls[0].messages[2].content == "lookup/d1 skipped"
    with pytest.raises(TypeError, match="PatchToolCalls"):
        PatchToolCalls(3)  # type: ignore[arg-type]


@tool
def big(n: int) -> str:
    """A large result."""
    return "x" * n


def test_tool_result_reduction_cuts_long_results_and_clears_old_rounds_past_the_trigger() -> None:
    model = ScriptedModel(
        [
            asks(call("big", {"n": 50}, "b1")),
            asks(call("big", {"n": 8}, "b2")),
            asks(call("lookup", {"what": "z"}, "l1")),
            "done",
        ]
    )
    reduction = ToolResultReduction(max_length=10, max_tokens=30, keep_rounds=1, exclude={"lookup"})
    agent = ChatModelAgent("a", model=model, tools=[big, lookup], middlewares=[reduction])
    events = list(Runner(agent).query("go"))
    assert texts(events)[1] == "tool:xxxxxxxxxx\n[... 40 more characters cut]"
    second = [m.content for m in model.calls[1].messages if m.role == "tool"]
    assert second == ["xxxxxxxxxx\n[... 40 more characters cut]"]  # under the trigger: kept
    fourth = [m.content for m in model.calls[3].messages if m.role == "tool"]
    assert fourth == [reduction.cleared, reduction.cleared, "found z"]  # the last round is kept
    with pytest.raises(ValueError, match="max_length"):
        ToolResultReduction(max_length=0)
    with pytest.raises(TypeError, match="exclude"):
        ToolResultReduction(exclude="lookup")


def test_summarization_replaces_the_older_messages_past_the_token_trigger() -> None:
    given: list[list[str]] = []

    def summarize(messages: list[Message]) -> str:
        given.append([m.content for m in messages])
        return f"{len(messages)} messages"

    def counter(m: Message) -> int:
        return 10

    model = ScriptedModel(
        [asks(call("echo", {"text": "one"}, "e1")), asks(call("echo", {"text": "two"}, "e2")), "done"]
    )
    summary = Summarization(summarize, max_tokens=45, keep_messages=2, counter=counter)
    agent = ChatModelAgent("a", instruction="sys", model=model, tools=[echo], middlewares=[summary])
    events = list(Runner(agent).query("start"))
    assert texts(events)[-1] == "assistant:done"
    # call 3 had 6 messages (60 > 45): the tail starts at the call "two", not at its result
    assert given == [["start", "", "one"]]
    third = model.calls[2].messages
    assert [(m.role, m.content) for m in third] == [
        ("system", "sys"),
        ("system", "Summary of the earlier conversation:\n3 messages"),
        ("assistant", ""),
        ("tool", "two"),
    ]
    with pytest.raises(TypeError, match="summarizer"):
        Summarization(42)
    with pytest.raises(ValueError, match="max_tokens"):
        Summarization(summarize, max_tokens=0)


def test_summarization_can_use_an_agent_as_the_summariser() -> None:
    writer = ChatModelAgent("writer", model=ScriptedModel(["they talked", "they talked more"]))
    model = ScriptedModel([asks(call("echo", {"text": "one"}, "e1")), "done"])
    agent = ChatModelAgent(
        "a", model=model, tools=[echo], middlewares=[Summarization(writer, max_tokens=1, keep_messages=0)]
    )
    events = list(Runner(agent).query("start"))
    assert texts(events) == ["assistant:", "tool:one", "assistant:done"]  # the writer's events stay its own
    # keep_messages=0: each call gets only the summary (of the summary and what came after)
    assert [m.content for m in model.calls[0].messages] == ["Summary of the earlier conversation:\nthey talked"]
    assert [m.content for m in model.calls[1].messages] == ["Summary of the earlier conversation:\nthey talked more"]
    assert "Summary of the earlier conversation:\nthey talked" in writer.model.calls[1].messages[0].content  # type: ignore[attr-defined]


def test_in_a_streaming_run_after_model_sees_the_whole_reply_and_sent_events_keep_their_place() -> None:
    model = ScriptedModel([asks(call("echo", {"text": "x"}, "c1"), content="let me see"), "all done"], chunk_size=3)

    class Report(ChatModelAgentMiddleware):
        async def after_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
            send_event(note(f"heard {state.messages[-1].content!r}"))
            return None

    agent = ChatModelAgent("s", model=model, tools=[echo], middlewares=[Report(), Stamp()])
    events = list(Runner(agent, streaming=True).query("go"))
    assert [ev.message_output is not None and ev.message_output.is_streaming for ev in events] == [
        True, False, False, True, False, False,
    ]  # fmt: skip
    assert texts(events) == [
        "assistant:let me see", "custom:heard 'let me see'", "tool:x",
        "assistant:all done", "custom:heard 'all done'", "custom:{'redacted': None}",
    ]  # fmt: skip
    assert model.calls[1].messages[1].content == "let me see#1"


def test_before_agent_runs_again_when_a_run_resumes_without_the_input(tmp_path: Path) -> None:
    seen: list[str] = []

    class Note(ChatModelAgentMiddleware):
        async def before_agent(self, ctx: ChatModelAgentContext) -> ChatModelAgentContext | None:
            seen.append("new run" if ctx.input is not None else "resumed")
            return None

    store = SqliteCheckpointStore(tmp_path / "cp.db")
    replies = [asks(call("pay", {"amount": 1}, "p1")), "ok"]
    agent = ChatModelAgent("payer", model=ScriptedModel(replies), tools=[pay], middlewares=[Note()])
    runner = Runner(agent, checkpoint_store=store)
    (intr,) = [e for e in runner.query("pay", checkpoint_id="n") if e.action is not None]
    list(runner.resume("n", targets={intr.action.interrupted.interrupt_contexts[0].id: "yes"}))
    assert seen == ["new run", "resumed"]


# --- hooks that fail or return what they may not ------------------------------------------------


class Raises(ChatModelAgentMiddleware):
    def __init__(self, hook: str) -> None:
        self.hook = hook

    async def before_agent(self, ctx: ChatModelAgentContext) -> ChatModelAgentContext | None:
        return self._maybe("before_agent")

    async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        return self._maybe("before_model")

    async def after_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        return self._maybe("after_model")

    def wrap_model(self, model: ChatModel, ctx: ModelContext) -> ChatModel:
        self._maybe("wrap_model")
        return model

    async def after_agent(self, state: ChatModelAgentState) -> None:
        self._maybe("after_agent")

    def _maybe(self, hook: str) -> None:
        if hook == self.hook:
            raise RuntimeError("boom")


@pytest.mark.parametrize("hook", ["before_agent", "before_model", "after_model", "wrap_model", "after_agent"])
def test_a_hook_that_raises_ends_the_run_with_an_error_naming_the_middleware_and_hook(hook: str) -> None:
    agent = ChatModelAgent("a", model=ScriptedModel(["x"]), middlewares=[Raises(hook)])
    errors = [ev.error for ev in Runner(agent).query("go") if ev.error is not None]
    assert [str(e) for e in errors] == [f"ChatModelAgent 'a': middleware Raises.{hook} failed: RuntimeError: boom"]
    assert isinstance(errors[0], MiddlewareError)


class Junk(ChatModelAgentMiddleware):
    def __init__(self, what: str) -> None:
        self.what = what

    async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> Any:
        if self.what == "returns":
            return "junk"
        if self.what == "messages":
            state.messages = [Message.user("ok"), "not a message"]  # type: ignore[list-item]
        return None

    def wrap_model(self, model: ChatModel, ctx: ModelContext) -> Any:
        return "no model" if self.what == "model" else model

    async def wrap_tool_call(self, ctx: ToolCallContext, call: ToolEndpoint) -> Any:
        return 42 if self.what == "tool" else await call(ctx.arguments)


@pytest.mark.parametrize(
    ("what", "said"),
    [
        ("returns", "Junk.before_model failed: TypeError: it returned str; return None or a ChatModelAgentState"),
        ("messages", "Junk.before_model failed: TypeError: it left a str in the state's messages"),
        ("model", "Junk.wrap_model failed: TypeError: it returned str; return a ChatModel"),
    ],
)
def test_a_hook_returning_the_wrong_thing_is_an_error_naming_it(what: str, said: str) -> None:
    agent = ChatModelAgent("a", model=ScriptedModel(["x"]), middlewares=[Junk(what)])
    (ev,) = list(Runner(agent).query("go"))
    assert said in str(ev.error)


def test_a_tool_wrapper_returning_a_non_str_is_a_tool_error_naming_it() -> None:
    model = ScriptedModel([asks(call("echo", {"text": "x"}, "c1")), "done"])
    agent = ChatModelAgent("a", model=model, tools=[echo], middlewares=[Junk("tool")])
    assert texts(list(Runner(agent).query("go")))[1] == (
        "tool:Error: ChatModelAgent 'a': middleware Junk.wrap_tool_call failed: TypeError: it returned int; "
        "return the str result"
    )


def test_a_before_model_hook_editing_the_tools_in_place_edits_its_run_not_the_agent() -> None:
    """A middleware's before_model editing ``state.tools`` in place (no second tool for a
    guest) edited the agent's own tool list: every later run, another user's too, lost it.
    Within the run the edit is kept for later calls, as an assigned list is."""
    from rillet import get_session_value, tool

    @tool
    def refund(order: str) -> str:
        """Refunds an order."""
        return "ok"

    class NoRefund(ChatModelAgentMiddleware):
        async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> None:
            if get_session_value("guest") and ctx.iteration == 1:
                state.tools[:] = [t for t in state.tools if t.name != "refund"]

    model = ScriptedModel([asks(call("echo", {"text": "x"}, "c1")), "a", "b"])
    agent = ChatModelAgent("a", model=model, tools=[echo, refund], middlewares=[NoRefund()])
    list(Runner(agent).query("q", session_values={"guest": True}))
    list(Runner(agent).query("q", session_values={"guest": False}))
    assert [[t.name for t in c.tools] for c in model.calls] == [["echo"], ["echo"], ["echo", "refund"]]
