"""DeepAgent (Eino's ``adk/prebuilt/deep``): a ChatModelAgent that plans with a todo list,
hands self-contained pieces of work to sub-agents through one ``task`` tool, and optionally
reads and writes files.

* ``write_todos(todos)`` stores the list (:class:`Todo` objects) in the session values under
  :data:`TODOS_KEY`, where the application (and every agent of the run) can read it.
* ``task(subagent_type, description)`` runs the named sub-agent as an
  :class:`~rillet.AgentTool` with ``description`` as its request: a fresh conversation, the
  run's session values, and its last message as the tool's result. Its interrupts travel up
  through the task call (address ``...;tool:task:<call id>;agent:<sub-agent>;...``) and resume
  there.
* A ``general-purpose`` sub-agent, made from the DeepAgent's own model, instruction and tools
  (without ``task``), is always offered unless ``general_agent=False``.
* ``backend=`` adds ``ls``, ``read_file``, ``write_file`` and ``edit_file``
  (:mod:`rillet.prebuilt.filesystem`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rillet._native import Message
from rillet.chatmodel import ChatModelAgent
from rillet.compose.agent_tool import AgentTool
from rillet.data import codec
from rillet.prebuilt.filesystem import Backend, file_tools
from rillet.run.agent import Agent, AgentInput
from rillet.run.context import add_session_value
from rillet.tools import BaseTool, ToolArgumentsError, ToolInfo, as_tool
from rillet.tools.toolset import is_toolset

if TYPE_CHECKING:
    from rillet.models.base import ChatModel

__all__ = ["GENERAL_AGENT_NAME", "TODOS_KEY", "DeepAgent", "TaskTool", "Todo", "WriteTodosTool"]

TODOS_KEY = "deep_agent_session_key_todos"
"""The session key of the todo list (Eino's)."""

GENERAL_AGENT_NAME = "general-purpose"

STATUSES = ("pending", "in_progress", "completed")

BASE_INSTRUCTION = """You are a capable assistant that works through multi-step tasks carefully.
Understand what is asked before acting. Work in small, checked steps, use your tools to find out rather than guess, and say plainly when something cannot be done.
When you are done, answer the user directly and concisely with what they asked for."""

TODOS_INSTRUCTION = """## Todo list
For a task of three or more steps, call `write_todos` first with the steps, each pending; mark a step in_progress when you start it and completed as soon as it is done (send the whole list each time). Skip the list for simple requests."""

TASK_INSTRUCTION = """## Sub-agents
`task` hands a self-contained piece of work to a sub-agent, which starts with a fresh conversation: describe the work completely (goal, inputs, what to return). Independent pieces can be given out in one turn. The sub-agent's final message is the tool's result; the user does not see it, so pass on what matters."""

FILES_INSTRUCTION = """## Files
`ls`, `read_file`, `write_file` and `edit_file` work on the files of this task. Read a file before editing it."""

GENERAL_AGENT_DESCRIPTION = (
    "A general-purpose agent with the same tools as you: give it research or multi-step work that "
    "would otherwise fill your conversation."
)


@codec.register_type(name="rillet.prebuilt.todo")
@dataclass(frozen=True, slots=True)
class Todo:
    """One entry of the todo list."""

    content: str
    status: str = "pending"
    active_form: str = ""


class WriteTodosTool(BaseTool):
    """``write_todos(todos)``: replaces the todo list in the session values (:data:`TODOS_KEY`)."""

    info = ToolInfo(
        "write_todos",
        "Writes the todo list of the current task: the whole list each time, every item with its status "
        "(pending, in_progress or completed).",
        {
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "description": "What to do."},
                            "status": {"type": "string", "enum": list(STATUSES)},
                            "active_form": {"type": "string", "description": "The step as it is being done."},
                        },
                        "required": ["content", "status"],
                    },
                }
            },
            "required": ["todos"],
        },
    )

    async def invoke(self, arguments: str) -> str:
        todos = _parse_todos(arguments)
        add_session_value(TODOS_KEY, todos)
        listed = [{"content": t.content, "status": t.status} for t in todos]
        return f"Updated todo list to {json.dumps(listed, ensure_ascii=False)}"


def _parse_todos(arguments: str) -> list[Todo]:
    name = WriteTodosTool.info.name
    try:
        data = json.loads(arguments or "{}")
    except ValueError as e:
        raise ToolArgumentsError(name, [f"arguments are not valid JSON: {e}"]) from None
    items = data.get("todos") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ToolArgumentsError(name, ["argument 'todos': a list of {content, status} objects is required"])
    todos: list[Todo] = []
    problems: list[str] = []
    for i, item in enumerate(items):
        content = item.get("content") if isinstance(item, dict) else None
        status = item.get("status", "pending") if isinstance(item, dict) else None
        active = item.get("active_form", item.get("activeForm", "")) if isinstance(item, dict) else ""
        if not isinstance(content, str) or status not in STATUSES or not isinstance(active, str):
            problems.append(f"todos[{i}]: needs content (a string) and status (one of {', '.join(STATUSES)})")
            continue
        todos.append(Todo(content, status, active))
    if problems:
        raise ToolArgumentsError(name, problems)
    return todos


