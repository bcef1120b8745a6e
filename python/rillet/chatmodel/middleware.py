"""ChatModelAgent middlewares (Eino's ``ChatModelAgentMiddleware``): hooks around the run,
each model call and each tool call.

A middleware overrides the hooks it needs; the agent collects, for each hook, the middlewares
whose class overrides it, once, when it is made, so a hook no middleware overrides costs the
run nothing. Hooks run in registration order (the first middleware's first); wrappers nest in
it (the first middleware is the outermost). The agent's callback keywords ``wrap_tool_call``,
``before_agent`` and ``after_agent`` are middlewares too: one per callback, registered before
the ``middlewares`` argument's. (The model and tool callbacks, ``before_model`` and the rest,
are ADK-style callbacks instead: :mod:`rillet.chatmodel.callbacks`.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rillet._native import Message
from rillet.chatmodel.config import (
    AfterAgent,
    BeforeAgent,
    ModelContext,
    ToolCallContext,
    ToolWrapper,
    maybe_await,
)
from rillet.errors import MiddlewareError

if TYPE_CHECKING:
    from rillet.models.base import ChatModel
    from rillet.run.agent import AgentInput
    from rillet.tools import BaseTool, ToolInfo

__all__ = ["ChatModelAgentContext", "ChatModelAgentMiddleware", "ChatModelAgentState", "Hooks", "ToolEndpoint"]

ToolEndpoint = Callable[[str], Awaitable[str]]
"""A tool call as a wrapper sees it: the JSON arguments in, the result text out."""


@dataclass(slots=True)
class ChatModelAgentContext:
    """What ``before_agent`` sees and may change for this run: the agent's instruction (the
    transfer instruction, when the agent has one, is appended after), its tools, the names of
    the tools whose result ends the run, and the run's input (None when the run resumes: a
    resumed run goes on from its checkpoint)."""

    instruction: str
    tools: list[BaseTool]
    return_directly: set[str]
    input: AgentInput | None = None


@dataclass(slots=True)
class ChatModelAgentState:
    """The agent's state around a model call: the conversation and the tools offered to the
    model. What ``before_model`` and ``after_model`` return (or change in place) becomes the
    agent's state: later model calls, and a checkpoint taken later in the run, see it."""

    messages: list[Message]
    tools: list[ToolInfo] = field(default_factory=list)


class ChatModelAgentMiddleware:
    """The base of ChatModelAgent middlewares: every hook does nothing; override the ones
    you need (``async def`` for the hooks, a plain ``def`` for ``wrap_model``).

    * :meth:`before_agent`: once a run (a resumed one too), before anything else;
    * :meth:`after_agent`: once the run has its answer (or a return-directly result), never
      after an error;
    * :meth:`before_model` / :meth:`after_model`: around each model call, rewriting the state;
    * :meth:`wrap_model`: the model one call goes to (not kept: the next call wraps again);
    * :meth:`wrap_tool_call`: around each invoked tool call (streaming tools are not wrapped).

    Hooks and tools may call :func:`rillet.send_event` and the run-local value functions.
    """

    async def before_agent(self, ctx: ChatModelAgentContext) -> ChatModelAgentContext | None:
        """Change ``ctx`` in place or return a new one; None keeps it."""
        return None

    async def after_agent(self, state: ChatModelAgentState) -> None:
        """The run's final state (its last message is the answer)."""

    async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        """Rewrite the state the model is called with (in place, or return a new one)."""
        return None

    async def after_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        """Rewrite the state after the model answered: its last message is the reply (the
        event already shows it: the model's, or what an ``after_model`` callback replaced it
        with); the rewritten last message is the reply the agent acts on."""
        return None

    def wrap_model(self, model: ChatModel, ctx: ModelContext) -> ChatModel:
        """The model this call goes to: ``model`` itself or a ChatModel wrapping it."""
        return model

    async def wrap_tool_call(self, ctx: ToolCallContext, call: ToolEndpoint) -> str:
        """Run the call (``await call(arguments)``), or not, and return its result."""
        return await call(ctx.arguments)


_BASE = ChatModelAgentMiddleware


