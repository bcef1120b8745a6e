"""One tool call of a ChatModelAgent: its scope, wrappers, error policy and streaming."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rillet._core.address import tool_segment
from rillet._core.loop import child_task
from rillet._core.scope import TOOL_CALL as _TOOL_CALL
from rillet._core.scope import Observers, current_resume, here
from rillet._native import Message, ToolCall, pipe, stream_from_list
from rillet.chatmodel.callbacks import Callbacks, tool_arguments
from rillet.chatmodel.config import ToolCallContext, ToolCallError, ToolWrapper
from rillet.chatmodel.middleware import hook_failed
from rillet.checkpoint.journal import STEP_CALL
from rillet.data.events import AgentEvent, event_from_message
from rillet.data.schema import aconcat_message_stream
from rillet.errors import Interrupted, MiddlewareError
from rillet.run import observer
from rillet.run.context import ToolCallScope, current_run, current_tool_call

if TYPE_CHECKING:
    from rillet.chatmodel.deps import ReactDeps
    from rillet.tools import BaseTool

# The logger keeps the package's name: docs/logging.md documents "rillet.chatmodel".
_log = logging.getLogger("rillet.chatmodel")

__all__ = ["attempt", "call_tool"]

Outcome = tuple[Any, "Message | asyncio.Future[Message] | None"]


@dataclass(eq=False, slots=True)
class _ObservedCall(ToolCallScope):
    """The scope of a call that observers watch: it keeps the failure that was sent to the
    model as the result (a field of its own, so unobserved calls do not pay for it)."""

    error: Exception | None = None


async def attempt(
    deps: ReactDeps,
    c: ToolCall,
    state: list[Message],
    streaming: bool,
    emit: Callable[[AgentEvent], None] | None,
    obs: Observers | None = None,
    step: str | None = None,
) -> Outcome:
    """One call's (event, result), or (the Interrupted it raised, None)."""
    try:
        return await call_tool(deps, c.function.name, c.id, c.function.arguments, state, streaming, emit, obs, step)
    except Interrupted as e:
        return e, None


async def call_tool(
    deps: ReactDeps,
    name: str,
    call_id: str,
    arguments: str,
    state: list[Message] | None = None,
    streaming: bool = False,
    emit: Callable[[AgentEvent], None] | None = None,
    obs: Observers | None = None,
    step: str | None = None,
) -> tuple[AgentEvent, Message | asyncio.Future[Message]]:
    """Runs one call in its tool-call scope: its event, and its result (a future of it for a
    streaming tool, whose event goes out before its stream is read). ``obs``: the run's
    observers (the loop's, read once a run); ``step``: in a step run, the call's key, under
    which the agents it runs (an AgentTool's) are recorded."""
    resume = current_resume()
    cls = ToolCallScope if obs is None else _ObservedCall
    if resume is None:
        scope = cls(name, call_id, None, state, streaming, emit)
    else:
        run = current_run()
        point = resume.enter((*(run.address if run else ()), tool_segment(name, call_id)))
        scope = cls(name, call_id, None, state, streaming, emit, point)
    token = _TOOL_CALL.set(scope)
    step_token = STEP_CALL.set((step, here())) if step is not None else None
    tool = deps.tool_index.get(name)
    streams = tool is not None and tool.is_streaming  # (read once: a function tool's is a property)
    callbacks = deps.callbacks
    whole = callbacks is not None and callbacks.tool and (callbacks.tool_whole or not streams)
    try:
        if obs is not None:
            observer.tool_start(obs, deps.name, name, call_id, arguments)
        if whole:
            assert callbacks is not None
            content = await _call_with_callbacks(deps, callbacks, tool, name, call_id, arguments)
        elif streams and callbacks is not None and callbacks.tool:  # only before_tool: it streams unless given
            assert tool is not None
            ctx = ToolCallContext(deps.name, name, call_id, arguments)
            args = tool_arguments(arguments)
            given = await callbacks.run_tool_chain(callbacks.before_tool, ctx, args)
            if given is None:
                return await _stream_tool(deps, tool, scope, _edited(ctx, args), obs)
            content = given
        elif streams:
            assert tool is not None
            return await _stream_tool(deps, tool, scope, arguments, obs)
        elif tool is None or deps.tool_wrappers:
            content = await _invoke(deps, tool, name, call_id, arguments)
        else:  # the common call, without a coroutine of its own
            try:
                content = await tool.invoke(arguments)
            except Interrupted:
                raise
            except Exception as e:
                content = _tool_failed(deps, name, call_id, e)
        if isinstance(content, Interrupted):  # returned instead of raised (a BaseTool, a wrapper)
            raise content
    except BaseException as e:  # an interrupt, a cancellation, tool_error="raise"
        if obs is not None and not (streams and not whole and not isinstance(e, MiddlewareError)):
            # (a streaming tool's producer reports, unless the callbacks' path read it whole)
            observer.tool_end(obs, deps.name, name, call_id, None, e)
        raise
    finally:
        try:  # (not contextlib.suppress: this runs for every call)
            _TOOL_CALL.reset(token)
            if step_token is not None:
                STEP_CALL.reset(step_token)
        except ValueError:  # closed by the GC, outside its context, after its loop closed
            pass
    if obs is not None:
        observer.tool_end(obs, deps.name, name, call_id, content, scope.error)  # type: ignore[attr-defined]
    msg = Message.tool_message(content, call_id, name)
    if scope.parts:  # image or file parts the tool returned (send_tool_parts)
        msg.user_input_multi_content = scope.parts
    if streams:  # read whole for its callbacks: still a stream, as the tool's
        ev = event_from_message(None, stream_from_list([msg.copy()]), role="tool", tool_name=name)
    else:
        ev = event_from_message(msg.copy(), None, "tool", name)
    if scope.action is not None:
        ev.action = scope.action
    return ev, msg


