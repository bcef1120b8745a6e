"""A careful pure-Python implementation of Eino's ConcatMessages rules, the baseline that
rillet's Rust concatenation is measured against (benches/bench_concat.py).

Chunks are plain dicts (the cheapest shape for Python): ``role``, ``content``, ``name``,
``reasoning_content``, ``tool_calls`` (dicts with ``index``, ``id``, ``type`` and
``function: {name, arguments}``), ``tool_call_id``, ``tool_name``, ``response_meta``
(``finish_reason``, ``usage``) and ``extra``. Every key is optional. Text is collected in
lists and joined once; tool calls are grouped in a dict keyed by index. Same rules, same
errors as rillet.concat_messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

IDENT_KEYS = ("role", "name", "tool_call_id", "tool_name")
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "reasoning_tokens")


class ReferenceConcatError(ValueError):
    pass


def _first(acc: dict[str, str], key: str, value: str | None, i: int) -> None:
    if not value:
        return
    old = acc.get(key)
    if not old:
        acc[key] = value
    elif old != value:
        raise ReferenceConcatError(f"cannot concat messages with different {key}: '{old}' and '{value}' (chunk {i})")


def _merge_value(old: Any, new: Any, path: str) -> Any:
    if new is None:
        return old
    if old is None:
        return new
    if type(old) is not type(new):
        raise ReferenceConcatError(f"cannot concat extra key '{path}': {type(old).__name__} and {type(new).__name__}")
    if isinstance(new, str):
        return old + new
    if isinstance(new, dict):
        return _merge_extra(old, new, path + ".")
    if isinstance(new, (bool, int, float)):
        return new
    if old and new:
        raise ReferenceConcatError(f"cannot concat multiple non-zero values of type {type(new).__name__} in '{path}'")
    return new if not old else old


def _merge_extra(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out = dict(old)
    for k, v in new.items():
        out[k] = _merge_value(out[k], v, prefix + k) if k in out else v
    return out


def reference_concat(chunks: Iterable[dict[str, Any] | None], usage: str = "max") -> dict[str, Any]:
    ident: dict[str, str] = {}
    content: list[str] = []
    reasoning: list[str] = []
    unindexed: list[dict[str, Any]] = []
    indexed: dict[int, dict[str, Any]] = {}
    args: dict[int, list[str]] = {}
    finish = ""
    total: dict[str, int] | None = None
    has_meta = False
    extra: dict[str, Any] | None = None
    content_append, reasoning_append = content.append, reasoning.append
    for i, c in enumerate(chunks):
        if c is None:
            raise ReferenceConcatError(f"unexpected None chunk in message stream, index: {i}")
        # A chunk holds one or two keys: walking its items beats ten dict lookups.
        for key, value in c.items():
            if key == "content":
                if value:
                    content_append(value)
            elif key == "tool_calls":
                for tc in value or ():
                    _merge_call(tc, unindexed, indexed, args, i)
            elif key == "reasoning_content":
                if value:
                    reasoning_append(value)
            elif key in IDENT_KEYS:
                if value:
                    _first(ident, key, value, i)
            elif key == "response_meta":
                if value is not None:
                    has_meta = True
                    if value.get("finish_reason"):
                        finish = value["finish_reason"]
                    u = value.get("usage")
                    if u is not None:
                        total = _merge_usage(total, u, usage)
            elif key == "extra":
                if value is not None:
                    extra = dict(value) if extra is None else _merge_extra(extra, value)
    out: dict[str, Any] = {k: ident.get(k, "") for k in ("role", "name", "tool_call_id", "tool_name")}
    out["content"] = "".join(content)
    out["reasoning_content"] = "".join(reasoning)
    for index, call in indexed.items():
        call["function"]["arguments"] = "".join(args[index])
    out["tool_calls"] = unindexed + [indexed[k] for k in sorted(indexed)]
    out["response_meta"] = {"finish_reason": finish, "usage": total} if has_meta else None
    out["extra"] = extra
    return out


def _merge_call(
    tc: dict[str, Any],
    unindexed: list[dict[str, Any]],
    indexed: dict[int, dict[str, Any]],
    args: dict[int, list[str]],
    i: int,
) -> None:
    index = tc.get("index")
    fn = tc.get("function") or {}
    if index is None:
        unindexed.append(tc)
        return
    base = indexed.get(index)
    if base is None:
        indexed[index] = {
            "index": index,
            "id": tc.get("id", ""),
            "type": tc.get("type", ""),
            "function": {"name": fn.get("name", ""), "arguments": ""},
            "extra": tc.get("extra"),
        }
        args[index] = [fn.get("arguments", "")]
        return
    for key, new in (("id", tc.get("id")), ("type", tc.get("type"))):
        _first_call(base, key, new, index, i)
    _first_call(base["function"], "name", fn.get("name"), index, i)
    args[index].append(fn.get("arguments", ""))


def _first_call(base: dict[str, Any], key: str, new: str | None, index: int, i: int) -> None:
    if not new:
        return
    if not base[key]:
        base[key] = new
    elif base[key] != new:
        raise ReferenceConcatError(
            f"cannot concat tool call {index} with different {key}: '{base[key]}' and '{new}' (chunk {i})"
        )


def _merge_usage(total: dict[str, int] | None, u: dict[str, int], policy: str) -> dict[str, int]:
    if total is None or policy == "last":
        return {k: u.get(k, 0) for k in USAGE_KEYS}
    if policy == "sum":
        return {k: total[k] + u.get(k, 0) for k in USAGE_KEYS}
    return {k: max(total[k], u.get(k, 0)) for k in USAGE_KEYS}


class PyTee:
    """A pure-Python copy(n): children share one buffer list with their own cursors; the
    child that is furthest ahead pulls from the source (the same design as rillet's)."""

    def __init__(self, source: Iterator[Any], n: int) -> None:
        self._source = source
        self._buf: list[Any] = []
        self._base = 0
        self._cursors = [0] * n
        self._ended = False

    def child(self, i: int) -> Iterator[Any]:
        while True:
            pos = self._cursors[i] - self._base
            if pos < len(self._buf):
                item = self._buf[pos]
            elif self._ended:
                return
            else:
                try:
                    item = next(self._source)
                except StopIteration:
                    self._ended = True
                    return
                self._buf.append(item)
            self._cursors[i] += 1
            self._trim()
            yield item

    def _trim(self) -> None:
        drop = min(self._cursors) - self._base
        if drop > 64:  # trim in batches: list.pop(0) per item would be quadratic
            del self._buf[:drop]
            self._base += drop
