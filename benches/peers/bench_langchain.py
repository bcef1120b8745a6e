"""LangChain's ``langchain.agents.create_agent`` on the peer workloads (see _common.py and
_lc_common.py); run with the Python of the venv made from langchain.txt."""

from __future__ import annotations

from typing import Any

from _common import APPROVAL_TOOL, construction_workload, import_workload, lookup, main
from _lc_common import (
    ScriptedModel,
    approval_workload,
    book,
    book_plan,
    concurrent_workload_of,
    http_workload,
    react_plan,
    react_workload,
    workflow_workload,
)
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware


def build(model: Any, tools: list[Any], **options: Any) -> Any:
    return create_agent(model, tools=tools, **options)


def build_approval(saver: Any) -> Any:
    """The framework's own way: HumanInTheLoopMiddleware stops before "book" runs."""
    hitl = HumanInTheLoopMiddleware(interrupt_on={APPROVAL_TOOL: True})
    return create_agent(ScriptedModel(plan=book_plan), tools=[book], middleware=[hitl], checkpointer=saver)


def approve(interrupts: list[Any]) -> Any:
    return {"decisions": [{"type": "approve"}]}  # one decision per gated call of the batch


construct_model = ScriptedModel(plan=react_plan)

if __name__ == "__main__":
    main(
        {
            "react": react_workload(build),
            "workflow": workflow_workload(build),
            "approval": approval_workload(
                build_approval, approve, "HumanInTheLoopMiddleware + AsyncSqliteSaver, resumed by a new agent"
            ),
            "import": import_workload("from langchain.agents import create_agent"),
            "construct": construction_workload(lambda: create_agent(construct_model, tools=[lookup])),
            "concurrent": concurrent_workload_of(build),
            "http": http_workload(build),
        }
    )
