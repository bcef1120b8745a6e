"""Agents for the dev UI's tests (``python -m rillet.web support.web_agent:build``): scripted
models that answer from the conversation, so every run and resume gets the same replies.

``build``: a front desk that transfers to ``booker``, whose ``book_hotel`` needs approval.
``build_parallel``: two researchers side by side, then a writer (a workflow) who asks a
fact checker, an agent called as a tool.
``build_troubled``: an agent whose every kind of failure a message sets off: "tool" (a tool
call that fails), "crash" (the model raises), "loop" (too many model calls), "forbidden" (an
input guardrail rejects it); its replies report token usage."""

from __future__ import annotations

import json

from rillet import (
    AgentTool,
    ChatModelAgent,
    FunctionCall,
    GuardrailContext,
    GuardrailRejection,
    Message,
    ParallelAgent,
    ResponseMeta,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    Usage,
    requires_approval,
    set_sub_agents,
)
from rillet.tools import ToolInfo

DELAY = 0.03  # seconds between streamed chunks: slow enough to see tokens arrive


def book_hotel(city: str, nights: int) -> str:
    """Books a hotel room.

    Args:
        city: where.
        nights: how many nights.
    """
    return f"booked {nights} nights in {city}, confirmation H-311"


GREETING = "One moment: I am handing you over to our booking desk."


def _call(name: str, arguments: dict[str, object], call_id: str, text: str = "") -> Message:
    return Message.assistant(text, [ToolCall(index=0, id=call_id, function=FunctionCall(name, json.dumps(arguments)))])


def _front_desk(messages: list[Message], tools: tuple[ToolInfo, ...]) -> Message | str:
    if messages[-1].role == "user":
        return _call("transfer_to_agent", {"agent_name": "booker"}, "call_transfer", GREETING)
    return "Handed over."


def _booker(messages: list[Message], tools: tuple[ToolInfo, ...]) -> Message | str:
    results = [m for m in messages if m.role == "tool" and m.tool_name == "book_hotel"]
    if not results:
        return _call("book_hotel", {"city": "Lisbon", "nights": 2}, "call_book")
    return f"All set: {results[-1].content}. Enjoy Lisbon!"


def build() -> ChatModelAgent:
    desk = ChatModelAgent(
        "front_desk",
        description="routes requests",
        instruction="Route every request.",
        model=ScriptedModel(_front_desk, chunk_size=3, delay=DELAY),
    )
    booker = ChatModelAgent(
        "booker",
        description="books hotels",
        instruction="Book what is asked.",
        model=ScriptedModel(_booker, chunk_size=3, delay=DELAY),
        tools=[requires_approval(book_hotel)],
    )
    set_sub_agents(desk, [booker])
    return desk


def _says(text: str) -> ScriptedModel:
    return ScriptedModel(lambda messages, tools: text, chunk_size=3, delay=DELAY)


def _writer(messages: list[Message], tools: tuple[ToolInfo, ...]) -> Message | str:
    if not any(m.role == "tool" for m in messages):
        return _call("fact_checker", {"request": "sunny, rooms from 95 EUR?"}, "call_check")
    return "Go: sunny weekend, rooms from 95 EUR."


def build_parallel() -> SequentialAgent:
    research = ParallelAgent(
        "research",
        description="looks things up at once",
        sub_agents=[
            ChatModelAgent("weather", description="forecasts", model=_says("Sunny, 24 °C all weekend.")),
            ChatModelAgent("prices", description="hotel prices", model=_says("Rooms from 95 EUR a night.")),
        ],
    )
    checker = ChatModelAgent("fact_checker", description="checks facts", model=_says("Both facts hold."))
    writer = ChatModelAgent(
        "writer",
        description="sums up",
        model=ScriptedModel(_writer, chunk_size=3, delay=DELAY),
        tools=[AgentTool(checker, emit_internal_events=True)],
    )
    return SequentialAgent("trip", description="plans a trip", sub_agents=[research, writer])


def check_availability(city: str) -> str:
    """Looks up free rooms.

    Args:
        city: where.
    """
    raise RuntimeError(f"the availability service for {city} is down")


def _troubled(messages: list[Message], tools: tuple[ToolInfo, ...]) -> Message | str:
    last = messages[-1]
    said = [m.content for m in messages if m.role == "user"][-1]
    if last.role == "user" and said == "crash":
        raise RuntimeError("the model provider hung up")
    if said == "loop" or (last.role == "user" and said == "tool"):
        return _call("check_availability", {"city": "Lisbon"}, "call_check")
    reply = Message.assistant(f"Sorry: {last.content}" if last.role == "tool" else "Hello.")
    reply.response_meta = ResponseMeta("stop", Usage(prompt_tokens=42, completion_tokens=7, total_tokens=49))
    return reply


def _no_forbidden(ctx: GuardrailContext) -> GuardrailRejection | None:
    if any(m.content == "forbidden" for m in ctx.messages):
        return GuardrailRejection("forbidden topic")
    return None


def build_troubled() -> ChatModelAgent:
    return ChatModelAgent(
        "troubled",
        description="fails in every way it can",
        instruction="Answer briefly.",
        model=ScriptedModel(_troubled, chunk_size=4, delay=DELAY),
        tools=[check_availability],
        max_iterations=3,
        input_guardrails=[_no_forbidden],
    )
