"""A streamed answer's lines and events are bounded: a server sending a line that never
ends (once held in memory whole: 200 MB and counting) fails the stream with
StreamLimitError, naming the limit and the OpenAIChatModel keyword that raises it, after
reading about that many bytes."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from rillet import Message
from rillet._native import ChatStreamParser
from rillet.models import ModelError, OpenAIChatModel, StreamLimitError
from support.openai_server import FakeOpenAIServer, Reply

MiB = 1 << 20


def _endless_line(total: int) -> Iterator[bytes]:
    """A data line that never ends: 64 KiB pieces, up to `total` bytes (then the stream
    ends, still without a newline)."""
    yield b'data: {"choices":[{"delta":{"content":"'
    piece = b"a" * (64 << 10)
    for _ in range(total // len(piece)):
        yield piece


def _stream(server: FakeOpenAIServer, reply: Reply, **kw: Any) -> tuple[list[Message], BaseException | None]:
    server.script(reply)
    model = OpenAIChatModel("test-model", base_url=server.url, api_key="sk-test", max_retries=0, **kw)

    async def main() -> tuple[list[Message], BaseException | None]:
        chunks: list[Message] = []
        try:
            async for chunk in await model.stream([Message.user("hi")]):
                chunks.append(chunk)
        except Exception as e:
            return chunks, e
        return chunks, None

    return asyncio.run(asyncio.wait_for(main(), 60))


def test_an_endless_line_fails_the_stream_after_the_limit(server: FakeOpenAIServer) -> None:
    head = b'data: {"choices":[{"delta":{"role":"assistant","content":"hi"}}]}\n\n'
    reply = Reply(pieces=iter([head, *_endless_line(64 * MiB)]))
    chunks, err = _stream(server, reply, max_sse_line_bytes=MiB)
    assert chunks == [Message("assistant", "hi")]
    assert isinstance(err, StreamLimitError) and isinstance(err, ModelError)
    assert (err.limit, err.line, err.base_url) == ("max_sse_line_bytes", 3, server.url)
    assert str(err) == (
        "line 3 of the event stream is longer than 1048576 bytes, the limit set by "
        "max_sse_line_bytes=1048576: raise max_sse_line_bytes= if the server really sends that much"
    )
    # The client stopped reading soon after the limit (socket buffers hold a few MiB more).
    assert reply.sent < 16 * MiB


def test_an_event_over_its_limit_fails_naming_the_event_keyword(server: FakeOpenAIServer) -> None:
    line = b'data: {"choices":[{"delta":{"content":"' + b"a" * 1000 + b'"}}]}\n'
    chunks, err = _stream(server, Reply(line * 20 + b"\n"), max_sse_event_bytes=10_000)
    assert chunks == []
    assert isinstance(err, StreamLimitError)
    assert (err.limit, err.line) == ("max_sse_event_bytes", 1)
    assert "max_sse_event_bytes=10000" in str(err)


def test_lines_and_events_within_the_limits_stream_as_before(server: FakeOpenAIServer) -> None:
    big = "b" * 200_000
    body = b'data: {"choices":[{"delta":{"role":"assistant","content":"%s"}}]}\n\n' % big.encode()
    body += b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    chunks, err = _stream(server, Reply(body), max_sse_line_bytes=300_000, max_sse_event_bytes=300_000)
    assert err is None
    assert "".join(c.content for c in chunks) == big


def test_the_defaults_are_documented_and_checked() -> None:
    params = inspect.signature(OpenAIChatModel).parameters
    assert params["max_sse_line_bytes"].default == 4 * MiB
    assert params["max_sse_event_bytes"].default == 16 * MiB
    parser = inspect.signature(ChatStreamParser).parameters
    assert parser["max_sse_line_bytes"].default == 4 * MiB
    assert parser["max_sse_event_bytes"].default == 16 * MiB
    with pytest.raises(ValueError, match="must be positive"):
        OpenAIChatModel("m", api_key="k", max_sse_line_bytes=0)
    for bad in (-1, 1.5, None, True):  # each named, not an OverflowError about "unsigned"
        with pytest.raises(
            ValueError, match=rf"max_sse_event_bytes must be positive \(an int, in bytes\), got {bad!r}"
        ):
            OpenAIChatModel("m", api_key="k", max_sse_event_bytes=bad)  # type: ignore[arg-type]


def test_the_parser_refuses_a_long_line_fed_in_pieces() -> None:
    parser = ChatStreamParser(max_sse_line_bytes=100)
    assert parser.feed(b"data: " + b"x" * 94) == []
    with pytest.raises(StreamLimitError, match="line 1 .* longer than 100 bytes") as info:
        parser.feed(b"x")
    assert info.value.limit == "max_sse_line_bytes"
    with pytest.raises(StreamLimitError):  # and every later call
        parser.finish()
