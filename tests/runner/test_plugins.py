"""Runner plugins: hooks across the whole tree (a transfer target and an agent tool's agent),
run before the agents' own callbacks, short-circuiting the same way; on_event; resumed runs;
the shipped LoggingPlugin; clear errors."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from rillet import (
    AgentTool,
    FunctionCall,
    InMemoryCheckpointStore,
    LoggingPlugin,
    Message,
    Plugin,
    SequentialAgent,
    ToolCall,
    get_interrupt_state,
    interrupt,
    set_sub_agents,
    tool,
)
from rillet.chatmodel import ChatModelAgent, ModelContext, ToolCallContext
from rillet.data.events import AgentEvent, event_from_message
from rillet.errors import MiddlewareError
from rillet.models import ScriptedModel
from rillet.run.agent import CallbackContext
from rillet.runner import Runner


def calls(name: str, args: dict[str, Any]) -> Message:
    return Message.assistant("", [ToolCall(index=0, id=f"c_{name}", function=FunctionCall(name, json.dumps(args)))])


@tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


class Recorder(Plugin):
    """Records which agent each hook saw."""

    def __init__(self) -> None:
        super().__init__("recorder")
        self.log: list[str] = []

    def on_run_start(self, agent_name: str, input: Any) -> None:
        self.log.append(f"run_start:{agent_name}")

    def on_run_end(self, agent_name: str) -> None:
        self.log.append(f"run_end:{agent_name}")

    def before_agent(self, ctx: CallbackContext) -> None:
        self.log.append(f"agent:{ctx.agent_name}")

    async def before_model(self, ctx: ModelContext) -> None:
        self.log.append(f"model:{ctx.agent_name}")

    def before_tool(self, ctx: ToolCallContext, args: dict[str, Any]) -> None:
        self.log.append(f"tool:{ctx.agent_name}.{ctx.tool_name}")


def three_levels() -> ChatModelAgent:
    """root transfers to mid; mid calls leaf as an agent tool; leaf calls add."""
    leaf = ChatModelAgent(
        "leaf", description="adds", model=ScriptedModel([calls("add", {"a": 2, "b": 3}), "five"]), tools=[add]
    )
    mid = ChatModelAgent(
        "mid",
        description="delegates",
        model=ScriptedModel([calls("leaf", {"request": "2+3"}), "mid says five"]),
        tools=[AgentTool(leaf)],
    )
    root = ChatModelAgent("root", model=ScriptedModel([calls("transfer_to_agent", {"agent_name": "mid"})]))
    set_sub_agents(root, [mid])
    return root


def test_plugins_see_every_agent_model_and_tool_across_transfer_and_agent_tools() -> None:
    rec = Recorder()
    events = list(Runner(three_levels(), plugins=[rec]).query("add 2 and 3"))
    assert events[-1].message_output.message.content == "mid says five"
    assert rec.log == [
        "run_start:root",
        "agent:root",
        "model:root",
        "tool:root.transfer_to_agent",
        "agent:mid",
        "model:mid",
        "tool:mid.leaf",
        "agent:leaf",  # inside the agent tool: the inner run inherits the plugins
        "model:leaf",
        "tool:leaf.add",
        "model:leaf",
        "model:mid",
        "run_end:root",
    ]


def test_a_plugin_runs_before_the_agents_callbacks_and_its_result_skips_them() -> None:
    order: list[str] = []

    class Cache(Plugin):
        def before_tool(self, ctx: ToolCallContext, args: dict[str, Any]) -> str | None:
            order.append("plugin")
            return "cached" if ctx.agent_name == "leaf" else None

        def after_model(self, ctx: ModelContext, reply: Message) -> None:
            order.append("plugin:after_model")

    def own(ctx: ToolCallContext, args: dict[str, Any]) -> None:
        order.append(f"own:{ctx.agent_name}")

    root = three_levels()
    mid = root.find_sub_agent("mid")
    assert isinstance(mid, ChatModelAgent)
    mid.before_tool.append(own)
    leaf = mid.tools[0].agent  # type: ignore[attr-defined]
    leaf.before_tool.append(own)
    events = list(Runner(root, plugins=[Cache("cache")]).query("x"))
    leaf_tool = [ev for ev in events if ev.message_output is not None and ev.message_output.tool_name == "leaf"]
    assert leaf_tool and events[-1].message_output.message.content == "mid says five"
    # mid's own callback runs after the plugin declined; leaf's own callback is skipped by the plugin's result
    assert "own:mid" in order and "own:leaf" not in order
    assert order.index("plugin") < order.index("own:mid")


def test_a_plugins_before_agent_content_short_circuits_any_agent_kind() -> None:
    class Gate(Plugin):
        def before_agent(self, ctx: CallbackContext) -> str | None:
            return "closed today" if ctx.agent_name == "second" else None

    first = ChatModelAgent("first", model=ScriptedModel(["one"]))
    second_model = ScriptedModel(["two"])
    second = ChatModelAgent("second", model=second_model)
    events = list(Runner(SequentialAgent("seq", sub_agents=[first, second]), plugins=[Gate()]).query("x"))
    assert [ev.message_output.message.content for ev in events] == ["one", "closed today"]
    assert second_model.call_count == 0


def test_on_event_replaces_an_event_and_the_later_plugins_are_skipped() -> None:
    seen: list[str] = []

    class Upper(Plugin):
        def on_event(self, event: AgentEvent) -> AgentEvent | None:
            msg = event.message_output.message if event.message_output is not None else None
            if msg is None or msg.role != "assistant":
                return None
            replaced = event_from_message(Message.assistant(msg.content.upper()))
            replaced.agent_name, replaced.run_path = event.agent_name, event.run_path
            return replaced

    class Watch(Plugin):
        def on_event(self, event: AgentEvent) -> None:
            seen.append(event.agent_name)

    model = ScriptedModel([calls("add", {"a": 1, "b": 1}), "hello"])
    events = list(Runner(ChatModelAgent("a", model=model, tools=[add]), plugins=[Upper(), Watch()]).query("x"))
    assert events[-1].message_output.message.content == "HELLO"
    assert seen == ["a"]  # only the tool event reached the second plugin


def test_a_resumed_run_uses_the_runners_plugins() -> None:
    @tool
    def approve(what: str) -> str:
        """Asks for approval."""
        was, _, _ = get_interrupt_state()
        if not was:
            raise interrupt("ok?")
        return "approved"

    rec = Recorder()
    store = InMemoryCheckpointStore()
    agent = ChatModelAgent("a", model=ScriptedModel([calls("approve", {"what": "x"}), "done"]), tools=[approve])
    runner = Runner(agent, checkpoint_store=store, plugins=[rec])
    events = list(runner.query("x", checkpoint_id="c1"))
    interrupted = events[-1].action.interrupted if events[-1].action is not None else None
    assert interrupted is not None
    rec.log.clear()
    resumed = list(runner.resume("c1", targets={interrupted.interrupt_contexts[0].id: True}))
    assert resumed[-1].message_output.message.content == "done"
    assert rec.log[0] == "run_start:a" and "model:a" in rec.log and rec.log[-1] == "run_end:a"


def test_before_and_after_agent_pair_up_when_an_agent_tools_agent_interrupts() -> None:
    """A tracing plugin opens a span in before_agent and closes it in after_agent: the agent
    inside an AgentTool that interrupts ends its run like the root does, both hooks run."""

    @tool
    def pay(amount: int) -> str:
        """Pays."""
        was, _, _ = get_interrupt_state()
        if not was:
            raise interrupt("pay?")
        return f"paid {amount}"

    class Spans(Plugin):
        def __init__(self) -> None:
            super().__init__("spans")
            self.open: list[str] = []
            self.log: list[str] = []

        def before_agent(self, ctx: CallbackContext) -> None:
            self.open.append(ctx.agent_name)
            self.log.append(f"open:{ctx.agent_name}")

        def after_agent(self, ctx: CallbackContext) -> None:
            self.open.remove(ctx.agent_name)
            self.log.append(f"close:{ctx.agent_name}")

    payer = ChatModelAgent(
        "payer", description="pays", model=ScriptedModel([calls("pay", {"amount": 5}), "paid"]), tools=[pay]
    )
    desk = ChatModelAgent(
        "desk", model=ScriptedModel([calls("payer", {"request": "pay 5"}), "done"]), tools=[AgentTool(payer)]
    )
    spans, store = Spans(), InMemoryCheckpointStore()
    runner = Runner(desk, checkpoint_store=store, plugins=[spans])
    events = list(runner.query("pay", checkpoint_id="p"))
    interrupted = events[-1].action.interrupted if events[-1].action is not None else None
    assert interrupted is not None
    assert spans.log == ["open:desk", "open:payer", "close:payer", "close:desk"] and spans.open == []
    spans.log.clear()
    resumed = list(runner.resume("p", targets={interrupted.interrupt_contexts[0].id: True}))
    assert resumed[-1].message_output is not None and resumed[-1].message_output.message.content == "done"
    assert spans.log == ["open:desk", "open:payer", "close:payer", "close:desk"] and spans.open == []


def test_a_plugin_hook_that_raises_names_the_plugin_and_the_hook() -> None:
    class Broken(Plugin):
        def before_model(self, ctx: ModelContext) -> None:
            raise ValueError("bad config")

    events = list(Runner(ChatModelAgent("a", model=ScriptedModel(["x"])), plugins=[Broken("broken")]).query("x"))
    err = events[-1].error
    assert isinstance(err, MiddlewareError)
    assert "plugin 'broken' (Broken.before_model)" in str(err) and "bad config" in str(err)


def test_runner_refuses_what_is_not_a_plugin_instance() -> None:
    agent = ChatModelAgent("a", model=ScriptedModel(["x"]))
    with pytest.raises(TypeError, match=r"got the class LoggingPlugin \(pass an instance: LoggingPlugin\(\)\)"):
        Runner(agent, plugins=[LoggingPlugin])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="object is not a plugin; subclass rillet.Plugin"):
        Runner(agent, plugins=[object()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"expected a list of plugins, got LoggingPlugin \(pass \[plugin\]\)"):
        Runner(agent, plugins=LoggingPlugin())  # type: ignore[arg-type]


def test_runner_refuses_a_plugin_with_google_adks_hook_names_rather_than_never_calling_them() -> None:
    class AdkStyle(Plugin):
        async def before_tool_callback(self, *, tool: Any, tool_args: Any, tool_context: Any) -> None:
            raise AssertionError("never called")

    agent = ChatModelAgent("a", model=ScriptedModel(["x"]))
    with pytest.raises(
        TypeError, match=r"AdkStyle.before_tool_callback is Google ADK's name .* override before_tool\(ctx, args\)"
    ):
        Runner(agent, plugins=[AdkStyle()])


def test_runner_refuses_a_hook_that_cannot_take_its_arguments_when_it_is_given() -> None:
    class Keywords(Plugin):
        def before_model(self, *, callback_context: Any, llm_request: Any) -> None:  # type: ignore[override]
            return None

    agent = ChatModelAgent("a", model=ScriptedModel(["x"]))
    with pytest.raises(
        TypeError, match=r"plugin 'Keywords' \(Keywords.before_model\) cannot be called as before_model\(ctx\)"
    ):
        Runner(agent, plugins=[Keywords()])


def test_logging_plugin_logs_the_run(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel([calls("add", {"a": 1, "b": 2}), "three"])
    with caplog.at_level(logging.INFO, logger="rillet.plugins"):
        list(Runner(ChatModelAgent("calc", model=model, tools=[add]), plugins=[LoggingPlugin()]).query("1+2"))
    lines = [r.getMessage() for r in caplog.records if r.name == "rillet.plugins"]
    assert lines[0] == "run of calc starts (1 input messages)"
    assert "agent calc calls tool add with {'a': 1, 'b': 2}" in lines
    assert "event of calc: tool '3'" in lines
    assert lines[-1] == "run of calc ended"


def test_a_plugin_whose_init_skips_super_is_named_by_its_class() -> None:
    class Quiet(Plugin):
        def __init__(self) -> None:  # no super().__init__(): no name set
            pass

        def before_model(self, ctx: ModelContext) -> None:
            raise RuntimeError("oops")

    runner = Runner(ChatModelAgent("a", model=ScriptedModel(["x"])), plugins=[Quiet()])
    assert len(runner.plugins) == 1
    assert "plugin 'Quiet' (Quiet.before_model) failed" in str(list(runner.query("x"))[-1].error)


def test_on_event_returning_what_is_not_an_event_is_a_clear_error() -> None:
    class Wrong(Plugin):
        def on_event(self, event: AgentEvent) -> Any:
            return "not an event"

    agent = ChatModelAgent("a", model=ScriptedModel(["hi"]))
    events = list(Runner(agent, plugins=[Wrong()]).query("x"))
    assert all(isinstance(ev, AgentEvent) for ev in events)
    assert events[-1].error is not None
    assert "plugin 'Wrong' (Wrong.on_event) returned str" in str(events[-1].error)


def test_the_logging_plugin_leaves_a_streaming_tool_streaming() -> None:
    """LoggingPlugin (which "only watches") had after_tool and on_tool_error hooks, and any such
    hook makes a streaming tool be read to its end: adding it turned every streaming tool of
    the tree into one chunk at the end. A plugin with only before_tool leaves it streaming too."""

    @tool
    async def count_up(n: int) -> Any:
        """Counts up to n."""
        for i in range(1, n + 1):
            yield str(i)

    class Watch(Plugin):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def before_tool(self, ctx: ToolCallContext, args: dict[str, Any]) -> None:
            self.seen.append(ctx.tool_name)

    for plugin in (LoggingPlugin(), Watch()):
        model = ScriptedModel([calls("count_up", {"n": 3}), "done"])
        agent = ChatModelAgent("a", model=model, tools=[count_up])
        chunks: list[str] = []
        for ev in Runner(agent, streaming=True, plugins=[plugin]).query("count"):
            mv = ev.message_output
            if mv is not None and mv.role == "tool":
                assert mv.message_stream is not None
                chunks = [c.content for c in mv.message_stream]
        assert chunks == ["1", "2", "3"], plugin
        assert model.calls[1].messages[-1].content == "123"
    assert Watch().seen == [] and plugin.seen == ["count_up"]  # type: ignore[attr-defined]


def test_the_logging_plugin_leaves_a_streamed_reply_streaming() -> None:
    """LoggingPlugin had an on_model_error hook, which (as after_model does, which it left out
    for this reason) makes every streamed reply of the tree be read to its end before its event
    goes out: the consumer saw no token until the model had finished. Here the model sends its
    second chunk only once the consumer has read the first: held, the run never ends."""
    import asyncio

    from rillet import pipe

    class Gated:
        def __init__(self) -> None:
            self.first_read = asyncio.Event()

        async def generate(self, messages: list[Message], **kw: Any) -> Message:
            return Message.assistant("unused")

        async def stream(self, messages: list[Message], **kw: Any) -> Any:
            reader, writer = pipe()

            async def produce() -> None:
                writer.send(Message.assistant("Hel"))
                await self.first_read.wait()
                writer.send(Message.assistant("lo"))
                writer.close()

            self.task = asyncio.get_running_loop().create_task(produce())
            return reader

    async def run() -> list[str]:
        model = Gated()
        got: list[str] = []
        async for ev in Runner(ChatModelAgent("a", model=model), streaming=True, plugins=[LoggingPlugin()]).query("hi"):
            assert ev.message_output is not None and ev.message_output.message_stream is not None, ev.error
            async for chunk in ev.message_output.message_stream:
                got.append(chunk.content)
                model.first_read.set()
        return got

    async def bounded() -> list[str]:
        return await asyncio.wait_for(run(), timeout=10)

    assert asyncio.run(bounded()) == ["Hel", "lo"]
