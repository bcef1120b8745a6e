"""Errors raised by model clients (:class:`rillet.models.openai.OpenAIChatModel`).

Every one is a :class:`ModelError`, itself a :class:`rillet.RilletError`; the message says
what went wrong and what to do about it. Request errors carry ``status_code``, ``base_url``
and the server's ``body``; stream errors carry the ``line`` of the event stream they were
found at.
"""

from __future__ import annotations

from rillet._native import RilletError

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
    "RateLimitError",
    "ServerError",
    "StreamLimitError",
]


class ModelError(RilletError):
    """Base class of the errors a model client raises.

    Attributes (``None`` when they do not apply): ``status_code`` (the HTTP status),
    ``base_url`` (the server asked), ``body`` (the server's answer, as text), ``code`` (the
    server's error code or type), ``line`` (the line of the event stream).
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        base_url: str | None = None,
        body: str | None = None,
        code: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.base_url = base_url
        self.body = body
        self.code = code
        self.line = line


class AuthenticationError(ModelError):
    """The server refused the credentials (HTTP 401 or 403): check the API key."""


class ModelNotFoundError(ModelError, LookupError):
    """The server does not know the model, or the URL (HTTP 404)."""


class InvalidRequestError(ModelError, ValueError):
    """The server refused the request as invalid (HTTP 400 or 422); the message is the
    server's."""


class ContextLengthError(InvalidRequestError):
    """The conversation is longer than the model's context window."""


class RateLimitError(ModelError):
    """HTTP 429, still after the retries. ``retry_after`` is the server's hint in seconds."""

    retry_after: float | None = None


class ServerError(ModelError):
    """The server failed (HTTP 5xx), still after the retries."""


class ModelTimeoutError(ModelError, TimeoutError):
    """The server did not answer in time (connecting, or between two reads)."""


class ModelConnectionError(ModelError, ConnectionError):
    """The connection could not be made, or was cut in the middle of a response."""


class IncompleteStreamError(ModelConnectionError):
    """The event stream ended before the model finished (no finish reason, no ``[DONE]``)."""


class MalformedChunkError(ModelError, ValueError):
    """A line of the event stream is not a valid chat-completions chunk; ``line`` names it."""


class ModelStreamError(ModelError):
    """The server sent an error object in the middle of a stream."""


class StreamLimitError(ModelError, ValueError):
    """A line of the event stream, or one event's data, is longer than its limit, found
    before it was buffered. ``limit`` names the keyword that raises it
    (``max_sse_line_bytes`` or ``max_sse_event_bytes``); ``line`` is where it started.
    """

    def __init__(self, message: str, *, limit: str, line: int | None = None) -> None:
        super().__init__(message, line=line)
        self.limit = limit
