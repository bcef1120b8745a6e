"""Message-chunk concatenation and stream fan-out, side by side with their peers.

The workload is a realistic model answer: 1,203 chunks = a role chunk, 1,000 text deltas,
2 tool calls (a header delta with id and name, then 100 argument deltas each) and a final
chunk with finish_reason and usage. Peers: a careful pure-Python implementation of the same
rules (benches/reference_concat.py) and langchain-core's AIMessageChunk summation.

Run: .venv/bin/python -m pytest benches/bench_concat.py --benchmark-only \
         --benchmark-columns=median,mean,rounds --benchmark-group-by=group
"""

from __future__ import annotations

import sys
from collections import deque
from functools import reduce
from operator import add
from pathlib import Path
from typing import Any

import pytest
import rillet
from rillet import FunctionCall, Message, ResponseMeta, ToolCall, Usage

sys.path.insert(0, str(Path(__file__).parent))
from reference_concat import PyTee, reference_concat

TEXT_DELTAS = 1000
ARG_DELTAS = 100


def dict_chunks() -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    chunks += [{"content": f"tok{i} "} for i in range(TEXT_DELTAS)]
    for index, (call_id, name) in enumerate([("call_a", "get_weather"), ("call_b", "search_web")]):
        fn = {"name": name, "arguments": ""}
        chunks.append({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": fn}]})
        chunks += [
            {"tool_calls": [{"index": index, "function": {"arguments": f'"k{j}":{j},'}}]} for j in range(ARG_DELTAS)
        ]
    usage = {
        "prompt_tokens": 812,
        "completion_tokens": 1203,
        "total_tokens": 2015,
        "cached_tokens": 512,
        "reasoning_tokens": 0,
    }
    chunks.append({"response_meta": {"finish_reason": "tool_calls", "usage": usage}})
    return chunks


def message_chunks(dicts: list[dict[str, Any]]) -> list[Message]:
    out = []
    for d in dicts:
        calls = [
            ToolCall(
                index=tc["index"],
                id=tc.get("id", ""),
                type=tc.get("type", ""),
                function=FunctionCall(tc["function"].get("name", ""), tc["function"]["arguments"]),
            )
            for tc in d.get("tool_calls", ())
        ]
        meta = d.get("response_meta")
        out.append(
            Message(
                role=d.get("role", ""),
                content=d.get("content", ""),
                tool_calls=calls,
                response_meta=ResponseMeta(meta["finish_reason"], Usage(**meta["usage"])) if meta else None,
            )
        )
    return out


def langchain_chunks(dicts: list[dict[str, Any]]) -> list[Any]:
    from langchain_core.messages import AIMessageChunk

    out = []
    for d in dicts:
        kwargs: dict[str, Any] = {"content": d.get("content", "")}
        if "tool_calls" in d:
            tc = d["tool_calls"][0]
            kwargs["tool_call_chunks"] = [
                {
                    "name": tc["function"].get("name"),
                    "args": tc["function"]["arguments"],
                    "id": tc.get("id"),
                    "index": tc["index"],
                    "type": "tool_call_chunk",
                }
            ]
        if "response_meta" in d:
            u = d["response_meta"]["usage"]
            kwargs["usage_metadata"] = {
                "input_tokens": u["prompt_tokens"],
                "output_tokens": u["completion_tokens"],
                "total_tokens": u["total_tokens"],
            }
            kwargs["response_metadata"] = {"finish_reason": d["response_meta"]["finish_reason"]}
        out.append(AIMessageChunk(**kwargs))
    return out


DICTS = dict_chunks()
MESSAGES = message_chunks(DICTS)
EXPECTED_CONTENT = "".join(f"tok{i} " for i in range(TEXT_DELTAS))


def check(content: str, args0: str) -> None:
    assert content == EXPECTED_CONTENT
    assert args0 == "".join(f'"k{j}":{j},' for j in range(ARG_DELTAS))


# --- concatenation of 1,203 chunks -------------------------------------------------------


@pytest.mark.benchmark(group="concat 1203 chunks")
def test_rillet_concat_messages(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "rillet"  # benches/conftest.py prints the ratios
    out = benchmark(rillet.concat_messages, MESSAGES)
    check(out.content, out.tool_calls[0].function.arguments)


@pytest.mark.benchmark(group="concat 1203 chunks")
def test_rillet_concat_dict_chunks(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "rillet dicts"  # benches/conftest.py prints the ratios
    out = benchmark(rillet.concat_messages, DICTS)
    check(out.content, out.tool_calls[0].function.arguments)


@pytest.mark.benchmark(group="concat 1203 chunks")
def test_python_reference_concat(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "python reference"  # benches/conftest.py prints the ratios
    out = benchmark(reference_concat, DICTS)
    check(out["content"], out["tool_calls"][0]["function"]["arguments"])


@pytest.mark.benchmark(group="concat 1203 chunks")
def test_langchain_add_ai_message_chunks(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "langchain add"  # benches/conftest.py prints the ratios
    from langchain_core.messages.ai import add_ai_message_chunks

    chunks = langchain_chunks(DICTS)
    out = benchmark(lambda: add_ai_message_chunks(chunks[0], *chunks[1:]))
    check(out.content, out.tool_call_chunks[0]["args"])


@pytest.mark.benchmark(group="concat 1203 chunks")
def test_langchain_pairwise_sum(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "langchain a+b"  # benches/conftest.py prints the ratios
    chunks = langchain_chunks(DICTS)
    out = benchmark.pedantic(lambda: reduce(add, chunks), rounds=5, iterations=1)
    check(out.content, out.tool_call_chunks[0]["args"])


# --- a stream fanned out to two consumers: one reads, one concatenates -------------------


def rillet_copy2_concat() -> tuple[int, Message]:
    reader, writer = rillet.pipe()
    for chunk in MESSAGES:
        writer.send(chunk)
    writer.close()
    user_view, agent_view = reader.copy(2)
    seen = sum(1 for _ in user_view)
    return seen, rillet.concat_message_stream(agent_view)


def python_tee2_concat() -> tuple[int, dict[str, Any]]:
    source: deque[dict[str, Any]] = deque()
    for chunk in DICTS:
        source.append(chunk)
    tee = PyTee(iter(source), 2)
    seen = sum(1 for _ in tee.child(0))
    return seen, reference_concat(tee.child(1))


@pytest.mark.benchmark(group="copy(2) + concat of a 1203-chunk stream")
def test_rillet_copy2_concat(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "rillet"  # benches/conftest.py prints the ratios
    seen, out = benchmark(rillet_copy2_concat)
    assert seen == len(MESSAGES)
    check(out.content, out.tool_calls[0].function.arguments)


@pytest.mark.benchmark(group="copy(2) + concat of a 1203-chunk stream")
def test_python_tee2_concat(benchmark: Any) -> None:
    benchmark.extra_info["impl"] = "python tee"  # benches/conftest.py prints the ratios
    seen, out = benchmark(python_tee2_concat)
    assert seen == len(DICTS)
    check(out["content"], out["tool_calls"][0]["function"]["arguments"])
