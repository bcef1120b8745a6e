"""Every exception rillet raises, in one module (docs/errors.md draws the tree).

Each is a :class:`RilletError` (the root) except two BaseExceptions: :class:`Interrupted`
(control flow, which ``except Exception:`` must not swallow) and the internal carrier
:class:`Fatal`; several are also the builtin a caller may already catch (a ``ValueError``, ``TypeError``,
``LookupError``...). The classes are importable from here and from the module that raises
them (``rillet``, ``rillet.codec``, ``rillet.models``, ``rillet.checkpoint``...).

The native core raises the classes of this module too: the last line hands the module to
``rillet._native``, which takes the classes it raises from it once, so a class missing here is
an ImportError of ``import rillet`` rather than a failure at its first raise.

Layer: errors, the lowest (the import-linter contract in pyproject.toml; docs/architecture.md).
May import only the standard library and rillet._native.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rillet import _native

if TYPE_CHECKING:
    from rillet._core.interrupt import InterruptSignal

__all__ = [
    "A2ACardError",
    "A2AError",
    "A2ATimeoutError",
    "AgentToolError",
    "ArtifactError",
    "AuthenticationError",
    "CassetteError",
    "ChannelClosed",
    "CheckpointAgentMismatchError",
    "CheckpointClaimedError",
    "CheckpointCorruptError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "ConcatError",
    "ContextLengthError",
    "DecodeError",
    "EncodeError",
    "EndOfStream",
    "EventStreamConnectionError",
    "EventStreamError",
    "EvalSetError",
    "EventStreamGapError",
    "EventStreamTimeoutError",
    "ExceedMaxIterationsError",
    "GuardrailError",
    "GuardrailRejectedError",
    "IncompleteStreamError",
    "InputRejectedError",
    "Interrupted",
    "InvalidRequestError",
    "LiveError",
    "LiveNotSupportedError",
    "LiveQueueClosedError",
    "MalformedChunkError",
    "MessageConversionError",
    "McpConnectionError",
    "MiddlewareError",
    "McpError",
    "McpToolError",
    "ModelConnectionError",
    "ModelError",
    "ModelNotFoundError",
    "ModelStreamError",
    "ModelTimeoutError",
    "OutputRejectedError",
    "OutputValidationError",
    "OverloadedError",
    "PortUnavailableError",
    "RateLimitError",
    "RecordedError",
    "RilletError",
    "RunLimitExceededError",
    "ScriptExhaustedError",
    "ServerError",
    "SessionBusyError",
    "SessionError",
    "StreamEOF",
    "StreamLimitError",
    "ToolArgumentsError",
    "ToolCallError",
    "TransferError",
    "UnsupportedContentError",
]


class RilletError(Exception):
    """Base class of every error rillet raises."""


def _rebuilt(cls: type[BaseException], args: tuple[object, ...]) -> BaseException:
    """An exception of ``cls`` with ``args``, without calling its ``__init__``: unpickling sets
    the attributes from the pickled ``__dict__`` after this."""
    return BaseException.__new__(cls, *args)


def _reduce_rebuilt(self: BaseException) -> tuple[object, ...]:
    """``__reduce__`` of an exception whose ``__init__`` takes other arguments than its
    ``args``: pickle would call ``cls(*args)``, a TypeError in the process that unpickles it."""
    return _rebuilt, (type(self), self.args), self.__dict__


# --- streams and channels (raised by the native core) ---------------------------------------


class EndOfStream(RilletError):
    """The end of a stream of items: every item has been received. Raised again by every
    later receive. `except rillet.EndOfStream` catches the end of a Channel and of a
    StreamReader."""


class ChannelClosed(EndOfStream):
    """The channel was closed and every queued item has been received."""


class StreamEOF(EndOfStream):
    """The stream has ended: every item has been received. Raised again by every later receive."""


# --- messages and checkpoints (raised by the native core) -----------------------------------


class ConcatError(RilletError, ValueError):
    """Message chunks that cannot be concatenated; `field` names the offending field."""

    field: str


class MessageConversionError(RilletError, ValueError):
    """A message that cannot be converted between Message and AgenticMessage without loss.

    ``block`` is the position of the block at fault (None when the message as a whole is):
    keep the AgenticMessage, or drop or change that block before converting.
    """

    block: int | None


class DecodeError(RilletError, ValueError):
    """The bytes are not a valid rillet checkpoint, or break a decode limit."""


class EncodeError(RilletError, TypeError):
    """The object cannot be written as a rillet checkpoint (unregistered type, cycle...)."""


class CheckpointError(RilletError):
    """A checkpoint could not be saved or loaded."""


class CheckpointNotFoundError(CheckpointError, LookupError):
    """The store has no checkpoint under that id."""


class CheckpointClaimedError(CheckpointError):
    """Another resume holds the checkpoint (its claim has not expired): nothing was run."""


class CheckpointCorruptError(CheckpointError, DecodeError):
    """The stored bytes fail their checksum (or are not a checkpoint envelope): they were
    altered after rillet wrote them."""


class CheckpointAgentMismatchError(CheckpointError):
    """The checkpoint was saved by a different agent (tree) than the Runner's."""


