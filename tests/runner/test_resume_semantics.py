"""A resumed run ends as the uninterrupted one would: return-directly actions, interrupts
returned instead of raised, and the order of a parallel workflow's events."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    BaseAgent,
    ChatModelAgent,
    FunctionCall,
    Message,
    ParallelAgent,
    Runner,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    event_from_message,
    set_sub_agents,
    tool,
)
from rillet.checkpoint import InMemoryCheckpointStore
from rillet.run.interrupts import get_resume_context, interrupt
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
    return list(
        runner.resume(checkpoint_id, targets={c.id: "approve" for c in intr.action.interrupted.interrupt_contexts})
    )


def shown(events: list[AgentEvent]) -> list[tuple[str, str, str]]:
    """(agent, message, action) of each event: what a user sees."""
    out = []
    for e in events:
        mv = e.message_output
        a = e.action
        act = (
            ""
            if a is None
            else "exit"
            if a.exit
            else f"transfer:{a.transfer_to_agent.dest_agent_name}"
            if a.transfer_to_agent
            else ""
        )
        out.append((e.agent_name, mv.get_message().content if mv is not None else "", act))
    return out


# --- a return-directly call that completed beside an interrupted one --------------------------


def _exit_team(first_tool: str) -> SequentialAgent:
    round_ = Message.assistant(
        "", [call(first_tool, {"amount": 1}, "p", 0), call("exit", {"final_result": "bye"}, "x", 1)]
    )
    worker = ChatModelAgent("worker", model=ScriptedModel([round_]), tools=[pay, note], exit_tool=ExitTool())
    after = ChatModelAgent("after", model=ScriptedModel(["should not run"]))
    return SequentialAgent("seq", sub_agents=[worker, after])


@pytest.mark.parametrize("streaming", [False, True])
def test_an_exit_that_completed_beside_an_interrupt_still_exits_on_resume(streaming: bool) -> None:
    uninterrupted = shown(list(Runner(_exit_team("note"), streaming=streaming).query("go")))
    assert uninterrupted[-1] == ("worker", "bye", "exit") and all(a != "after" for a, _, _ in uninterrupted)

    runner = Runner(_exit_team("pay"), streaming=streaming, checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("go", checkpoint_id="exit"))
    resumed = shown(resume_all(runner, "exit", first))
    assert resumed == uninterrupted[1:]  # after the model call: the exit ends the sequence: "after" never runs


def _transfer_team(first_tool: str) -> Any:
    round_ = Message.assistant(
        "", [call(first_tool, {"amount": 1}, "p", 0), call("transfer_to_agent", {"agent_name": "cashier"}, "t", 1)]
    )
    router = ChatModelAgent("router", description="routes", model=ScriptedModel([round_]), tools=[pay, note])
    cashier = ChatModelAgent("cashier", description="takes money", model=ScriptedModel(["cashier here"]))
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
    agent = ChatModelAgent("a", model=model, tools=tools, wrap_tool_call=wrap)
    runner = Runner(agent, streaming=streaming, checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("go", checkpoint_id="ret"))
    (intr,) = interrupts(first)  # not a tool result holding the exception's text
    assert intr.action.interrupted.interrupt_contexts[0].info == {"q": 1}
    assert [e for e in first if e.message_output is not None and e.message_output.role == "tool"] == []
    second = list(runner.resume("ret", targets={intr.action.interrupted.interrupt_contexts[0].id: "ok"}))
    expected = "paid 1" if name == "wrapped" else "paid 1: ok"
    assert [e.message_output.get_message().content for e in second] == [expected, "done"]


# --- a parallel workflow's lanes keep their recorded order across a resume ---------------------


def _parallel_team(ask: bool) -> tuple[SequentialAgent, ChatModelAgent]:
    """par(x, y) then "after": y's model answers (y1), then x answers (x1), then y's tool ends
    (asking first when ``ask``) and y answers again (y2): the log reads y1, x1, paid, y2."""
    import asyncio

    y_recorded, x_recorded = asyncio.Event(), asyncio.Event()

    class X(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            await asyncio.wait_for(y_recorded.wait(), 10)
            yield event_from_message(Message.assistant("x1"))
            x_recorded.set()  # resumed by the flow once x1 is recorded

    @tool
    async def settle(amount: int) -> str:
        """Pays (after x answered; asking first when told to)."""
        if ask and not get_resume_context()[0]:
            raise interrupt({"q": amount})
        if not ask:
            await asyncio.wait_for(x_recorded.wait(), 10)
        return f"paid {amount}"

    def after_y_model(ctx: Any, reply: Message) -> None:
        y_recorded.set()  # y's model event is recorded by now

    y_reply = Message.assistant("y1", [call("settle", {"amount": 1}, "y-c")])
    y = ChatModelAgent("y", model=ScriptedModel([y_reply, "y2"]), tools=[settle], after_model=after_y_model)
    after = ChatModelAgent("after", model=ScriptedModel(["merged"]))
    return SequentialAgent("seq", sub_agents=[ParallelAgent("par", sub_agents=[X("x"), y]), after]), after


def test_parallel_lanes_keep_their_recorded_order_across_a_resume() -> None:
    team, after = _parallel_team(ask=False)
    list(Runner(team).query("go"))
    uninterrupted = [m.content for m in after.model.calls[0].messages]  # type: ignore[attr-defined]
    said = [c.split(" called")[0] for c in uninterrupted if c.startswith("For context")]
    assert said == [
        "For context: [y] said: y1. [y]",
        "For context: [x] said: x1.",
        "For context: [y] `settle` tool returned result: paid 1.",
        "For context: [y] said: y2.",
    ]

    team, after = _parallel_team(ask=True)
    runner = Runner(team, checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("go", checkpoint_id="par"))
    assert [e.message_output.get_message().content for e in resume_all(runner, "par", first)][-1] == "merged"
    resumed = [m.content for m in after.model.calls[0].messages]  # type: ignore[attr-defined]
    assert resumed == uninterrupted  # y1 was recorded before x1: so the joined log says
