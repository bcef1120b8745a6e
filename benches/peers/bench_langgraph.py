"""LangGraph's prebuilt ``create_react_agent`` on the peer workloads (see _common.py and
_lc_common.py); run with the Python of the venv made from langgraph.txt."""

from __future__ import annotations

from typing import Any

from _common import TALLY, construction_workload, import_workload, lookup, main
from _lc_common import (
    ScriptedModel,
    approval_workload,
    book_plan,
    concurrent_workload_of,
    http_workload,
    react_plan,
    react_workload,
    workflow_workload,
)
from langgraph.prebuilt import create_react_agent
from langgraph.types import interrupt


def build(model: Any, tools: list[Any], *, system_prompt: str | None = None, **options: Any) -> Any:
    return create_react_agent(model, tools, prompt=system_prompt, **options)


async def book(city: str) -> str:
    """Books a trip to a city."""
    if not interrupt({"tool": "book", "city": city}):  # a person's yes; the tool reruns on resume
        return "not approved"
    TALLY.tools += 1  # counted after the approval: the booking ran once
    return f"booked {city}"


def build_approval(saver: Any) -> Any:
    return create_react_agent(ScriptedModel(plan=book_plan), [book], checkpointer=saver)


def approve(interrupts: list[Any]) -> Any:
    return True


construct_model = ScriptedModel(plan=react_plan)

if __name__ == "__main__":
    main(
        {
            "react": react_workload(build),
            "workflow": workflow_workload(build),
            "approval": approval_workload(
                build_approval, approve, "interrupt() in the tool + AsyncSqliteSaver, resumed by a new agent"
            ),
            "import": import_workload("from langgraph.prebuilt import create_react_agent"),
            "construct": construction_workload(lambda: create_react_agent(construct_model, tools=[lookup])),
            "concurrent": concurrent_workload_of(build),
            "http": http_workload(build),
        }
    )