class SessionError(RilletError):
    """A session could not be loaded or saved (see docs/sessions.md)."""


class SessionBusyError(SessionError):
    """Another run holds the session (runs on one session id are refused, not queued):
    nothing was run."""


class RecordedError(RilletError):
    """An error event restored from a checkpoint: the original's type name and message."""

    __reduce__ = _reduce_rebuilt

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


# --- agents and tools -----------------------------------------------------------------------


class Interrupted(BaseException):
    """Raised by a tool to interrupt the run: ``raise rillet.interrupt(info)``. Carries the
    interrupt signal up to the agent that ran the tool.

    A BaseException, like asyncio's CancelledError: an interrupt is control flow, so a tool's
    (or a tool-call wrapper's) ``except Exception:`` lets it through instead of turning it into
    an error text for the model. Catch it by name if you must (docs/interrupts.md)."""

    __reduce__ = _reduce_rebuilt

    def __init__(self, signal: InterruptSignal) -> None:
        super().__init__(f"interrupted at {';'.join(signal.address)}: {signal.info!r}")
        self.signal = signal


class TransferError(RilletError):
    """A transfer named an agent that is neither a sub-agent nor the parent."""


class RunLimitExceededError(RilletError):
    """A run went past a limit of its :class:`rillet.RunConfig`: ``limit`` names it
    (``"max_llm_calls"`` or ``"max_transfers"``), ``maximum`` is its value and ``count`` the
    model call or transfer that went past it; ``loop`` is the agents' last transfers
    (``"a -> b -> a"``, empty when there were none). ``detail`` (in the message only) says
    what else points at the loop; the message ends with how to raise the limit."""

    __reduce__ = _reduce_rebuilt

    def __init__(self, limit: str, maximum: int, count: int, loop: str, detail: str = "") -> None:
        what = "model call" if limit == "max_llm_calls" else "transfer"
        super().__init__(
            f"the run was stopped before {what} {count}, over RunConfig({limit}={maximum}){detail}. If the agents "
            f"are not stuck in a loop and the run needs more, raise the limit: pass "
            f"run_config=RunConfig({limit}={2 * maximum}) to Runner.run() or Runner.resume() (0 or None: no limit)"
        )
        self.limit = limit
        self.maximum = maximum
        self.count = count
        self.loop = loop


class ToolArgumentsError(RilletError, ValueError):
    """The model's arguments for a tool are not valid JSON or fail its parameter schema.

    ``tool_name`` names the tool and ``problems`` lists each problem (also in the message)."""

    __reduce__ = _reduce_rebuilt

    def __init__(self, tool_name: str, problems: list[str]) -> None:
        super().__init__(f"tool {tool_name!r}: " + "; ".join(problems))
        self.tool_name = tool_name
        self.problems = problems


class ToolCallError(RilletError):
    """A tool call failed and the agent was told to stop (``tool_error="raise"``)."""


class MiddlewareError(RilletError):
    """A ChatModelAgent middleware hook (or callback) raised, or returned something it may
    not: the message names the middleware and the hook, the original error is the cause."""

    ends_run: bool = False
    """Set on the error an AgentTool raises for its agent's failed callback or plugin hook: the
    calling agent does not hand it to its model as the tool's result, its run ends with it."""


class ExceedMaxIterationsError(RilletError):
    """The ReAct loop asked the model more often than ``max_iterations`` allows."""


