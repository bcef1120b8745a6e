"""Delegation modes of ChatModelAgent sub-agents (ADK-Go's ``installTaskTools``).

A sub-agent's ``mode`` says how its parent reaches it: ``"chat"`` by ``transfer_to_agent``
(the conversation moves to it), ``"single_turn"`` as a tool that runs it once on a branch of
its own (an :class:`~rillet.AgentTool`), ``"task"`` as a task tool: the sub-agent works on the
request on its own branch and ends by calling ``finish_task``, whose validated arguments are
the task's result. A ``finish_task`` call that fails validation is answered with the problems
and the sub-agent's model tries again; an interrupt inside the task is resumed through the
task tool, as with any agent tool.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rillet.compose.agent_tool import AgentTool
from rillet.data.events import AgentAction
from rillet.errors import ToolArgumentsError
from rillet.run.context import Session, current_tool_call, send_tool_gen_action
from rillet.tools import BaseTool, ToolInfo, argument_problems, load_arguments

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pydantic import BaseModel

    from rillet._native import Message, ToolCall
    from rillet.data.events import AgentEvent
    from rillet.run.agent import Agent

__all__ = [
    "FINISH_TASK_TOOL_NAME",
    "MODES",
    "TASK_COMPLETED",
    "TASK_FAILED",
    "TASK_INSTRUCTION",
    "FinishTaskTool",
    "TaskAgentTool",
    "delegation_tool",
    "ends_task",
    "finished_at",
]

MODES = ("chat", "single_turn", "task")
FINISH_TASK_TOOL_NAME = "finish_task"
TASK_COMPLETED = "Task completed."
TASK_FAILED = "Task failed."

TASK_INSTRUCTION = (
    f"You were given a task by another agent. Work on it with your tools until it is fully done; then call "
    f"`{FINISH_TASK_TOOL_NAME}` on its own, with the result as its arguments and no text. Do not call it before "
    "the task is done."
)

_DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"result": {"type": "string", "description": "A short summary of what the task achieved."}},
    "required": ["result"],
    "additionalProperties": False,
}


def check_mode(agent_name: str, mode: Any) -> str:
    """``mode`` checked to be one of :data:`MODES`."""
    if mode not in MODES:
        raise ValueError(
            f"ChatModelAgent {agent_name!r}: mode must be one of 'chat' (reached by transfer_to_agent), "
            f"'single_turn' (called once as a tool) or 'task' (a task tool ended by finish_task); got {mode!r}"
        )
    return str(mode)


def mode_of(agent: Agent) -> str:
    """The delegation mode of a sub-agent (agents without one are reached by transfer)."""
    mode = getattr(agent, "mode", "chat")
    if mode not in MODES:
        raise ValueError(f"sub-agent {agent.name!r}: unknown delegation mode {mode!r}; use one of {', '.join(MODES)}")
    return str(mode)


class FinishTaskTool(BaseTool):
    """``finish_task``: a task-mode agent's way to end its task. Its arguments are checked
    against the agent's ``output_type`` (default: ``{"result": str}``); the call then returns
    :data:`TASK_COMPLETED`, its event carries the result as the customized action
    ``{"finish_task": result}``, and the agent's run ends; invalid arguments return the
    problems to the model, and the run goes on."""

    def __init__(self, agent_name: str, output_type: type[BaseModel] | None = None) -> None:
        self.agent_name = agent_name
        self.output_type = output_type
        schema = output_type.model_json_schema() if output_type is not None else _DEFAULT_SCHEMA
        description = (
            "Ends the task you were given and reports its result to the agent that gave it. Call it once the task "
            "is done, on its own, with no text."
        )
        self.info = ToolInfo(FINISH_TASK_TOOL_NAME, description, schema)

    def check(self, arguments: str) -> tuple[dict[str, Any] | None, list[str]]:
        """(the task's result, []) or (None, what is wrong with ``arguments``)."""
        try:
            data = load_arguments(FINISH_TASK_TOOL_NAME, arguments)
        except ToolArgumentsError as e:
            return None, list(e.problems)
        if self.output_type is None:
            extra = sorted(set(data) - {"result"})
            out = [] if isinstance(data.get("result"), str) else ["argument 'result': a string is required"]
            out += [f"unknown arguments {extra}; the tool takes: result"] if extra else []
            return (None, out) if out else (data, [])
        import pydantic  # imported here: `import rillet` does not load pydantic

        try:
            return self.output_type.model_validate(data).model_dump(mode="json"), []
        except pydantic.ValidationError as e:
            return None, argument_problems(e.errors(include_url=False))

    async def invoke(self, arguments: str) -> str:
        result, problems = self.check(arguments)
        if result is not None:
            if current_tool_call() is not None:  # run by an agent: the result goes on its event
                send_tool_gen_action(AgentAction(customized_action={FINISH_TASK_TOOL_NAME: result}))
            return TASK_COMPLETED
        return (
            f"{FINISH_TASK_TOOL_NAME} was not accepted: {'; '.join(problems)}. The task is not finished: call "
            f"{FINISH_TASK_TOOL_NAME} again with every required argument, of the right type."
        )


def ends_task(mode: str, result: Message) -> bool:
    """Whether ``result`` of a ``finish_task`` call ends the run of an agent in ``mode``: it
    succeeded, and the agent is in task mode (it ends the run as a return-directly tool does)."""
    return mode == "task" and result.content == TASK_COMPLETED


def finished_at(mode: str, calls: Sequence[ToolCall], results: dict[int, Message]) -> int:
    """The position of the round's successful ``finish_task`` call, or -1."""
    if mode != "task":
        return -1
    for i, c in enumerate(calls):
        if c.function.name == FINISH_TASK_TOOL_NAME and i in results and ends_task(mode, results[i]):
            return i
    return -1


class TaskAgentTool(AgentTool):
    """A task-mode sub-agent as its parent's tool. The result is :data:`TASK_COMPLETED` and
    the JSON arguments of the sub-agent's successful ``finish_task`` call, or
    :data:`TASK_FAILED` and why (the sub-agent ended without finishing its task)."""

    async def _result(self, last: AgentEvent, session: Session) -> str:
        # the task agent's own finish_task event (from the inner log: it may predate a resume)
        for ev in reversed(session.snapshot()):
            custom = ev.action.customized_action if ev.action is not None else None
            if isinstance(custom, dict) and FINISH_TASK_TOOL_NAME in custom and ev.agent_name == self.info.name:
                return f"{TASK_COMPLETED}\n{json.dumps(custom[FINISH_TASK_TOOL_NAME], ensure_ascii=False)}"
        said = await super()._result(last, session)
        why = f"{self.info.name!r} ended without calling {FINISH_TASK_TOOL_NAME}"
        return f"{TASK_FAILED}\n{why}" + (f"; its last message: {said}" if said else "")


def delegation_tool(sub: Agent, mode: str, finish: object) -> BaseTool:
    """The tool a parent is given for a sub-agent in ``single_turn`` or ``task`` mode;
    ``finish``: the sub-agent's ``finish_task`` tool, which a task-mode agent must have."""
    if mode == "task":
        if not isinstance(finish, FinishTaskTool):
            raise ValueError(
                f"sub-agent {sub.name!r} is in task mode but is a {type(sub).__name__}: a task is ended by the "
                f"{FINISH_TASK_TOOL_NAME} tool, which only a ChatModelAgent(mode='task') (a model that calls tools) "
                "has; use mode 'single_turn' or wrap the agent in AgentTool"
            )
        return TaskAgentTool(sub)
    return AgentTool(sub)
