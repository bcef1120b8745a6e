"""Errors raised by model clients (:class:`rillet.models.openai.OpenAIChatModel`).

Every one is a :class:`ModelError`, itself a :class:`rillet.RilletError`; the message says
what went wrong and what to do about it. Request errors carry ``status_code``, ``base_url``
and the server's ``body``; stream errors carry the ``line`` of the event stream they were
found at. The classes are defined in :mod:`rillet.errors`, with every other rillet error.
"""

from __future__ import annotations

from rillet.errors import (
    AuthenticationError,
    ContextLengthError,
    IncompleteStreamError,
    InvalidRequestError,
    MalformedChunkError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelStreamError,
    ModelTimeoutError,
    OverloadedError,
    RateLimitError,
    ServerError,
    StreamLimitError,
    UnsupportedContentError,
)

__all__ = [
    "AuthenticationError",
    "ContextLengthError",
    "IncompleteStreamError",
    "InvalidRequestError",
    "MalformedChunkError",
    "ModelConnectionError",
    "ModelError",
    "ModelNotFoundError",
    "ModelStreamError",
    "ModelTimeoutError",
    "OverloadedError",
    "RateLimitError",
    "ServerError",
    "StreamLimitError",
    "UnsupportedContentError",
]
