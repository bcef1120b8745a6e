"""rillet: an event-stream agent development kit for Python with a Rust core.

The public names below load on first use (PEP 562): ``import rillet`` costs little, and a
program pays only for the parts it touches (``rillet --version`` does not import the agents,
a tool does not import the Runner). ``from rillet import X`` and ``rillet.X`` work as usual.
"""

# First: outside the main interpreter, one clear ImportError before anything else loads.
from rillet import _interpreter  # noqa: F401  # isort: skip

import logging as _logging
import sys as _sys
import types as _types
from importlib import import_module as _import_module
from importlib.util import find_spec as _find_spec
from typing import TYPE_CHECKING, Any

from rillet._native import __version__

# Records go to the "rillet.*" loggers (docs/logging.md); the application chooses handlers.
_logging.getLogger("rillet").addHandler(_logging.NullHandler())

if TYPE_CHECKING:  # what type checkers and editors see; _EXPORTS below loads the same names
    from rillet import codec
    from rillet._native import EMPTY, Channel
    from rillet.agent import Agent, AgentCallback, AgentInput, BaseAgent, CallbackContext, StateDelta
    from rillet.agent_tool import AgentTool, AgentToolError
    from rillet.approval import ApprovalDecision, approve, edit, reject, requires_approval
    from rillet.chatmodel import ChatModelAgent, ExceedMaxIterationsError, ModelContext, ToolCallContext, ToolCallError
    from rillet.chatmodel.guardrails import (
        GuardrailContext,
        GuardrailRejection,
        GuardrailRetry,
        InputGuardrail,
        OutputGuardrail,
    )
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
        GuardrailError,
        GuardrailRejectedError,
        InputRejectedError,
        MiddlewareError,
        OutputRejectedError,
        OutputValidationError,
        RilletError,
        RunLimitExceededError,
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
    from rillet.interrupts import (
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
    from rillet.models import (
        AnthropicChatModel,
        ChatModel,
        FallbackModel,
        ModelCall,
        OpenAIChatModel,
        OpenAIResponsesModel,
        ScriptedModel,
        ScriptExhaustedError,
    )
    from rillet.observer import ModelInfo, RunInfo, RunObserver
    from rillet.run_config import RunConfig
    from rillet.run_handle import RunIterator
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


# Where each public name lives (tests/test_public_api.py checks this against the imports above).
_EXPORTS: dict[str, str] = {
    "codec": "",  # a submodule
    "EMPTY": "rillet._native",
    "Channel": "rillet._native",
    "Agent": "rillet.agent",
    "AgentCallback": "rillet.agent",
    "AgentInput": "rillet.agent",
    "BaseAgent": "rillet.agent",
    "CallbackContext": "rillet.agent",
    "StateDelta": "rillet.agent",
    "AgentTool": "rillet.agent_tool",
    "AgentToolError": "rillet.agent_tool",
    "ApprovalDecision": "rillet.approval",
    "approve": "rillet.approval",
    "edit": "rillet.approval",
    "reject": "rillet.approval",
    "requires_approval": "rillet.approval",
    "ChatModelAgent": "rillet.chatmodel",
    "ExceedMaxIterationsError": "rillet.chatmodel",
    "ModelContext": "rillet.chatmodel",
    "ToolCallContext": "rillet.chatmodel",
    "ToolCallError": "rillet.chatmodel",
    "ChatModelAgentContext": "rillet.chatmodel.middleware",
    "ChatModelAgentMiddleware": "rillet.chatmodel.middleware",
    "ChatModelAgentState": "rillet.chatmodel.middleware",
    "CheckpointAgentMismatchError": "rillet.checkpoint",
    "CheckpointClaimedError": "rillet.checkpoint",
    "CheckpointCorruptError": "rillet.checkpoint",
    "CheckpointError": "rillet.checkpoint",
    "CheckpointNotFoundError": "rillet.checkpoint",
    "CheckpointStore": "rillet.checkpoint",
    "InMemoryCheckpointStore": "rillet.checkpoint",
    "SqliteCheckpointStore": "rillet.checkpoint",
    "add_session_value": "rillet.context",
    "add_session_values": "rillet.context",
    "delete_run_local_value": "rillet.context",
    "get_run_local_value": "rillet.context",
    "get_session_value": "rillet.context",
    "get_session_values": "rillet.context",
    "send_event": "rillet.context",
    "send_tool_gen_action": "rillet.context",
    "set_run_local_value": "rillet.context",
    "ChannelClosed": "rillet.errors",
    "DecodeError": "rillet.errors",
    "EncodeError": "rillet.errors",
    "EndOfStream": "rillet.errors",
    "MiddlewareError": "rillet.errors",
    "OutputValidationError": "rillet.errors",
    "RilletError": "rillet.errors",
    "RunLimitExceededError": "rillet.errors",
    "SessionBusyError": "rillet.errors",
    "SessionError": "rillet.errors",
    "EventGenerator": "rillet.event_pair",
    "EventIterator": "rillet.event_pair",
    "new_event_pair": "rillet.event_pair",
    "AgentAction": "rillet.events",
    "AgentEvent": "rillet.events",
    "AgentOutput": "rillet.events",
    "BreakLoopAction": "rillet.events",
    "MessageVariant": "rillet.events",
    "RunPath": "rillet.events",
    "RunStep": "rillet.events",
    "TransferToAgentAction": "rillet.events",
    "aget_message": "rillet.events",
    "apeek_message": "rillet.events",
    "event_from_message": "rillet.events",
    "get_message": "rillet.events",
    "new_break_loop_action": "rillet.events",
    "new_exit_action": "rillet.events",
    "new_transfer_to_agent_action": "rillet.events",
    "peek_message": "rillet.events",
    "FlowAgent": "rillet.flow",
    "HistoryEntry": "rillet.flow",
    "TransferError": "rillet.flow",
    "set_sub_agents": "rillet.flow",
    "with_deterministic_transfer_to": "rillet.flow",
    "with_disallow_transfer_to_parent": "rillet.flow",
    "with_history_rewriter": "rillet.flow",
    "InterruptCtx": "rillet.interrupts",
    "Interrupted": "rillet.interrupts",
    "InterruptInfo": "rillet.interrupts",
    "InterruptState": "rillet.interrupts",
    "ResumeContext": "rillet.interrupts",
    "composite_interrupt": "rillet.interrupts",
    "composite_interrupt_event": "rillet.interrupts",
    "get_interrupt_state": "rillet.interrupts",
    "get_resume_context": "rillet.interrupts",
    "interrupt": "rillet.interrupts",
    "interrupt_event": "rillet.interrupts",
    "stateful_interrupt": "rillet.interrupts",
    "stateful_interrupt_event": "rillet.interrupts",
    "ChatModel": "rillet.models",
    "ModelCall": "rillet.models",
    "OpenAIChatModel": "rillet.models",
    "ScriptedModel": "rillet.models",
    "ScriptExhaustedError": "rillet.models",
    "ModelInfo": "rillet.observer",
    "RunInfo": "rillet.observer",
    "RunObserver": "rillet.observer",
    "Runner": "rillet.runner",
    "NO_VALUE": "rillet.schema",
    "ConcatError": "rillet.schema",
    "ContentPart": "rillet.schema",
    "FunctionCall": "rillet.schema",
    "Message": "rillet.schema",
    "MessageAccumulator": "rillet.schema",
    "ResponseMeta": "rillet.schema",
    "SourceEOF": "rillet.schema",
    "StreamEOF": "rillet.schema",
    "StreamReader": "rillet.schema",
    "StreamWriter": "rillet.schema",
    "ToolCall": "rillet.schema",
    "Usage": "rillet.schema",
    "aconcat_message_stream": "rillet.schema",
    "concat_message_stream": "rillet.schema",
    "concat_messages": "rillet.schema",
    "convert_stream": "rillet.schema",
    "merge_named_streams": "rillet.schema",
    "merge_streams": "rillet.schema",
    "pipe": "rillet.schema",
    "stream_from_list": "rillet.schema",
    "InMemorySessionStore": "rillet.sessions",
    "LastTurns": "rillet.sessions",
    "SessionStore": "rillet.sessions",
    "SqliteSessionStore": "rillet.sessions",
    "SummarizeOldest": "rillet.sessions",
    "TokenBudget": "rillet.sessions",
    "BaseTool": "rillet.tools",
    "ExitTool": "rillet.tools",
    "FunctionTool": "rillet.tools",
    "ToolArgumentsError": "rillet.tools",
    "ToolInfo": "rillet.tools",
    "as_tool": "rillet.tools",
    "tool": "rillet.tools",
    "LoopAgent": "rillet.workflow",
    "ParallelAgent": "rillet.workflow",
    "SequentialAgent": "rillet.workflow",
    "GuardrailContext": "rillet.chatmodel.guardrails",
    "GuardrailRejection": "rillet.chatmodel.guardrails",
    "GuardrailRetry": "rillet.chatmodel.guardrails",
    "InputGuardrail": "rillet.chatmodel.guardrails",
    "OutputGuardrail": "rillet.chatmodel.guardrails",
    "GuardrailError": "rillet.errors",
    "GuardrailRejectedError": "rillet.errors",
    "InputRejectedError": "rillet.errors",
    "OutputRejectedError": "rillet.errors",
    "FallbackModel": "rillet.models",
    "OpenAIResponsesModel": "rillet.models",
    "AnthropicChatModel": "rillet.models",
    "LiveRequestQueue": "rillet.live",
    "RunConfig": "rillet.run_config",
    "RunIterator": "rillet.run_handle",
}


def __getattr__(name: str) -> Any:
    """Loads a public name, or a submodule such as ``rillet.models``, on first access."""
    where = _EXPORTS.get(name)
    if where is None:
        if name.startswith("_") or _find_spec(f"rillet.{name}") is None:
            raise AttributeError(f"module 'rillet' has no attribute {name!r}")
        value: Any = _import_module(f"rillet.{name}")
    elif where:
        value = getattr(_import_module(where), name)
    else:
        value = _import_module(f"rillet.{name}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(_types.ModuleType):
    """rillet's own module type. The import system binds each submodule it loads on the package,
    and the function ``rillet.interrupt`` has the name of the module defining it; a public name
    keeps its object (as when every name was imported eagerly), the submodule stays reachable
    through ``from rillet.interrupt import ...`` and ``sys.modules``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, _types.ModuleType) and _EXPORTS.get(name):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


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
    # Guardrails
    "GuardrailContext",
    "GuardrailError",
    "GuardrailRejectedError",
    "GuardrailRejection",
    "GuardrailRetry",
    "InputGuardrail",
    "InputRejectedError",
    "OutputGuardrail",
    "OutputRejectedError",
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
    "RunLimitExceededError",
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
    "AnthropicChatModel",
    "ChatModel",
    "FallbackModel",
    "ModelCall",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "ScriptExhaustedError",
    "ScriptedModel",
    # The base of rillet's errors, and the version
    "RilletError",
    "__version__",
    # Deprecated aliases: peek_message and apeek_message
    "aget_message",
    "get_message",
]
