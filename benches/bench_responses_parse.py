"""Reading a streamed OpenAI Responses API answer: bytes in, one assistant message out.

The workload is a recorded-shape Responses stream held in memory (built below,
deterministic): ``response.created``, a reasoning item with 100 summary deltas, a message
item with 1,800 text deltas, two function calls (``output_item.added`` then 100 argument
deltas each), every item's ``.done`` events, and ``response.completed`` carrying the whole
output and usage, as OpenAI sends it: about 2,100 events and 2,000 tokens. Both sides get
the same bytes, cut into the same 4 KiB reads.

* rillet: ``ResponsesStreamParser.feed`` per read (SSE + JSON + chunk shaping in Rust), then
  ``concat_messages`` over the chunks.
* openai SDK: its own ``SSEDecoder.iter_bytes``, ``json`` per event and ``construct_type``
  into ``ResponseStreamEvent`` (what ``Stream`` does with a non-strict client), then
  ``ResponseStreamState.handle_event`` per event (the accumulator behind
  ``client.responses.stream``), read back from the final ``response.completed``.
* python dicts: the SDK's SSE decoder and ``json.loads``, accumulating text and arguments by
  hand over plain dicts (no model objects): the leanest Python loop.

Run: .venv/bin/python -m pytest benches/bench_responses_parse.py --benchmark-only \
         --benchmark-columns=median,mean,rounds
(benches/conftest.py prints the ratio after the table.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from rillet import concat_messages
from rillet.models.responses import ResponsesStreamParser

TEXT_DELTAS = 1800
SUMMARY_DELTAS = 100
ARG_DELTAS = 100
READ_SIZE = 4096
WORDS = ["the", " rain", " in", " Lisbon", " falls", " softly,", " ça", " va", " 日本", "—", " ok", "\n"]
CALLS = [("call_Wx1Lisbon", "fc_68af01", "get_weather"), ("call_Wx2Search", "fc_68af02", "search_web")]


def recorded_stream() -> bytes:
    seq = iter(range(1 << 20))

    def event(kind: str, **fields: Any) -> bytes:
        obj = {"type": kind, "sequence_number": next(seq), **fields}
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return f"event: {kind}\ndata: {data}\n\n".encode()

    def response(status: str, output: list[Any], usage: Any = None) -> dict[str, Any]:
        return {
            "id": "resp_68af",
            "object": "response",
            "created_at": 1764550000,
            "status": status,
            "model": "gpt-5-mini-2025-08-07",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage,
        }

    summary = "".join(WORDS[i % len(WORDS)] for i in range(SUMMARY_DELTAS))
    text = "".join(WORDS[i % len(WORDS)] for i in range(TEXT_DELTAS))
    args = "{" + "".join(f'"k{j}":{j},' for j in range(ARG_DELTAS)) + "}"
    reasoning = {"id": "rs_68af", "type": "reasoning", "summary": [{"type": "summary_text", "text": summary}]}
    message = {
        "id": "msg_68af",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}],
    }
    calls = [
        {"id": fc, "type": "function_call", "status": "completed", "arguments": args, "call_id": call, "name": name}
        for call, fc, name in CALLS
    ]
    out = [event("response.created", response=response("in_progress", []))]
    out.append(event("response.output_item.added", output_index=0, item={**reasoning, "summary": []}))
    part: dict[str, Any] = {"type": "summary_text", "text": ""}
    out.append(
        event("response.reasoning_summary_part.added", item_id="rs_68af", output_index=0, summary_index=0, part=part)
    )
    for i in range(SUMMARY_DELTAS):
        delta = WORDS[i % len(WORDS)]
        out.append(
            event(
                "response.reasoning_summary_text.delta", item_id="rs_68af", output_index=0, summary_index=0, delta=delta
            )
        )
    done = {"type": "summary_text", "text": summary}
    out.append(
        event("response.reasoning_summary_part.done", item_id="rs_68af", output_index=0, summary_index=0, part=done)
    )
    out.append(event("response.output_item.done", output_index=0, item=reasoning))
    out.append(event("response.output_item.added", output_index=1, item={**message, "content": []}))
    text_part: dict[str, Any] = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    out.append(
        event("response.content_part.added", item_id="msg_68af", output_index=1, content_index=0, part=text_part)
    )
    for i in range(TEXT_DELTAS):
        delta = WORDS[i % len(WORDS)]
        out.append(
            event(
                "response.output_text.delta",
                item_id="msg_68af",
                output_index=1,
                content_index=0,
                delta=delta,
                logprobs=[],
            )
        )
    ids = {"item_id": "msg_68af", "output_index": 1, "content_index": 0}
    out.append(event("response.output_text.done", **ids, text=text, logprobs=[]))
    out.append(event("response.content_part.done", **ids, part=message["content"][0]))
    out.append(event("response.output_item.done", output_index=1, item=message))
    for at, call in enumerate(calls, start=2):
        out.append(event("response.output_item.added", output_index=at, item={**call, "arguments": ""}))
        pieces = ["{", *(f'"k{j}":{j},' for j in range(ARG_DELTAS - 1)), f'"k{ARG_DELTAS - 1}":{ARG_DELTAS - 1},}}']
        for piece in pieces:
            out.append(
                event("response.function_call_arguments.delta", item_id=call["id"], output_index=at, delta=piece)
            )
        out.append(event("response.function_call_arguments.done", item_id=call["id"], output_index=at, arguments=args))
        out.append(event("response.output_item.done", output_index=at, item=call))
    usage = {
        "input_tokens": 812,
        "input_tokens_details": {"cached_tokens": 512},
        "output_tokens": 2102,
        "output_tokens_details": {"reasoning_tokens": 100},
        "total_tokens": 2914,
    }
    out.append(event("response.completed", response=response("completed", [reasoning, message, *calls], usage)))
    return b"".join(out)


DATA = recorded_stream()
READS = [DATA[i : i + READ_SIZE] for i in range(0, len(DATA), READ_SIZE)]
EXPECTED_CONTENT = "".join(WORDS[i % len(WORDS)] for i in range(TEXT_DELTAS))
EXPECTED_ARGS = "{" + "".join(f'"k{j}":{j},' for j in range(ARG_DELTAS)) + "}"


def rillet_read(reads: list[bytes]) -> Any:
    parser = ResponsesStreamParser()
    chunks = []
    for data in reads:
        chunks += parser.feed(data)
    return concat_messages(chunks + parser.finish())


def openai_events(reads: list[bytes]) -> Iterator[Any]:
    """The SDK's reading of a stream: its SSE decoder, json, and construct_type into
    ResponseStreamEvent, as ``Stream`` does for a client without strict validation."""
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai.types.responses import ResponseStreamEvent

    for sse in SSEDecoder().iter_bytes(iter(reads)):
        yield construct_type(type_=ResponseStreamEvent, value=sse.json())


def openai_read(reads: list[bytes]) -> Any:
    from openai import omit
    from openai.lib.streaming.responses import ResponseStreamState

    state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
    final = None
    for event in openai_events(reads):
        for out in state.handle_event(event):
            if out.type == "response.completed":
                final = out.response
    return final


def dicts_read_by_hand(reads: list[bytes]) -> tuple[str, list[str], Any]:
    from openai._streaming import SSEDecoder

    text: list[str] = []
    args: dict[int, list[str]] = {}
    usage = None
    for sse in SSEDecoder().iter_bytes(iter(reads)):
        event = json.loads(sse.data)
        kind = event["type"]
        if kind == "response.output_text.delta":
            text.append(event["delta"])
        elif kind == "response.function_call_arguments.delta":
            args.setdefault(event["output_index"], []).append(event["delta"])
        elif kind == "response.completed":
            usage = event["response"]["usage"]
    return "".join(text), ["".join(args[i]) for i in sorted(args)], usage


def test_rillet_and_sdk_read_the_same_answer() -> None:
    pytest.importorskip("openai")
    ours = rillet_read(READS)
    theirs = openai_read(READS)
    assert ours.content == theirs.output_text == EXPECTED_CONTENT
    sdk_calls = [(o.call_id, o.name, o.arguments) for o in theirs.output if o.type == "function_call"]
    assert sdk_calls == [(c.id, c.function.name, c.function.arguments) for c in ours.tool_calls]
    assert ours.tool_calls[1].function.arguments == EXPECTED_ARGS
    assert ours.reasoning_content == theirs.output[0].summary[0].text
    assert ours.response_meta.usage.total_tokens == theirs.usage.total_tokens == 2914
    assert dicts_read_by_hand(READS)[:2] == (EXPECTED_CONTENT, [EXPECTED_ARGS, EXPECTED_ARGS])


@pytest.mark.benchmark(group="read a 2,000-token Responses stream")
def test_rillet_responses_parse_and_concat(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "rillet"  # benches/conftest.py prints the ratios
    assert benchmark(rillet_read, READS).content == EXPECTED_CONTENT


@pytest.mark.benchmark(group="read a 2,000-token Responses stream")
def test_openai_sdk_responses_stream_state(benchmark: Any) -> None:
    pytest.importorskip("openai")
    benchmark.extra_info["impl"] = "openai sdk"  # benches/conftest.py prints the ratios
    assert benchmark(openai_read, READS).output_text == EXPECTED_CONTENT


@pytest.mark.benchmark(group="read a 2,000-token Responses stream")
def test_python_dicts_by_hand(benchmark: Any) -> None:
    pytest.importorskip("openai")
    benchmark.extra_info["impl"] = "python dicts"  # benches/conftest.py prints the ratios
    assert benchmark(dicts_read_by_hand, READS)[0] == EXPECTED_CONTENT
