"""Chat models: the :class:`ChatModel` protocol agents call, and :class:`ScriptedModel`,
the offline test double. Provider models are imported from their own modules, lazily."""

from rillet.models.base import ChatModel, ModelCall
from rillet.models.scripted import ScriptedModel, ScriptExhaustedError

__all__ = ["ChatModel", "ModelCall", "ScriptExhaustedError", "ScriptedModel"]
