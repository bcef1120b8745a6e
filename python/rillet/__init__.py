"""rillet: an event-stream agent development kit for Python with a Rust core."""

from rillet import codec, schema
from rillet._native import (
    EMPTY,
    Channel,
    ChannelClosed,
    DecodeError,
    EncodeError,
    EndOfStream,
    RilletError,
    __version__,
)
from rillet.event_pair import EventGenerator, EventIterator, new_event_pair
from rillet.schema import *  # noqa: F403  (messages and streams: see schema.__all__)

__all__ = [
    "EMPTY",
    "Channel",
    "ChannelClosed",
    "DecodeError",
    "EncodeError",
    "EndOfStream",
    "EventGenerator",
    "EventIterator",
    "RilletError",
    "__version__",
    "codec",
    "new_event_pair",
]
__all__ += schema.__all__
