"""One async interface over any checkpoint store, sync or async: the only place that tells the two
apart. The Runner (and the CLI) call stores through :class:`StoreAdapter`, never directly.

A store method may be a plain function (it may block: SQLite waiting for a lock), a coroutine
function, or a plain function that returns an awaitable. From async code a plain method runs on
rillet's worker threads, so it never stalls the event loop; from sync code an async method runs
on rillet's background loop. The optional methods have fallbacks: ``claim`` reads with ``get``
(no exclusivity), ``release`` (also without ``claim``) and ``delete`` do nothing.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from rillet._core.loop import background_loop
from rillet._core.workers import run_sync
from rillet.checkpoint.stores import CheckpointStore

__all__ = ["StoreAdapter"]


def _method(store: object, name: str) -> Callable[..., Any] | None:
    method = getattr(store, name, None)
    return method if callable(method) else None


class StoreAdapter:
    """``store`` (any :class:`~rillet.checkpoint.CheckpointStore`) with async ``get``, ``set``,
    ``delete``, ``claim`` and ``release`` and their blocking ``*_sync`` twins."""

    __slots__ = ("_claim", "_delete", "_get", "_release", "_set", "store")

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

    async def get(self, checkpoint_id: str) -> bytes | None:
        data: bytes | None = await _acall(self._get, checkpoint_id)
        return data

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        await _acall(self._set, checkpoint_id, data)

    async def delete(self, checkpoint_id: str) -> None:
        if self._delete is not None:
            await _acall(self._delete, checkpoint_id)

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
        return data

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
        return data

    def claim_sync(self, checkpoint_id: str, owner: str) -> bytes | None:
        if self._claim is None:
            return self.get_sync(checkpoint_id)
        data: bytes | None = _call(self._claim, checkpoint_id, owner)
        return data

    def release_sync(self, checkpoint_id: str, owner: str) -> None:
        if self._release is not None:
            _call(self._release, checkpoint_id, owner)

    def __repr__(self) -> str:
        return f"StoreAdapter({self.store!r})"


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
