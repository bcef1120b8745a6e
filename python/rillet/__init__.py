"""rillet: an event-stream agent development kit for Python with a Rust core."""

from rillet import codec, schema
from rillet._native import EMPTY, Channel, ChannelClosed, DecodeError, EncodeError, RilletError, __version__
from rillet.event_pair import EventGenerator, EventIterator, new_event_pair
from rillet.models import ChatModel, ModelCall, ScriptedModel, ScriptExhaustedError
from rillet.schema import *  # noqa: F403  (messages and streams: see schema.__all__)

__all__ = [
    "EMPTY",
    "Channel",
    "ChannelClosed",
    "ChatModel",
    "DecodeError",
    "EncodeError",
    "EventGenerator",
    "EventIterator",
    "ModelCall",
    "RilletError",
    "ScriptExhaustedError",
    "ScriptedModel",
    "__version__",
    "codec",
    "new_event_pair",
]
__all__ += schema.__all__
