"""rillet: an event-stream agent development kit for Python with a Rust core.

The public names below load on first use (PEP 562): ``import rillet`` costs little, and a
program pays only for the parts it touches (``rillet --version`` does not import the agents,
a tool does not import the Runner). ``from rillet import X`` and ``rillet.X`` work as usual.
"""

# First: outside the main interpreter, one clear ImportError before anything else loads.
from rillet._core import interpreter as _interpreter  # noqa: F401  # isort: skip

import logging as _logging
from importlib import import_module as _import_module
from typing import TYPE_CHECKING, Any

from rillet._core import moved as _moved

_moved.install()  # the old paths of moved modules (rillet.events, rillet.agent, ...) keep working

# Records go to the "rillet.*" loggers (docs/logging.md); the application chooses handlers.
_logging.getLogger("rillet").addHandler(_logging.NullHandler())

# The public surface, written once: each name under the module that defines it (or the package
# that holds it, for a submodule: "codec"). __getattr__ below loads a name on first use, __all__ lists them, and the imports
# under `if TYPE_CHECKING:` (what type checkers and editors see) are written from this table by
# scripts/public-api. tests/contract/test_public_api.py checks the three against it. No module of rillet
# may be named like one of these names (the import system would bind the module over it), but a
# public submodule itself (rillet.codec, the old path of rillet.data.codec: rillet/_core/moved.py).
# fmt: off
_PUBLIC: dict[str, tuple[str, ...]] = {
    # Messages and streams (Rust-backed)
    "rillet.data.schema": (
        "NO_VALUE", "AgenticMessage", "AnyMessage", "ConcatError", "ContentBlock", "ContentPart", "FunctionCall",
        "Message", "MessageAccumulator", "MessageConversionError", "MessageT", "ResponseMeta",
        "SourceEOF", "StreamEOF", "StreamReader", "StreamWriter", "ToolCall", "Usage", "aconcat_message_stream",
        "concat_message_stream", "concat_messages", "convert_stream", "merge_named_streams", "merge_streams", "pipe",
        "stream_from_list",
    ),
    # Channels and event iterators; the version
    "rillet._native": ("EMPTY", "Channel", "__version__"),
    "rillet.data.event_pair": ("EventGenerator", "EventIterator", "new_event_pair"),
    # Events and actions (get_message and aget_message: deprecated aliases of peek_message and apeek_message)
    "rillet.data.events": (
        "AgentAction", "AgentEvent", "AgentOutput", "BreakLoopAction", "MessageVariant", "RunPath", "RunStep",
        "TransferToAgentAction", "aget_message", "apeek_message", "event_from_message", "get_message",
        "new_break_loop_action", "new_exit_action", "new_transfer_to_agent_action", "peek_message",
    ),
    # Agents
    "rillet.run.agent": ("Agent", "AgentCallback", "AgentInput", "BaseAgent", "CallbackContext", "StateDelta"),
    "rillet.run.run_handle": ("RunIterator",),
    # The ReAct agent, its guardrails and middlewares
    "rillet.chatmodel": (
        "ChatModelAgent", "ExceedMaxIterationsError", "ModelContext", "ToolCallContext", "ToolCallError",
    ),
    "rillet.chatmodel.guardrails": (
        "GuardrailContext", "GuardrailRejection", "GuardrailRetry", "InputGuardrail", "OutputGuardrail",
    ),
    "rillet.chatmodel.middleware": ("ChatModelAgentContext", "ChatModelAgentMiddleware", "ChatModelAgentState"),
    # Multi-agent: transfer, workflows, agents as tools
    "rillet.flow": (
        "FlowAgent", "HistoryEntry", "TransferError", "set_sub_agents", "with_deterministic_transfer_to",
        "with_disallow_transfer_to_parent", "with_history_rewriter",
    ),
    "rillet.compose.workflow": ("LoopAgent", "ParallelAgent", "SequentialAgent"),
    "rillet.compose.agent_tool": ("AgentTool", "AgentToolError"),
    # Tools and approval
    "rillet.tools": ("BaseTool", "ExitTool", "FunctionTool", "ToolArgumentsError", "ToolInfo", "as_tool", "tool"),
    "rillet.tools.toolset": ("Toolset",),
    "rillet.tools.approval": ("ApprovalDecision", "approve", "edit", "reject", "requires_approval"),
    # The run context: session and run-local values, events sent from a tool
    "rillet.run.context": (
        "add_session_value", "add_session_values", "delete_run_local_value", "get_run_local_value",
        "InvocationEnded", "end_invocation", "get_session_value", "get_session_values", "send_event",
        "send_tool_gen_action", "set_run_local_value",
    ),
    # Runs
    "rillet.runner": ("Runner",),
    "rillet.data.run_config": ("RunConfig",),
    "rillet.run.observer": ("ModelInfo", "RunInfo", "RunObserver"),
    "rillet.run.plugin": ("LoggingPlugin", "Plugin"),
    "rillet.live": ("LiveRequestQueue",),
    # Interrupts
    "rillet.run.interrupts": (
        "InterruptCtx", "InterruptInfo", "InterruptState", "Interrupted", "ResumeContext", "composite_interrupt",
        "composite_interrupt_event", "get_interrupt_state", "get_resume_context", "interrupt", "interrupt_event",
        "stateful_interrupt", "stateful_interrupt_event",
    ),
    # Checkpoints and the codec
    "rillet.checkpoint": (
        "CheckpointAgentMismatchError", "CheckpointClaimedError", "CheckpointCorruptError", "CheckpointError",
        "CheckpointNotFoundError", "CheckpointStore", "InMemoryCheckpointStore", "SqliteCheckpointStore",
    ),
    "rillet.data": ("codec",),
    # Sessions
    "rillet.sessions": (
        "InMemorySessionStore", "LastTurns", "SessionStore", "SqliteSessionStore", "SummarizeOldest", "TokenBudget",
    ),
    # Models
    "rillet.models": (
        "AnthropicChatModel", "ChatModel", "FallbackModel", "ModelCall", "OpenAIChatModel", "OpenAIResponsesModel",
        "ScriptExhaustedError", "ScriptedModel",
    ),
    # Errors users catch by name (the rest are in rillet.errors, docs/errors.md)
    "rillet.errors": (
        "RilletError", "ChannelClosed", "DecodeError", "EncodeError", "EndOfStream", "GuardrailError",
        "GuardrailRejectedError", "InputRejectedError", "MiddlewareError", "OutputRejectedError",
        "OutputValidationError", "RunLimitExceededError", "SessionBusyError", "SessionError",
    ),
}
# fmt: on
_HOME = {name: module for module, names in _PUBLIC.items() for name in names}