class TaskTool(BaseTool):
    """``task(subagent_type, description)``: runs the sub-agent named ``subagent_type`` as an
    :class:`~rillet.AgentTool` on ``description``."""

    def __init__(self, agents: Sequence[Agent], description: str | None = None) -> None:
        self.tools: dict[str, AgentTool] = {}
        for a in agents:
            if a.name in self.tools:
                raise ValueError(f"DeepAgent: two sub-agents are named {a.name!r}; sub-agent names must be unique")
            self.tools[a.name] = AgentTool(a)
        listing = "\n".join(f"- {a.name}: {a.description}" for a in agents)
        self.info = ToolInfo(
            "task",
            description
            or (
                "Hands a self-contained piece of work to a sub-agent and returns its final answer. "
                f"Sub-agents (subagent_type):\n{listing}"
            ),
            {
                "type": "object",
                "properties": {
                    "subagent_type": {"type": "string", "enum": list(self.tools), "description": "Which sub-agent."},
                    "description": {"type": "string", "description": "The work, described completely."},
                },
                "required": ["subagent_type", "description"],
            },
        )

    async def invoke(self, arguments: str) -> str:
        try:
            data = json.loads(arguments or "{}")
        except ValueError as e:
            raise ToolArgumentsError("task", [f"arguments are not valid JSON: {e}"]) from None
        kind = data.get("subagent_type") if isinstance(data, dict) else None
        request = data.get("description") if isinstance(data, dict) else None
        problems = []
        if kind not in self.tools:
            problems.append(f"argument 'subagent_type': {kind!r} is not one of {', '.join(self.tools)}")
        if not isinstance(request, str):
            problems.append("argument 'description': a string is required")
        if problems or not isinstance(kind, str):
            raise ToolArgumentsError("task", problems)
        # the sub-agent's address continues under this call: ...;tool:task:<call id>;agent:<sub>
        return await self.tools[kind].invoke(json.dumps({"request": request}))


def _with_system(instruction: str, input: AgentInput) -> list[Message]:
    """Eino's DeepAgent model input: the instruction as is (not formatted with the session
    values, which hold the todo list) and the input messages."""
    return [Message.system(instruction), *input.messages] if instruction else list(input.messages)


class DeepAgent(ChatModelAgent):
    """A ChatModelAgent with a todo list, sub-agents behind a ``task`` tool, and optional files.

    Args:
        model: the chat model (also the general-purpose sub-agent's).
        name, description: as for ChatModelAgent.
        instruction: the system prompt; empty: a default one. The sections for the todo list,
            the task tool and the files are appended to either.
        sub_agents: agents (each with a name and a description) that ``task`` can run.
        tools: the agent's own tools (the general-purpose sub-agent gets them too).
        backend: a :class:`~rillet.prebuilt.filesystem.Backend` for the file tools.
        write_todos: offer ``write_todos`` (default True).
        general_agent: add the ``general-purpose`` sub-agent (default True).
        task_description: replaces the task tool's description.
        max_iterations: most model calls per run, for it and the general-purpose sub-agent.
        **options: other ChatModelAgent keywords (callbacks, ``tool_error``,
            ``model_options``...), given to the general-purpose sub-agent too, except the
            output ones.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        name: str = "deep_agent",
        description: str = "plans with a todo list and delegates work to sub-agents",
        instruction: str = "",
        sub_agents: Iterable[Agent] = (),
        tools: Iterable[Any] = (),
        backend: Backend | None = None,
        write_todos: bool = True,
        general_agent: bool = True,
        task_description: str | None = None,
        max_iterations: int = 20,
        **options: Any,
    ) -> None:
        if backend is not None and not isinstance(backend, Backend):
            raise TypeError(f"DeepAgent: backend must have ls, read and write, got {type(backend).__name__}")
        options.setdefault("gen_model_input", _with_system)
        own = [t if is_toolset(t) else as_tool(t) for t in tools]  # a toolset is resolved by each agent's run
        builtin: list[BaseTool] = [WriteTodosTool()] if write_todos else []
        if backend is not None:
            builtin += file_tools(backend)
        sections = [instruction or BASE_INSTRUCTION]
        if write_todos:
            sections.append(TODOS_INSTRUCTION)
        if backend is not None:
            sections.append(FILES_INSTRUCTION)
        agents = list(sub_agents)
        self.general_agent: ChatModelAgent | None = None
        if general_agent:
            if any(a.name == GENERAL_AGENT_NAME for a in agents):
                raise ValueError(
                    f"DeepAgent: a sub-agent is named {GENERAL_AGENT_NAME!r}, the built-in one's name; rename it "
                    "or pass general_agent=False"
                )
            cloned = {k: v for k, v in options.items() if k not in ("output_key", "output_type", "output_retries")}
            self.general_agent = ChatModelAgent(
                GENERAL_AGENT_NAME,
                description=GENERAL_AGENT_DESCRIPTION,
                instruction="\n\n".join(sections),
                model=model,
                tools=[*own, *builtin],
                max_iterations=max_iterations,
                **cloned,
            )
            agents.insert(0, self.general_agent)
        self.task_tool: TaskTool | None = None
        if agents:
            self.task_tool = TaskTool(agents, task_description)
            builtin.append(self.task_tool)
            sections.append(TASK_INSTRUCTION)
        self._children = list(agents)  # (the task tool runs them; set once: sub_agents is read-only)
        super().__init__(
            name,
            description=description,
            instruction="\n\n".join(sections),
            model=model,
            tools=[*own, *builtin],
            max_iterations=max_iterations,
            **options,
        )
