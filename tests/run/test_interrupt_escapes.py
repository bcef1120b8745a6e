"""An interrupt is control flow, not an error: `Interrupted` is a BaseException, so a tool's (or a
tool-call wrapper's) `except Exception:` does not swallow it (docs/interrupts.md)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    BaseAgent,
    ChatModelAgent,
    FunctionCall,
    InMemoryCheckpointStore,
    Interrupted,
    Message,
    RilletError,
    Runner,
    ScriptedModel,
    ToolCall,
    ToolCallContext,
    get_resume_context,
    interrupt,
    tool,
)


def ask_first() -> None:
    """A helper a tool calls: it interrupts unless the run is resumed with an answer."""
    if not get_resume_context().is_target:
        raise interrupt("may I?")


swallowed: list[str] = []


@tool
def careful() -> str:
    """Guards everything it does, as tools often do."""
    try:
        ask_first()
        return "did it"
    except Exception as e:  # a tool's usual guard: must not see the interrupt
        swallowed.append(type(e).__name__)
        return f"failed: {e}"


def agent(**kwargs: Any) -> ChatModelAgent:
    call = ToolCall(id="c1", function=FunctionCall("careful", json.dumps({})))
    return ChatModelAgent("a", model=ScriptedModel([Message.assistant("", [call]), "done"]), tools=[careful], **kwargs)


def interrupts(events: list[AgentEvent]) -> list[AgentEvent]:
    return [e for e in events if e.action is not None and e.action.interrupted is not None]


def test_interrupted_is_a_base_exception_not_an_exception() -> None:
    assert issubclass(Interrupted, BaseException)
    assert not issubclass(Interrupted, Exception)
    assert not issubclass(Interrupted, RilletError)


def test_a_tool_catching_exception_around_an_interrupt_still_interrupts_and_resumes() -> None:
    swallowed.clear()
    runner = Runner(agent(), checkpoint_store=InMemoryCheckpointStore())
    events = list(runner.query("go", checkpoint_id="c"))
    (ev,) = interrupts(events)
    assert swallowed == []
    assert [e.error for e in events if e.error is not None] == []
    iid = ev.action.interrupted.interrupt_contexts[0].id
    resumed = list(runner.resume("c", targets={iid: "yes"}))
    tool_text = [
        e.message_output.message.content for e in resumed if e.message_output and e.message_output.role == "tool"
    ]
    assert tool_text == ["did it"]


def test_a_tool_call_wrapper_catching_exception_does_not_swallow_the_interrupt() -> None:
    swallowed.clear()

    async def guard(ctx: ToolCallContext, call: Callable[[str], Awaitable[str]]) -> str:
        try:
            return await call(ctx.arguments)
        except Exception as e:
            swallowed.append(type(e).__name__)
            return "wrapper swallowed it"

    events = list(
        Runner(agent(wrap_tool_call=[guard]), checkpoint_store=InMemoryCheckpointStore()).query("go", checkpoint_id="c")
    )
    assert len(interrupts(events)) == 1
    assert swallowed == []


class RaisesInterrupt(BaseAgent):
    """Misuse: an agent raises an interrupt instead of yielding interrupt_event(...)."""

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        raise interrupt("wrong way")
        yield  # an async generator


def test_an_agent_raising_an_interrupt_still_ends_with_an_error_event() -> None:
    events = list(Runner(RaisesInterrupt("r")).query("go"))
    assert len(events) == 1
    assert isinstance(events[0].error, Interrupted)


@pytest.mark.parametrize("catch", [Exception, RilletError])
def test_except_interrupted_catches_it_where_a_generic_clause_does_not(catch: type[BaseException]) -> None:
    with pytest.raises(Interrupted):
        try:
            raise interrupt("x")
        except catch:  # type: ignore[misc]
            pytest.fail(f"except {catch.__name__} caught the interrupt")
