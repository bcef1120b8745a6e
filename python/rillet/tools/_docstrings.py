"""Parameter descriptions from docstrings in the Google, NumPy and Sphinx styles.

Imported when the first function tool is made (its regular expressions cost milliseconds
to compile, which ``import rillet`` should not pay).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

__all__ = ["parse_docstring"]

_PARAM_SECTIONS = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "other parameters"}
)
_GOOGLE_SECTIONS = _PARAM_SECTIONS | {
    "attributes",
    "example",
    "examples",
    "note",
    "notes",
    "raises",
    "references",
    "return",
    "returns",
    "see also",
    "todo",
    "warning",
    "warnings",
    "yield",
    "yields",
}
_GOOGLE_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*):$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)$")
_NUMPY_RULE = re.compile(r"^-{3,}$")
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?$")
_SPHINX_PARAM = re.compile(r"^:(?:param|parameter|arg|argument|key|keyword)\s+([^:]*?)\s*:(.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _entries(
    block: list[str], entry: re.Pattern[str], names_of: Callable[[re.Match[str]], list[str]]
) -> dict[str, str]:
    """Entries of an indented definition list: a line at the block's base indentation that
    matches ``entry`` opens one, more-indented lines continue its description."""
    base = min((_indent(ln) for ln in block if ln.strip()), default=0)
    out: dict[str, str] = {}
    names: list[str] = []
    parts: list[str] = []

    def flush() -> None:
        for n in names:
            out[n] = " ".join(parts)

    for ln in block:
        if not ln.strip():
            continue
        m = entry.match(ln.strip()) if _indent(ln) == base else None
        if m:
            flush()
            names = names_of(m)
            first = m.group(2).strip() if m.re is _GOOGLE_ENTRY else ""
            parts = [first] if first else []
        elif names:
            parts.append(ln.strip())
    flush()
    return out


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Splits a docstring into its description (the text before the first section) and
    the parameter descriptions of its Google, NumPy or Sphinx parameter section."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    params: dict[str, str] = {}
    end = len(lines)
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        if text and i + 1 < len(lines) and _NUMPY_RULE.match(lines[i + 1].strip()):
            end = min(end, i)
            j = i + 2
            while j < len(lines) and not (
                lines[j].strip() and j + 1 < len(lines) and _NUMPY_RULE.match(lines[j + 1].strip())
            ):
                j += 1
            if text.lower() in _PARAM_SECTIONS:
                params.update(
                    _entries(
                        lines[i + 2 : j], _NUMPY_ENTRY, lambda m: [n.strip().lstrip("*") for n in m.group(1).split(",")]
                    )
                )
            i = j
            continue
        header = _GOOGLE_HEADER.match(text)
        if header and header.group(1).lower() in _GOOGLE_SECTIONS:
            end = min(end, i)
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > _indent(lines[i])):
                j += 1
            if header.group(1).lower() in _PARAM_SECTIONS:
                params.update(_entries(lines[i + 1 : j], _GOOGLE_ENTRY, lambda m: [m.group(1)]))
            i = j
            continue
        if text.startswith(":") and re.match(r"^:\w", text):
            end = min(end, i)
            j = i + 1
            while j < len(lines) and lines[j].strip() and _indent(lines[j]) > _indent(lines[i]):
                j += 1
            m = _SPHINX_PARAM.match(text)
            if m:
                name = m.group(1).split()[-1].lstrip("*") if m.group(1).split() else ""
                desc = " ".join([m.group(2).strip(), *(ln.strip() for ln in lines[i + 1 : j])]).strip()
                if name:
                    params[name] = desc
            i = j
            continue
        i += 1
    return "\n".join(lines[:end]).strip(), params
