"""Toolsets in ChatModelAgent(tools=[...]): asked for their tools at the start of every run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rillet import (
    BaseTool,
    ChatModelAgent,
    ChatModelAgentContext,
    ChatModelAgentMiddleware,
    FunctionCall,
    Message,
    Runner,
    ScriptedModel,
    ToolCall,
    tool,
)
from rillet.tools.toolset import Toolset


def call(name: str, arguments: dict[str, Any]) -> Message:
    return Message.assistant(
        tool_calls=[ToolCall(index=0, id="c1", function=FunctionCall(name, json.dumps(arguments)))]
    )


@tool
def shout(text: str) -> str:
    """Shouts the text."""
    return text.upper()


@tool
def whisper(text: str) -> str:
    """Whispers the text."""
    return text.lower()


class Shelf:
    """A toolset of my own: offers what ``offered`` holds when a run asks."""

    def __init__(self, *offered: BaseTool) -> None:
        self.offered = list(offered)
        self.asked = 0

    async def tools(self) -> list[BaseTool]:
        self.asked += 1
        return list(self.offered)


def outputs(agent: ChatModelAgent, text: str) -> list[tuple[str, str]]:
    out = []
    for ev in Runner(agent).query(text):
        if ev.error is not None:
            out.append(("error", str(ev.error)))
        else:
            msg = ev.message_output.get_message()
            out.append((msg.role, msg.content or msg.tool_calls[0].function.name))
    return out


def test_a_custom_toolset_is_a_toolset_and_its_tools_are_offered_after_the_agents_own() -> None:
    shelf = Shelf(shout)
    assert isinstance(shelf, Toolset)
    model = ScriptedModel([call("shout", {"text": "hi"}), "Done."])
    agent = ChatModelAgent("a", description="d", model=model, tools=[whisper, shelf])
    assert outputs(agent, "go") == [("assistant", "shout"), ("tool", "HI"), ("assistant", "Done.")]
    assert [t.name for t in model.calls[0].tools] == ["whisper", "shout"]
    assert agent.toolsets == [shelf] and agent.tools == [whisper]


def test_a_toolset_whose_tools_change_between_runs_offers_the_new_ones() -> None:
    shelf = Shelf(shout)
    model = ScriptedModel(["one", call("whisper", {"text": "HI"}), "two"])
    agent = ChatModelAgent("a", description="d", model=model, tools=[shelf])
    assert outputs(agent, "go") == [("assistant", "one")]
    shelf.offered = [whisper]
    assert outputs(agent, "go") == [("assistant", "whisper"), ("tool", "hi"), ("assistant", "two")]
    assert [[t.name for t in c.tools] for c in model.calls] == [["shout"], ["whisper"], ["whisper"]]
    assert shelf.asked == 2  # once a run, not once a model call


def test_a_sync_tools_method_is_accepted() -> None:
    class Plain:
        def tools(self) -> list[BaseTool]:
            return [shout]

    model = ScriptedModel([call("shout", {"text": "a"}), "ok"])
    assert outputs(ChatModelAgent("a", description="d", model=model, tools=[Plain()]), "go")[1] == ("tool", "A")


def test_a_toolset_tool_may_return_directly() -> None:
    model = ScriptedModel([call("shout", {"text": "bye"})])
    agent = ChatModelAgent("a", description="d", model=model, tools=[Shelf(shout)], return_directly=["shout"])
    assert outputs(agent, "go") == [("assistant", "shout"), ("tool", "BYE")]


def test_a_name_clash_names_both_sources() -> None:
    model = ScriptedModel(["x"])
    agent = ChatModelAgent("a", description="d", model=model, tools=[shout, Shelf(shout)])
    [(kind, text)] = outputs(agent, "go")
    assert kind == "error"
    assert (
        "ChatModelAgent 'a': the toolset <" in text
        and "offers a tool named 'shout', and so does one of its own tools" in text
    )
    agent = ChatModelAgent("b", description="d", model=model, tools=[Shelf(whisper), Shelf(whisper)])
    assert "and so does the toolset <" in outputs(agent, "go")[0][1]


@pytest.mark.parametrize(
    ("offered", "message"),
    [
        ("shout", "returned str from tools(); it must return a list of BaseTool"),
        (["shout"], "offered str 'shout'; tools() must return BaseTool instances"),
    ],
)
def test_a_toolset_offering_something_else_is_a_clear_error(offered: Any, message: str) -> None:
    class Bad:
        async def tools(self) -> Any:
            return offered

    [(kind, text)] = outputs(ChatModelAgent("a", description="d", model=ScriptedModel(["x"]), tools=[Bad()]), "go")
    assert kind == "error" and message in text


def test_as_tool_says_where_a_toolset_goes() -> None:
    from rillet.tools import as_tool

    with pytest.raises(TypeError, match=r"got the toolset Shelf .*put it in ChatModelAgent\(tools=\[\.\.\.\]\)"):
        as_tool(Shelf())


def test_before_agent_middlewares_see_the_toolsets_tools() -> None:
    seen: list[list[str]] = []

    class Drop(ChatModelAgentMiddleware):
        async def before_agent(self, ctx: ChatModelAgentContext) -> ChatModelAgentContext | None:
            seen.append([t.info.name for t in ctx.tools])
            ctx.tools = [t for t in ctx.tools if t.info.name != "whisper"]
            return ctx

    model = ScriptedModel(["ok"])
    agent = ChatModelAgent("a", description="d", model=model, tools=[Shelf(shout, whisper)], middlewares=[Drop()])
    outputs(agent, "go")
    assert seen == [["shout", "whisper"]]
    assert [t.name for t in model.calls[0].tools] == ["shout"]


def test_a_run_interrupted_on_a_toolsets_tool_resumes_with_the_tools_the_toolset_offers_then() -> None:
    from rillet import InMemoryCheckpointStore, approve, requires_approval

    booked: list[str] = []

    @tool
    def book(hotel: str) -> str:
        """Books a hotel."""
        booked.append(hotel)
        return f"booked {hotel}"

    class Fresh:
        """New tool objects on every ask, as an MCP toolset after a reconnect."""

        async def tools(self) -> list[BaseTool]:
            return [requires_approval(book)]

    model = ScriptedModel([call("book", {"hotel": "Ritz"}), "Booked."])
    runner = Runner(
        ChatModelAgent("a", description="d", model=model, tools=[Fresh()]), checkpoint_store=InMemoryCheckpointStore()
    )
    events = list(runner.query("book", checkpoint_id="trip"))
    assert events[-1].action is not None and events[-1].action.interrupted is not None and booked == []
    target = events[-1].action.interrupted.interrupt_contexts[0].id
    resumed = [ev.message_output.get_message().content for ev in runner.resume("trip", targets={target: approve()})]
    assert resumed == ["booked Ritz", "Booked."] and booked == ["Ritz"]


def test_an_agent_without_a_toolset_never_asks_for_one(monkeypatch: pytest.MonkeyPatch) -> None:
    async def never(self: ChatModelAgent, deps: Any) -> Any:
        raise AssertionError("a run without toolsets resolved toolsets")

    monkeypatch.setattr(ChatModelAgent, "_with_toolsets", never)
    agent = ChatModelAgent("a", description="d", model=ScriptedModel(["hi"]), tools=[shout])
    assert agent.toolsets == [] and outputs(agent, "go") == [("assistant", "hi")]


def test_google_adk_toolset_shapes_are_refused_when_the_agent_is_made_naming_rillets() -> None:
    """An ADK Python toolset (``get_tools``) was refused as "it accepts a BaseTool instance or a
    function", without a word of toolsets; an ADK-Go one (``tools(ctx)``) was taken and failed
    every run with "missing 1 required positional argument"."""

    class AdkPython:
        async def get_tools(self, readonly_context: Any = None) -> list[BaseTool]:
            return [shout]

    class AdkGo:
        async def tools(self, ctx: Any) -> list[BaseTool]:
            return [shout]

    with pytest.raises(TypeError, match=r"AdkPython .*Google ADK's get_tools.*async def tools\(self\)"):
        ChatModelAgent("a", description="d", model=ScriptedModel(["x"]), tools=[AdkPython()])
    with pytest.raises(TypeError, match=r"toolset AdkGo: its tools\(\) cannot be called without arguments"):
        ChatModelAgent("a", description="d", model=ScriptedModel(["x"]), tools=[AdkGo()])
