"""A tool call's MCP result as the text a rillet tool returns."""

from __future__ import annotations

import json
from typing import Any


def result_text(result: Any) -> str:
    """Text parts joined by newlines when every part is text; the structured result as JSON
    when there are no parts; otherwise the parts (images, audio, resources) as a JSON list of
    the protocol's content objects, so nothing the server sent is dropped."""
    parts = list(result.content)
    if parts and all(p.type == "text" for p in parts):
        return "\n".join(p.text for p in parts)
    if not parts:
        if result.structured_content is not None:
            return json.dumps(result.structured_content, ensure_ascii=False)
        return ""
    return json.dumps([p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in parts], ensure_ascii=False)


def error_text(result: Any) -> str:
    """An ``isError`` result's message: its text parts (or the whole result as JSON)."""
    texts = [p.text for p in result.content if p.type == "text"]
    return "\n".join(texts) if texts else result_text(result)
