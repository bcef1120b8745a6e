"""Plugins: one object registered on the Runner (``Runner(agent, plugins=[...])``) that sees,
and may change, every agent's, model's and tool's call of the run, across the whole tree
(transfer targets, workflow children, the inner runs of agent tools), before the agents' own
callbacks.

The Runner puts the run's :class:`PluginSet` in the run scope (:data:`rillet._core.scope.PLUGINS`);
the agents read it there: :class:`~rillet.run.agent.BaseAgent` for the agent hooks, the ReAct
steps for the model and tool hooks, the Runner for the run and event hooks. With no plugin the
variable holds None and each place pays one read of it.

Each hook of one kind runs in registration order; the first that returns something other than
None decides, and the later plugins' hooks and the agent's own callbacks of that kind are
skipped. A hook that raises ends the run with a :class:`~rillet.errors.MiddlewareError` that
names the plugin and the hook.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from rillet.data.events import AgentEvent, error_event
from rillet.errors import MiddlewareError
from rillet.run.context import CALLBACK

if TYPE_CHECKING:
    from rillet._native import AgenticMessage, Message
    from rillet.chatmodel.config import ModelContext, ToolCallContext
    from rillet.run.agent import AgentInput, CallbackContext

__all__ = [
    "LoggingPlugin",
    "Named",
    "Plugin",
    "PluginSet",
    "call_hook",
    "check_signature",
    "plugged_events",
    "plugin_set",
]

_Reply: TypeAlias = "Message | AgenticMessage | None"  # a model hook's answer (AgenticMessage: a block-list run)
_Before: TypeAlias = "Message | AgenticMessage | list[Message] | list[AgenticMessage] | None"

Named = tuple[str, Callable[..., Any]]
"""A callback and how an error names it (``"plugin 'log' (LoggingPlugin.before_model)"``)."""

_HOOKS = (
    "on_run_start",
    "on_run_end",
    "before_agent",
    "after_agent",
    "before_model",
    "after_model",
    "on_model_error",
    "before_tool",
    "after_tool",
    "on_tool_error",
    "on_event",
)

# What each hook is called with (for the errors of a callback or hook that cannot take it).
HOOK_ARGUMENTS = {
    "on_run_start": "(agent_name, input)",
    "on_run_end": "(agent_name)",
    "before_agent": "(ctx)",
    "after_agent": "(ctx)",
    "before_model": "(ctx)",
    "after_model": "(ctx, reply)",
    "on_model_error": "(ctx, error)",
    "before_tool": "(ctx, args)",
    "after_tool": "(ctx, args, result)",
    "on_tool_error": "(ctx, args, error)",
    "on_event": "(event)",
}

# Google ADK's BasePlugin method names, and rillet's hook of each (None: no such hook).
_ADK_NAMES = {
    "before_run_callback": "on_run_start",
    "after_run_callback": "on_run_end",
    "on_user_message_callback": "on_run_start",
    "before_agent_callback": "before_agent",
    "after_agent_callback": "after_agent",
    "before_model_callback": "before_model",
    "after_model_callback": "after_model",
    "on_model_error_callback": "on_model_error",
    "before_tool_callback": "before_tool",
    "after_tool_callback": "after_tool",
    "on_tool_error_callback": "on_tool_error",
    "on_event_callback": "on_event",
}


def check_signature(where: str, who: str, fn: Any, hook: str) -> None:
    """Refuses, when it is given, a callback or hook that cannot be called with the arguments
    ``hook`` gets (a Google ADK signature, say), rather than failing at its first call."""
    if not callable(fn):
        raise TypeError(f"{where}: {who} is not callable, got {type(fn).__name__}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C callable without a signature: not checkable
        return
    names = HOOK_ARGUMENTS[hook]
    n = names.count(",") + 1
    try:
        sig.bind(*range(n))
    except TypeError as e:
        page = "docs/plugins.md" if where.startswith("Runner") else "docs/callbacks.md"
        raise TypeError(
            f"{where}: {who} cannot be called as {hook}{names} ({e}); rillet calls {hook} with "
            f"{n} positional argument{'s' if n > 1 else ''}, not Google ADK's ({page})"
        ) from None


class Plugin:
    """The base of Runner plugins: every hook does nothing; override the ones you need, with
    ``def`` or ``async def``. ``name`` (default: the class name) is what errors name.

    * :meth:`on_run_start` / :meth:`on_run_end`: once per ``Runner.run`` or ``resume``;
    * :meth:`before_agent` / :meth:`after_agent`: around every agent of the run, as the
      agents' ``before_agent_callbacks`` (content returned ends that agent's call with it);
    * :meth:`before_model`, :meth:`after_model`, :meth:`on_model_error`,
      :meth:`before_tool`, :meth:`after_tool`, :meth:`on_tool_error`: around each model and
      tool call of every ChatModelAgent, as its callbacks of those names;
    * :meth:`on_event`: each event the Runner hands out; an event returned replaces it.
    """

    def __init__(self, name: str | None = None) -> None:
        self.name = name if name is not None else type(self).__name__

    def on_run_start(self, agent_name: str, input: AgentInput) -> None | Awaitable[None]:
        """The run starts with ``input`` (a resumed run's is the saved input)."""
        return None

    def on_run_end(self, agent_name: str) -> None | Awaitable[None]:
        """The run's last event was handed out (or its consumer stopped reading)."""
        return None

    def before_agent(self, ctx: CallbackContext) -> Message | str | None | Awaitable[Message | str | None]:
        """Content returned ends the agent's call with it (its body does not run)."""
        return None

    def after_agent(self, ctx: CallbackContext) -> Message | str | None | Awaitable[Message | str | None]:
        """Content returned is one more event of the agent, after its own."""
        return None

    def before_model(self, ctx: ModelContext) -> _Before | Awaitable[_Before]:
        """An assistant Message (an AgenticMessage in a block-list run) is the response (the
        model is not called); a list of messages replaces the conversation (the next callback
        runs)."""
        return None

    def after_model(self, ctx: ModelContext, reply: Any) -> _Reply | Awaitable[_Reply]:
        """A message replaces the reply (the event shows it). ``reply`` is a Message, or an
        AgenticMessage in a block-list run: an override may type it as either, or both."""
        return None

    def on_model_error(self, ctx: ModelContext, error: Exception) -> _Reply | Awaitable[_Reply]:
        """A message is the reply instead of the error."""
        return None

    def before_tool(self, ctx: ToolCallContext, args: dict[str, Any]) -> Any:
        """A result (str, or JSON-able data) is the call's result: the tool does not run."""
        return None

    def after_tool(self, ctx: ToolCallContext, args: dict[str, Any], result: str) -> Any:
        """A result replaces the tool's."""
        return None

    def on_tool_error(self, ctx: ToolCallContext, args: dict[str, Any], error: Exception) -> Any:
        """A result recovers the failed call."""
        return None

    def on_event(self, event: AgentEvent[Any]) -> AgentEvent[Any] | None | Awaitable[AgentEvent[Any] | None]:
        """An event returned is handed out instead of ``event`` (an ``AgentEvent[AgenticMessage]``
        in a block-list run: an override may type it so)."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {_name(self)!r}>"


class PluginSet:
    """A run's plugins, read by the agents from the run scope: for each hook, the plugins that
    override it (bound, named for errors), in registration order; collected once, when the
    Runner is made."""

    __slots__ = (*_HOOKS, "plugins")

    on_run_start: tuple[Named, ...]
    on_run_end: tuple[Named, ...]
    before_agent: tuple[Named, ...]
    after_agent: tuple[Named, ...]
    before_model: tuple[Named, ...]
    after_model: tuple[Named, ...]
    on_model_error: tuple[Named, ...]
    before_tool: tuple[Named, ...]
    after_tool: tuple[Named, ...]
    on_tool_error: tuple[Named, ...]
    on_event: tuple[Named, ...]

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.plugins = tuple(plugins)
        for hook in _HOOKS:
            base = getattr(Plugin, hook)
            chain: tuple[Named, ...] = tuple(
                (f"plugin {_name(p)!r} ({type(p).__name__}.{hook})", getattr(p, hook))
                for p in self.plugins
                if getattr(type(p), hook) is not base
            )
            for who, fn in chain:
                check_signature("Runner(plugins=...)", who, fn, hook)
            setattr(self, hook, chain)

    def hooks(self, hook: str) -> tuple[Named, ...]:
        """The plugins' ``hook`` methods, as :func:`call_hook` takes them."""
        chain: tuple[Named, ...] = getattr(self, hook)
        return chain


def _name(plugin: Plugin) -> str:
    """The plugin's name (its class's, when a subclass's ``__init__`` did not call ``super``)."""
    name = getattr(plugin, "name", None)
    return name if isinstance(name, str) else type(plugin).__name__


def plugin_set(plugins: Any) -> PluginSet | None:
    """``Runner(plugins=...)`` checked: a list of :class:`Plugin` instances (None for none)."""
    if isinstance(plugins, Plugin) or isinstance(plugins, type) or not hasattr(plugins, "__iter__"):
        what = plugins.__name__ if isinstance(plugins, type) else type(plugins).__name__
        raise TypeError(f"Runner(plugins=...): expected a list of plugins, got {what} (pass [plugin])")
    out = list(plugins)
    for p in out:
        if isinstance(p, type):
            raise TypeError(f"Runner(plugins=...): got the class {p.__name__} (pass an instance: {p.__name__}())")
        if not isinstance(p, Plugin):
            raise TypeError(
                f"Runner(plugins=...): {type(p).__name__} is not a plugin; subclass rillet.Plugin and override "
                "the hooks you need"
            )
        for adk, hook in _ADK_NAMES.items():  # never called: say so rather than ignore it
            if hasattr(type(p), adk):
                raise TypeError(
                    f"Runner(plugins=...): {type(p).__name__}.{adk} is Google ADK's name for a plugin hook, which "
                    f"rillet never calls; override {hook}{HOOK_ARGUMENTS[hook]} instead (docs/plugins.md)"
                )
    return PluginSet(out) if out else None


async def call_hook(where: str, who: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Calls one callback or plugin hook (sync or async) with :data:`CALLBACK` naming it (for
    :func:`rillet.end_invocation`); what it raises becomes a MiddlewareError naming it."""
    token = CALLBACK.set(who)
    try:
        result = fn(*args)
        if inspect.isawaitable(result):
            result = await result
    except Exception as e:
        raise MiddlewareError(f"{where}: {who} failed: {type(e).__name__}: {e}") from e
    finally:
        CALLBACK.reset(token)
    return result


# --- a plugin rillet ships ---------------------------------------------------------------------

_log = logging.getLogger("rillet.plugins")


class LoggingPlugin(Plugin):
    """Logs what the run does on the ``rillet.plugins`` logger (or ``logger``), at INFO: the
    run's start and end, each agent, model call, tool call, error and event handed out. It
    only watches: every hook returns None. (It has no ``after_model``, ``on_model_error``,
    ``after_tool`` or ``on_tool_error``: they make a streamed reply, or a streaming tool's
    result, be read to its end before its event goes out; the reply and the result are logged
    as their events, a model's failure as the error event it ends the run with, and a tool's
    failure by the agent, on ``rillet.chatmodel`` at WARNING.)"""

    def __init__(self, name: str = "logging", logger: logging.Logger | None = None) -> None:
        super().__init__(name)
        self.log = logger if logger is not None else _log

    def on_run_start(self, agent_name: str, input: AgentInput) -> None:
        self.log.info("run of %s starts (%d input messages)", agent_name, len(input.messages))

    def on_run_end(self, agent_name: str) -> None:
        self.log.info("run of %s ended", agent_name)

    def before_agent(self, ctx: CallbackContext) -> None:
        self.log.info("agent %s starts", ctx.agent_name)

    def after_agent(self, ctx: CallbackContext) -> None:
        self.log.info("agent %s ended", ctx.agent_name)

    def before_model(self, ctx: ModelContext) -> None:
        self.log.info(
            "agent %s calls its model (call %d, %d messages)", ctx.agent_name, ctx.iteration, len(ctx.messages)
        )

    def before_tool(self, ctx: ToolCallContext, args: dict[str, Any]) -> None:
        self.log.info("agent %s calls tool %s with %s", ctx.agent_name, ctx.tool_name, args)

    def on_event(self, event: AgentEvent) -> None:
        if event.error is not None:
            self.log.info("agent %s's run failed: %s", event.agent_name, event.error)
            return
        mv = event.message_output
        msg = mv.message if mv is not None else None
        if msg is not None:
            self.log.info("event of %s: %s %r", event.agent_name, msg.role, msg.content[:200])
        elif mv is not None:
            self.log.info("event of %s: a streamed %s message", event.agent_name, mv.role)
        if event.action is not None:
            self.log.info("event of %s: action %r", event.agent_name, event.action)


# --- the Runner's side: the run's hooks and its events -----------------------------------------


async def plugged_events(
    plugins: PluginSet, agent_name: str, input: AgentInput, events: AsyncIterator[AgentEvent]
) -> AsyncIterator[AgentEvent]:
    """A Runner run's ``events`` with the plugins' run hooks around them and each event through
    their ``on_event`` (the first event returned replaces it). A hook that raises ends the run
    with an error event naming it; ``on_run_end`` runs however the run ends (when its consumer
    stopped reading, an error of it is logged: nothing can be handed out then)."""
    where = "Runner"
    ended = False
    try:
        for who, hook in plugins.on_run_start:
            await call_hook(where, who, hook, agent_name, input)
        on_event = plugins.on_event
        async for ev in events:
            for who, hook in on_event:
                new = await call_hook(where, who, hook, ev)
                if new is not None:
                    if not isinstance(new, AgentEvent):
                        raise MiddlewareError(
                            f"{where}: {who} returned {type(new).__name__}; return an AgentEvent or None"
                        )
                    ev = new
                    break
            yield ev
        ended = True
        for who, hook in plugins.on_run_end:
            await call_hook(where, who, hook, agent_name)
    except MiddlewareError as e:
        ended = True
        yield error_event(e, agent_name)
    finally:
        await events.aclose()  # type: ignore[attr-defined]
        if not ended:  # the consumer stopped reading
            for who, hook in plugins.on_run_end:
                try:
                    await call_hook(where, who, hook, agent_name)
                except MiddlewareError:
                    _plugin_log.exception("the run's consumer stopped reading; a plugin's on_run_end raised")


_plugin_log = logging.getLogger("rillet")