class OutputValidationError(RilletError, ValueError):
    """A ChatModelAgent with an ``output_type`` got no valid answer: every reply, the retries
    included, failed the type's validation. ``agent_name``, ``output_type`` (the class's name),
    ``attempts`` (model replies checked) and ``last_error`` (the last reply's problems, as sent
    back to the model) say which and why."""

    __reduce__ = _reduce_rebuilt

    def __init__(self, agent_name: str, output_type: str, attempts: int, last_error: str) -> None:
        super().__init__(
            f"ChatModelAgent {agent_name!r}: no valid {output_type} after {attempts} "
            f"{'reply' if attempts == 1 else 'replies'} (raise output_retries to allow more); "
            f"the last one failed with: {last_error}"
        )
        self.agent_name = agent_name
        self.output_type = output_type
        self.attempts = attempts
        self.last_error = last_error


class AgentToolError(RilletError):
    """The agent behind an AgentTool failed or returned nothing."""


class GuardrailError(RilletError):
    """A ChatModelAgent's guardrail raised, or returned something else than None or a
    :class:`rillet.GuardrailRejection`: the message names the agent and the guardrail, the
    original error is the cause."""


class GuardrailRejectedError(GuardrailError):
    """A guardrail rejected the run: ``stage`` (``"input"`` or ``"output"``), ``agent_name``,
    ``guardrail`` (its name), ``reason`` and ``info`` (what the guardrail attached) say which
    and why. Raised as one of its two subclasses."""

    __reduce__ = _reduce_rebuilt
    stage = ""

    def __init__(self, agent_name: str, guardrail: str, reason: str, info: object = None) -> None:
        what = "the run's input" if self.stage == "input" else "the answer"
        super().__init__(
            f"ChatModelAgent {agent_name!r}: {self.stage} guardrail {guardrail!r} rejected {what}: {reason}"
        )
        self.agent_name = agent_name
        self.guardrail = guardrail
        self.reason = reason
        self.info = info


class InputRejectedError(GuardrailRejectedError):
    """An input guardrail rejected the run's input: the run ended before any model output
    (a model call started beside a concurrent guardrail was cancelled, its output dropped)."""

    stage = "input"


class OutputRejectedError(GuardrailRejectedError):
    """An output guardrail rejected the final answer (or asked for a retry, and rejected the
    retried answer too): the answer's event came before this error's."""

    stage = "output"


# --- models ---------------------------------------------------------------------------------


class ModelError(RilletError):
    """Base class of the errors a model client raises.

    Attributes (``None`` when they do not apply): ``status_code`` (the HTTP status),
    ``base_url`` (the server asked), ``body`` (the server's answer, as text), ``code`` (the
    server's error code or type), ``line`` (the line of the event stream).
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        base_url: str | None = None,
        body: str | None = None,
        code: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.base_url = base_url
        self.body = body
        self.code = code
        self.line = line


class AuthenticationError(ModelError):
    """The server refused the credentials (HTTP 401 or 403): check the API key."""


class ModelNotFoundError(ModelError, LookupError):
    """The server does not know the model, or the URL (HTTP 404)."""


class InvalidRequestError(ModelError, ValueError):
    """The server refused the request as invalid (HTTP 400 or 422); the message is the
    server's."""


class ContextLengthError(InvalidRequestError):
    """The conversation is longer than the model's context window."""


class RateLimitError(ModelError):
    """HTTP 429, still after the retries. ``retry_after`` is the server's hint in seconds."""

    retry_after: float | None = None


class ServerError(ModelError):
    """The server failed (HTTP 5xx), still after the retries."""


class OverloadedError(ServerError):
    """The provider is overloaded (Anthropic's HTTP 529), still after the retries; another
    model, or a later try, may answer. ``retry_after`` is the server's hint in seconds."""

    retry_after: float | None = None


class ModelTimeoutError(ModelError, TimeoutError):
    """The server did not answer in time (connecting, or between two reads)."""


class ModelConnectionError(ModelError, ConnectionError):
    """The connection could not be made, or was cut in the middle of a response."""


class IncompleteStreamError(ModelConnectionError):
    """The event stream ended before the model finished (no finish reason, no ``[DONE]``)."""


class MalformedChunkError(ModelError, ValueError):
    """A line of the event stream is not a valid chat-completions chunk; ``line`` names it."""


class ModelStreamError(ModelError):
    """The server sent an error object in the middle of a stream."""