async def _call_with_callbacks(
    deps: ReactDeps, callbacks: Callbacks, tool: BaseTool | None, name: str, call_id: str, arguments: str
) -> str:
    """A call with tool callbacks: ``before_tool`` may give its result (the tool does not
    run), ``on_tool_error`` may recover from the tool's error, ``after_tool`` may replace the
    result (the tool's, ``before_tool``'s or the recovered one, as in ADK-Go). A streaming tool
    is read to its end, so that the callbacks see its whole result."""
    ctx = ToolCallContext(deps.name, name, call_id, arguments)
    args = tool_arguments(arguments)
    given = await callbacks.run_tool_chain(callbacks.before_tool, ctx, args) if callbacks.before_tool else None
    if given is None and callbacks.before_tool:
        arguments = _edited(ctx, args)
    try:
        if given is not None:
            content = given
        elif tool is not None and tool.is_streaming:
            pieces: list[str] = []
            async for piece in tool.stream(arguments):
                if isinstance(piece, Interrupted):  # yielded instead of raised
                    raise piece
                pieces.append(piece)
            content = "".join(pieces)
        else:
            content = await _through_wrappers(deps, tool, name, call_id, arguments)
    except Interrupted:
        raise
    except Exception as e:
        if isinstance(e, MiddlewareError) and e.ends_run:  # an agent tool's agent's hook failed
            raise
        recovered = (
            await callbacks.run_tool_chain(callbacks.on_tool_error, ctx, args, e) if callbacks.on_tool_error else None
        )
        if recovered is None:
            return _tool_failed(deps, name, call_id, e)
        content = recovered
    if isinstance(content, Interrupted):  # returned by a wrapper
        raise content
    if callbacks.after_tool:
        replaced = await callbacks.run_tool_chain(callbacks.after_tool, ctx, args, content)
        if replaced is not None:
            content = replaced
    return content


