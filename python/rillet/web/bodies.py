"""Request bodies of the dev UI's JSON API: read as they arrive, with a size limit."""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request

__all__ = ["json_body", "too_large"]


def too_large(limit: int) -> HTTPException:
    return HTTPException(
        413,
        f"rillet web: a request body may be at most {limit} bytes and this one is larger; send less, "
        "or serve with a larger max_body (rillet.web.serve or create_app)",
        headers={"Connection": "close"},  # the server would otherwise read the rest, to discard it
    )


async def json_body(request: Request, limit: int) -> dict[str, Any] | None:
    """The body's JSON object, or None if it is not one. Read as it arrives: a body over
    ``limit`` bytes (a declared length, or what a chunked one has sent so far) is refused
    with 413 without reading the rest, however much more the client would send. JSON that
    holds a lone surrogate (not text: no message, session id or store can take it), or is
    nested deeper than the parser goes, is refused with 400."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large(limit)
    try:
        data = json.loads(body)
        # JSON may spell a lone surrogate ("\\ud800"), which is no text: a message cannot hold it
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        bad = e.object[e.start : e.end].encode("utf-8", "backslashreplace").decode("ascii")
        raise HTTPException(
            400,
            f"rillet web: the body's JSON holds a lone surrogate ({bad}), which is not text; "
            "send UTF-8 text (escape a character outside the BMP as a surrogate pair)",
        ) from None
    except ValueError:
        return None
    except RecursionError:  # a body within the limit can hold more brackets than the parser nests
        raise HTTPException(
            400, "rillet web: the body's JSON is nested too deeply to read; send a flatter value"
        ) from None
    return data if isinstance(data, dict) else None
