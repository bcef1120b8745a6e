"""Human approval of tool calls: ``requires_approval(tool)``.

The wrapped tool does not run when the model calls it: the run interrupts with the proposed
call (``{"tool": name, "arguments": {...}}`` as the interrupt's info) and is saved. Resume it
with one of :func:`approve`, :func:`reject` or :func:`edit` as the target's data::

    runner = Runner(agent, checkpoint_store=SqliteCheckpointStore("runs.db"))
    for ev in runner.query("book it", checkpoint_id="trip-42"):
        if ev.action and ev.action.interrupted:
            ask = ev.action.interrupted.interrupt_contexts[0]
    for ev in runner.resume("trip-42", targets={ask.id: approve()}):
        ...

A rejection is sent to the model as the tool's result, with the reason, so it can change
course; an edit runs the tool with the person's arguments instead of the model's. Resume data
that is none of these (``"aprove"``), or an edit whose arguments do not fit the tool, settles
nothing: the run interrupts again with the same call, its info's ``"error"`` saying what was
wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from rillet.run.interrupts import get_interrupt_state, get_resume_context, stateful_interrupt
from rillet.tools import BaseTool, ToolArgumentsError, as_tool

__all__ = ["ApprovalDecision", "ApprovalTool", "approve", "edit", "reject", "requires_approval"]


class ApprovalDecision(TypedDict, total=False):
    """A person's answer to a :func:`requires_approval` interrupt, as resume data (a plain
    dict: ``reason`` comes with ``"reject"``, ``arguments`` with ``"edit"``)."""

    decision: Literal["approve", "reject", "edit"]
    reason: str
    arguments: dict[str, Any]


def approve() -> ApprovalDecision:
    """Resume data: run the call as the model proposed it."""
    return {"decision": "approve"}


def reject(reason: str = "") -> ApprovalDecision:
    """Resume data: do not run the call; the model is told it was rejected, and ``reason``."""
    if not isinstance(reason, str):
        raise TypeError(f"reject(reason): reason must be a str, got {type(reason).__name__}")
    return {"decision": "reject", "reason": reason}


def edit(arguments: Mapping[str, Any]) -> ApprovalDecision:
    """Resume data: run the call with ``arguments`` (the tool's named arguments, as a dict)
    instead of the model's; they are validated as the model's would be."""
    if not isinstance(arguments, Mapping):
        raise TypeError(
            f"edit(arguments): arguments must be a dict of the tool's named arguments, got {type(arguments).__name__}"
        )
    return {"decision": "edit", "arguments": dict(arguments)}


_KEYS = {"approve": {"decision"}, "reject": {"decision", "reason"}, "edit": {"decision", "arguments"}}


def _decision(data: Any) -> ApprovalDecision:
    """``data`` as a decision; a ValueError for anything else (exact: ``1`` is not True, and
    an approve carrying arguments, meant as an edit, would drop them)."""
    if data is True or data == "approve":
        return approve()
    if data is False or data == "reject":
        return reject()
    if isinstance(data, dict):
        keys = _KEYS.get(data.get("decision"))  # type: ignore[arg-type]
        if (
            keys is not None
            and set(data) <= keys
            and ("arguments" not in keys or isinstance(data.get("arguments"), dict))
        ):
            if "reason" not in data or isinstance(data["reason"], str):
                return data  # type: ignore[return-value]
    shown = repr(data)
    shown = shown if len(shown) <= 200 else shown[:197] + "..."
    raise ValueError(
        f"approval resume data {shown} is no decision: give approve(), reject(reason) or edit(arguments) "
        "from rillet.tools.approval"
    )


class ApprovalTool(BaseTool):
    """``tool`` behind a person's approval (see the module documentation)."""

    def __init__(self, tool: Any) -> None:
        self.tool = as_tool(tool)
        self.info = self.tool.info

    async def invoke(self, arguments: str) -> str:
        name = self.info.name
        was, _, state = get_interrupt_state()
        if not was:
            try:
                proposed = json.loads(arguments or "{}")
            except ValueError as e:
                raise ToolArgumentsError(name, [f"arguments are not valid JSON: {e}"]) from None
            raise stateful_interrupt({"tool": name, "arguments": proposed}, {"arguments": arguments})
        is_target, _, data = get_resume_context()
        saved = state["arguments"] if isinstance(state, dict) else arguments
        if not is_target:  # still waiting for a decision: ask again
            raise stateful_interrupt({"tool": name, "arguments": json.loads(saved or "{}")}, {"arguments": saved})
        try:
            decision = _decision(data)
        except ValueError as e:  # the call must not be settled by a typo
            raise self._ask_again(saved, str(e)) from None
        if decision["decision"] == "reject":
            reason = decision.get("reason") or "no reason given"
            return f"The user rejected this call of {name} ({reason}). Do not call it again with the same arguments."
        if decision["decision"] == "edit":
            edited = json.dumps(decision["arguments"], ensure_ascii=False)
            try:
                return await self.tool.invoke(edited)
            except ToolArgumentsError as e:  # the person's arguments do not fit: asked again, saying why
                raise self._ask_again(saved, f"the edited arguments do not fit the tool: {e}") from None
        return await self.tool.invoke(saved)

    def _ask_again(self, saved: str, error: str) -> BaseException:
        """The interrupt asking again for the same call, its info's ``error`` saying why."""
        info = {"tool": self.info.name, "arguments": json.loads(saved or "{}"), "error": error}
        return stateful_interrupt(info, {"arguments": saved})


def requires_approval(tool: Any) -> ApprovalTool:
    """``tool`` (a BaseTool or a function) that runs only once a person approves each call."""
    return ApprovalTool(tool)
