"""RunConfig: per-run settings of the Runner (ADK-Go's ``agent.RunConfig``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["RunConfig"]

_MODES = ("none", "sse")


@dataclass(frozen=True, slots=True)
class RunConfig:
    """``streaming_mode``: ``"sse"`` asks models to stream their output (events carry message
    streams), ``"none"`` for whole messages; unset, the Runner's ``streaming`` decides.
    ``save_input_blobs_as_artifacts``: the run's input blobs (``data:`` parts of the input
    messages, realtime blobs of a live run) are saved in the Runner's ``artifact_service``;
    in a message, such a part is replaced by a text naming the artifact."""

    streaming_mode: Literal["none", "sse"] | None = None
    save_input_blobs_as_artifacts: bool = False

    def __post_init__(self) -> None:
        if self.streaming_mode is not None and self.streaming_mode not in _MODES:
            raise ValueError(f"RunConfig(streaming_mode=...): expected 'none' or 'sse', got {self.streaming_mode!r}")
        if not isinstance(self.save_input_blobs_as_artifacts, bool):
            raise TypeError(
                "RunConfig(save_input_blobs_as_artifacts=...): expected a bool, "
                f"got {type(self.save_input_blobs_as_artifacts).__name__}"
            )

    def streaming(self, default: bool) -> bool:
        """Whether the run streams: the mode when set, else ``default`` (the Runner's)."""
        return default if self.streaming_mode is None else self.streaming_mode == "sse"
