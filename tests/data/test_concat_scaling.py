"""Concatenating tool-call chunks costs time linear in the number of calls: each delta finds
its call by index (a linear search once made 32,000 calls take 215 times as long as 4,000)."""

from __future__ import annotations

import time

import pytest
from rillet import FunctionCall, Message, ToolCall, concat_messages


def _chunks(n: int) -> list[Message]:
    """A response streaming n tool calls: a head delta per call, then its argument deltas."""
    heads = [
        Message("assistant", tool_calls=[ToolCall(index=i, id=f"call_{i}", function=FunctionCall("f", ""))])
        for i in range(n)
    ]
    args = [Message("assistant", tool_calls=[ToolCall(index=i, function=FunctionCall("", "{}"))]) for i in range(n)]
    # One chunk carrying every call's delta too: merging within a chunk must be linear as well.
    return [*heads, *args, Message("assistant", tool_calls=[ToolCall(index=i) for i in range(n)])]


def _seconds(responses: list[list[Message]]) -> float:
    """The least time, over a few repetitions, to concatenate every response."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        outs = [concat_messages(chunks) for chunks in responses]
        best = min(best, time.perf_counter() - start)
    for out in outs:
        assert [c.index for c in out.tool_calls] == list(range(len(out.tool_calls)))
        assert out.tool_calls[-1].function.arguments == "{}"
    return best


@pytest.mark.slow
def test_32000_tool_calls_concatenate_in_linear_time() -> None:
    # Sixteen responses of 2,000 calls hold as many objects as one of 32,000, so caches
    # treat both alike: linear work takes about as long, quadratic work 16 times as long.
    small, large = [_chunks(2_000) for _ in range(16)], [_chunks(32_000)]
    ratio = _seconds(large) / _seconds(small)
    assert ratio < 5, f"one response of 32,000 calls took {ratio:.1f}x the time of 16 of 2,000"
