"""Live (bidirectional) runs: :class:`LiveRequestQueue`, what the caller of
:meth:`rillet.Runner.run_live` sends while reading the events; the :class:`LiveModel` and
:class:`LiveAgent` protocols; :class:`ScriptedLiveModel`, the offline test double, and
:class:`OpenAIRealtimeModel` (websockets, imported on first connect). See
docs/live.md.

Layer: models and live, rillet.live beside rillet.models (neither imports the other). May import
rillet.data and the layers under it (the import-linter contract in pyproject.toml;
docs/architecture.md); agents', events' and tools' types appear only in annotations.
"""

from rillet.live.model import (
    LiveAgent,
    LiveConnection,
    LiveContext,
    LiveModel,
    LiveResponse,
    LiveSource,
    LiveStatus,
    live_status,
)
from rillet.live.openai_realtime import OpenAIRealtimeModel
from rillet.live.queue import Blob, LiveRequest, LiveRequestQueue
from rillet.live.scripted import LiveReply, ScriptedLiveConnection, ScriptedLiveModel

__all__ = [
    "Blob",
    "LiveAgent",
    "LiveConnection",
    "LiveContext",
    "LiveModel",
    "LiveReply",
    "LiveRequest",
    "LiveRequestQueue",
    "LiveResponse",
    "LiveSource",
    "LiveStatus",
    "OpenAIRealtimeModel",
    "ScriptedLiveConnection",
    "ScriptedLiveModel",
    "live_status",
]
