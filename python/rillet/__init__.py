"""rillet: an event-stream agent development kit for Python with a Rust core."""

from rillet import codec, schema
from rillet._native import EMPTY, Channel, ChannelClosed, DecodeError, EncodeError, RilletError, __version__
from rillet.agent import Agent, AgentInput, BaseAgent, RunIterator
from rillet.chatmodel import ChatModelAgent, ExceedMaxIterationsError, ModelContext, ToolCallContext, ToolCallError
from rillet.context import (
    add_session_value,
    add_session_values,
    get_session_value,
    get_session_values,
    send_tool_gen_action,
)
from rillet.event_pair import EventGenerator, EventIterator, new_event_pair
from rillet.events import (
    AgentAction,
    AgentEvent,
    AgentOutput,
    BreakLoopAction,
    MessageVariant,
    RunStep,
    TransferToAgentAction,
    aget_message,
    event_from_message,
    get_message,
    new_break_loop_action,
    new_exit_action,
    new_transfer_to_agent_action,
)
from rillet.interrupt import InterruptCtx, InterruptInfo
from rillet.models import ChatModel, ModelCall, ScriptedModel, ScriptExhaustedError
from rillet.runner import Runner
from rillet.schema import *  # noqa: F403  (messages and streams: see schema.__all__)
from rillet.tools import BaseTool, ExitTool, FunctionTool, ToolArgumentsError, ToolInfo, as_tool, tool

__all__ = [
    "EMPTY",
    "Agent",
    "AgentAction",
    "AgentEvent",
    "AgentInput",
    "AgentOutput",
    "BaseAgent",
    "BaseTool",
    "BreakLoopAction",
    "Channel",
    "ChannelClosed",
    "ChatModel",
    "ChatModelAgent",
    "DecodeError",
    "EncodeError",
    "EventGenerator",
    "EventIterator",
    "ExceedMaxIterationsError",
    "ExitTool",
    "FunctionTool",
    "InterruptCtx",
    "InterruptInfo",
    "MessageVariant",
    "ModelCall",
    "ModelContext",
    "RilletError",
    "RunIterator",
    "RunStep",
    "Runner",
    "ScriptExhaustedError",
    "ScriptedModel",
    "ToolArgumentsError",
    "ToolCallContext",
    "ToolCallError",
    "ToolInfo",
    "TransferToAgentAction",
    "__version__",
    "add_session_value",
    "add_session_values",
    "aget_message",
    "as_tool",
    "codec",
    "event_from_message",
    "get_message",
    "get_session_value",
    "get_session_values",
    "new_break_loop_action",
    "new_event_pair",
    "new_exit_action",
    "new_transfer_to_agent_action",
    "send_tool_gen_action",
    "tool",
]
__all__ += schema.__all__
