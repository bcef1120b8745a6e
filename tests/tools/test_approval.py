"""The approval helpers (approve, reject, edit, requires_approval) next to each other in rillet, their
argument checks, and an edit decision running the tool with the person's arguments."""

from __future__ import annotations

from typing import Any

import pytest
from rillet import ChatModelAgent, FunctionCall, Message, Runner, ScriptedModel, ToolCall


def agent(name: str, script: list[Any], tools: list[Any] | None = None) -> ChatModelAgent:
    return ChatModelAgent(name, description=f"the {name} agent", model=ScriptedModel(script), tools=tools or [])


def call_msg(name: str, args: str, id: str = "c1") -> Message:
    return Message.assistant(tool_calls=[ToolCall(index=0, id=id, function=FunctionCall(name, args))])


def test_approval_helpers_are_exported_next_to_requires_approval() -> None:
    import rillet
    import rillet.tools.approval

    for name in ("approve", "reject", "edit", "requires_approval", "ApprovalDecision"):
        assert name in rillet.__all__ and getattr(rillet, name) is getattr(rillet.tools.approval, name)
    assert rillet.approve() == {"decision": "approve"}
    assert rillet.reject("too dear") == {"decision": "reject", "reason": "too dear"}
    assert rillet.edit({"amount": 3}) == {"decision": "edit", "arguments": {"amount": 3}}
    with pytest.raises(TypeError, match="edit.arguments.: arguments must be a dict"):
        rillet.edit('{"amount": 3}')  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reason must be a str"):
        rillet.reject(3)  # type: ignore[arg-type]


def test_edit_runs_the_tool_with_the_persons_arguments() -> None:
    from rillet import InMemoryCheckpointStore, edit, requires_approval, tool

    def pay(amount: int) -> str:
        """Pays an amount."""
        return f"paid {amount}"

    a = agent("a", [call_msg("pay", '{"amount": 500}'), "done"], [requires_approval(tool(pay))])
    runner = Runner(a, checkpoint_store=InMemoryCheckpointStore())
    ask = list(runner.query("pay", checkpoint_id="e"))[-1].action.interrupted.interrupt_contexts[0]
    events = list(runner.resume("e", targets={ask.id: edit({"amount": 5})}))
    assert events[0].message_output.get_message().content == "paid 5"


def _waiting_payment() -> tuple[Runner, Any, list[int]]:
    """A run stopped at the approval of pay(amount=5) (checkpoint "t"): its runner, the
    interrupt, and the amounts paid so far."""
    from rillet import InMemoryCheckpointStore, requires_approval, tool

    paid: list[int] = []

    def pay(amount: int) -> str:
        """Pays an amount."""
        paid.append(amount)
        return f"paid {amount}"

    a = agent("a", [call_msg("pay", '{"amount": 5}'), "done"], [requires_approval(tool(pay))])
    runner = Runner(a, checkpoint_store=InMemoryCheckpointStore())
    ask = list(runner.query("pay", checkpoint_id="t"))[-1].action.interrupted.interrupt_contexts[0]
    return runner, ask, paid


@pytest.mark.parametrize(
    "data",
    [
        "aprove",
        {"decision": "yes"},
        {"decision": "edit", "arguments": "x"},
        None,
        1,  # not True: 1 == True, but a count is no decision
        0.0,
        {"decision": "approve", "arguments": {"amount": 9}},  # meant as an edit: approving would drop them
        {"decision": "reject", "reason": 3},
    ],
)
def test_resume_data_that_is_no_decision_asks_again_saying_why(data: Any) -> None:
    # A typo must not settle the call (it was an "Error:" result the model carried on from):
    # nothing runs, and the run stops at the same call again with the error in its info.
    from rillet import approve

    runner, ask, paid = _waiting_payment()
    events = list(runner.resume("t", targets={ask.id: data}))
    assert [e.error for e in events if e.error is not None] == []
    assert [e.message_output for e in events if e.message_output is not None] == []
    again = events[-1].action.interrupted.interrupt_contexts[0]
    assert again.info["tool"] == "pay" and again.info["arguments"] == {"amount": 5}
    assert again.info["error"].startswith(
        f"approval resume data {data!r} is no decision: give approve(), reject(reason)"
    )
    assert paid == []
    # answered properly, the call runs once
    events = list(runner.resume("t", targets={again.id: approve()}))
    assert events[0].message_output.get_message().content == "paid 5"
    assert paid == [5]


def test_edited_arguments_that_do_not_fit_the_tool_ask_again_saying_why() -> None:
    # The person's arguments are checked as the model's are; when they do not fit, the call is
    # asked again (it was an "Error:" result the model carried on from).
    from rillet import edit

    runner, ask, paid = _waiting_payment()
    events = list(runner.resume("t", targets={ask.id: edit({"amount": "abc"})}))
    assert [e.message_output for e in events if e.message_output is not None] == []
    again = events[-1].action.interrupted.interrupt_contexts[0]
    assert again.info["arguments"] == {"amount": 5}  # the model's proposal, as first asked
    assert again.info["error"].startswith("the edited arguments do not fit the tool: ")
    assert "amount" in again.info["error"] and paid == []
    events = list(runner.resume("t", targets={again.id: edit({"amount": 7})}))
    assert events[0].message_output.get_message().content == "paid 7" and paid == [7]
