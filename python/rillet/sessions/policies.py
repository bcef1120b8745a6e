"""What of a session a run loads: the trimming and summarising policies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from rillet._native import Message

__all__ = ["LastTurns", "SessionPolicy", "SummarizeOldest", "TokenBudget", "approx_tokens"]


def approx_tokens(message: Message) -> int:
    """A model-free token estimate: about four characters a token, plus the tool calls'
    names and arguments and a few tokens of framing per message."""
    chars = len(message.content or "")
    for call in message.tool_calls or []:
        chars += len(call.function.name) + len(call.function.arguments)
    return 4 + (chars + 3) // 4


@dataclass(frozen=True)
class LastTurns:
    """Load only the last ``n`` turns (after the summary, if one was written)."""

    n: int

    def __post_init__(self) -> None:
        if not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"LastTurns(n): n must be an int >= 1, got {self.n!r}")


@dataclass(frozen=True)
class TokenBudget:
    """Load the newest whole turns whose messages fit in ``max_tokens`` by ``counter``
    (any ``Message -> int``: a tokenizer's count; :func:`approx_tokens` by default). Turns
    are read newest first, ``batch`` rows at a time, and reading stops at the first turn
    that does not fit."""

    max_tokens: int
    counter: Callable[[Message], int] = approx_tokens
    batch: int = 16

    def __post_init__(self) -> None:
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ValueError(f"TokenBudget(max_tokens): must be an int >= 1, got {self.max_tokens!r}")
        if self.batch < 1:
            raise ValueError(f"TokenBudget(batch): must be >= 1, got {self.batch!r}")


Summarizer = Callable[[list[Message]], "str | Message | Awaitable[str | Message]"]


@dataclass(frozen=True)
class SummarizeOldest:
    """Keep the last ``keep_turns`` turns verbatim and condense what is older into a summary
    snapshot. After a run, once ``keep_turns + every`` turns stand after the last snapshot,
    ``summarizer`` gets the old summary's messages and the turns to fold in, and returns the
    new summary (a text, which becomes one system message, or a Message). ``summarizer`` is a
    function (sync or async) or an agent (it gets the conversation as one user message of
    text, and its last assistant message is the summary). Loading reads the snapshot and the
    turns after it: at most ``keep_turns + every`` rows."""

    summarizer: Any  # Summarizer | Agent: Agent would pull the agent layer into annotations
    keep_turns: int = 4
    every: int = 8

    def __post_init__(self) -> None:
        if self.keep_turns < 0 or self.every < 1:
            raise ValueError(
                f"SummarizeOldest: keep_turns must be >= 0 and every >= 1, got {self.keep_turns!r}, {self.every!r}"
            )
        if not callable(self.summarizer) and not callable(getattr(self.summarizer, "run", None)):
            raise TypeError(
                "SummarizeOldest(summarizer): expected a function (list[Message]) -> str | Message or an agent, "
                f"got {type(self.summarizer).__name__}"
            )


SessionPolicy = LastTurns | TokenBudget | SummarizeOldest
