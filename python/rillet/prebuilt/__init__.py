"""Prebuilt agents: Eino's ready-made multi-agent patterns (docs/prebuilt.md).

* :class:`Supervisor`: a supervisor hands work to sub-agents by transfer; each hands control
  straight back.
* :class:`PlanExecuteReplan`: a planner, then an executor and a replanner in a loop.
* :class:`DeepAgent`: a ChatModelAgent with a todo list, sub-agents behind a ``task`` tool
  and optional file tools.

Layer: driving, beside rillet.runner and rillet.middlewares (none imports another). May import
rillet.chatmodel, rillet.sessions and the layers under them (the import-linter contract in
pyproject.toml; docs/architecture.md).
"""

from rillet.prebuilt.deep import GENERAL_AGENT_NAME, TODOS_KEY, DeepAgent, TaskTool, Todo, WriteTodosTool
from rillet.prebuilt.filesystem import Backend, DirectoryBackend, InMemoryBackend, file_tools
from rillet.prebuilt.plan_execute import (
    EXECUTED_STEP_KEY,
    EXECUTED_STEPS_KEY,
    PLAN_KEY,
    PLAN_TOOL,
    RESPOND_TOOL,
    USER_INPUT_KEY,
    ExecutedStep,
    ExecutionContext,
    Plan,
    PlanExecuteReplan,
    Planner,
    Replanner,
    executor,
)
from rillet.prebuilt.supervisor import Supervisor

__all__ = [
    "EXECUTED_STEPS_KEY",
    "EXECUTED_STEP_KEY",
    "GENERAL_AGENT_NAME",
    "PLAN_KEY",
    "PLAN_TOOL",
    "RESPOND_TOOL",
    "TODOS_KEY",
    "USER_INPUT_KEY",
    "Backend",
    "DeepAgent",
    "DirectoryBackend",
    "ExecutedStep",
    "ExecutionContext",
    "InMemoryBackend",
    "Plan",
    "PlanExecuteReplan",
    "Planner",
    "Replanner",
    "Supervisor",
    "TaskTool",
    "Todo",
    "WriteTodosTool",
    "executor",
    "file_tools",
]