if TYPE_CHECKING:  # written from _PUBLIC by scripts/public-api
    from rillet._native import EMPTY as EMPTY
    from rillet._native import Channel as Channel
    from rillet._native import __version__ as __version__
    from rillet.chatmodel import ChatModelAgent as ChatModelAgent
    from rillet.chatmodel import ExceedMaxIterationsError as ExceedMaxIterationsError
    from rillet.chatmodel import ModelContext as ModelContext
    from rillet.chatmodel import ToolCallContext as ToolCallContext
    from rillet.chatmodel import ToolCallError as ToolCallError
    from rillet.chatmodel.guardrails import GuardrailContext as GuardrailContext
    from rillet.chatmodel.guardrails import GuardrailRejection as GuardrailRejection
    from rillet.chatmodel.guardrails import GuardrailRetry as GuardrailRetry
    from rillet.chatmodel.guardrails import InputGuardrail as InputGuardrail
    from rillet.chatmodel.guardrails import OutputGuardrail as OutputGuardrail
    from rillet.chatmodel.middleware import ChatModelAgentContext as ChatModelAgentContext
    from rillet.chatmodel.middleware import ChatModelAgentMiddleware as ChatModelAgentMiddleware
    from rillet.chatmodel.middleware import ChatModelAgentState as ChatModelAgentState
    from rillet.checkpoint import CheckpointAgentMismatchError as CheckpointAgentMismatchError
    from rillet.checkpoint import CheckpointClaimedError as CheckpointClaimedError
    from rillet.checkpoint import CheckpointCorruptError as CheckpointCorruptError
    from rillet.checkpoint import CheckpointError as CheckpointError
    from rillet.checkpoint import CheckpointNotFoundError as CheckpointNotFoundError
    from rillet.checkpoint import CheckpointStore as CheckpointStore
    from rillet.checkpoint import InMemoryCheckpointStore as InMemoryCheckpointStore
    from rillet.checkpoint import SqliteCheckpointStore as SqliteCheckpointStore
    from rillet.compose.agent_tool import AgentTool as AgentTool
    from rillet.compose.agent_tool import AgentToolError as AgentToolError
    from rillet.compose.workflow import LoopAgent as LoopAgent
    from rillet.compose.workflow import ParallelAgent as ParallelAgent
    from rillet.compose.workflow import SequentialAgent as SequentialAgent
    from rillet.data import codec as codec
    from rillet.data.event_pair import EventGenerator as EventGenerator
    from rillet.data.event_pair import EventIterator as EventIterator
    from rillet.data.event_pair import new_event_pair as new_event_pair
    from rillet.data.events import AgentAction as AgentAction
    from rillet.data.events import AgentEvent as AgentEvent
    from rillet.data.events import AgentOutput as AgentOutput
    from rillet.data.events import BreakLoopAction as BreakLoopAction
    from rillet.data.events import MessageVariant as MessageVariant
    from rillet.data.events import RunPath as RunPath
    from rillet.data.events import RunStep as RunStep
    from rillet.data.events import TransferToAgentAction as TransferToAgentAction
    from rillet.data.events import aget_message as aget_message
    from rillet.data.events import apeek_message as apeek_message
    from rillet.data.events import event_from_message as event_from_message
    from rillet.data.events import get_message as get_message
    from rillet.data.events import new_break_loop_action as new_break_loop_action
    from rillet.data.events import new_exit_action as new_exit_action
    from rillet.data.events import new_transfer_to_agent_action as new_transfer_to_agent_action
    from rillet.data.events import peek_message as peek_message
    from rillet.data.run_config import RunConfig as RunConfig
    from rillet.data.schema import NO_VALUE as NO_VALUE
    from rillet.data.schema import AgenticMessage as AgenticMessage
    from rillet.data.schema import AnyMessage as AnyMessage
    from rillet.data.schema import ConcatError as ConcatError
    from rillet.data.schema import ContentBlock as ContentBlock
    from rillet.data.schema import ContentPart as ContentPart
    from rillet.data.schema import FunctionCall as FunctionCall
    from rillet.data.schema import Message as Message
    from rillet.data.schema import MessageAccumulator as MessageAccumulator
    from rillet.data.schema import MessageConversionError as MessageConversionError
    from rillet.data.schema import MessageT as MessageT
    from rillet.data.schema import ResponseMeta as ResponseMeta
    from rillet.data.schema import SourceEOF as SourceEOF
    from rillet.data.schema import StreamEOF as StreamEOF
    from rillet.data.schema import StreamReader as StreamReader
    from rillet.data.schema import StreamWriter as StreamWriter
    from rillet.data.schema import ToolCall as ToolCall
    from rillet.data.schema import Usage as Usage
    from rillet.data.schema import aconcat_message_stream as aconcat_message_stream
    from rillet.data.schema import concat_message_stream as concat_message_stream
    from rillet.data.schema import concat_messages as concat_messages
    from rillet.data.schema import convert_stream as convert_stream
    from rillet.data.schema import merge_named_streams as merge_named_streams
    from rillet.data.schema import merge_streams as merge_streams
    from rillet.data.schema import pipe as pipe
    from rillet.data.schema import stream_from_list as stream_from_list
    from rillet.errors import ChannelClosed as ChannelClosed
    from rillet.errors import DecodeError as DecodeError
    from rillet.errors import EncodeError as EncodeError
    from rillet.errors import EndOfStream as EndOfStream
    from rillet.errors import GuardrailError as GuardrailError
    from rillet.errors import GuardrailRejectedError as GuardrailRejectedError
    from rillet.errors import InputRejectedError as InputRejectedError
    from rillet.errors import MiddlewareError as MiddlewareError
    from rillet.errors import OutputRejectedError as OutputRejectedError
    from rillet.errors import OutputValidationError as OutputValidationError
    from rillet.errors import RilletError as RilletError
    from rillet.errors import RunLimitExceededError as RunLimitExceededError
    from rillet.errors import SessionBusyError as SessionBusyError
    from rillet.errors import SessionError as SessionError
    from rillet.flow import FlowAgent as FlowAgent
    from rillet.flow import HistoryEntry as HistoryEntry
    from rillet.flow import TransferError as TransferError
    from rillet.flow import set_sub_agents as set_sub_agents
    from rillet.flow import with_deterministic_transfer_to as with_deterministic_transfer_to
    from rillet.flow import with_disallow_transfer_to_parent as with_disallow_transfer_to_parent
    from rillet.flow import with_history_rewriter as with_history_rewriter
    from rillet.live import LiveRequestQueue as LiveRequestQueue
    from rillet.models import AnthropicChatModel as AnthropicChatModel
    from rillet.models import ChatModel as ChatModel
    from rillet.models import FallbackModel as FallbackModel
    from rillet.models import ModelCall as ModelCall
    from rillet.models import OpenAIChatModel as OpenAIChatModel
    from rillet.models import OpenAIResponsesModel as OpenAIResponsesModel
    from rillet.models import ScriptedModel as ScriptedModel
    from rillet.models import ScriptExhaustedError as ScriptExhaustedError
    from rillet.run.agent import Agent as Agent
    from rillet.run.agent import AgentCallback as AgentCallback
    from rillet.run.agent import AgentInput as AgentInput
    from rillet.run.agent import BaseAgent as BaseAgent
    from rillet.run.agent import CallbackContext as CallbackContext
    from rillet.run.agent import StateDelta as StateDelta
    from rillet.run.context import InvocationEnded as InvocationEnded
    from rillet.run.context import add_session_value as add_session_value
    from rillet.run.context import add_session_values as add_session_values
    from rillet.run.context import delete_run_local_value as delete_run_local_value
    from rillet.run.context import end_invocation as end_invocation
    from rillet.run.context import get_run_local_value as get_run_local_value
    from rillet.run.context import get_session_value as get_session_value
    from rillet.run.context import get_session_values as get_session_values
    from rillet.run.context import send_event as send_event
    from rillet.run.context import send_tool_gen_action as send_tool_gen_action
    from rillet.run.context import set_run_local_value as set_run_local_value
    from rillet.run.interrupts import InterruptCtx as InterruptCtx
    from rillet.run.interrupts import Interrupted as Interrupted
    from rillet.run.interrupts import InterruptInfo as InterruptInfo
    from rillet.run.interrupts import InterruptState as InterruptState
    from rillet.run.interrupts import ResumeContext as ResumeContext
    from rillet.run.interrupts import composite_interrupt as composite_interrupt
    from rillet.run.interrupts import composite_interrupt_event as composite_interrupt_event
    from rillet.run.interrupts import get_interrupt_state as get_interrupt_state
    from rillet.run.interrupts import get_resume_context as get_resume_context
    from rillet.run.interrupts import interrupt as interrupt
    from rillet.run.interrupts import interrupt_event as interrupt_event
    from rillet.run.interrupts import stateful_interrupt as stateful_interrupt
    from rillet.run.interrupts import stateful_interrupt_event as stateful_interrupt_event
    from rillet.run.observer import ModelInfo as ModelInfo
    from rillet.run.observer import RunInfo as RunInfo
    from rillet.run.observer import RunObserver as RunObserver
    from rillet.run.plugin import LoggingPlugin as LoggingPlugin
    from rillet.run.plugin import Plugin as Plugin
    from rillet.run.run_handle import RunIterator as RunIterator
    from rillet.runner import Runner as Runner
    from rillet.sessions import InMemorySessionStore as InMemorySessionStore
    from rillet.sessions import LastTurns as LastTurns
    from rillet.sessions import SessionStore as SessionStore
    from rillet.sessions import SqliteSessionStore as SqliteSessionStore
    from rillet.sessions import SummarizeOldest as SummarizeOldest
    from rillet.sessions import TokenBudget as TokenBudget
    from rillet.tools import BaseTool as BaseTool
    from rillet.tools import ExitTool as ExitTool
    from rillet.tools import FunctionTool as FunctionTool
    from rillet.tools import ToolArgumentsError as ToolArgumentsError
    from rillet.tools import ToolInfo as ToolInfo
    from rillet.tools import as_tool as as_tool
    from rillet.tools import tool as tool
    from rillet.tools.approval import ApprovalDecision as ApprovalDecision
    from rillet.tools.approval import approve as approve
    from rillet.tools.approval import edit as edit
    from rillet.tools.approval import reject as reject
    from rillet.tools.approval import requires_approval as requires_approval
    from rillet.tools.toolset import Toolset as Toolset
else:  # at run time; type checkers take the names from the imports
    __all__ = list(_HOME)


def __getattr__(name: str) -> Any:
    """Loads a public name, or a submodule such as ``rillet.models``, on first access."""
    module = _HOME.get(name)
    if module is not None and module != __name__:
        home = _import_module(module)
        try:
            value = getattr(home, name)
        except AttributeError:  # a submodule not imported yet (rillet.codec: rillet.data.codec)
            value = _import_module(f"{module}.{name}")
    elif module is not None or (not name.startswith("_") and _is_submodule(name)):
        value = _import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def _is_submodule(name: str) -> bool:
    from importlib.util import find_spec  # only for a name outside the table: `import rillet` need not load it

    return find_spec(f"{__name__}.{name}") is not None


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
