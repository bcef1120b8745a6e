"""A resumed run ends as the uninterrupted one would: return-directly actions, interrupts
returned instead of raised, and the order of a parallel workflow's events."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from rillet import (
    AgentEvent,
    ChatModelAgent,
    FunctionCall,
    Message,
    Runner,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    set_sub_agents,
    tool,
)
from rillet.checkpoint import InMemoryCheckpointStore
from rillet.interrupt import get_resume_context, interrupt
from rillet.tools import BaseTool, ExitTool, ToolInfo


def call(name: str, args: dict[str, Any], id: str, i: int = 0) -> ToolCall:
    return ToolCall(index=i, id=id, function=FunctionCall(name, json.dumps(args)))


@tool
def pay(amount: int) -> str:
    """Pays after a person approves."""
    is_target, _, data = get_resume_context()
    if not is_target:
        raise interrupt({"question": f"pay {amount}?"})
    return f"paid {amount}" if data == "approve" else f"not paid: {data}"


@tool
def note(amount: int) -> str:
    """Pays without asking: what `pay` does once approved."""
    return f"paid {amount}"


def interrupts(events: list[AgentEvent]) -> list[AgentEvent]:
    return [e for e in events if e.action is not None and e.action.interrupted is not None]


def resume_all(runner: Runner, checkpoint_id: str, events: list[AgentEvent]) -> list[AgentEvent]:
    (intr,) = interrupts(events)
    return list(runner.resume(checkpoint_id, targets={c.id: "approve" for c in intr.action.interrupted.interrupt_contexts}))


def shown(events: list[AgentEvent]) -> list[tuple[str, str, str]]:
    """(agent, message, action) of each event: what a user sees."""
    out = []
    for e in events:
        mv = e.message_output
        a = e.action
        act = "" if a is None else "exit" if a.exit else f"transfer:{a.transfer_to_agent.dest_agent_name}" if a.transfer_to_agent else ""
        out.append((e.agent_name, mv.get_message().content if mv is not None else "", act))
    return out


# --- a return-directly call that completed beside an interrupted one --------------------------


def _exit_team(first_tool: str) -> SequentialAgent:
    round_ = Message.assistant("", [call(first_tool, {"amount": 1}, "p", 0), call("exit", {"final_result": "bye"}, "x", 1)])
    worker = ChatModelAgent("worker", "", "", ScriptedModel([round_]), [pay, note], exit_tool=ExitTool())
    after = ChatModelAgent("after", "", "", ScriptedModel(["should not run"]))
    return SequentialAgent("seq", "", [worker, after])


@pytest.mark.parametrize("streaming", [False, True])
def test_an_exit_that_completed_beside_an_interrupt_still_exits_on_resume(streaming: bool) -> None:
    uninterrupted = shown(list(Runner(_exit_team("note"), streaming=streaming).query("go")))
    assert uninterrupted[-1] == ("worker", "bye", "exit") and all(a != "after" for a, _, _ in uninterrupted)

    runner = Runner(_exit_team("pay"), streaming=streaming, checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("go", checkpoint_id="exit"))
    resumed = shown(resume_all(runner, "exit", first))
    assert resumed == uninterrupted[1:]  # after the model call: the exit ends the sequence: "after" never runs


def _transfer_team(first_tool: str) -> Any:
    round_ = Message.assistant("", [call(first_tool, {"amount": 1}, "p", 0), call("transfer_to_agent", {"agent_name": "cashier"}, "t", 1)])
    router = ChatModelAgent("router", "routes", "", ScriptedModel([round_]), [pay, note])
    cashier = ChatModelAgent("cashier", "takes money", "", ScriptedModel(["cashier here"]))
    return set_sub_agents(router, [cashier])


def test_a_transfer_that_completed_beside_an_interrupt_still_transfers_on_resume() -> None:
    uninterrupted = shown(list(Runner(_transfer_team("note")).query("go")))
    assert uninterrupted[-1] == ("cashier", "cashier here", "")

    runner = Runner(_transfer_team("pay"), checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("go", checkpoint_id="tr"))
    resumed = shown(resume_all(runner, "tr", first))
    assert resumed == uninterrupted[1:]  # after the model call


# --- an interrupt returned (or yielded) instead of raised -------------------------------------


@tool
def pay_sync(amount: int) -> Any:
    """Returns its interrupt."""
    is_target, _, data = get_resume_context()
    return interrupt({"q": amount}) if not is_target else f"paid {amount}: {data}"


@tool
async def pay_async(amount: int) -> Any:
    """Returns its interrupt."""
    is_target, _, data = get_resume_context()
    return interrupt({"q": amount}) if not is_target else f"paid {amount}: {data}"


@tool
def pay_gen(amount: int) -> Iterator[Any]:
    """Yields its interrupt first."""
    is_target, _, data = get_resume_context()
    yield interrupt({"q": amount}) if not is_target else f"paid {amount}: {data}"


@tool
async def pay_agen(amount: int) -> AsyncIterator[Any]:
    """Yields its interrupt first."""
    is_target, _, data = get_resume_context()
    yield interrupt({"q": amount}) if not is_target else f"paid {amount}: {data}"


class PayTool(BaseTool):
    """A hand-written tool whose invoke returns its interrupt."""

    def __init__(self) -> None:
        self.info = ToolInfo("pay_custom", "pays", {"type": "object", "properties": {"amount": {"type": "integer"}}})

    async def invoke(self, arguments: str) -> str:
        is_target, _, data = get_resume_context()
        amount = json.loads(arguments)["amount"]
        return interrupt({"q": amount}) if not is_target else f"paid {amount}: {data}"  # type: ignore[return-value]


def _wrapped_returns_interrupt(ctx: Any, inner: Any) -> Any:
    async def run() -> Any:
        is_target, _, data = get_resume_context()
        return interrupt({"q": 1}) if not is_target else await inner(ctx.arguments)

    return run()


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("name", ["pay_sync", "pay_async", "pay_gen", "pay_agen", "pay_custom", "wrapped"])
def test_a_returned_interrupt_interrupts_like_a_raised_one(name: str, streaming: bool) -> None:
    tools = [pay_sync, pay_async, pay_gen, pay_agen, PayTool(), note]
    tool_name, wrap = ("note", _wrapped_returns_interrupt) if name == "wrapped" else (name, None)
    model = ScriptedModel([Message.assistant("", [call(tool_name, {"amount": 1}, "c")]), "done"])
    agent = ChatModelAgent("a", "", "", model, tools, wrap_tool_call=wrap)
    runner = Runner(agent, streaming=streaming, checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("go", checkpoint_id="ret"))
    (intr,) = interrupts(first)  # not a tool result holding the exception's text
    assert intr.action.interrupted.interrupt_contexts[0].info == {"q": 1}
    assert [e for e in first if e.message_output is not None and e.message_output.role == "tool"] == []
    second = list(runner.resume("ret", targets={intr.action.interrupted.interrupt_contexts[0].id: "ok"}))
    expected = "paid 1" if name == "wrapped" else "paid 1: ok"
    assert [e.message_output.get_message().content for e in second] == [expected, "done"]
