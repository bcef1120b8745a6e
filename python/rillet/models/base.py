"""The chat model interface the agents call (Eino's ``model.BaseChatModel``).

A chat model takes the conversation so far and answers with one assistant message: text,
reasoning, tool calls, or a mix. Anything with the two coroutine methods of :class:`ChatModel`
is one; nothing has to subclass it. :class:`rillet.ScriptedModel` is the offline test double.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rillet._native import Message, StreamReader

if TYPE_CHECKING:
    from rillet.tools import ToolInfo

__all__ = ["ChatModel", "ModelCall"]


@runtime_checkable
class ChatModel(Protocol):
    """What an agent needs from a model: ``generate`` for a whole reply, ``stream`` for chunks.

    Implementers must:

    * take ``messages`` as read-only input: never mutate the list or its messages (the agent
      keeps them as its state and may send the same ones again);
    * offer ``tools`` (a sequence of :class:`rillet.tools.ToolInfo`, ``None`` or empty meaning
      no tools) to the model, so that it may answer with tool calls; each returned tool call
      names one of them and carries its arguments as JSON text;
    * accept ``**options`` as model-specific keyword options (temperature, max_tokens, a model
      name...) and ignore or reject by name what they do not know;
    * return fresh messages the caller may keep and mutate, with role ``"assistant"``; usage and
      finish reason, when known, go in ``response_meta``.

    A model that takes ``response_format=<a pydantic model class>`` and answers with JSON
    text matching it sets the attribute ``supports_response_format = True``; a ChatModelAgent
    with an ``output_type`` then asks for structured output that way, and otherwise offers
    the model a final-answer tool (the attribute is optional: not part of this protocol).

    ``isinstance(obj, ChatModel)`` checks only that both methods exist, not their signatures.
    """

    async def generate(
        self,
        messages: list[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Any,
    ) -> Message:
        """Returns the whole assistant reply to ``messages`` as one ``Message``.

        Errors (connection, authentication, a refused request) are raised from here.
        """
        ...

    async def stream(
        self,
        messages: list[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Any,
    ) -> StreamReader[Message]:
        """Starts the reply to ``messages`` and returns a ``StreamReader`` of ``Message`` chunks.

        The chunks must concatenate to the whole reply with :func:`rillet.concat_messages`
        (tool-call deltas carry their ``index``; usage goes on the last chunk). Awaiting this
        returns once the stream has started, so connection and authentication errors are
        raised here; an error in the middle of the stream is sent as an error item
        (``writer.send_error``), which the reader raises from one receive.
        """
        ...


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call a recording model received (see :attr:`rillet.ScriptedModel.calls`).

    ``messages`` are copies taken at call time, so later changes to the caller's messages do
    not show here; ``tools`` are the ``ToolInfo`` objects offered (empty when none);
    ``options`` the keyword options passed; ``streaming`` is True for ``stream`` calls and
    False for ``generate`` calls.
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolInfo, ...]
    options: dict[str, Any]
    streaming: bool
