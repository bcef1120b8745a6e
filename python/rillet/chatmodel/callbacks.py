"""ChatModelAgent's model and tool callbacks, ADK-style: each may short-circuit, replace or
recover one call.

A run's :class:`Callbacks` lists, for each kind, the Runner's plugins' hooks first, then the
agent's own callbacks, in order. They run one after another and the first that returns
something other than None decides; the rest of that kind are skipped (``before_model``'s list
of messages is the exception: it rewrites the conversation and the next one runs). A callback
that raises, or returns what it may not, ends the run with a MiddlewareError naming it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rillet._native import AgenticMessage, Message
from rillet.errors import MiddlewareError
from rillet.run.plugin import Named, PluginSet, call_hook, check_signature
from rillet.tools import encode_result

if TYPE_CHECKING:
    from rillet.chatmodel.config import ModelContext, ToolCallContext

__all__ = ["Callbacks", "tool_arguments"]

_KINDS = ("before_model", "after_model", "on_model_error", "before_tool", "after_tool", "on_tool_error")


def _named(where: str, kind: str, fns: Sequence[Callable[..., Any]]) -> tuple[Named, ...]:
    named = tuple((f"the {kind} callback {getattr(fn, '__qualname__', repr(fn))}", fn) for fn in fns)
    for who, fn in named:  # when the agent is made, not at the first call in the middle of a run
        check_signature(where, who, fn, kind)
    return named


@dataclass(frozen=True, slots=True)
class Callbacks:
    """One run's model and tool callbacks, each kind in the order they run."""

    where: str  # what errors begin with: "ChatModelAgent 'name'"
    before_model: tuple[Named, ...]
    after_model: tuple[Named, ...]
    on_model_error: tuple[Named, ...]
    before_tool: tuple[Named, ...]
    after_tool: tuple[Named, ...]
    on_tool_error: tuple[Named, ...]
    model: bool  # any model callback: the model call takes the callbacks' path
    whole: bool  # after_model or on_model_error: a streamed reply is read to its end before its event
    tool: bool  # any tool callback: each tool call takes the callbacks' path
    tool_whole: bool  # after_tool or on_tool_error: a streaming tool is read to its end for them

    @classmethod
    def of(cls, agent_name: str, lists: Sequence[Sequence[Callable[..., Any]]]) -> Callbacks | None:
        """The agent's own callbacks (``lists``: one per kind, in :data:`_KINDS`' order), or
        None when it has none."""
        if not any(lists):
            return None
        where = f"ChatModelAgent {agent_name!r}"
        return cls.build(where, [_named(where, k, fns) for k, fns in zip(_KINDS, lists, strict=True)])

    @classmethod
    def build(cls, where: str, chains: Sequence[tuple[Named, ...]]) -> Callbacks:
        bm, am, me, bt, at, te = chains
        return cls(
            where, bm, am, me, bt, at, te, bool(bm or am or me), bool(am or me), bool(bt or at or te), bool(at or te)
        )

    @staticmethod
    def with_plugins(own: Callbacks | None, agent_name: str, plugins: PluginSet) -> Callbacks | None:
        """``own`` with the plugins' hooks before each kind's callbacks (for one run)."""
        chains = [plugins.hooks(k) + (getattr(own, k) if own is not None else ()) for k in _KINDS]
        if not any(chains):
            return own
        return Callbacks.build(f"ChatModelAgent {agent_name!r}", chains)

    # --- model calls ---

    async def run_before_model(self, ctx: ModelContext) -> Message | AgenticMessage | None:
        """The response that replaces the call, if a callback gives one. A list of messages
        replaces the conversation (in place: the loop's list, kept for later calls)."""
        for who, fn in self.before_model:
            result = await call_hook(self.where, who, fn, ctx)
            if result is None:
                continue
            if type(result) is Message or type(result) is AgenticMessage:
                if result.role != "assistant":
                    raise self._bad(who, f"a {result.role or 'role-less'} Message; a response is an assistant Message")
                return result.copy()  # the agent's own: a callback may hand out the same message again
            if isinstance(result, list) and (
                all(type(m) is Message for m in result) or all(type(m) is AgenticMessage for m in result)
            ):  # (one type: a block-list run's conversation is AgenticMessages)
                ctx.messages[:] = result
                continue
            raise self._bad(
                who,
                f"{type(result).__name__}; return an assistant Message (or AgenticMessage), a list of Message "
                "(or of AgenticMessage), or None",
            )
        return None

    async def run_after_model(
        self, ctx: ModelContext, reply: Message | AgenticMessage
    ) -> Message | AgenticMessage | None:
        """The reply that replaces ``reply``, if a callback gives one."""
        return await self._message(self.after_model, ctx, reply)

    async def run_on_model_error(self, ctx: ModelContext, error: Exception) -> Message | AgenticMessage | None:
        """The reply that recovers from ``error``, if a callback gives one."""
        return await self._message(self.on_model_error, ctx, error)

    async def _message(self, chain: tuple[Named, ...], *args: Any) -> Message | AgenticMessage | None:
        for who, fn in chain:
            result = await call_hook(self.where, who, fn, *args)
            if result is None:
                continue
            if type(result) is not Message and type(result) is not AgenticMessage:
                raise self._bad(who, f"{type(result).__name__}; return a rillet.Message (or AgenticMessage) or None")
            return result.copy()
        return None

    # --- tool calls ---

    async def run_tool_chain(self, chain: tuple[Named, ...], ctx: ToolCallContext, *args: Any) -> str | None:
        """The first result a callback of ``chain`` gives, as the model gets it, or None."""
        for who, fn in chain:
            result = await call_hook(self.where, who, fn, ctx, *args)
            if result is not None:
                try:
                    return encode_result(ctx.tool_name, result)
                except TypeError as e:
                    raise self._bad(who, str(e)) from e
        return None

    def _bad(self, who: str, what: str) -> MiddlewareError:
        return MiddlewareError(f"{self.where}: {who} returned {what}")


def tool_arguments(arguments: str) -> dict[str, Any]:
    """A call's JSON arguments as the dict tool callbacks get (empty when they are not a JSON
    object: the tool reports its own argument errors)."""
    try:
        args = json.loads(arguments) if arguments else {}
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}
