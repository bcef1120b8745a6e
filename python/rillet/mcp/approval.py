"""Which MCP tool calls wait for a person: ``require_approval`` of :class:`McpToolset`."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any, Literal

from rillet.run.interrupts import get_interrupt_state
from rillet.tools import BaseTool
from rillet.tools.approval import ApprovalTool

ApprovalPolicy = Literal["always", "never"] | Collection[str] | Callable[[str, dict[str, Any]], bool]
"""``"always"``, ``"never"``, the names of the tools that need approval (as the server names
them), or a function of (tool name, arguments) deciding each call."""


def check_policy(policy: Any) -> ApprovalPolicy:
    if policy in ("always", "never") or callable(policy):
        return policy  # type: ignore[no-any-return]
    if isinstance(policy, str) or not isinstance(policy, Collection):
        raise TypeError(
            "McpToolset(require_approval): 'always', 'never', a set of tool names, or a function "
            f"(tool_name, arguments) -> bool, got {policy!r}"
        )
    return frozenset(policy)


class ConditionalApprovalTool(ApprovalTool):
    """An approval tool that asks only when ``needs(name, arguments)`` says so. A resumed
    call is past the question: it takes the person's decision and never asks the function
    again, so a resume in another process does not depend on it."""

    def __init__(self, tool: BaseTool, remote_name: str, needs: Callable[[str, dict[str, Any]], bool]) -> None:
        super().__init__(tool)
        self._remote_name = remote_name
        self._needs = needs

    async def invoke(self, arguments: str) -> str:
        if not get_interrupt_state().was_interrupted:
            try:
                proposed = json.loads(arguments or "{}")
            except ValueError:
                proposed = None  # the approval tool reports bad JSON
            if isinstance(proposed, dict) and not self._needs(self._remote_name, proposed):
                return await self.tool.invoke(arguments)
        return await super().invoke(arguments)


def gate(policy: ApprovalPolicy, tool: BaseTool, remote_name: str) -> BaseTool:
    """``tool`` behind approval as ``policy`` says."""
    if policy == "never":
        return tool
    if policy == "always":
        return ApprovalTool(tool)
    if callable(policy):
        return ConditionalApprovalTool(tool, remote_name, policy)
    return ApprovalTool(tool) if remote_name in policy else tool
