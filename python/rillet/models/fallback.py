"""FallbackModel: a :class:`rillet.models.ChatModel` that tries a list of models in order,
moving to the next one when a model fails with an error worth falling back on (a rate limit,
an overloaded or failing server, a timeout, a connection that cannot be made).

::

    from rillet import FallbackModel, OpenAIChatModel

    model = FallbackModel([OpenAIChatModel("gpt-4o"), OpenAIChatModel("gpt-4o-mini")])

Each model keeps its own retry policy (``OpenAIChatModel(max_retries=...)``): the fallback
happens once a model has given up. A streamed reply falls back only until its first chunk
arrives; an error after it is the stream's error, as it would be without the wrapper (the
consumer has already seen part of the answer: switching models then would splice two answers).
Which model answered is written into the reply's ``extra``: ``"model"`` (its name) and
``"fallback_index"`` (its position in the list).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rillet import errors
from rillet._native import Message, StreamReader, convert_stream
from rillet.errors import EndOfStream, RateLimitError, ServerError

if TYPE_CHECKING:
    from rillet.models.base import ChatModel
    from rillet.tools import ToolInfo

__all__ = ["DEFAULT_FALLBACK_ERRORS", "FallbackModel", "default_fallback_status"]

_log = logging.getLogger(__name__)

# Rate limits, failing servers (5xx; Anthropic's "overloaded" 529 too), timeouts and connections
# that cannot be made; ModelTimeoutError and ModelConnectionError are the builtins' subclasses.
DEFAULT_FALLBACK_ERRORS: tuple[type[BaseException], ...] = (RateLimitError, ServerError, TimeoutError, ConnectionError)
_overloaded = getattr(errors, "OverloadedError", None)  # a provider's own "overloaded" class, where one exists
if isinstance(_overloaded, type) and issubclass(_overloaded, BaseException):
    if not issubclass(_overloaded, DEFAULT_FALLBACK_ERRORS):
        DEFAULT_FALLBACK_ERRORS += (_overloaded,)


def default_fallback_status(status: int) -> bool:
    """Whether an HTTP status is worth another model: 408 (timeout), 429 (rate limit), 529
    (overloaded) and every 5xx."""
    return status in (408, 429, 529) or 500 <= status < 600


class FallbackModel:
    """A chat model that answers with the first of ``models`` that does not fail.

    Args:
        models: the models to try, in order (at least one).
        on: the exception classes that move on to the next model (default
            :data:`DEFAULT_FALLBACK_ERRORS`: rate limits, server errors, timeouts and
            connection failures).
        on_status: a predicate on a model error's ``status_code`` that moves on too (default
            :func:`default_fallback_status`); ``None`` to decide by class only.

    Any other error (a refused API key, an invalid request) is raised at once: another model
    would most likely fail the same way, and the caller should see why. When every model
    failed, the last model's error is raised, with a note listing the earlier failures.

    A ``stream`` call waits for the first chunk (or the end) of a model's stream before
    returning it, so a stream that fails before its first chunk falls back too. Once a chunk
    has arrived, an error is the stream's error (the reader raises it), never a silent switch.

    The reply says which model answered: ``extra["model"]`` is its name (its ``model``
    attribute, like ``OpenAIChatModel``'s, else its ``name``, like ``ScriptedModel``'s, else
    its class name) and ``extra["fallback_index"]`` its position in ``models``; a streamed
    reply carries them on its first chunk. ``supports_response_format`` is True when every
    model supports it.
    """

    def __init__(
        self,
        models: Sequence[ChatModel],
        *,
        on: type[BaseException] | tuple[type[BaseException], ...] = DEFAULT_FALLBACK_ERRORS,
        on_status: Callable[[int], bool] | None = default_fallback_status,
    ) -> None:
        if isinstance(models, (str, bytes)) or not isinstance(models, Sequence):
            raise TypeError(f"FallbackModel: models must be a list of chat models, got {type(models).__name__}")
        if not models:
            raise ValueError("FallbackModel: models is empty; give at least one model (the first one is tried first)")
        for i, m in enumerate(models):
            if not (callable(getattr(m, "generate", None)) and callable(getattr(m, "stream", None))):
                raise TypeError(
                    f"FallbackModel: models[{i}] is a {type(m).__name__}, not a ChatModel (async generate and stream)"
                )
        classes = on if isinstance(on, tuple) else (on,)
        if not all(isinstance(c, type) and issubclass(c, BaseException) for c in classes):
            raise TypeError(f"FallbackModel: on= must be exception classes (one, or a tuple), got {on!r}")
        if on_status is not None and not callable(on_status):
            raise TypeError(
                f"FallbackModel: on_status= must be a function (status code) -> bool, or None; got {on_status!r}"
            )
        self.models: tuple[ChatModel, ...] = tuple(models)
        self.names: tuple[str, ...] = tuple(_name(m) for m in models)
        self.on = classes
        self.on_status = on_status
        self.supports_response_format = all(getattr(m, "supports_response_format", False) is True for m in models)

    def __repr__(self) -> str:
        return f"FallbackModel({list(self.names)!r})"

    def falls_back_on(self, error: BaseException) -> bool:
        """Whether ``error`` moves the call on to the next model."""
        if isinstance(error, self.on):
            return True
        status = getattr(error, "status_code", None)
        return self.on_status is not None and isinstance(status, int) and bool(self.on_status(status))

    async def generate(
        self,
        messages: list[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Any,
    ) -> Message:
        """The first model's reply that does not fail (see the class)."""
        failures: list[str] = []
        for i, model in enumerate(self.models):
            try:
                reply = await model.generate(messages, tools=tools, **options)
            except Exception as e:  # noqa: BLE001  (judged by falls_back_on; others re-raised)
                self._failed(i, e, failures)
                continue
            return _marked(reply, self.names[i], i)
        raise AssertionError("unreachable: the last model's failure is raised")  # pragma: no cover

    async def stream(
        self,
        messages: list[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Any,
    ) -> StreamReader[Message]:
        """The first model's stream that delivers a chunk (or ends) without failing; returns
        once that first chunk has arrived."""
        failures: list[str] = []
        for i, model in enumerate(self.models):
            try:
                reader = await model.stream(messages, tools=tools, **options)
            except Exception as e:  # noqa: BLE001  (judged by falls_back_on; others re-raised)
                self._failed(i, e, failures)
                continue
            peek, out = reader.copy(2)  # read the first chunk on one copy; the other keeps it
            try:
                await peek.arecv()
            except EndOfStream:  # an empty stream: nothing failed
                return out
            except Exception as e:  # noqa: BLE001  (judged by falls_back_on; others re-raised)
                out.close()
                self._failed(i, e, failures)
                continue
            except BaseException:  # cancelled while waiting: the model's stream is not needed
                out.close()
                raise
            finally:
                peek.close()
            return convert_stream(out, _first_marked(self.names[i], i))
        raise AssertionError("unreachable: the last model's failure is raised")  # pragma: no cover

    def _failed(self, i: int, error: Exception, failures: list[str]) -> None:
        """Records model ``i``'s failure and returns when the next model is to be tried;
        raises ``error`` when it is not a fallback error or no model is left."""
        name = self.names[i]
        if not self.falls_back_on(error):
            raise error
        failures.append(f"models[{i}] {name!r}: {type(error).__name__}: {error}")
        if i + 1 == len(self.models):
            if len(failures) > 1:
                error.add_note("FallbackModel: every model failed; the earlier ones:\n" + "\n".join(failures[:-1]))
            raise error
        _log.warning(
            "FallbackModel: models[%d] %r failed (%s: %s); trying models[%d] %r",
            i,
            name,
            type(error).__name__,
            error,
            i + 1,
            self.names[i + 1],
        )


def _name(model: Any) -> str:
    for attribute in ("model", "name"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _marked(message: Message, name: str, index: int) -> Message:
    message.extra = {**(message.extra or {}), "model": name, "fallback_index": index}
    return message


def _first_marked(name: str, index: int) -> Callable[[Message], Message]:
    """A stream conversion that marks the first chunk (a copy: the model may keep its own)."""
    first = True

    def mark(chunk: Message) -> Message:
        nonlocal first
        if not first:
            return chunk
        first = False
        return _marked(chunk.copy(), name, index)

    return mark
