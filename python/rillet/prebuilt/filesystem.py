"""File tools for a DeepAgent (Eino's filesystem middleware, reduced to four tools) over a
pluggable :class:`Backend`: :class:`InMemoryBackend` (a dict, for tests and scratch work) or
:class:`DirectoryBackend` (a directory on disk, which refuses every path outside it).

Paths are POSIX-style and relative to the backend's root (a leading ``/`` is the root). The
tools' errors (a missing file, an edit whose text is not found) go back to the model as the
tool's result, so it can correct itself.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Protocol, runtime_checkable

from rillet.tools import BaseTool, FunctionTool

__all__ = ["Backend", "DirectoryBackend", "InMemoryBackend", "file_tools"]


@runtime_checkable
class Backend(Protocol):
    """Where the file tools read and write. Errors are raised as exceptions whose text the
    model reads (FileNotFoundError, PermissionError, ValueError)."""

    def ls(self, path: str) -> list[str]:
        """The entries directly under the directory ``path``, sorted; directories end in ``/``."""
        ...

    def read(self, path: str) -> str:
        """The text of the file ``path``."""
        ...

    def write(self, path: str, content: str) -> None:
        """Creates or replaces the file ``path`` (and its parent directories)."""
        ...


def _normal(path: str) -> str:
    """``path`` as a key relative to the root: no leading ``/``, no ``.`` or ``..`` left;
    a path that climbs above the root is refused."""
    parts: list[str] = []
    for part in path.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise PermissionError(f"path {path!r} leaves the file area; use a path under /")
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


class InMemoryBackend:
    """Files held in a dict (``files``: path -> text), shared by every run that uses it."""

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files: dict[str, str] = {_normal(k): v for k, v in (files or {}).items()}
        self._lock = threading.Lock()

    def ls(self, path: str) -> list[str]:
        base = _normal(path)
        prefix = base + "/" if base else ""
        out: set[str] = set()
        with self._lock:
            keys = list(self.files)
        for key in keys:
            if key.startswith(prefix):
                head, sep, _ = key[len(prefix) :].partition("/")
                out.add(head + sep)
        if not out and base:
            raise FileNotFoundError(f"no directory {path!r}")
        return sorted(out)

    def read(self, path: str) -> str:
        with self._lock:
            text = self.files.get(_normal(path))
        if text is None:
            raise FileNotFoundError(f"no file {path!r}")
        return text

    def write(self, path: str, content: str) -> None:
        key = _normal(path)
        if not key:
            raise ValueError("write needs a file path, not the root")
        with self._lock:
            self.files[key] = content


class DirectoryBackend:
    """Files under the directory ``root``. Every path is taken under it (``/a`` is
    ``root/a``); one that resolves outside it (through ``..`` or a symbolic link pointing
    out) is refused with PermissionError."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise ValueError(f"DirectoryBackend: {str(root)!r} is not a directory; create it first")

    def _resolve(self, path: str) -> Path:
        target = (self.root / path.lstrip("/\\")).resolve()
        if target != self.root and self.root not in target.parents:
            raise PermissionError(f"path {path!r} is outside the agent's directory; use a path under it")
        return target

    def ls(self, path: str) -> list[str]:
        target = self._resolve(path)
        if not target.is_dir():
            raise FileNotFoundError(f"no directory {path!r}")
        return sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir())

    def read(self, path: str) -> str:
        target = self._resolve(path)
        if not target.is_file():
            raise FileNotFoundError(f"no file {path!r}")
        return target.read_text(encoding="utf-8")

    def write(self, path: str, content: str) -> None:
        target = self._resolve(path)
        if target == self.root:
            raise ValueError("write needs a file path, not the root")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


READ_LIMIT = 2000
"""The most lines ``read_file`` returns unless the model asks for fewer (Eino's default)."""


def file_tools(backend: Backend) -> list[BaseTool]:
    """``ls``, ``read_file``, ``write_file`` and ``edit_file`` over ``backend``."""

    def ls(path: str = "/") -> str:
        """Lists the files and directories directly under a directory.

        Args:
            path: the directory ("/" is the top).
        """
        entries = backend.ls(path)
        return "\n".join(entries) if entries else "(empty)"

    def read_file(path: str, offset: int = 0, limit: int = READ_LIMIT) -> str:
        """Reads a text file, up to `limit` lines from line `offset`.

        Args:
            path: the file's path.
            offset: the first line to read, counting from 0.
            limit: the most lines to read.
        """
        lines = backend.read(path).splitlines(keepends=True)
        offset, limit = max(offset, 0), max(limit, 1)
        text = "".join(lines[offset : offset + limit])
        rest = len(lines) - offset - limit
        # a large file must not fill the model's context in one call
        return text + f"[{rest} more lines: read on with offset={offset + limit}]" if rest > 0 else text

    def write_file(path: str, content: str) -> str:
        """Creates a file, or replaces its whole content.

        Args:
            path: the file's path.
            content: the new text of the file.
        """
        backend.write(path, content)
        return f"wrote {len(content)} characters to {path}"

    def edit_file(path: str, old_text: str, new_text: str, replace_all: bool = False) -> str:
        """Replaces text in a file. The old text must occur exactly once, unless replace_all is true.

        Args:
            path: the file's path.
            old_text: the exact text to replace.
            new_text: what to put in its place.
            replace_all: replace every occurrence.
        """
        text = backend.read(path)
        count = text.count(old_text) if old_text else 0
        if count == 0:
            raise ValueError(f"the text to replace was not found in {path}; read the file and copy it exactly")
        if count > 1 and not replace_all:
            raise ValueError(
                f"the text to replace occurs {count} times in {path}; give more context or set replace_all"
            )
        backend.write(path, text.replace(old_text, new_text))
        return f"replaced {count if replace_all else 1} occurrence(s) in {path}"

    return [FunctionTool(f) for f in (ls, read_file, write_file, edit_file)]