def _edited(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    """The call's JSON arguments once ``before_tool`` ran: those it edited in the dict in place
    (the tool runs with them, as in Google ADK), else the model's, unchanged."""
    if args != tool_arguments(ctx.arguments):
        try:
            ctx.arguments = json.dumps(args)
        except (TypeError, ValueError) as e:
            raise MiddlewareError(
                f"ChatModelAgent {ctx.agent_name!r}: a before_tool callback left arguments that are not JSON: {e}"
            ) from e
    return ctx.arguments


async def _invoke(deps: ReactDeps, tool: BaseTool | None, name: str, call_id: str, arguments: str) -> str:
    """An invoked call through the tool-call wrappers (or of an unknown tool)."""
    try:
        return await _through_wrappers(deps, tool, name, call_id, arguments)
    except Interrupted:
        raise
    except Exception as e:
        return _tool_failed(deps, name, call_id, e)


async def _through_wrappers(deps: ReactDeps, tool: BaseTool | None, name: str, call_id: str, arguments: str) -> str:
    """The call through the tool-call wrappers; what the tool raises is raised."""

    async def call(args: str) -> str:
        if tool is None:
            raise LookupError(
                f"tool {name!r} not found; the agent {deps.name!r} has: {', '.join(deps.tool_index) or 'no tools'}"
            )
        result: str = await tool.invoke(args)
        return result

    endpoint: Callable[[str], Awaitable[str]] = call
    for wrapper in reversed(deps.tool_wrappers):  # the first wrapper is the outermost
        endpoint = _bind(wrapper, ToolCallContext(deps.name, name, call_id, arguments), endpoint)
    return await endpoint(arguments)


def _tool_failed(deps: ReactDeps, name: str, call_id: str, e: Exception) -> str:
    """A failed call: its error text for the model, or (``tool_error="raise"``) the end. A
    callback or plugin hook that failed in an agent tool's agent ends the run (as it would in
    this agent), it is not handed to the model."""
    if isinstance(e, MiddlewareError) and e.ends_run:
        raise e
    if deps.tool_error == "raise":
        raise ToolCallError(f"failed to invoke tool[name:{name} id:{call_id}]: {e}") from e
    _log_tool_error(deps.name, name, call_id, e)
    scope = current_tool_call()
    if type(scope) is _ObservedCall:  # for the observers' on_tool_end
        scope.error = e
    return f"Error: {e}"


async def _stream_tool(
    deps: ReactDeps, tool: BaseTool, scope: ToolCallScope, arguments: str, obs: Observers | None
) -> tuple[AgentEvent, asyncio.Future[Message]]:
    """A streaming tool (its native flavour, whatever the run's mode): its event carries a
    stream of tool-message chunks, emitted once the first chunk is there (so an action the
    tool sends before its first chunk is on the event); the state gets their concatenation.
    An interrupt before the first chunk interrupts the call; one after it, once the stream
    ends. Tool-call wrappers apply to invoked tools only."""
    name, call_id = scope.tool_name, scope.call_id
    reader, writer = pipe()
    user_copy, own = reader.copy(2)
    started = asyncio.Event()
    interrupted: list[Interrupted] = []

    async def produce() -> None:
        parts: list[str] = []
        failure: BaseException | None = None
        try:
            async for piece in tool.stream(arguments):
                if isinstance(piece, Interrupted):  # yielded instead of raised
                    raise piece
                writer.send(Message(role="tool", content=piece, tool_call_id=call_id, tool_name=name))
                if obs is not None:
                    parts.append(piece)
                started.set()
                if writer.reader_closed:  # every reader is gone: stop producing
                    break
        except Interrupted as e:
            interrupted.append(e)
            failure = e
        except Exception as e:
            failure = e
            if deps.tool_error == "raise":
                writer.send_error(ToolCallError(f"failed to stream tool call {call_id}: {e}"))
            else:
                _log_tool_error(deps.name, name, call_id, e)
                writer.send(Message(role="tool", content=f"Error: {e}", tool_call_id=call_id, tool_name=name))
                parts.append(f"Error: {e}")
        except BaseException as e:  # cancelled, or it ends the run: then the stream says it was cut short
            failure = e
            if not isinstance(e, asyncio.CancelledError):
                writer.send_error(ToolCallError(f"tool call {call_id} raised {type(e).__name__}"))
            raise
        finally:
            started.set()
            writer.close()
            if obs is not None:
                ended = failure is not None and not isinstance(failure, Exception | asyncio.CancelledError)
                result = None if ended else "".join(parts)
                observer.tool_end(obs, deps.name, name, call_id, result, failure)

    producer = child_task(produce())  # runs with the tool-call scope set
    await started.wait()
    if interrupted and producer.done():
        user_copy.close()
        own.close()
        raise interrupted[0]

    async def concat() -> Message:
        try:
            msg: Message = await aconcat_message_stream(own)
        except GeneratorExit:  # destroyed with its closed loop: nothing can be awaited now
            raise
        except BaseException:
            await producer
            raise
        await producer
        if interrupted:
            raise interrupted[0]
        if not msg.role:
            msg = Message.tool_message("", call_id, name)
        if scope.parts:  # image or file parts the tool sent (send_tool_parts)
            msg.user_input_multi_content = scope.parts
        return msg

    result = child_task(concat())
    ev = event_from_message(None, user_copy, role="tool", tool_name=name)
    if scope.action is not None:
        ev.action = scope.action
    return ev, result


def _log_tool_error(agent: str, tool: str, call_id: str, e: Exception) -> None:
    """A tool error sent to the model as the call's result: one line at WARNING, the
    traceback at DEBUG."""
    _log.warning(
        "agent %r: tool %r (call %s) failed, sent to the model: %s: %s", agent, tool, call_id, type(e).__name__, e
    )
    _log.debug("agent %r: tool %r (call %s) traceback", agent, tool, call_id, exc_info=e)


def _bind(
    wrapper: ToolWrapper, ctx: ToolCallContext, inner: Callable[[str], Awaitable[str]]
) -> Callable[[str], Awaitable[str]]:
    async def call(args: str) -> str:
        ctx.arguments = args
        result = await wrapper(ctx, inner)
        if type(result) is not str and not isinstance(result, (str, Interrupted)):
            raise hook_failed(
                ctx.agent_name, wrapper, TypeError(f"it returned {type(result).__name__}; return the str result")
            )
        return result

    return call
