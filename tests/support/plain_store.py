"""A checkpoint store with only get, set and delete (the least a store may have): the
adapter's fallback keeps the step log in it."""

from __future__ import annotations


class PlainStore:
    """A store with only get, set and delete: the adapter's fallback keeps the log."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def get(self, checkpoint_id: str) -> bytes | None:
        return self.data.get(checkpoint_id)

    def set(self, checkpoint_id: str, data: bytes) -> None:
        self.data[checkpoint_id] = data

    def delete(self, checkpoint_id: str) -> None:
        self.data.pop(checkpoint_id, None)
