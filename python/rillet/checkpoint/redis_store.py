"""Checkpoints in Redis (redis-py, plain Redis 7 commands and Lua scripts; no modules).

Keys under ``prefix``: ``head:<id>`` a hash (``data`` the head, ``at`` when it was last written,
``logbytes`` the log's size, ``owner`` and ``until`` the resume claim), ``log:<id>`` a list of
the log's records, and ``index`` a sorted set of ids by ``at``. Each operation that touches more
than one key is one Lua script, which Redis runs atomically; times are the server's clock
(``TIME``), so the claims of processes on several machines agree on when a lease ends.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rillet.checkpoint.remote import check_prune, redacted, unreachable
from rillet.checkpoint.stores import claimed_error
from rillet.errors import CheckpointError

if TYPE_CHECKING:
    from redis import Redis

__all__ = ["RedisCheckpointStore"]

_NOW = "local t = redis.call('TIME') local now = tonumber(t[1]) + tonumber(t[2]) / 1000000 "

# KEYS: head, log, index. ARGV: id, data.
_SET = (
    _NOW + "redis.call('DEL', KEYS[1], KEYS[2]) "
    "redis.call('HSET', KEYS[1], 'data', ARGV[2], 'at', tostring(now), 'logbytes', 0) "
    "redis.call('ZADD', KEYS[3], now, ARGV[1]) return 1"
)

# KEYS: head, log, index. ARGV: id, head, bytes of the records, this append's token, records...
# Keeps the claim. redis-py retries a command whose connection failed, and a reply lost after the
# script ran would append twice: a retry carries the same token and finds it already applied.
_APPEND = (
    _NOW + "if redis.call('HGET', KEYS[1], 'append') == ARGV[4] then return 0 end "
    "local n = #ARGV "
    "for i = 5, n, 1000 do redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 999, n))) end "
    "redis.call('HSET', KEYS[1], 'data', ARGV[2], 'at', tostring(now), 'append', ARGV[4]) "
    "redis.call('HINCRBY', KEYS[1], 'logbytes', ARGV[3]) "
    "redis.call('ZADD', KEYS[3], now, ARGV[1]) return 1"
)

# KEYS: head. ARGV: owner, lease. Returns {'ok', data}, {'held', seconds left} or {'none'}.
_CLAIM = (
    _NOW + "local h = redis.call('HMGET', KEYS[1], 'data', 'owner', 'until') "
    "if not h[1] then return {'none'} end "
    "if h[2] and h[2] ~= ARGV[1] and tonumber(h[3]) > now then "
    "return {'held', tostring(tonumber(h[3]) - now)} end "
    "redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'until', tostring(now + tonumber(ARGV[2]))) "
    "return {'ok', h[1]}"
)

# KEYS: head. ARGV: owner.
_RELEASE = "if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('HDEL', KEYS[1], 'owner', 'until') end"

# KEYS: index. ARGV: head prefix, log prefix, older_than ('' for none), keep_last ('' for none).
_PRUNE = (
    _NOW + "local gone = {} "
    "if ARGV[3] ~= '' then for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', "
    "'(' .. tostring(now - tonumber(ARGV[3])))) do gone[id] = true end end "
    "if ARGV[4] ~= '' then for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, "
    "-1 - tonumber(ARGV[4]))) do gone[id] = true end end "
    "local n = 0 for id in pairs(gone) do "
    "redis.call('DEL', ARGV[1] .. id, ARGV[2] .. id) redis.call('ZREM', KEYS[1], id) n = n + 1 end "
    "return n"
)


class RedisCheckpointStore:
    """Checkpoints in Redis, shared by every process that reaches the server.

    ``url`` is a redis-py URL (``redis://[:password@]host:port/db``, ``rediss://`` for TLS);
    or pass a ready ``client`` (a ``redis.Redis`` made without ``decode_responses``). Keys start
    with ``prefix``, so several applications (or tests) can share one database. ``claim`` takes
    a checkpoint for one resume atomically; a claim never released (its process died) expires
    after ``claim_lease`` seconds of the server's clock, so it should be longer than your longest
    resumed run. The methods are plain (blocking) functions: the Runner calls them on its worker
    threads, and redis-py's connection pool makes one store safe to share between threads.

    Needs the ``redis`` extra (``pip install 'rillet[redis]'``).
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        client: Redis | None = None,
        prefix: str = "rillet:checkpoint:",
        claim_lease: float = 600.0,
        connect_timeout: float = 5.0,
    ) -> None:
        import redis  # the optional `redis` extra, imported only by those who use this store

        self.url = url
        self.prefix = prefix
        self.claim_lease = claim_lease
        self._errors: tuple[type[BaseException], ...] = (redis.ConnectionError, redis.TimeoutError)
        if client is None:
            client = redis.Redis.from_url(url, socket_connect_timeout=connect_timeout)
        elif client.get_connection_kwargs().get("decode_responses"):
            raise CheckpointError(
                "RedisCheckpointStore: the client decodes responses to str; checkpoints are bytes: "
                "make the client without decode_responses=True"
            )
        else:
            self.url = _client_url(client)
        self._redis: Redis = client
        self._set, self._append = client.register_script(_SET), client.register_script(_APPEND)
        self._claim, self._release = client.register_script(_CLAIM), client.register_script(_RELEASE)
        self._prune = client.register_script(_PRUNE)
        with self._reaching():
            client.ping()

    @contextmanager
    def _reaching(self) -> Iterator[None]:
        try:
            yield
        except self._errors as e:
            raise unreachable("RedisCheckpointStore", self.url, e, "Redis") from e

    def _keys(self, checkpoint_id: str) -> list[str]:
        p = self.prefix
        return [f"{p}head:{checkpoint_id}", f"{p}log:{checkpoint_id}", f"{p}index"]

    def get(self, checkpoint_id: str) -> bytes | None:
        with self._reaching():
            data: bytes | None = self._redis.hget(self._keys(checkpoint_id)[0], "data")  # type: ignore[assignment]
        return data

    def set(self, checkpoint_id: str, data: bytes) -> None:
        """Replaces the head, empties the log and clears the claim."""
        with self._reaching():
            self._set(keys=self._keys(checkpoint_id), args=[checkpoint_id, bytes(data)])

    def delete(self, checkpoint_id: str) -> None:
        head, log, index = self._keys(checkpoint_id)
        with self._reaching():
            pipe = self._redis.pipeline(transaction=True)
            pipe.delete(head, log)
            pipe.zrem(index, checkpoint_id)
            pipe.execute()

    def claim(self, checkpoint_id: str, owner: str) -> bytes | None:
        with self._reaching():
            got: list[bytes] = self._claim(keys=self._keys(checkpoint_id)[:1], args=[owner, repr(self.claim_lease)])
        if got[0] == b"held":
            raise claimed_error(checkpoint_id, f"Redis at {redacted(self.url)}", float(got[1]))
        return got[1] if got[0] == b"ok" else None

    def release(self, checkpoint_id: str, owner: str) -> None:
        with self._reaching():
            self._release(keys=self._keys(checkpoint_id)[:1], args=[owner])

    def append(self, checkpoint_id: str, records: Sequence[bytes], head: bytes) -> None:
        """Appends ``records`` to the log and replaces the head, in one step (a Lua script)."""
        records = [bytes(r) for r in records]
        token = uuid.uuid4().hex
        args: list[bytes | str | int] = [checkpoint_id, bytes(head), sum(map(len, records)), token, *records]
        with self._reaching():
            self._append(keys=self._keys(checkpoint_id), args=args)

    def read_log(self, checkpoint_id: str, start: int = 0) -> list[bytes]:
        """The log's records from index ``start``."""
        if start < 0:
            raise ValueError(f"read_log: start must be 0 or more, got {start}")
        with self._reaching():
            records: list[bytes] = self._redis.lrange(self._keys(checkpoint_id)[1], start, -1)  # type: ignore[assignment]
        return records

    def prune(self, *, older_than: float | None = None, keep_last: int | None = None) -> int:
        """Deletes the checkpoints last written more than ``older_than`` seconds ago, and all but
        the ``keep_last`` most recently written; returns how many it deleted."""
        check_prune(older_than, keep_last)
        p = self.prefix
        args = [
            f"{p}head:",
            f"{p}log:",
            "" if older_than is None else repr(older_than),
            "" if keep_last is None else keep_last,
        ]
        with self._reaching():
            return int(self._prune(keys=[f"{p}index"], args=args))

    def ids(self) -> list[str]:
        """Every checkpoint id, most recently written first."""
        return [i for i, _, _ in self.entries()]

    def entries(self) -> list[tuple[str, int, float]]:
        """``(id, size in bytes of head and log, when it was last written as Unix time)`` of every
        checkpoint, most recently written first."""
        with self._reaching():
            ranked: list[tuple[bytes, float]] = self._redis.zrevrange(f"{self.prefix}index", 0, -1, withscores=True)  # type: ignore[assignment]
            pipe = self._redis.pipeline(transaction=False)
            for member, _ in ranked:
                head = self._keys(member.decode())[0]
                pipe.hstrlen(head, "data")
                pipe.hget(head, "logbytes")
            sizes: list[Any] = pipe.execute()
        return [
            (member.decode(), int(sizes[2 * i]) + int(sizes[2 * i + 1] or 0), float(at))
            for i, (member, at) in enumerate(ranked)
        ]

    def close(self) -> None:
        self._redis.close()

    def __repr__(self) -> str:
        return f"RedisCheckpointStore({redacted(self.url)!r}, prefix={self.prefix!r})"


def _client_url(client: Redis) -> str:
    kwargs = client.get_connection_kwargs()
    return f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
