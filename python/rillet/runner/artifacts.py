"""Artifacts: versioned blobs kept per session (ADK's artifact service). The Runner saves a
run's input blobs in one when ``RunConfig(save_input_blobs_as_artifacts=True)``.

Each ``save`` of a name adds a version (0, 1, 2...); ``load`` returns the latest, or the
version asked for. :class:`InMemoryArtifactService` keeps them in the process,
:class:`FileArtifactService` under a directory (``<root>/<session id>/<name>/<version>.bin``
with a ``.json`` beside it), refusing names that are not plain file names.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rillet._core.workers import run_sync
from rillet._native import ContentPart, Message
from rillet.errors import ArtifactError
from rillet.live import Blob, LiveRequest, LiveSource

__all__ = [
    "ArtifactService",
    "BlobSavingSource",
    "FileArtifactService",
    "InMemoryArtifactService",
    "save_message_blobs",
]


@runtime_checkable
class ArtifactService(Protocol):
    """Where artifacts are kept, per ``session_id`` and name (every method may raise
    :class:`~rillet.errors.ArtifactError` for a name it refuses)."""

    async def save(self, session_id: str, name: str, blob: Blob) -> int:
        """Adds ``blob`` as the next version of ``name``; returns that version (0 first)."""
        ...

    async def load(self, session_id: str, name: str, version: int | None = None) -> Blob | None:
        """The latest version of ``name`` (or ``version``); None when there is none."""
        ...

    async def list_names(self, session_id: str) -> list[str]:
        """The session's artifact names, sorted."""
        ...

    async def versions(self, session_id: str, name: str) -> list[int]:
        """The versions of ``name``, in order (empty when there is none)."""
        ...

    async def delete(self, session_id: str, name: str) -> None:
        """Deletes every version of ``name`` (nothing when there is none)."""
        ...


def check_name(what: str, value: object) -> str:
    """``value`` if it is a plain file name (no separator, not ``.`` or ``..``, no control
    character, at most 255 characters), else an ArtifactError naming the rule."""
    if not isinstance(value, str) or not value:
        raise ArtifactError(f"artifact {what}: expected a non-empty str, got {value!r}")
    bad = (
        "/" in value
        or "\\" in value
        or value in (".", "..")
        or any(ord(c) < 32 or ord(c) == 127 for c in value)
        or len(value) > 255
    )
    if bad:
        raise ArtifactError(
            f"artifact {what} {value!r} is not a plain file name: use at most 255 characters, "
            "no '/' or '\\', no control character, not '.' or '..'"
        )
    return value


