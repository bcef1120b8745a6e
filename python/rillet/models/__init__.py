"""Chat models: the :class:`ChatModel` protocol agents call, and :class:`ScriptedModel`,
the offline test double, :class:`OpenAIChatModel` for any OpenAI-compatible endpoint and
:class:`AnthropicChatModel` for Anthropic's Messages API (their HTTP client is imported on
first use)."""

from rillet.models import errors
from rillet.models.anthropic import AnthropicChatModel
from rillet.models.base import ChatModel, ModelCall
from rillet.models.errors import *
from rillet.models.openai import OpenAIChatModel
from rillet.models.scripted import ScriptedModel, ScriptExhaustedError

__all__ = ["AnthropicChatModel", "ChatModel", "ModelCall", "OpenAIChatModel", "ScriptExhaustedError", "ScriptedModel"]
__all__ += errors.__all__