def _overriding(middlewares: list[ChatModelAgentMiddleware], hook: str) -> list[Any]:
    base = getattr(_BASE, hook)
    return [getattr(mw, hook) for mw in middlewares if getattr(type(mw), hook) is not base]


@dataclass(frozen=True, slots=True)
class Hooks:
    """For each hook, the bound methods of the middlewares that override it, in order."""

    before_agent: list[Callable[[ChatModelAgentContext], Awaitable[ChatModelAgentContext | None]]]
    after_agent: list[Callable[[ChatModelAgentState], Awaitable[None]]]
    before_model: list[Callable[[ChatModelAgentState, ModelContext], Awaitable[ChatModelAgentState | None]]]
    after_model: list[Callable[[ChatModelAgentState, ModelContext], Awaitable[ChatModelAgentState | None]]]
    wrap_model: list[Callable[[ChatModel, ModelContext], ChatModel]]
    wrap_tool_call: list[ToolWrapper]
    around_model: bool  # any model hook: a model call needs a ModelContext (a field: read every call)

    @classmethod
    def of(cls, agent_name: str, middlewares: Iterable[Any]) -> Hooks:
        mws = list(middlewares)
        for mw in mws:
            if not isinstance(mw, ChatModelAgentMiddleware):
                what = "the class; pass an instance" if isinstance(mw, type) else type(mw).__name__
                raise TypeError(
                    f"ChatModelAgent {agent_name!r}: middlewares must be ChatModelAgentMiddleware instances, got {what}"
                )
        before, after, wrap = (_overriding(mws, h) for h in ("before_model", "after_model", "wrap_model"))
        return cls(
            _overriding(mws, "before_agent"),
            _overriding(mws, "after_agent"),
            before,
            after,
            wrap,
            _overriding(mws, "wrap_tool_call"),
            bool(before or after or wrap),
        )


# --- the callback keywords, as middlewares ---------------------------------------------------


class _WrapToolCall(ChatModelAgentMiddleware):
    def __init__(self, fn: ToolWrapper) -> None:
        self.fn = fn

    async def wrap_tool_call(self, ctx: ToolCallContext, call: ToolEndpoint) -> str:
        return await self.fn(ctx, call)


class _BeforeAgent(ChatModelAgentMiddleware):
    """The ``before_agent`` keyword: changes a new run's input (a resumed run has none)."""

    def __init__(self, fn: BeforeAgent) -> None:
        self.fn = fn

    async def before_agent(self, ctx: ChatModelAgentContext) -> ChatModelAgentContext | None:
        if ctx.input is not None:
            changed = await maybe_await(self.fn(ctx.input))
            if changed is not None:
                ctx.input = changed
        return None


class _AfterAgent(ChatModelAgentMiddleware):
    def __init__(self, fn: AfterAgent) -> None:
        self.fn = fn

    async def after_agent(self, state: ChatModelAgentState) -> None:
        await maybe_await(self.fn(state.messages))


def callback_middlewares(
    before_agent: list[BeforeAgent],
    wrap_tool_call: list[ToolWrapper],
    after_agent: list[AfterAgent],
) -> list[ChatModelAgentMiddleware]:
    """The middleware-style callback keywords' callbacks as middlewares, one each, in order."""
    mws: list[ChatModelAgentMiddleware] = []
    mws += [_BeforeAgent(fn) for fn in before_agent]
    mws += [_WrapToolCall(fn) for fn in wrap_tool_call]
    mws += [_AfterAgent(fn) for fn in after_agent]
    return mws


_CALLBACKS = (_BeforeAgent, _WrapToolCall, _AfterAgent)


def hook_failed(agent_name: str, hook: Any, e: Exception) -> MiddlewareError:
    """The error of a hook (a bound method of a middleware) that raised or returned what it
    may not: it names the middleware, or the callback a keyword middleware stands for."""
    mw = getattr(hook, "__self__", None)
    name = getattr(hook, "__name__", "hook")
    if isinstance(mw, _CALLBACKS):
        who = f"the {name} callback {getattr(mw.fn, '__qualname__', repr(mw.fn))}"
    else:
        who = f"middleware {type(mw).__name__}.{name}"
    return MiddlewareError(f"ChatModelAgent {agent_name!r}: {who} failed: {type(e).__name__}: {e}")
