"""rillet: an event-stream agent development kit for Python with a Rust core."""

# First: outside the main interpreter, one clear ImportError before anything else loads.
from rillet import _interpreter  # noqa: F401  # isort: skip

import logging as _logging

# Records go to the "rillet.*" loggers (docs/logging.md); the application chooses handlers.
_logging.getLogger("rillet").addHandler(_logging.NullHandler())

from rillet import codec
from rillet._native import EMPTY, Channel, __version__
from rillet.agent import Agent, AgentCallback, AgentInput, BaseAgent, CallbackContext, RunIterator, StateDelta
from rillet.agent_tool import AgentTool, AgentToolError
from rillet.approval import ApprovalDecision, approve, edit, reject, requires_approval
from rillet.chatmodel import ChatModelAgent, ExceedMaxIterationsError, ModelContext, ToolCallContext, ToolCallError
from rillet.chatmodel.middleware import ChatModelAgentContext, ChatModelAgentMiddleware, ChatModelAgentState
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
from rillet.context import (
    add_session_value,
    add_session_values,
    delete_run_local_value,
    get_run_local_value,
    get_session_value,
    get_session_values,
    send_event,
    send_tool_gen_action,
    set_run_local_value,
)
from rillet.errors import (
    ChannelClosed,
    DecodeError,
    EncodeError,
    EndOfStream,
    MiddlewareError,
    OutputValidationError,
    RilletError,
    SessionBusyError,
    SessionError,
)
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
    apeek_message,
    event_from_message,
    get_message,
    new_break_loop_action,
    new_exit_action,
    new_transfer_to_agent_action,
    peek_message,
)
from rillet.flow import (
    FlowAgent,
    HistoryEntry,
    TransferError,
    set_sub_agents,
    with_deterministic_transfer_to,
    with_disallow_transfer_to_parent,
    with_history_rewriter,
)
from rillet.interrupt import (
    InterruptCtx,
    Interrupted,
    InterruptInfo,
    InterruptState,
    ResumeContext,
    composite_interrupt,
    composite_interrupt_event,
    get_interrupt_state,
    get_resume_context,
    interrupt,
    interrupt_event,
    stateful_interrupt,
    stateful_interrupt_event,
)
from rillet.live import LiveRequestQueue
from rillet.models import ChatModel, ModelCall, OpenAIChatModel, ScriptedModel, ScriptExhaustedError
from rillet.observer import ModelInfo, RunInfo, RunObserver
from rillet.run_config import RunConfig
from rillet.runner import Runner
from rillet.schema import *
from rillet.sessions import (
    InMemorySessionStore,
    LastTurns,
    SessionStore,
    SqliteSessionStore,
    SummarizeOldest,
    TokenBudget,
)
from rillet.tools import BaseTool, ExitTool, FunctionTool, ToolArgumentsError, ToolInfo, as_tool, tool
from rillet.workflow import LoopAgent, ParallelAgent, SequentialAgent

# The public surface, grouped; each group sorted. tests/test_public_api.py pins it.
__all__ = [
    # Messages and streams (Rust-backed; also in rillet.schema)
    "NO_VALUE",
    "ConcatError",
    "ContentPart",
    "FunctionCall",
    "Message",
    "MessageAccumulator",
    "ResponseMeta",
    "SourceEOF",
    "StreamEOF",
    "StreamReader",
    "StreamWriter",
    "ToolCall",
    "Usage",
    "aconcat_message_stream",
    "concat_message_stream",
    "concat_messages",
    "convert_stream",
    "merge_named_streams",
    "merge_streams",
    "pipe",
    "stream_from_list",
    # Channels and event iterators
    "EMPTY",
    "Channel",
    "ChannelClosed",
    "EndOfStream",
    "EventGenerator",
    "EventIterator",
    "new_event_pair",
    # Events and actions
    "AgentAction",
    "AgentEvent",
    "AgentOutput",
    "BreakLoopAction",
    "MessageVariant",
    "RunPath",
    "RunStep",
    "TransferToAgentAction",
    "apeek_message",
    "event_from_message",
    "new_break_loop_action",
    "new_exit_action",
    "new_transfer_to_agent_action",
    "peek_message",
    # Agents
    "Agent",
    "AgentCallback",
    "AgentInput",
    "BaseAgent",
    "CallbackContext",
    "RunIterator",
    "StateDelta",
    # The ReAct agent
    "ChatModelAgent",
    "ExceedMaxIterationsError",
    "ModelContext",
    "MiddlewareError",
    "OutputValidationError",
    "ToolCallContext",
    "ToolCallError",
    # Multi-agent: transfer, workflows, agents as tools
    "AgentTool",
    "AgentToolError",
    "FlowAgent",
    "HistoryEntry",
    "LoopAgent",
    "ParallelAgent",
    "SequentialAgent",
    "TransferError",
    "set_sub_agents",
    "with_deterministic_transfer_to",
    "with_disallow_transfer_to_parent",
    "with_history_rewriter",
    # Tools and approval
    "ApprovalDecision",
    "BaseTool",
    "ExitTool",
    "FunctionTool",
    "ToolArgumentsError",
    "ToolInfo",
    "approve",
    "as_tool",
    "edit",
    "reject",
    "requires_approval",
    "send_tool_gen_action",
    "ChatModelAgentContext",
    "ChatModelAgentMiddleware",
    "ChatModelAgentState",
    "delete_run_local_value",
    "get_run_local_value",
    "send_event",
    "set_run_local_value",
    "tool",
    # Runs and session values
    "ModelInfo",
    "RunInfo",
    "RunObserver",
    "Runner",
    "RunConfig",
    "LiveRequestQueue",
    "add_session_value",
    "add_session_values",
    "get_session_value",
    "get_session_values",
    # Interrupts
    "InterruptCtx",
    "InterruptInfo",
    "InterruptState",
    "Interrupted",
    "ResumeContext",
    "composite_interrupt",
    "composite_interrupt_event",
    "get_interrupt_state",
    "get_resume_context",
    "interrupt",
    "interrupt_event",
    "stateful_interrupt",
    "stateful_interrupt_event",
    # Checkpoints and the codec
    "CheckpointAgentMismatchError",
    "CheckpointClaimedError",
    "CheckpointCorruptError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointStore",
    "DecodeError",
    "EncodeError",
    "InMemoryCheckpointStore",
    "SqliteCheckpointStore",
    "codec",
    # Sessions
    "InMemorySessionStore",
    "LastTurns",
    "SessionBusyError",
    "SessionError",
    "SessionStore",
    "SqliteSessionStore",
    "SummarizeOldest",
    "TokenBudget",
    # Models
    "ChatModel",
    "ModelCall",
    "OpenAIChatModel",
    "ScriptExhaustedError",
    "ScriptedModel",
    # The base of rillet's errors, and the version
    "RilletError",
    "__version__",
    # Deprecated aliases: peek_message and apeek_message
    "aget_message",
    "get_message",
]
