"""Reading a streamed chat completion: bytes in, one assistant message out.

The workload is a recorded-shape OpenAI stream held in memory (built below, deterministic):
a role chunk, 1,800 text deltas, two tool calls (a header delta with id and name, then 100
argument deltas each), the finish chunk and the usage chunk (``choices: []``), then
``[DONE]``: 2,004 events, about 2,000 tokens, each event carrying the id, object, created and
model fields real servers send. Both sides get the same bytes, cut into the same 4 KiB reads.

* rillet: ``ChatStreamParser.feed`` per read (SSE + JSON + chunk shaping in Rust), then
  ``concat_messages`` over the chunks.
* openai SDK: its own ``SSEDecoder.iter_bytes``, ``json`` per event and ``construct_type``
  into ``ChatCompletionChunk`` (what ``Stream`` does with a non-strict client), then
  ``ChatCompletionStreamState.handle_chunk`` per chunk, read back as
  ``current_completion_snapshot`` (the accumulator without the final parse step). That
  accumulator rebuilds its snapshot per chunk, so it grows with the answer's length; the
  "by hand" peer accumulates the SDK's chunks with plain string joins instead, and the
  "parse only" group compares bytes-to-chunks alone.
* python dicts: the leanest Python path, the SDK's SSE decoder and ``json.loads`` with the
  same hand accumulation over plain dicts (no model objects, none of the dialect handling).

Run: .venv/bin/python -m pytest benches/bench_openai_parse.py --benchmark-only \
         --benchmark-columns=median,mean,rounds
(benches/conftest.py prints the ratio after the table.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from rillet import concat_messages
from rillet.models.openai import ChatStreamParser

TEXT_DELTAS = 1800
ARG_DELTAS = 100
READ_SIZE = 4096
WORDS = ["the", " rain", " in", " Lisbon", " falls", " softly,", " ça", " va", " 日本", "—", " ok", "\n"]


def recorded_stream() -> bytes:
    head = {
        "id": "chatcmpl-B9xQe2",
        "object": "chat.completion.chunk",
        "created": 1764550000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0aa8d3e20b",
    }

    def event(delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> bytes:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        obj = {**head, "choices": choices, "usage": usage}
        return b"data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"

    out = [event({"role": "assistant", "content": "", "refusal": None})]
    out += [event({"content": WORDS[i % len(WORDS)]}) for i in range(TEXT_DELTAS)]
    for index, (call_id, name) in enumerate([("call_Wx1Lisbon", "get_weather"), ("call_Wx2Search", "search_web")]):
        fn = {"name": name, "arguments": ""}
        out.append(event({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": fn}]}))
        out += [
            event({"tool_calls": [{"index": index, "function": {"arguments": f'"k{j}":{j},'}}]})
            for j in range(ARG_DELTAS)
        ]
    out.append(event({}, "tool_calls"))
    usage = {
        "prompt_tokens": 812,
        "completion_tokens": 2002,
        "total_tokens": 2814,
        "prompt_tokens_details": {"cached_tokens": 512, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    out.append(event(None, usage=usage))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


DATA = recorded_stream()
READS = [DATA[i : i + READ_SIZE] for i in range(0, len(DATA), READ_SIZE)]
EXPECTED_CONTENT = "".join(WORDS[i % len(WORDS)] for i in range(TEXT_DELTAS))
EXPECTED_ARGS = "".join(f'"k{j}":{j},' for j in range(ARG_DELTAS))


def rillet_read(reads: list[bytes]) -> Any:
    return concat_messages(rillet_chunks(reads))


def rillet_chunks(reads: list[bytes]) -> list[Any]:
    parser = ChatStreamParser()
    chunks = []
    for data in reads:
        chunks += parser.feed(data)
    return chunks + parser.finish()


def openai_chunks(reads: list[bytes]) -> Iterator[Any]:
    """The SDK's reading of a stream: its SSE decoder, json, and construct_type into
    ChatCompletionChunk, as ``Stream`` does for a client without strict validation."""
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai.types.chat import ChatCompletionChunk

    for sse in SSEDecoder().iter_bytes(iter(reads)):
        if sse.data.startswith("[DONE]"):
            break
        yield construct_type(type_=ChatCompletionChunk, value=sse.json())


def openai_read(reads: list[bytes]) -> Any:
    from openai.lib.streaming.chat import ChatCompletionStreamState

    state = ChatCompletionStreamState()
    for chunk in openai_chunks(reads):
        state.handle_chunk(chunk)
    return state.current_completion_snapshot


def dicts_read_by_hand(reads: list[bytes]) -> tuple[str, list[list[str]], Any]:
    """The leanest Python reading: the SDK's SSE decoder and ``json.loads``, then the same
    hand accumulation over plain dicts (no model objects at all)."""
    from openai._streaming import SSEDecoder

    content: list[str] = []
    calls: dict[int, list[str]] = {}
    usage = None
    for sse in SSEDecoder().iter_bytes(iter(reads)):
        if sse.data.startswith("[DONE]"):
            break
        chunk = json.loads(sse.data)
        if chunk.get("usage") is not None:
            usage = chunk["usage"]
        for choice in chunk["choices"]:
            delta = choice["delta"]
            if delta.get("content"):
                content.append(delta["content"])
            for tc in delta.get("tool_calls") or ():
                call = calls.setdefault(tc["index"], ["", "", ""])
                call[0] = call[0] or tc.get("id") or ""
                fn = tc.get("function") or {}
                call[1] = call[1] or fn.get("name") or ""
                call[2] += fn.get("arguments") or ""
    return "".join(content), [calls[i] for i in sorted(calls)], usage


def openai_read_by_hand(reads: list[bytes]) -> tuple[str, list[list[str]], Any]:
    """The SDK's chunks accumulated by hand (no snapshot rebuilt per chunk): the cheapest
    correct loop a user of the SDK would write."""
    content: list[str] = []
    calls: dict[int, list[str]] = {}
    usage = None
    for chunk in openai_chunks(reads):
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                content.append(delta.content)
            for tc in delta.tool_calls or ():
                call = calls.setdefault(tc.index, ["", "", ""])
                call[0] = call[0] or tc.id or ""
                if tc.function is not None:
                    call[1] = call[1] or tc.function.name or ""
                    call[2] += tc.function.arguments or ""
    return "".join(content), [calls[i] for i in sorted(calls)], usage


def test_rillet_and_sdk_read_the_same_answer() -> None:
    pytest.importorskip("openai")
    ours = rillet_read(READS)
    theirs = openai_read(READS).choices[0].message
    assert ours.content == theirs.content == EXPECTED_CONTENT
    assert [c.function.arguments for c in ours.tool_calls] == [c.function.arguments for c in theirs.tool_calls]
    assert ours.tool_calls[1].function.arguments == EXPECTED_ARGS
    assert ours.response_meta.usage.total_tokens == 2814
    text, calls, usage = openai_read_by_hand(READS)
    assert text == ours.content and calls[1] == ["call_Wx2Search", "search_web", EXPECTED_ARGS]
    assert usage.total_tokens == 2814
    assert dicts_read_by_hand(READS)[:2] == (text, calls)
    assert len(rillet_chunks(READS)) == len(list(openai_chunks(READS))) == 2005


@pytest.mark.benchmark(group="read a 2,000-token stream")
def test_rillet_parse_and_concat(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "rillet"  # benches/conftest.py prints the ratios
    out = benchmark(rillet_read, READS)
    assert out.content == EXPECTED_CONTENT


@pytest.mark.benchmark(group="read a 2,000-token stream")
def test_openai_sdk_parse_and_accumulate(benchmark: Any) -> None:
    pytest.importorskip("openai")
    benchmark.extra_info["impl"] = "openai sdk"  # benches/conftest.py prints the ratios
    out = benchmark(openai_read, READS)
    assert out.choices[0].message.content == EXPECTED_CONTENT


@pytest.mark.benchmark(group="read a 2,000-token stream")
@pytest.mark.parametrize(
    ("impl", "read"), [("openai sdk by hand", openai_read_by_hand), ("python dicts", dicts_read_by_hand)]
)
def test_python_accumulation_by_hand(benchmark: Any, impl: str, read: Any) -> None:
    pytest.importorskip("openai")
    benchmark.extra_info["impl"] = impl  # benches/conftest.py prints the ratios
    text, _, _ = benchmark(read, READS)
    assert text == EXPECTED_CONTENT


@pytest.mark.benchmark(group="parse 2,005 chunks (no accumulation)")
def test_rillet_parse_only(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "rillet"  # benches/conftest.py prints the ratios
    assert len(benchmark(rillet_chunks, READS)) == 2005


@pytest.mark.benchmark(group="parse 2,005 chunks (no accumulation)")
def test_openai_sdk_parse_only(benchmark: Any) -> None:
    pytest.importorskip("openai")
    benchmark.extra_info["impl"] = "openai sdk"  # benches/conftest.py prints the ratios
    assert len(benchmark(lambda r: list(openai_chunks(r)), READS)) == 2005
