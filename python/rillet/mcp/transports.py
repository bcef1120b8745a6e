"""The transports of a toolset's connection, each bounding the size of a message from the server.

Over stdio the mcp package's reader joins every chunk of a line to the text it holds before
splitting it again: time quadratic in the line's length (16 MB took seconds, 100 MB minutes),
all spent before anything could refuse the message. :func:`stdio_transport` keeps the mcp
package's process handling (start, shutdown, killing the process tree) and reads the server's
output itself: a line's chunks go in a list (linear time), and a line over the limit is not
kept: the request it answers gets an error at once, and the rest of it is dropped as it comes.

Over HTTP the mcp package bounds event streams itself (``max_sse_event_size``, given the same
limit) but reads a JSON body whole: :func:`http_transport` reads a body over the limit as the
request's error answer instead.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

log = logging.getLogger("rillet.mcp")

OVER_LIMIT = "over the toolset's max_result_bytes"
"""In the text of every error of the limit, whichever transport found it (McpToolset looks for it)."""

_EDGE = 256  # bytes kept of the start and the end of a line over the limit: where its id is
_ID = rb'(-?\d+|"(?:[^"\\]|\\.)*")'
_JSONRPC = rb'(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
# an answer whose id comes before its result (the mcp package's servers write them so) ...
_ID_FIRST = re.compile(
    rb"\s*\{\s*" + _JSONRPC + rb'"id"\s*:\s*' + _ID + rb"\s*,\s*" + _JSONRPC + rb'"(?:result|error)"'
)
# ... or after it (JavaScript's key order for {result, jsonrpc, id}, or {jsonrpc, result, id})
_RESULT_FIRST = re.compile(rb"\s*\{\s*" + _JSONRPC + rb'"(?:result|error)"\s*:')
_ID_LAST = re.compile(rb'"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


class Lines:
    """Splits what a server writes into its messages, one a line, in time linear in their
    length, keeping no line longer than ``limit`` bytes (None: no limit)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._over = False  # the line being read is over the limit: dropped as it comes
        self._head = self._tail = b""
        self._refused = False  # its request had its error

    def feed(self, chunk: bytes) -> list[Any]:
        """What ``chunk`` completes: messages (``SessionMessage``s; a line that is not one, as
        its parse error), an error answer for a line over the limit, or None for a line over
        the limit whose request cannot be told (the connection must end, or it would wait)."""
        out: list[Any] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:end], out)
            self._end(out)
            start = end + 1
        self._add(chunk[start:], out)
        return out

    def _add(self, piece: bytes, out: list[Any]) -> None:
        if self._over:
            self._tail = (self._tail + piece[-_EDGE:])[-_EDGE:]
            return
        self._parts.append(piece)
        self._size += len(piece)
        if self.limit is not None and self._size > self.limit:  # once a line: at most limit + a chunk
            line = b"".join(self._parts)
            self._head, self._tail, self._parts, self._over = line[:_EDGE], line[-_EDGE:], [], True
            found = _ID_FIRST.match(self._head)
            if found:  # refused now, not once the server has written the rest
                out.append(self._refusal(found.group(1)))
                self._refused = True

    def _end(self, out: list[Any]) -> None:
        if self._over:
            if not self._refused:
                found = _ID_LAST.search(self._tail) if _RESULT_FIRST.match(self._head) else None
                out.append(self._refusal(found.group(1)) if found else None)
        elif self._size:
            out.append(_message(b"".join(self._parts)))
        self._parts, self._size, self._over, self._refused = [], 0, False, False

    def _refusal(self, raw_id: bytes) -> Any:
        from mcp.shared.message import SessionMessage  # optional dependency: only rillet.mcp needs it

        assert self.limit is not None
        return SessionMessage(refusal(json.loads(raw_id), self.limit))


def refusal(request_id: Any, limit: int) -> Any:
    """The error answer, in the server's place, to a request whose answer is over ``limit``."""
    import mcp_types  # as above

    error = mcp_types.ErrorData(
        code=mcp_types.INTERNAL_ERROR, message=f"the server's answer is {OVER_LIMIT} of {limit:,} bytes"
    )
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


def _message(line: bytes) -> Any:
    """A line as the session's message, or its parse error (a value: the session reports it)."""
    import mcp_types  # as above
    from mcp.shared.message import SessionMessage  # optional dependency (rillet[mcp]): loaded on first use

    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as e:
        return e