class InMemoryArtifactService:
    """Artifacts in a dict of this process (lost when it ends): for tests and one process."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], list[Blob]] = {}
        self._lock = threading.Lock()

    async def save(self, session_id: str, name: str, blob: Blob) -> int:
        key = (check_name("session id", session_id), check_name("name", name))
        if not isinstance(blob, Blob):
            raise TypeError(f"save(blob): expected a rillet.live.Blob, got {type(blob).__name__}")
        with self._lock:
            versions = self._data.setdefault(key, [])
            versions.append(blob)
            return len(versions) - 1

    async def load(self, session_id: str, name: str, version: int | None = None) -> Blob | None:
        key = (check_name("session id", session_id), check_name("name", name))
        with self._lock:
            versions = self._data.get(key, [])
            if version is None:
                return versions[-1] if versions else None
            return versions[version] if 0 <= version < len(versions) else None

    async def list_names(self, session_id: str) -> list[str]:
        check_name("session id", session_id)
        with self._lock:
            return sorted(n for s, n in self._data if s == session_id)

    async def versions(self, session_id: str, name: str) -> list[int]:
        key = (check_name("session id", session_id), check_name("name", name))
        with self._lock:
            return list(range(len(self._data.get(key, []))))

    async def delete(self, session_id: str, name: str) -> None:
        key = (check_name("session id", session_id), check_name("name", name))
        with self._lock:
            self._data.pop(key, None)


class FileArtifactService:
    """Artifacts under ``root``: ``<root>/<session id>/<name>/<version>.bin`` and its
    ``<version>.json`` (the MIME type), written last so a version is seen only whole. A
    version number is claimed by creating its file exclusively, so processes sharing the
    directory never write the same version. File work runs on rillet's worker threads."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    def _dir(self, session_id: str, name: str | None = None) -> Path:
        path = self.root / check_name("session id", session_id)
        if name is not None:
            path = path / check_name("name", name)
        if not path.resolve().is_relative_to(self.root):  # a symlink placed under root
            raise ArtifactError(f"artifact path {path} leads outside {self.root}")
        return path

    async def save(self, session_id: str, name: str, blob: Blob) -> int:
        if not isinstance(blob, Blob):
            raise TypeError(f"save(blob): expected a rillet.live.Blob, got {type(blob).__name__}")
        return await run_sync(self._save, self._dir(session_id, name), blob)

    @staticmethod
    def _save(folder: Path, blob: Blob) -> int:
        folder.mkdir(parents=True, exist_ok=True)
        version = len(_versions(folder))
        while True:  # claim the next free version number
            try:
                fd = os.open(folder / f"{version}.bin", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                version += 1
        with os.fdopen(fd, "wb") as f:
            f.write(blob.data)
        tmp = folder / f".{version}.json.tmp"
        tmp.write_text(json.dumps({"mime_type": blob.mime_type}))
        os.replace(tmp, folder / f"{version}.json")
        return version

    async def load(self, session_id: str, name: str, version: int | None = None) -> Blob | None:
        return await run_sync(self._load, self._dir(session_id, name), version)

    @staticmethod
    def _load(folder: Path, version: int | None) -> Blob | None:
        versions = _versions(folder)
        if version is None:
            if not versions:
                return None
            version = versions[-1]
        elif version not in versions:
            return None
        try:
            meta = json.loads((folder / f"{version}.json").read_text())
            return Blob((folder / f"{version}.bin").read_bytes(), meta["mime_type"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ArtifactError(
                f"artifact {folder.name!r} version {version} in {folder.parent} is unreadable: {e}"
            ) from e

    async def list_names(self, session_id: str) -> list[str]:
        folder = self._dir(session_id)
        return await run_sync(
            lambda: sorted(p.name for p in folder.iterdir() if _versions(p)) if folder.is_dir() else []
        )

    async def versions(self, session_id: str, name: str) -> list[int]:
        return await run_sync(_versions, self._dir(session_id, name))

    async def delete(self, session_id: str, name: str) -> None:
        await run_sync(_remove, self._dir(session_id, name))


def _versions(folder: Path) -> list[int]:
    """The complete versions in ``folder`` (those whose .json was written)."""
    if not folder.is_dir():
        return []
    return sorted(int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit())


def _remove(folder: Path) -> None:
    if not folder.is_dir():
        return
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()


# --- what the Runner saves (RunConfig.save_input_blobs_as_artifacts) ------------------------


def _data_url(url: str | None) -> Blob | None:
    """The blob of a ``data:<mime>;base64,<data>`` URL, else None (a link is not a blob)."""
    if not url or not url.startswith("data:") or ";base64," not in url:
        return None
    head, _, data = url[5:].partition(";base64,")
    try:
        return Blob(base64.b64decode(data, validate=True), head or "application/octet-stream")
    except (binascii.Error, ValueError) as e:
        raise ArtifactError(f"an input message holds a data: URL that is not valid base64 ({e})") from None


async def save_message_blobs(service: ArtifactService, session_id: str, prefix: str, messages: list[Message]) -> None:
    """Saves each ``data:`` part of ``messages`` as the artifact ``<prefix>_<n>`` and puts in
    its place a text naming it (ADK's runner does the same with inline data)."""
    n = 0
    for msg in messages:
        parts = msg.user_input_multi_content
        if not any(_data_url(p.url) is not None for p in parts):
            continue
        new: list[ContentPart | dict[str, Any] | str] = []
        for p in parts:
            blob = _data_url(p.url)
            if blob is None:
                new.append(p)
                continue
            name = f"{prefix}_{n}"
            n += 1
            await service.save(session_id, name, blob)
            new.append(ContentPart(f"Uploaded file: {name}. It is saved into artifacts"))
        msg.user_input_multi_content = new


class BlobSavingSource:
    """A live run's requests with each realtime blob saved as the artifact ``<prefix>_<n>``
    before the agent takes it (ADK's ``save_live_blob``)."""

    def __init__(self, requests: LiveSource, service: ArtifactService, session_id: str, prefix: str) -> None:
        self.requests = requests
        self.service = service
        self.session_id = session_id
        self.prefix = prefix
        self.saved: list[str] = []
        self._back: list[LiveRequest] = []  # put back: already saved

    def unget(self, request: LiveRequest) -> None:
        self._back.append(request)

    async def get(self) -> LiveRequest:
        if self._back:
            return self._back.pop()
        req = await self.requests.get()
        if req.blob is not None:
            name = f"{self.prefix}_{len(self.saved)}"
            self.saved.append(name)
            save = asyncio.ensure_future(self.service.save(self.session_id, name, req.blob))
            try:
                await asyncio.shield(save)
            except asyncio.CancelledError:  # the agent taking it ended (a handoff): saved still, the next agent gets it
                save.add_done_callback(_retrieved)
                self._back.append(req)
                raise
        return req


def _retrieved(task: asyncio.Future[int]) -> None:
    """Marks the outcome of a save nobody awaits any more as seen (a failure was the run's to report)."""
    if not task.cancelled():
        task.exception()
