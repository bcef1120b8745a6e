"""ChatModelAgent's configuration: its errors, the contexts its callbacks see, the callback
types, and the checks that turn a mistaken constructor call into a clear error."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rillet._native import AgenticMessage, Message
from rillet.errors import ExceedMaxIterationsError, ToolCallError
from rillet.run.agent import AgentInput
from rillet.run.context import SESSION_STATE, SessionState
from rillet.tools import BaseTool

if TYPE_CHECKING:
    from rillet.tools import ToolInfo

__all__ = [
    "AfterAgent",
    "AfterModel",
    "AfterTool",
    "BeforeAgent",
    "BeforeModel",
    "BeforeTool",
    "ExceedMaxIterationsError",
    "GenModelInput",
    "ModelContext",
    "OnModelError",
    "OnToolError",
    "ToolCallContext",
    "ToolCallError",
    "ToolWrapper",
]


@dataclass(slots=True)
class ModelContext:
    """What a model callback sees: the agent, the iteration (1 = first model call), the
    messages about to be sent (``before_model``) and the tools offered."""

    agent_name: str
    iteration: int
    messages: list[Message]
    tools: list[ToolInfo] = field(default_factory=list)

    @property
    def state(self) -> SessionState:
        """The run's session values (read and write; Google ADK's ``callback_context.state``)."""
        return SESSION_STATE


@dataclass(slots=True)
class ToolCallContext:
    """What a tool-call wrapper sees: the tool's name, the call id and its JSON arguments."""

    agent_name: str
    tool_name: str
    call_id: str
    arguments: str

    @property
    def state(self) -> SessionState:
        """The run's session values (read and write; Google ADK's ``tool_context.state``)."""
        return SESSION_STATE


BeforeModel = Callable[
    [ModelContext],
    "Message | AgenticMessage | list[Message] | list[AgenticMessage] | None"
    " | Awaitable[Message | AgenticMessage | list[Message] | list[AgenticMessage] | None]",
]
"""Before a model call: an assistant message is the response (the model is not called); a
list of messages (of the conversation's type) replaces the conversation and the next callback
runs; None goes on."""
AfterModel = (
    Callable[[ModelContext, Message], "Message | None | Awaitable[Message | None]"]
    | Callable[[ModelContext, AgenticMessage], "AgenticMessage | None | Awaitable[AgenticMessage | None]"]
    | Callable[
        [ModelContext, Message | AgenticMessage],
        "Message | AgenticMessage | None | Awaitable[Message | AgenticMessage | None]",
    ]
)
"""After a model call: a message replaces the reply (the event shows it); None keeps it. A
callback takes the run's message type (a Message, or a block-list run's AgenticMessage), or
both."""
OnModelError = Callable[
    [ModelContext, Exception], "Message | AgenticMessage | None | Awaitable[Message | AgenticMessage | None]"
]
"""A model call raised: a message is the reply instead (the run goes on); None lets it stand."""
BeforeTool = Callable[[ToolCallContext, dict[str, Any]], Any]
"""Before a tool call, with its parsed arguments: a result (str, or JSON-able data) is the
call's result and the tool is not run; None runs it. May be ``async``."""
AfterTool = Callable[[ToolCallContext, dict[str, Any], str], Any]
"""After a tool call with its result text: a result replaces it; None keeps it. May be ``async``."""
OnToolError = Callable[[ToolCallContext, dict[str, Any], Exception], Any]
"""A tool call raised: a result recovers the call; None lets the agent's ``tool_error``
policy handle the error. May be ``async``."""
ToolWrapper = Callable[[ToolCallContext, Callable[[str], Awaitable[str]]], Awaitable[str]]
BeforeAgent = Callable[[AgentInput], "AgentInput | None | Awaitable[AgentInput | None]"]
AfterAgent = Callable[[list[Message]], "None | Awaitable[None]"]
GenModelInput = Callable[[str, AgentInput], "list[Message] | Awaitable[list[Message]]"]


def awaitable(value: Any, model: Any, method: str) -> Awaitable[Any]:
    """What a ChatModel method returned, checked to be awaitable (it must be `async def`)."""
    if not inspect.isawaitable(value):
        raise TypeError(
            f"{type(model).__name__}.{method} must be `async def` (the ChatModel protocol); it returned {type(value).__name__}"
        )
    awaitable_value: Awaitable[Any] = value
    return awaitable_value


async def maybe_await(value: Any) -> Any:
    """A callback's result: sync callbacks return it, async ones a coroutine of it."""
    return await value if inspect.isawaitable(value) else value


def as_list(fns: Any) -> list[Any]:
    """A callback argument (None, one callable, or several) as a list."""
    if fns is None:
        return []
    if callable(fns):
        return [fns]
    return list(fns)


def check_arguments(
    name: Any,
    description: Any,
    instruction: Any,
    model: Any,
    tools: Any,
    return_directly: Any,
    max_iterations: Any,
    exit_tool: Any,
) -> None:
    """Clear errors for the mistakes people make when building a ChatModelAgent."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"ChatModelAgent(name=...): a non-empty str is required, got {name!r}")
    where = "ChatModelAgent " + repr(name)  # only errors read it; cheaper than an f-string call chain
    if type(description) is not str or type(instruction) is not str:
        for field_name, value in (("description", description), ("instruction", instruction)):
            if not isinstance(value, str):
                raise TypeError(f"{where}: {field_name} must be str, got {type(value).__name__}")
    if model is None:
        raise ValueError(
            f"{where}: model is required (for example ScriptedModel([...]) or OpenAIChatModel('gpt-4o-mini'))"
        )
    if not (callable(getattr(model, "generate", None)) and callable(getattr(model, "stream", None))):
        hint = f"; for a hosted model use OpenAIChatModel({model!r})" if isinstance(model, str) else ""
        raise TypeError(
            f"{where}: model must be a ChatModel (async generate and stream), got {type(model).__name__}{hint}"
        )
    if isinstance(tools, (str, bytes, BaseTool)) or callable(tools) or not hasattr(tools, "__iter__"):
        raise TypeError(f"{where}: tools must be a list of tools, got {type(tools).__name__}; write tools=[...]")
    if isinstance(return_directly, str):
        raise TypeError(f"{where}: return_directly must be a set of tool names, e.g. {{{return_directly!r}}}")
    if not isinstance(max_iterations, int) or isinstance(max_iterations, bool):
        raise TypeError(f"{where}: max_iterations must be an int, got {max_iterations!r}")
    if exit_tool is not None and not isinstance(exit_tool, BaseTool):
        what = (
            "the class; pass an instance, e.g. ExitTool()" if isinstance(exit_tool, type) else type(exit_tool).__name__
        )
        raise TypeError(f"{where}: exit_tool must be a tool instance, got {what}")