class UnsupportedContentError(ModelError, ValueError):
    """A message holds a content part the model's API cannot carry (an image in a system
    message, a file where only text goes); raised before the request is sent."""


class StreamLimitError(ModelError, ValueError):
    """A line of the event stream, or one event's data, is longer than its limit, found
    before it was buffered. ``limit`` names the keyword that raises it
    (``max_sse_line_bytes`` or ``max_sse_event_bytes``); ``line`` is where it started.
    """

    __reduce__ = _reduce_rebuilt

    def __init__(self, message: str, *, limit: str, line: int | None = None) -> None:
        super().__init__(message, line=line)
        self.limit = limit


class ScriptExhaustedError(RilletError):
    """A :class:`ScriptedModel` was called once more than it has scripted replies."""


class McpError(RilletError):
    """An MCP server (``rillet.mcp``) failed a request."""


class McpToolError(McpError):
    """An MCP server answered a tool call with an error (``isError``, or a protocol error such
    as an unknown tool); the agent sends the message to the model as the call's result."""


class McpConnectionError(McpError, ConnectionError):
    """An MCP server cannot be reached, or its connection closed (the server process died);
    the next call reconnects."""


class A2AError(RilletError):
    """A remote A2A agent (``rillet.a2a``) failed: its task ended FAILED or CANCELED, or its
    answer broke the protocol."""


class A2ACardError(A2AError):
    """An A2A agent card cannot be used: it could not be fetched, names no JSON-RPC interface,
    or its interface URL is on another origin than the card (pass ``allowed_origins``)."""


class A2ATimeoutError(A2AError, TimeoutError):
    """A remote A2A agent gave no final answer within the RemoteA2AAgent's ``deadline`` (the
    bound on the whole remote call); its task was cancelled on the remote when it had one."""


# --- live runs and artifacts ----------------------------------------------------------------


class LiveError(RilletError):
    """A live (bidirectional) run failed (``Runner.run_live``, see docs/live.md)."""


class LiveNotSupportedError(LiveError, TypeError):
    """The agent cannot run live: it is not a :class:`rillet.live.LiveAgent`, or lacks what a
    live run needs (a ChatModelAgent without ``live_model``)."""


class LiveQueueClosedError(LiveError):
    """Something was sent to a :class:`rillet.live.LiveRequestQueue` after its ``close()``."""


class ArtifactError(RilletError, ValueError):
    """An artifact name or session id an artifact service refuses, or a stored artifact that
    cannot be read back."""


class EventStreamError(RilletError):
    """A run's events could not be sent to, or read from, a Redis stream (``rillet.redis``)."""


class EventStreamConnectionError(EventStreamError, ConnectionError):
    """The Redis server of a RedisStreamSink or RedisStreamSource cannot be reached, or the
    connection to it failed."""


class EventStreamTimeoutError(EventStreamError, TimeoutError):
    """A RedisStreamSource waited longer than its ``timeout`` for the next entry of a run that
    has not ended (its publisher stopped, or never started)."""


class EventStreamGapError(EventStreamError):
    """Entries a RedisStreamSource had not read yet are gone from the stream (trimmed by the
    sink's ``maxlen``, or the key expired): it cannot give the exact sequence."""


class EvalSetError(RilletError, ValueError):
    """An eval set file that cannot be read, or does not have the shape of an eval set
    (rillet.eval)."""


class CassetteError(RilletError):
    """An eval cassette that cannot be read, or that has no reply (or one recorded for another
    request) for a model call being replayed (rillet.eval.cassette)."""


class PortUnavailableError(RilletError, OSError):
    """The dev UI cannot listen on ``host:port`` (the port is taken, or not allowed): raised
    before anything is printed or served, with the fix in its message (rillet.web)."""


# --- internal -------------------------------------------------------------------------------


class Fatal(BaseException):
    """Internal, never seen by a user: carries a KeyboardInterrupt or SystemExit that agent
    code raised in a child task out of it. Raised as is, asyncio would re-raise it out of the
    event loop, stopping the loop and every run on it; the run's top task turns ``exc`` into
    the run's error event."""

    def __init__(self, exc: KeyboardInterrupt | SystemExit) -> None:
        super().__init__(exc)
        self.exc = exc


# Last: the native core takes the classes it raises (an ImportError names one that is missing).
_native._init_errors(sys.modules[__name__])
