"""ToolResultReduction: long tool results cut as they arrive, older ones cleared."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rillet._native import Message
from rillet.chatmodel import ModelContext, ToolCallContext
from rillet.chatmodel.middleware import ChatModelAgentMiddleware, ChatModelAgentState, ToolEndpoint
from rillet.sessions.policies import approx_tokens

__all__ = ["ToolResultReduction"]

CLEARED = "[this tool result was cleared to save context; call the tool again if you need it]"


@dataclass
class ToolResultReduction(ChatModelAgentMiddleware):
    """Keeps tool results from filling the model's context, in two ways (Eino's reduction
    middleware, without its file offloading):

    * cutting: a result longer than ``max_length`` characters keeps its first ``max_length``
      and a note of how much was cut, as the call returns (invoked tools; streaming tools'
      results are not wrapped);
    * clearing: before a model call, when the conversation counts more than ``max_tokens``
      (by ``counter``, any ``Message -> int``, the sessions' :func:`approx_tokens` by
      default), the results of every tool round but the last ``keep_rounds`` are replaced
      by ``cleared``. The cleared state is kept.

    Tools named in ``exclude`` are never cut or cleared. ``max_length=None`` turns cutting
    off; ``max_tokens=None`` (the default) clearing.
    """

    max_length: int | None = 20_000
    max_tokens: int | None = None
    keep_rounds: int = 1
    counter: Callable[[Message], int] = approx_tokens
    exclude: Iterable[str] = field(default_factory=frozenset)
    cleared: str = CLEARED

    def __post_init__(self) -> None:
        for name in ("max_length", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"ToolResultReduction({name}): an int >= 1 or None, got {value!r}")
        if not isinstance(self.keep_rounds, int) or self.keep_rounds < 0:
            raise ValueError(f"ToolResultReduction(keep_rounds): an int >= 0, got {self.keep_rounds!r}")
        if isinstance(self.exclude, str):
            raise TypeError(f"ToolResultReduction(exclude): a set of tool names, e.g. {{{self.exclude!r}}}")
        self.exclude = frozenset(self.exclude)

    async def wrap_tool_call(self, ctx: ToolCallContext, call: ToolEndpoint) -> str:
        result = await call(ctx.arguments)
        limit = self.max_length
        if limit is None or len(result) <= limit or ctx.tool_name in self.exclude:
            return result
        return f"{result[:limit]}\n[... {len(result) - limit} more characters cut]"

    async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        if self.max_tokens is None or sum(map(self.counter, state.messages)) <= self.max_tokens:
            return None
        messages = state.messages
        rounds = [i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_calls]
        old = rounds[: len(rounds) - self.keep_rounds] if self.keep_rounds else rounds
        for start in old:
            i = start + 1
            while i < len(messages) and messages[i].role == "tool":
                m = messages[i]
                if m.tool_name not in self.exclude and m.content != self.cleared:
                    messages[i] = Message.tool_message(self.cleared, m.tool_call_id, m.tool_name)
                i += 1
        return None
