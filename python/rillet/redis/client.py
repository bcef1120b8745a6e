"""The Redis connection of a sink or source: made from a URL, its failures named."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from rillet.errors import EventStreamConnectionError

if TYPE_CHECKING:
    import redis.asyncio

__all__ = ["DEFAULT_PREFIX", "DEFAULT_URL", "checked_client", "connect", "failures", "shown"]

DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "rillet:events:"


def shown(url: str) -> str:
    """``url`` without its password, for messages."""
    return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)


def connect(url: str, connect_timeout: float) -> redis.asyncio.Redis:
    """A client for ``url`` (it connects on first use)."""
    try:
        import redis.asyncio as aioredis  # the optional `redis` extra: loaded when a sink or source is made
    except ImportError as e:
        raise ImportError("rillet.redis needs redis-py: pip install 'rillet[redis]'") from e
    try:
        return aioredis.Redis.from_url(url, socket_connect_timeout=connect_timeout)
    except ValueError as e:
        raise ValueError(f"Redis URL {shown(url)!r}: {e} (expected redis://host:port/db)") from e


def checked_client(client: redis.asyncio.Redis, what: str) -> redis.asyncio.Redis:
    """``client`` if it returns bytes: entries are binary, and decoding them as text fails."""
    kwargs: dict[str, object] = client.get_connection_kwargs()  # type: ignore[no-untyped-call]
    if kwargs.get("decode_responses"):
        raise ValueError(
            f"{what}(client=...): the client decodes responses to text, and stream entries are binary; "
            "give a client made without decode_responses=True"
        )
    return client


@asynccontextmanager
async def failures(url: str, what: str) -> AsyncIterator[None]:
    """Turns redis-py's connection failures inside into EventStreamConnectionError."""
    import redis.exceptions  # the extra is installed: connect() made the client

    try:
        yield
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as e:
        raise EventStreamConnectionError(
            f"{what}: cannot reach Redis at {shown(url)} ({e}); is redis-server running and the URL right?"
        ) from e
