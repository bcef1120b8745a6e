"""PatchToolCalls: placeholder results for tool calls that have none."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rillet._native import Message
from rillet.chatmodel import ModelContext
from rillet.chatmodel.middleware import ChatModelAgentMiddleware, ChatModelAgentState

__all__ = ["PatchToolCalls"]

PLACEHOLDER = "Tool call {name} (id {call_id}) has no result: it was cancelled before it finished."


@dataclass
class PatchToolCalls(ChatModelAgentMiddleware):
    """Before each model call, every tool call of an assistant message that no tool message
    right after it answers (a run cancelled mid-round, a history cut short) gets a tool
    message, inserted right after the call's message. The patched state is kept.

    Args:
        content: the placeholder's text: a template with ``{name}`` and ``{call_id}``, or a
            function ``(tool_name, call_id) -> str``.
    """

    content: str | Callable[[str, str], str] = PLACEHOLDER

    def __post_init__(self) -> None:
        if not isinstance(self.content, str) and not callable(self.content):
            raise TypeError(
                f"PatchToolCalls(content): a template str or a function (tool_name, call_id) -> str, "
                f"got {type(self.content).__name__}"
            )

    async def before_model(self, state: ChatModelAgentState, ctx: ModelContext) -> ChatModelAgentState | None:
        messages = state.messages
        patched: list[Message] = []
        changed = False
        for i, msg in enumerate(messages):
            patched.append(msg)
            if msg.role != "assistant" or not msg.tool_calls:
                continue
            answered = _answered(messages, i + 1)
            for call in msg.tool_calls:
                if call.id not in answered:
                    patched.append(
                        Message.tool_message(self._text(call.function.name, call.id), call.id, call.function.name)
                    )
                    changed = True
        if changed:
            state.messages = patched
        return None

    def _text(self, name: str, call_id: str) -> str:
        if isinstance(self.content, str):
            return self.content.format(name=name, call_id=call_id)
        return self.content(name, call_id)


def _answered(messages: list[Message], start: int) -> set[str]:
    """The call ids the tool messages from ``start`` on answer, up to the first other message."""
    ids: set[str] = set()
    for msg in messages[start:]:
        if msg.role != "tool":
            break
        ids.add(msg.tool_call_id)
    return ids
