"""Chat models: the :class:`ChatModel` protocol agents call, and :class:`ScriptedModel`,
the offline test double. Provider models are imported from their own modules, lazily."""

from rillet.models import errors
from rillet.models.base import ChatModel, ModelCall
from rillet.models.errors import *  # noqa: F403  (ModelError and its subclasses)
from rillet.models.scripted import ScriptedModel, ScriptExhaustedError

__all__ = ["ChatModel", "ModelCall", "ScriptExhaustedError", "ScriptedModel"]
__all__ += errors.__all__
