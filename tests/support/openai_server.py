"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for the model-client tests.

It answers ``POST .../chat/completions`` with scripted replies, in order, and records every
request. A reply can stream an SSE transcript cut into writes at chosen byte offsets (so a
UTF-8 character can arrive in two reads), drop the connection part-way, wait, or answer an
HTTP error with headers such as Retry-After. It runs in a thread, so one server serves any
number of event loops. Nothing here leaves the loopback interface.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRANSCRIPTS = Path(__file__).parent / "transcripts"


def run(coro: Coroutine[Any, Any, Any], timeout: float = 20.0) -> Any:
    """Runs ``coro`` on a new event loop, failing it after ``timeout`` seconds (no test hangs)."""

    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def transcript(name: str) -> bytes:
    """The bytes of ``tests/support/transcripts/<name>.sse``, exactly as stored."""
    return (TRANSCRIPTS / f"{name}.sse").read_bytes()


@dataclass
class Reply:
    """One scripted answer.

    ``splits``: byte offsets at which the body is cut into separate writes (a short pause
    between writes, so the client sees separate reads). ``drop_at``: the connection closes
    after this many body bytes, mid-response. ``delay``: seconds before the status line.
    ``pause``: seconds between writes (a long delay or pause is cut short when the server closes). Streams use chunked transfer encoding, so a drop is
    visible to the client as a cut body. ``pieces``: when given, the body is written from
    this iterator instead (it may be endless: writing stops when the client hangs up), and
    ``sent`` counts the bytes written.
    """

    body: bytes = b""
    status: int = 200
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    splits: tuple[int, ...] = ()
    drop_at: int | None = None
    delay: float = 0.0
    pause: float = 0.01
    pieces: Iterator[bytes] | None = None
    sent: int = 0

    @staticmethod
    def sse(name: str, **kw: Any) -> Reply:
        return Reply(transcript(name), **kw)

    @staticmethod
    def json(obj: Any, status: int = 200, **kw: Any) -> Reply:
        return Reply(json.dumps(obj).encode(), status=status, content_type="application/json", **kw)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class FakeOpenAIServer:
    """Serves scripted replies; ``url`` is the API root to give the client."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self.times: list[float] = []
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._closed = False
        self._closing = threading.Event()  # ends every delay and pause at once
        self._thread = threading.Thread(target=self._serve, name="fake-openai", daemon=True)
        self._thread.start()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies = list(replies)
            self.requests.clear()
            self.times.clear()

    def bodies(self) -> list[Any]:
        return [r.json() for r in self.requests]

    def close(self) -> None:
        self._closed = True
        self._closing.set()
        self._sock.close()

    # --- serving ----------------------------------------------------------------------------

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            request = _read_request(conn)
            if request is None:
                return
            with self._lock:
                self.requests.append(request)
                self.times.append(time.monotonic())
                reply = (
                    self.replies.pop(0)
                    if self.replies
                    else Reply.json({"error": {"message": "the test scripted no more replies"}}, status=500)
                )
            self._respond(conn, reply)
        except OSError:
            pass
        finally:
            conn.close()

    def _respond(self, conn: socket.socket, reply: Reply) -> None:
        if reply.delay:
            self._closing.wait(reply.delay)
        chunked = reply.content_type == "text/event-stream"
        head = [
            f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}",
            f"Content-Type: {reply.content_type}",
            "Connection: close",
        ]
        head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(reply.body)}")
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        if reply.pieces is not None:
            for piece in reply.pieces:
                conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                reply.sent += len(piece)
            conn.sendall(b"0\r\n\r\n")
            return
        body = reply.body if reply.drop_at is None else reply.body[: reply.drop_at]
        cuts = [0, *sorted(s for s in reply.splits if 0 < s < len(body)), len(body)]
        for start, end in zip(cuts, cuts[1:]):
            piece = body[start:end]
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            if end < len(body):
                self._closing.wait(reply.pause)
        if reply.drop_at is not None:
            return  # cut: no terminating chunk
        if chunked:
            conn.sendall(b"0\r\n\r\n")


def _read_request(conn: socket.socket) -> Recorded | None:
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return None
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        more = conn.recv(65536)
        if not more:
            break
        body += more
    return Recorded(method, path, headers, body)
