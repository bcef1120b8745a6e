"""Chat models: the :class:`ChatModel` protocol agents call, and :class:`ScriptedModel`,
the offline test double, :class:`OpenAIChatModel` for any OpenAI-compatible endpoint and
:class:`OpenAIResponsesModel` for OpenAI's Responses API, :class:`AnthropicChatModel` for
Anthropic's Messages API and :class:`FallbackModel` to try several in turn (their HTTP client is
imported on first use).

Layer: models and live, rillet.models beside rillet.live (neither imports the other). May import
rillet.data and the layers under it (the import-linter contract in pyproject.toml;
docs/architecture.md); tools' types appear only in annotations.
"""

from rillet.models import errors
from rillet.models.anthropic import AnthropicChatModel
from rillet.models.base import ChatModel, ModelCall
from rillet.models.errors import *
from rillet.models.fallback import FallbackModel
from rillet.models.openai import OpenAIChatModel
from rillet.models.responses import OpenAIResponsesModel
from rillet.models.scripted import ScriptedModel, ScriptExhaustedError

__all__ = [
    "AnthropicChatModel",
    "ChatModel",
    "FallbackModel",
    "ModelCall",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "ScriptExhaustedError",
    "ScriptedModel",
]
__all__ += errors.__all__
