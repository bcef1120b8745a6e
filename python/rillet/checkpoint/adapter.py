"""One async interface over any checkpoint store, sync or async: the only place that tells the two
apart. The Runner (and the CLI) call stores through :class:`StoreAdapter`, never directly.

A store method may be a plain function (it may block: SQLite waiting for a lock), a coroutine
function, or a plain function that returns an awaitable. From async code a plain method runs on
rillet's worker threads, so it never stalls the event loop; from sync code an async method runs
on rillet's background loop. The optional methods have fallbacks: ``claim`` reads with ``get``
(no exclusivity), ``release`` (also without ``claim``) and ``delete`` do nothing.

``append`` and ``read_log`` (step durability's log, see
:class:`~rillet.checkpoint.stores.LogCheckpointStore`) fall back, on a store with only ``get``
and ``set``, to one key per record: record ``n`` of ``id`` under ``f"{id}#log.{n}"`` and the head
under ``id`` wrapped with the record count, written after the records, so a reader never sees a
record count whose records are not there yet. Each record is still written once. ``set`` leaves
old records to be overwritten by the next appends; :meth:`StoreAdapter.delete_with_log` removes
them.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from rillet._core.loop import background_loop
from rillet._core.workers import run_sync
from rillet.checkpoint.payload import CheckpointError
from rillet.checkpoint.stores import CheckpointStore

__all__ = ["StoreAdapter"]


def _method(store: object, name: str) -> Callable[..., Any] | None:
    method = getattr(store, name, None)
    return method if callable(method) else None


class StoreAdapter:
    """``store`` (any :class:`~rillet.checkpoint.CheckpointStore`) with async ``get``, ``set``,
    ``delete``, ``claim`` and ``release`` and their blocking ``*_sync`` twins."""

    __slots__ = ("_append", "_claim", "_delete", "_get", "_prune", "_read_log", "_release", "_set", "store")

    def __init__(self, store: CheckpointStore) -> None:
        get, set_ = _method(store, "get"), _method(store, "set")
        if isinstance(store, type) or get is None or set_ is None:
            got = f"the class {store.__name__} (pass an instance)" if isinstance(store, type) else type(store).__name__
            raise TypeError(
                f"checkpoint_store: expected a store with get(id) and set(id, data) methods "
                f"(see rillet.CheckpointStore), got {got}"
            )
        self.store = store
        self._get, self._set = get, set_
        self._delete = _method(store, "delete")
        self._claim = _method(store, "claim")
        self._release = _method(store, "release") if self._claim is not None else None
        self._append, self._read_log = _method(store, "append"), _method(store, "read_log")
        if self._append is None or self._read_log is None:
            self._append = self._read_log = None
        self._prune = _method(store, "prune")

    @property
    def claims(self) -> bool:
        """Whether the store has ``claim`` and ``release``, so a resume holds a claim it must
        give back (``release``) if the run ends without ``set`` or ``delete``."""
        return self._claim is not None and self._release is not None

    @property
    def deletes(self) -> bool:
        """Whether the store has ``delete``."""
        return self._delete is not None

    # --- async -----------------------------------------------------------------------------

    @property
    def logs(self) -> bool:
        """Whether the store has its own ``append`` and ``read_log`` (else the adapter's
        one-key-per-record fallback is used)."""
        return self._append is not None

    async def get(self, checkpoint_id: str) -> bytes | None:
        data: bytes | None = await _acall(self._get, checkpoint_id)
        return data if self._append is not None else _unwrap(data)[0]

    async def append(self, checkpoint_id: str, records: list[bytes], head: bytes) -> None:
        """Appends ``records`` to the log of ``checkpoint_id`` and replaces its head."""
        if self._append is not None:
            await _acall(self._append, checkpoint_id, list(records), head)
            return
        n = _unwrap(await _acall(self._get, checkpoint_id))[1]
        for k, record in enumerate(records):
            await _acall(self._set, _log_key(checkpoint_id, n + k), record)
        await _acall(self._set, checkpoint_id, _wrap(head, n + len(records)))

    async def read_log(self, checkpoint_id: str, start: int = 0) -> list[bytes]:
        """The records of the log of ``checkpoint_id`` from index ``start``."""
        if self._read_log is not None:
            records: list[bytes] = await _acall(self._read_log, checkpoint_id, start)
            return records
        n = _unwrap(await _acall(self._get, checkpoint_id))[1]
        return [
            _present(checkpoint_id, k, await _acall(self._get, _log_key(checkpoint_id, k))) for k in range(start, n)
        ]

    async def prune(self, *, older_than: float | None = None, keep_last: int | None = None) -> int:
        """Deletes old checkpoints (see :class:`~rillet.checkpoint.stores.LogCheckpointStore`)."""
        n: int = await _acall(self._prune_kw, older_than, keep_last)
        return n

    def _prune_kw(self, older_than: float | None, keep_last: int | None) -> Any:
        if self._prune is None:
            raise TypeError(
                f"{type(self.store).__name__} cannot prune: it has no prune(older_than=..., keep_last=...) method; "
                "use InMemoryCheckpointStore, SqliteCheckpointStore, RedisCheckpointStore, PostgresCheckpointStore "
                "or a store that implements it"
            )
        return self._prune(older_than=older_than, keep_last=keep_last)

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        await _acall(self._set, checkpoint_id, data)

    async def delete(self, checkpoint_id: str) -> None:
        if self._delete is None:
            return
        await _acall(self._delete, checkpoint_id)

    async def delete_with_log(self, checkpoint_id: str) -> None:
        """:meth:`delete`, and on a fallback store the records kept under their own keys too
        (which plain ``delete`` leaves, to spare checkpoints without a log the extra reads)."""
        await self.delete(checkpoint_id)
        if self._append is None:
            await self._delete_records(checkpoint_id)

    async def _delete_records(self, checkpoint_id: str) -> None:
        """Deletes the fallback's records of ``checkpoint_id`` from the first up to the first key
        that is absent (a plain store cannot list its keys)."""
        if self._delete is None:
            return
        k = 0
        while await _acall(self._get, _log_key(checkpoint_id, k)) is not None:
            await _acall(self._delete, _log_key(checkpoint_id, k))
            k += 1

    async def claim(self, checkpoint_id: str, owner: str) -> bytes | None:
        """The checkpoint, claimed by ``owner`` if the store can claim; else read with ``get``.
        If the caller is cancelled (a timeout) while the claim is under way in a worker thread,
        the claim that lands afterwards is released rather than held for the whole lease with
        nothing running."""
        if self._claim is None:
            return await self.get(checkpoint_id)
        task = asyncio.ensure_future(_acall(self._claim, checkpoint_id, owner))
        try:
            data: bytes | None = await asyncio.shield(task)
        except asyncio.CancelledError:
            if self._release is not None:
                _keep_until_done(asyncio.ensure_future(self._release_when_landed(task, checkpoint_id, owner)))
            raise
        return data if self._append is not None else _unwrap(data)[0]

    async def _release_when_landed(self, claim: asyncio.Future[Any], checkpoint_id: str, owner: str) -> None:
        try:
            if await claim is not None:
                await self.release(checkpoint_id, owner)
        except Exception:  # noqa: BLE001  (the claim then expires after the store's lease)
            pass

    async def release(self, checkpoint_id: str, owner: str) -> None:
        if self._release is not None:
            await _acall(self._release, checkpoint_id, owner)

    # --- blocking, for sync callers ----------------------------------------------------------

    def get_sync(self, checkpoint_id: str) -> bytes | None:
        data: bytes | None = _call(self._get, checkpoint_id)
        return data if self._append is not None else _unwrap(data)[0]

    def claim_sync(self, checkpoint_id: str, owner: str) -> bytes | None:
        if self._claim is None:
            return self.get_sync(checkpoint_id)
        data: bytes | None = _call(self._claim, checkpoint_id, owner)
        return data if self._append is not None else _unwrap(data)[0]

    def read_log_sync(self, checkpoint_id: str, start: int = 0) -> list[bytes]:
        """:meth:`read_log` for sync callers."""
        if self._read_log is not None:
            records: list[bytes] = _call(self._read_log, checkpoint_id, start)
            return records
        n = _unwrap(_call(self._get, checkpoint_id))[1]
        return [_present(checkpoint_id, k, _call(self._get, _log_key(checkpoint_id, k))) for k in range(start, n)]

    def prune_sync(self, *, older_than: float | None = None, keep_last: int | None = None) -> int:
        """:meth:`prune` for sync callers."""
        n: int = _call(self._prune_kw, older_than, keep_last)
        return n

    def release_sync(self, checkpoint_id: str, owner: str) -> None:
        if self._release is not None:
            _call(self._release, checkpoint_id, owner)

    def __repr__(self) -> str:
        return f"StoreAdapter({self.store!r})"


# --- the log fallback for get/set stores --------------------------------------------------------

_WRAP = b"RLH"  # a head written by the fallback: b"RLH", the record count (8 bytes), the head


def _log_key(checkpoint_id: str, n: int) -> str:
    return f"{checkpoint_id}#log.{n}"


def _wrap(head: bytes, n: int) -> bytes:
    return _WRAP + n.to_bytes(8, "big") + head


def _unwrap(data: bytes | None) -> tuple[bytes | None, int]:
    """The head of fallback-stored ``data`` and its record count (``data`` itself and 0 when it
    was written with ``set``)."""
    if data is None or data[:3] != _WRAP:
        return data, 0
    return data[11:], int.from_bytes(data[3:11], "big")


def _present(checkpoint_id: str, k: int, record: bytes | None) -> bytes:
    if record is None:
        raise CheckpointError(
            f"checkpoint[{checkpoint_id}]: record {k} of its log is missing from the store "
            f"(key {_log_key(checkpoint_id, k)!r}); something else deleted it"
        )
    return record


_PENDING: set[asyncio.Future[Any]] = set()  # releases after a cancelled claim, kept alive until done


def _keep_until_done(future: asyncio.Future[Any]) -> None:
    _PENDING.add(future)
    future.add_done_callback(_PENDING.discard)


async def _acall(method: Callable[..., Any], *args: Any) -> Any:
    """``method(*args)`` from async code: awaited if async, else run on rillet's worker threads
    (and its result awaited if it is an awaitable)."""
    if inspect.iscoroutinefunction(method):
        return await method(*args)
    result = await run_sync(method, *args)
    return await result if inspect.isawaitable(result) else result


def _call(method: Callable[..., Any], *args: Any) -> Any:
    """``method(*args)`` from sync code; an async method runs on the background loop. Inside a
    running loop an async method is refused: blocking on it there would deadlock."""
    got = method(*args)
    if not inspect.isawaitable(got):
        return got
    try:
        asyncio.get_running_loop()
    except RuntimeError:

        async def wait() -> Any:
            return await got

        return asyncio.run_coroutine_threadsafe(wait(), background_loop()).result()
    if inspect.iscoroutine(got):
        got.close()
    raise RuntimeError("this checkpoint store's methods are async: inside async code use `await runner.aresume(...)`")
