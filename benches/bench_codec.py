"""Checkpoint codec against its peers on one realistic checkpoint, in one run.

The checkpoint: 1,000 chat messages as plain dicts (role, content with CJK and emoji,
0-2 tool calls with JSON-string arguments, usage, extra) plus session values. Every library
encodes and decodes the same object; each benchmark is one encode + decode round trip, and
`extra_info["bytes"]` records the encoded size. A second group round-trips the same conversation
as each framework keeps it: rillet `Message` objects through rillet's codec, LangChain messages
through LangGraph's serializer. Reproduce with:

    .venv/bin/python -m pytest benches/bench_codec.py --benchmark-only

docs/benchmarks.md ("Checkpoint codec") has the medians and ratios of a run.
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Callable
from typing import Any

import msgpack
import msgspec
import ormsgpack
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from rillet import FunctionCall, Message, ResponseMeta, ToolCall, Usage, codec

WORDS = (
    "the agent calls a tool and reads the result before it answers 检索 结果 🎉 ✓ "
    "weather forecast invoice refund order status shipping delay apology"
).split()


def _message(rng: random.Random, i: int) -> dict[str, Any]:
    role = ("user", "assistant", "tool")[i % 3]
    content = " ".join(rng.choice(WORDS) for _ in range(60))
    tool_calls = [
        {
            "id": f"call_{i}_{k}",
            "type": "function",
            "function": {
                "name": rng.choice(["search", "lookup_order", "send_email"]),
                "arguments": f'{{"query": "{rng.choice(WORDS)}", "limit": {rng.randint(1, 50)}}}',
            },
        }
        for k in range(rng.randint(0, 2) if role == "assistant" else 0)
    ]
    return {
        "id": f"msg_{i:06d}",
        "role": role,
        "content": content,
        "tool_calls": tool_calls,
        "usage": {
            "input_tokens": rng.randint(10, 4000),
            "output_tokens": rng.randint(1, 800),
            "cost": rng.random() / 100,
        },
        "extra": {"model": "gpt-x-mini", "latency_s": rng.random() * 3, "cached": rng.random() < 0.3, "trace": None},
    }


def checkpoint(n_messages: int = 1000) -> dict[str, Any]:
    rng = random.Random(42)
    return {
        "version": 1,
        "thread_id": "thread-7f3c",
        "step": n_messages,
        "messages": [_message(rng, i) for i in range(n_messages)],
        "session_values": {
            "cart": {"items": [{"sku": f"SKU-{k}", "qty": k % 3 + 1, "price": 9.99 + k} for k in range(20)]},
            "user": {"name": "Ada", "locale": "en-GB", "flags": ["beta", "pro"]},
            "counters": {f"tool_{k}": k * 7 for k in range(20)},
        },
    }


_jsonplus = JsonPlusSerializer()
_msgspec_enc, _msgspec_dec = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()

# name -> (encode, decode)
PEERS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "rillet": (codec.encode, codec.decode),
    "pickle5": (lambda o: pickle.dumps(o, protocol=5), pickle.loads),
    "msgpack": (msgpack.packb, msgpack.unpackb),
    "ormsgpack": (ormsgpack.packb, ormsgpack.unpackb),
    "msgspec": (_msgspec_enc.encode, _msgspec_dec.decode),
    "jsonplus": (_jsonplus.dumps_typed, _jsonplus.loads_typed),
}

STATE = checkpoint()


def _size(encoded: Any) -> int:
    return len(encoded[1]) if isinstance(encoded, tuple) else len(encoded)


@pytest.mark.parametrize("name", list(PEERS))
def test_roundtrip(benchmark: Any, name: str) -> None:
    enc, dec = PEERS[name]
    encoded = enc(STATE)
    assert dec(encoded) == STATE
    benchmark.extra_info["bytes"] = _size(encoded)
    benchmark.group = "codec round trip (encode + decode)"
    benchmark(lambda: dec(enc(STATE)))


def _rillet_message(m: dict[str, Any]) -> Message:
    calls = [
        ToolCall(id=t["id"], function=FunctionCall(t["function"]["name"], t["function"]["arguments"]))
        for t in m["tool_calls"]
    ]
    usage = Usage(m["usage"]["input_tokens"], m["usage"]["output_tokens"], 0, 0, 0)
    return Message(
        role=m["role"],
        content=m["content"],
        tool_calls=calls,
        tool_call_id="call_0" if m["role"] == "tool" else "",
        response_meta=ResponseMeta("stop", usage),
        extra=m["extra"],
    )


def _langchain_message(m: dict[str, Any]) -> Any:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    if m["role"] == "user":
        return HumanMessage(content=m["content"], id=m["id"])
    if m["role"] == "tool":
        return ToolMessage(content=m["content"], id=m["id"], tool_call_id="call_0")
    calls = [{"id": t["id"], "name": t["function"]["name"], "args": {"query": "x"}} for t in m["tool_calls"]]
    usage = {
        "input_tokens": m["usage"]["input_tokens"],
        "output_tokens": m["usage"]["output_tokens"],
        "total_tokens": 0,
    }
    return AIMessage(
        content=m["content"], id=m["id"], tool_calls=calls, usage_metadata=usage, response_metadata=m["extra"]
    )


# The same conversation as each framework's checkpoint holds it: rillet Messages through
# rillet's codec, LangChain messages through LangGraph's serializer.
# Built when used, so that importing this module (as codec_callgrind.py does) leaves the
# same heap for every other benchmark.
NATIVE: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[dict[str, Any]], Any]]] = {
    "rillet Messages": (codec.encode, codec.decode, _rillet_message),
    "jsonplus langchain messages": (_jsonplus.dumps_typed, _jsonplus.loads_typed, _langchain_message),
}


@pytest.mark.parametrize("name", list(NATIVE))
def test_roundtrip_native_messages(benchmark: Any, name: str) -> None:
    enc, dec, convert = NATIVE[name]
    state = {**STATE, "messages": [convert(m) for m in STATE["messages"]]}
    assert dec(enc(state))["messages"][4] == state["messages"][4]
    benchmark.extra_info["bytes"] = _size(enc(state))
    benchmark.group = "round trip of each framework's own message types"
    benchmark(lambda: dec(enc(state)))


@pytest.mark.parametrize("name", list(PEERS))
def test_encode(benchmark: Any, name: str) -> None:
    benchmark.group = "codec encode"
    benchmark(PEERS[name][0], STATE)


@pytest.mark.parametrize("name", list(PEERS))
def test_decode(benchmark: Any, name: str) -> None:
    enc, dec = PEERS[name]
    benchmark.group = "codec decode"
    benchmark(dec, enc(STATE))
