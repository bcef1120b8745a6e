"""The pure-Python baseline in benches/ must implement the same rules as rillet, or the
benchmark ratio would compare different work."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import rillet

sys.path.insert(0, str(Path(__file__).parents[2] / "benches"))
from reference_concat import PyTee, ReferenceConcatError, reference_concat

CHUNKS: list[dict[str, Any]] = [
    {"role": "assistant", "content": "Hel"},
    {"content": "lo", "reasoning_content": "r1"},
    {"tool_calls": [{"index": 1, "id": "b", "type": "function", "function": {"name": "g", "arguments": "{"}}]},
    {"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": "["}}]},
    {"tool_calls": [{"index": 1, "function": {"arguments": "}"}}, {"index": 0, "function": {"arguments": "]"}}]},
    {"tool_calls": [{"id": "raw", "type": "function", "function": {"name": "h", "arguments": "x"}}]},
    {"extra": {"s": "a", "d": {"k": "1"}}},
    {"extra": {"s": "b", "d": {"k": "2"}, "n": 3}},
    {"response_meta": {"finish_reason": "", "usage": {"prompt_tokens": 5, "total_tokens": 5}}},
    {
        "response_meta": {
            "finish_reason": "tool_calls",
            "usage": {"prompt_tokens": 4, "completion_tokens": 7, "total_tokens": 11},
        }
    },
]


@pytest.mark.parametrize("usage", ["max", "sum", "last"])
def test_reference_and_rillet_agree(usage: str) -> None:
    ref = reference_concat(CHUNKS, usage=usage)
    out = rillet.concat_messages(CHUNKS, usage=usage).to_dict()  # type: ignore[arg-type]
    assert out["role"] == ref["role"] and out["content"] == ref["content"]
    assert out["reasoning_content"] == ref["reasoning_content"]
    assert [(t.get("index"), t["id"], t["function"]) for t in out["tool_calls"]] == [
        (t.get("index"), t["id"], t["function"]) for t in ref["tool_calls"]
    ]
    assert out["extra"] == ref["extra"]
    usage_out = out["response_meta"]["usage"]
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        assert usage_out[key] == ref["response_meta"]["usage"][key]
    assert out["response_meta"]["finish_reason"] == ref["response_meta"]["finish_reason"]


@pytest.mark.parametrize(
    "bad",
    [
        [{"role": "user"}, {"role": "assistant"}],
        [
            {"tool_calls": [{"index": 0, "id": "a", "function": {}}]},
            {"tool_calls": [{"index": 0, "id": "b", "function": {}}]},
        ],
        [{"extra": {"k": 1}}, {"extra": {"k": "x"}}],
        [{"content": "a"}, None],
    ],
)
def test_both_reject_the_same_conflicts(bad: list[Any]) -> None:
    with pytest.raises(ReferenceConcatError):
        reference_concat(bad)
    with pytest.raises(rillet.ConcatError):
        rillet.concat_messages(bad)


def test_python_tee_gives_every_child_every_item() -> None:
    tee = PyTee(iter(range(500)), 2)
    a, b = tee.child(0), tee.child(1)
    assert list(a) == list(range(500)) and list(b) == list(range(500))
