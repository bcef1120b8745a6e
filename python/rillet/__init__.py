"""rillet: an event-stream agent development kit for Python with a Rust core."""

from rillet import codec
from rillet._native import EMPTY, ChannelClosed, DecodeError, EncodeError, RilletError, __version__
from rillet.channel import Channel
from rillet.event_pair import EventGenerator, EventIterator, new_event_pair

__all__ = [
    "EMPTY",
    "Channel",
    "ChannelClosed",
    "DecodeError",
    "EncodeError",
    "EventGenerator",
    "EventIterator",
    "RilletError",
    "__version__",
    "codec",
    "new_event_pair",
]
