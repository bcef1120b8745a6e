"""rillet: an event-stream agent development kit for Python with a Rust core."""

# First: outside the main interpreter, one clear ImportError before anything else loads.
from rillet import _interpreter  # noqa: F401  # isort: skip

import logging as _logging

# Records go to the "rillet.*" loggers (docs/logging.md); the application chooses handlers.
_logging.getLogger("rillet").addHandler(_logging.NullHandler())

from rillet import codec, schema
from rillet._native import EMPTY, Channel, __version__
from rillet.agent import Agent, AgentCallback, AgentInput, BaseAgent, CallbackContext, RunIterator, StateDelta
from rillet.agent_tool import AgentTool, AgentToolError
from rillet.chatmodel import ChatModelAgent, ExceedMaxIterationsError, ModelContext, ToolCallContext, ToolCallError
from rillet.context import (
    add_session_value,
    add_session_values,
    get_session_value,
    get_session_values,
    send_tool_gen_action,
)
from rillet.errors import ChannelClosed, DecodeError, EncodeError, EndOfStream, RilletError
from rillet.event_pair import EventGenerator, EventIterator, new_event_pair
from rillet.events import (
    AgentAction,
    AgentEvent,
    AgentOutput,
    BreakLoopAction,
    MessageVariant,
    RunPath,
    RunStep,
    TransferToAgentAction,
    aget_message,
    event_from_message,
    get_message,
    new_break_loop_action,
    new_exit_action,
    new_transfer_to_agent_action,
)
from rillet.approval import ApprovalDecision, approve, edit, reject, requires_approval
from rillet.checkpoint import (
    CheckpointAgentMismatchError,
    CheckpointClaimedError,
    CheckpointCorruptError,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStore,
    InMemoryCheckpointStore,
    SqliteCheckpointStore,
)
from rillet.interrupt import (
    InterruptCtx,
    InterruptInfo,
    Interrupted,
    composite_interrupt,
    composite_interrupt_event,
    get_interrupt_state,
    get_resume_context,
    interrupt,
    interrupt_event,
    stateful_interrupt,
    stateful_interrupt_event,
)
from rillet.models import ChatModel, ModelCall, OpenAIChatModel, ScriptedModel, ScriptExhaustedError
from rillet.flow import (
    FlowAgent,
    HistoryEntry,
    TransferError,
    set_sub_agents,
    with_deterministic_transfer_to,
    with_disallow_transfer_to_parent,
    with_history_rewriter,
)
from rillet.runner import Runner
from rillet.workflow import LoopAgent, ParallelAgent, SequentialAgent
from rillet.schema import *  # noqa: F403  (messages and streams: see schema.__all__)
from rillet.tools import BaseTool, ExitTool, FunctionTool, ToolArgumentsError, ToolInfo, as_tool, tool

__all__ = [
    "Agent",
    "AgentAction",
    "AgentCallback",
    "AgentEvent",
    "AgentInput",
    "AgentOutput",
    "AgentTool",
    "AgentToolError",
    "ApprovalDecision",
    "BaseAgent",
    "BaseTool",
    "BreakLoopAction",
    "CallbackContext",
    "Channel",
    "ChannelClosed",
    "ChatModel",
    "ChatModelAgent",
    "CheckpointAgentMismatchError",
    "CheckpointClaimedError",
    "CheckpointCorruptError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointStore",
    "DecodeError",
    "EMPTY",
    "EncodeError",
    "EndOfStream",
    "EventGenerator",
    "EventIterator",
    "ExceedMaxIterationsError",
    "ExitTool",
    "FlowAgent",
    "FunctionTool",
    "HistoryEntry",
    "InMemoryCheckpointStore",
    "InterruptCtx",
    "InterruptInfo",
    "Interrupted",
    "LoopAgent",
    "MessageVariant",
    "OpenAIChatModel",
    "ModelCall",
    "ModelContext",
    "ParallelAgent",
    "RilletError",
    "RunIterator",
    "RunPath",
    "RunStep",
    "Runner",
    "ScriptExhaustedError",
    "ScriptedModel",
    "SequentialAgent",
    "SqliteCheckpointStore",
    "StateDelta",
    "ToolArgumentsError",
    "ToolCallContext",
    "ToolCallError",
    "ToolInfo",
    "TransferError",
    "TransferToAgentAction",
    "__version__",
    "add_session_value",
    "add_session_values",
    "aget_message",
    "approve",
    "as_tool",
    "codec",
    "composite_interrupt",
    "composite_interrupt_event",
    "edit",
    "event_from_message",
    "get_interrupt_state",
    "get_message",
    "get_resume_context",
    "get_session_value",
    "get_session_values",
    "interrupt",
    "interrupt_event",
    "new_break_loop_action",
    "new_event_pair",
    "new_exit_action",
    "new_transfer_to_agent_action",
    "reject",
    "requires_approval",
    "send_tool_gen_action",
    "set_sub_agents",
    "stateful_interrupt",
    "stateful_interrupt_event",
    "tool",
    "with_deterministic_transfer_to",
    "with_disallow_transfer_to_parent",
    "with_history_rewriter",
]
__all__ += schema.__all__
