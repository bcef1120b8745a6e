"""The agentic ReAct run both block-native models are tested with: a streamed run on
AgenticMessage asks for `refund(30)`, interrupts for approval, is checkpointed, and a second
Runner (as another process would) resumes it from the store and answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rillet import (
    AgentEvent,
    AgenticMessage,
    ChatModelAgent,
    InMemoryCheckpointStore,
    Runner,
    approve,
    requires_approval,
    tool,
)

REFUNDS: list[int] = []


@tool
def refund(amount: int) -> str:
    """Refunds an amount.

    Args:
        amount: in euros.
    """
    REFUNDS.append(amount)
    return f"refunded {amount}"


def interrupt_then_resume(
    make_model: Callable[[], Any], script_answer: Callable[[], None]
) -> tuple[AgenticMessage, list[AgenticMessage]]:
    """Runs the refund request until its approval stops it (the model's first reply must be
    scripted already), then ``script_answer()`` and a resume by another Runner approving it.
    Returns the first reply and the resumed run's messages (the tool result, the answer);
    asserts no error, one interrupt and that the refund ran on resume only."""
    REFUNDS.clear()
    store = InMemoryCheckpointStore()

    def runner() -> Runner:
        agent = ChatModelAgent("support", description="d", model=make_model(), tools=[requires_approval(refund)])
        return Runner(agent, checkpoint_store=store, streaming=True)

    first: list[AgentEvent[AgenticMessage]] = list(runner().run([AgenticMessage.user("refund me")], checkpoint_id="r"))
    assert [e.error for e in first if e.error is not None] == []
    (stop,) = [e for e in first if e.action is not None and e.action.interrupted is not None]
    assert stop.action is not None and stop.action.interrupted is not None
    assert first[0].message_output is not None
    reply = first[0].message_output.get_message()
    assert type(reply) is AgenticMessage
    assert REFUNDS == []

    script_answer()
    ctx = stop.action.interrupted.interrupt_contexts[0]
    resumed: list[AgentEvent[AgenticMessage]] = list(runner().resume("r", targets={ctx.id: approve()}))
    assert [e.error for e in resumed if e.error is not None] == []
    messages = [e.message_output.get_message() for e in resumed if e.message_output is not None]
    assert REFUNDS == [30]
    assert [type(m) for m in messages] == [AgenticMessage, AgenticMessage]
    return reply, messages
