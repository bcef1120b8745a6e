"""A run's events fanned out over Redis Streams (``pip install rillet[redis]``); see
docs/streams.md.

:class:`RedisStreamSink` publishes the events of a run to a stream keyed by its run id as they
happen; :class:`RedisStreamSource` reads them back as the same AgentEvents in any process and
resumes from an entry id after a disconnect. Importing this package does not import redis-py:
it is loaded when a sink or source is made.

Layer: integrations, each independent of the others. May import rillet.runner, rillet.prebuilt,
rillet.middlewares and the layers under them (the import-linter contract in pyproject.toml;
docs/architecture.md).
"""

from rillet.errors import EventStreamConnectionError, EventStreamError, EventStreamGapError, EventStreamTimeoutError
from rillet.redis.sink import RedisStreamSink
from rillet.redis.source import RedisStreamSource

__all__ = [
    "EventStreamConnectionError",
    "EventStreamError",
    "EventStreamGapError",
    "EventStreamTimeoutError",
    "RedisStreamSink",
    "RedisStreamSource",
]
