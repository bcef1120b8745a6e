"""Summarization: the older part of a long conversation becomes a summary."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rillet._native import Message
from rillet.chatmodel import ModelContext
from rillet.chatmodel.middleware import ChatModelAgentMiddleware, ChatModelAgentState
from rillet.sessions.policies import SummarizeOldest, approx_tokens
from rillet.sessions.session_run import call_summarizer

__all__ = ["Summarization"]


@dataclass
class Summarization(ChatModelAgentMiddleware):
    """Before a model call, when the conversation counts more than ``max_tokens`` (by
    ``counter``, any ``Message -> int``: a tokenizer's count, the sessions'
    :func:`approx_tokens` by default), the messages after the leading system messages and
    before the last ``keep_messages`` go to ``summarizer`` and are replaced by its summary.
    The summarised state is kept: later calls (and a checkpoint) see the summary, not what it
    replaced.

    ``summarizer`` is what :class:`~rillet.SummarizeOldest` takes: a function (sync or async)
    ``list[Message] -> str | Message`` or an agent (it gets the conversation as text in one
    user message; its last answer is the summary). A text becomes one system message. The
    kept tail never starts inside a tool round: a tool result stays with its call. The summary
    is marked (``extra["rillet_summary"]``), so the next summary folds it in.
    """

    summarizer: Any  # a Summarizer function or an Agent, as SummarizeOldest takes
    max_tokens: int = 8_000
    keep_messages: int = 4
    counter: Callable[[Message], int] = approx_tokens

    def __post_init__(self) -> None:
        if not isinstance(self.max_tokens, int) or isinstance(self.max_tokens, bool) or self.max_tokens < 1:
            raise ValueError(f"Summarization(max_tokens): an int >= 1, got {self.max_tokens!r}")
        if not isinstance(self.keep_messages, int) or self.keep_messages < 0:
            raise ValueError(f"Summarization(keep_messages): an int >= 0, got {self.keep_messages!r}")
        SummarizeOldest(self.summarizer)  # the same check of the summariser, with its message

    async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        messages = state.messages
        if sum(map(self.counter, messages)) <= self.max_tokens:
            return None
        head = 0  # the leading system messages (the instruction) stay; an earlier summary does not
        while head < len(messages) and messages[head].role == "system" and not _is_summary(messages[head]):
            head += 1
        cut = len(messages) - self.keep_messages
        while head < cut < len(messages) and messages[cut].role == "tool":
            cut -= 1
        if cut <= head:
            return None  # nothing older than what is kept
        summary = (await call_summarizer(self.summarizer, messages[head:cut], "Summarization")).copy()
        summary.extra = {**(summary.extra or {}), SUMMARY_MARK: True}
        state.messages = [*messages[:head], summary, *messages[cut:]]
        return None


SUMMARY_MARK = "rillet_summary"  # in a summary's ``extra``: the next summary folds it in


def _is_summary(message: Message) -> bool:
    extra = message.extra
    return bool(extra and extra.get(SUMMARY_MARK))