@asynccontextmanager
async def stdio_transport(server: Any, limit: int | None) -> AsyncIterator[Any]:
    """The streams of a connection to the process started for ``server`` (the mcp package's
    ``StdioServerParameters``; UTF-8, as rillet's StdioServer always is), its output read by
    :class:`Lines`."""
    import anyio  # optional dependency (rillet[mcp]): loaded on first use
    import mcp_types  # as above
    from mcp.client import stdio  # the mcp package's process handling (its private helpers)
    from mcp.shared.message import SessionMessage  # optional dependency (rillet[mcp]): loaded on first use

    command = await stdio._get_executable_command(server.command)
    env = stdio.get_default_environment() | (server.env or {})
    process = await stdio._create_platform_compatible_process(command, server.args, env, sys.stderr, server.cwd)
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None  # started with pipes
    to_session, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    written = anyio.Event()
    waiting: set[Any] = set()  # the ids of the session's requests not answered yet

    async def read() -> None:
        lines = Lines(limit)
        try:
            async with to_session:
                async for chunk in stdout:
                    for message in lines.feed(chunk):
                        if message is None:
                            log.warning(
                                "MCP server %s sent a message %s of %s bytes that answers no request it can be "
                                "told from: the calls waiting fail with the limit's error "
                                "(McpToolset(max_result_bytes=...) raises the limit)",
                                server.command,
                                OVER_LIMIT,
                                limit,
                            )
                            assert limit is not None
                            # Each waiting call says why; the connection goes on (ending it here would
                            # race the session: its close could reach a call before the refusal did).
                            for request_id in list(waiting):
                                waiting.discard(request_id)
                                await to_session.send(SessionMessage(refusal(request_id, limit)))
                            continue
                        if isinstance(message, SessionMessage):
                            waiting.discard(getattr(message.message, "id", None))
                        await to_session.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # the session or the process ended: the session sees its stream close
        finally:
            await stdio._drain_stdout(process)  # a server blocked writing could not exit

    async def write() -> None:
        try:
            async with from_session:
                async for message in from_session:
                    if isinstance(message.message, mcp_types.JSONRPCRequest):
                        waiting.add(message.message.id)
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(text.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await to_session.aclose()  # the server stopped reading: end the session, not leave a request waiting
        finally:
            written.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        try:
            yield incoming, outgoing
        finally:
            with anyio.CancelScope(shield=True):  # the process must not outlive a cancelled caller
                incoming.close()
                outgoing.close()
                with anyio.move_on_after(0.5):  # what the session sent last reaches the server
                    await written.wait()
                await stdio._stop_server_process(process)  # stdin closed, a grace period, then the tree killed
                for stream in (incoming, outgoing, to_session, from_session):
                    await stream.aclose()
            tasks.cancel_scope.cancel()


@asynccontextmanager
async def http_transport(url: str, headers: Mapping[str, str], limit: int | None) -> AsyncIterator[Any]:
    """The streams of a connection to the streamable-HTTP endpoint ``url``, with the mcp
    package's default timeouts; no message over ``limit`` bytes is read whole."""
    from mcp.client.streamable_http import streamable_http_client  # optional dependency
    from mcp.shared._httpx_utils import create_mcp_http_client  # the mcp package's default timeouts

    async with create_mcp_http_client(headers=dict(headers) or None) as http:
        if limit is not None:
            http.event_hooks["response"].append(functools.partial(_bound_json, limit=limit))
        async with streamable_http_client(url, http_client=http, max_sse_event_size=limit) as streams:
            yield streams


async def _bound_json(response: Any, *, limit: int) -> None:
    """Makes a JSON body over ``limit`` bytes read as the request's error answer instead (at
    once when its Content-Length says so; else once that much of it came)."""
    if response.headers.get("content-type", "").lower().startswith("application/json"):
        declared = response.headers.get("content-length", "")
        try:
            request_id = json.loads(response.request.content)["id"]
        except (ValueError, TypeError, KeyError):  # not a request of one id: nothing to answer in its place
            return
        response.stream = _bounded_body()(
            response.stream, limit, int(declared) if declared.isdigit() else 0, request_id
        )


@functools.cache
def _bounded_body() -> type:
    """The class of such a body (made on first use: httpx2 is the mcp package's, loaded with it)."""
    import httpx2  # optional dependency (rillet[mcp]): loaded on first use

    class BoundedBody(httpx2.AsyncByteStream):
        def __init__(self, stream: Any, limit: int, declared: int, request_id: Any) -> None:
            self.stream, self.limit, self.declared, self.request_id = stream, limit, declared, request_id

        async def __aiter__(self) -> AsyncIterator[bytes]:
            if self.declared <= self.limit:  # held until it is known to fit: the mcp package reads it whole anyway
                parts, seen = [], 0
                async for chunk in self.stream:
                    seen += len(chunk)
                    if seen > self.limit:
                        break
                    parts.append(chunk)
                else:
                    yield b"".join(parts)
                    return
            yield refusal(self.request_id, self.limit).model_dump_json(by_alias=True).encode()

        async def aclose(self) -> None:
            await self.stream.aclose()

    return BoundedBody
