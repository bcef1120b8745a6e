"""Reading a streamed Anthropic Messages API answer: bytes in, one assistant message out.

The workload is a Messages API stream held in memory (built below, deterministic):
``message_start``, a ping, a text block of 1,800 ``text_delta`` events, two ``tool_use``
blocks of 100 ``input_json_delta`` events each, ``message_delta`` with the stop reason and
usage, ``message_stop``: 2,011 events, about 2,000 tokens, with the ``event:`` lines the API
sends. Every side gets the same bytes, cut into the same 4 KiB reads.

* rillet: ``AnthropicStreamParser.feed`` per read (SSE + JSON + chunk shaping in Rust), then
  ``concat_messages`` over the chunks.
* anthropic SDK: its own ``SSEDecoder.iter_bytes``, ``json`` per event and ``construct_type``
  into ``RawMessageStreamEvent`` (what its ``Stream`` does), then ``accumulate_event`` per
  event (the accumulator of ``messages.stream()``, which re-reads a tool's partial JSON on
  every delta), read back as the final snapshot.
* python dicts: the SDK's SSE decoder and ``json.loads``, accumulated by hand over plain
  dicts (string joins, no model objects): the leanest Python reading.

Run: .venv/bin/python -m pytest benches/bench_anthropic_parse.py --benchmark-only \
         --benchmark-columns=median,mean,rounds
(benches/conftest.py prints the ratios after the table.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from rillet import concat_messages
from rillet.models.anthropic import AnthropicStreamParser

TEXT_DELTAS = 1800
ARG_DELTAS = 100
READ_SIZE = 4096
WORDS = ["the", " rain", " in", " Lisbon", " falls", " softly,", " ça", " va", " 日本", "—", " ok", "\n"]
CALLS = [("toolu_01Wx1Lisbon", "get_weather"), ("toolu_01Wx2Search", "search_web")]


def recorded_stream() -> bytes:
    def event(kind: str, **fields: Any) -> bytes:
        data = json.dumps({"type": kind, **fields}, ensure_ascii=False, separators=(",", ":"))
        return f"event: {kind}\ndata: {data}\n\n".encode()

    usage = {"input_tokens": 812, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 512, "output_tokens": 1}
    message = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    out = [event("message_start", message=message), event("ping")]
    out.append(event("content_block_start", index=0, content_block={"type": "text", "text": ""}))
    out += [
        event("content_block_delta", index=0, delta={"type": "text_delta", "text": WORDS[i % len(WORDS)]})
        for i in range(TEXT_DELTAS)
    ]
    out.append(event("content_block_stop", index=0))
    for block, (call_id, name) in enumerate(CALLS, start=1):
        tool = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        out.append(event("content_block_start", index=block, content_block=tool))
        pieces = ["{", *(f'"k{j}":{j},' for j in range(ARG_DELTAS - 2)), '"end":true}']
        out += [
            event("content_block_delta", index=block, delta={"type": "input_json_delta", "partial_json": p})
            for p in pieces
        ]
        out.append(event("content_block_stop", index=block))
    out.append(
        event("message_delta", delta={"stop_reason": "tool_use", "stop_sequence": None}, usage={"output_tokens": 2002})
    )
    out.append(event("message_stop"))
    return b"".join(out)


DATA = recorded_stream()
READS = [DATA[i : i + READ_SIZE] for i in range(0, len(DATA), READ_SIZE)]
EXPECTED_CONTENT = "".join(WORDS[i % len(WORDS)] for i in range(TEXT_DELTAS))
EXPECTED_ARGS = "{" + "".join(f'"k{j}":{j},' for j in range(ARG_DELTAS - 2)) + '"end":true}'


def rillet_read(reads: list[bytes]) -> Any:
    parser = AnthropicStreamParser()
    chunks = []
    for data in reads:
        chunks += parser.feed(data)
    return concat_messages(chunks + parser.finish())


def sdk_events(reads: list[bytes]) -> Iterator[Any]:
    """The SDK's reading of a stream: its SSE decoder, json, and construct_type into
    RawMessageStreamEvent, as its ``Stream`` does."""
    from anthropic._models import construct_type
    from anthropic._streaming import SSEDecoder
    from anthropic.types import RawMessageStreamEvent

    for sse in SSEDecoder().iter_bytes(iter(reads)):
        if sse.event in ("ping", None):
            continue
        yield construct_type(type_=RawMessageStreamEvent, value=sse.json())


def sdk_read(reads: list[bytes]) -> Any:
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for event in sdk_events(reads):
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
    return snapshot


def dicts_read_by_hand(reads: list[bytes]) -> tuple[str, list[list[str]], Any]:
    """The leanest Python reading: the SDK's SSE decoder and ``json.loads``, accumulated by
    hand over plain dicts."""
    from anthropic._streaming import SSEDecoder

    text: list[str] = []
    calls: dict[int, list[str]] = {}
    usage: dict[str, Any] = {}
    for sse in SSEDecoder().iter_bytes(iter(reads)):
        event = json.loads(sse.data)
        kind = event["type"]
        if kind == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                text.append(delta["text"])
            elif delta["type"] == "input_json_delta":
                calls[event["index"]][2] += delta["partial_json"]
        elif kind == "content_block_start" and event["content_block"]["type"] == "tool_use":
            block = event["content_block"]
            calls[event["index"]] = [block["id"], block["name"], ""]
        elif kind == "message_start":
            usage.update(event["message"]["usage"])
        elif kind == "message_delta":
            usage.update(event["usage"])
    return "".join(text), [calls[i] for i in sorted(calls)], usage


def test_rillet_and_sdk_read_the_same_answer() -> None:
    pytest.importorskip("anthropic")
    ours = rillet_read(READS)
    theirs = sdk_read(READS)
    assert ours.content == theirs.content[0].text == EXPECTED_CONTENT
    assert [json.loads(c.function.arguments) for c in ours.tool_calls] == [b.input for b in theirs.content[1:]]
    assert [(c.id, c.function.name) for c in ours.tool_calls] == CALLS
    assert ours.tool_calls[1].function.arguments == EXPECTED_ARGS
    assert ours.response_meta.usage.completion_tokens == theirs.usage.output_tokens == 2002
    text, calls, _ = dicts_read_by_hand(READS)
    assert text == ours.content and calls[1] == [*CALLS[1], EXPECTED_ARGS]


@pytest.mark.benchmark(group="read a 2,000-token Anthropic stream")
def test_rillet_parse_and_concat(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "rillet"  # benches/conftest.py prints the ratios
    out = benchmark(rillet_read, READS)
    assert out.content == EXPECTED_CONTENT


@pytest.mark.benchmark(group="read a 2,000-token Anthropic stream")
def test_anthropic_sdk_parse_and_accumulate(benchmark: Any) -> None:
    pytest.importorskip("anthropic")
    benchmark.extra_info["impl"] = "anthropic sdk"  # benches/conftest.py prints the ratios
    out = benchmark(sdk_read, READS)
    assert out.content[0].text == EXPECTED_CONTENT


@pytest.mark.benchmark(group="read a 2,000-token Anthropic stream")
def test_python_dicts_by_hand(benchmark: Any) -> None:
    pytest.importorskip("anthropic")
    benchmark.extra_info["impl"] = "python dicts"  # benches/conftest.py prints the ratios
    text, _, _ = benchmark(dicts_read_by_hand, READS)
    assert text == EXPECTED_CONTENT
