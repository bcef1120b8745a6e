"""Publishing a run's events to a Redis stream: rillet's RedisStreamSink against a plain redis-py
XADD loop of pickled dicts, in one run, on one redis-server started here on loopback.

The run: 2,000 events of a ReAct loop (an assistant message with one tool call, usage and
finish reason, then the tool's result, a paragraph), agent name and run path set. Each side
sends the same content, each the way it would be written:

* **rillet**: ``RedisStreamSink.drain(events, run_id=...)`` over the AgentEvents of a run's event
  iterator (what ``runner.run`` returns): rillet.codec entries, the events already waiting
  sent in one XADD script call and acknowledged before they are handed on, its end entry.
* **rillet acknowledged=False**: the same, each event handed on at once and sent behind it.
* **redis-py loop**: the events as dicts (agent, run path, role, content, tool calls, usage),
  ``client.xadd(key, {"d": pickle.dumps(d)})`` one after another (sync redis-py).
* **redis-py pipeline**: the same XADDs in one pipeline per round, for reference: what the
  loop costs is round trips, and a pipeline is the usual fix (it cannot give a live run's
  events one by one as they happen, which the sink does).

Every round writes a new stream and the previous one is deleted in the setup, outside the
timing. ``extra_info`` has the events per round, so conftest prints µs per event.

Run: .venv/bin/python -m pytest benches/bench_redis_streams.py --benchmark-only \
         --benchmark-columns=median,mean,ops,rounds --benchmark-group-by=group
"""

from __future__ import annotations

import asyncio
import pickle
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rillet import AgentEvent, FunctionCall, Message, ResponseMeta, RunStep, ToolCall, Usage, event_from_message
from rillet.data.event_pair import EventIterator, new_event_pair

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
redis = pytest.importorskip("redis", reason="redis-py is not installed (the bench extra has it)")
from support.servers import start_redis  # noqa: E402  # tests/support/servers.py, found through the path above

EVENTS = 2_000
AGENT = "assistant"
PARAGRAPH = (
    "Flight TP 1351 departs 07:05, arrives 08:50; economy, refundable, one checked bag, "
    "change fee none, fare 129.40 EUR total including taxes. "
) * 3


def events() -> list[AgentEvent]:
    path = (RunStep(AGENT),)
    out = []
    for i in range(EVENTS // 2):
        call = ToolCall(index=0, id=f"call_{i}", function=FunctionCall("search_flights", f'{{"day": {i % 7}}}'))
        meta = ResponseMeta(finish_reason="tool_calls", usage=Usage(1200 + i, 40, 1240 + i))
        ask = Message.assistant(f"Looking up day {i % 7}.", [call])
        ask.response_meta = meta
        for msg, role, tool in (
            (ask, "assistant", ""),
            (Message.tool_message(PARAGRAPH, f"call_{i}", "search_flights"), "tool", "search_flights"),
        ):
            ev = event_from_message(msg, role=role, tool_name=tool)  # type: ignore[arg-type]
            ev.agent_name, ev.run_path = AGENT, path
            out.append(ev)
    return out


def as_dict(ev: AgentEvent) -> dict[str, Any]:
    mv = ev.message_output
    assert mv is not None and mv.message is not None
    msg = mv.message
    meta = msg.response_meta
    return {
        "agent": ev.agent_name,
        "run_path": [s.agent_name for s in ev.run_path],
        "role": msg.role,
        "content": msg.content,
        "tool_call_id": msg.tool_call_id,
        "tool_calls": [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in msg.tool_calls
        ],
        "usage": None if meta is None or meta.usage is None else meta.usage.total_tokens,
    }


def run_events(items: list[AgentEvent]) -> EventIterator[AgentEvent]:
    """``items`` as a finished run's event iterator gives them (what ``runner.run`` returns)."""
    events, gen = new_event_pair()
    for ev in items:
        gen.send(ev)
    gen.close()
    return events


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    try:
        server = start_redis()
    except (RuntimeError, OSError) as e:
        pytest.skip(f"no redis-server: {e}")
    yield server.url
    server.stop()


def _measure(benchmark: Any, impl: str, url: str) -> None:
    from rillet.redis import RedisStreamSink

    client = redis.Redis.from_url(url)
    loop = asyncio.new_event_loop()
    sink = RedisStreamSink(url, maxlen=None, acknowledged=impl != "rillet acknowledged=False")
    keys: list[str] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        if keys:
            client.delete(keys.pop())
        run_id = uuid.uuid4().hex
        keys.append(sink.key(run_id))
        items = events()
        return (run_id, run_events(items) if impl.startswith("rillet") else [as_dict(ev) for ev in items]), {}

    def rillet(run_id: str, items: EventIterator[AgentEvent]) -> None:
        assert loop.run_until_complete(sink.drain(items, run_id=run_id)) == EVENTS

    def loop_xadd(run_id: str, items: list[dict[str, Any]]) -> None:
        key = sink.key(run_id)
        for d in items:
            client.xadd(key, {"d": pickle.dumps(d)})

    def pipeline_xadd(run_id: str, items: list[dict[str, Any]]) -> None:
        key = sink.key(run_id)
        with client.pipeline(transaction=False) as pipe:
            for d in items:
                pipe.xadd(key, {"d": pickle.dumps(d)})
            pipe.execute()

    run = {
        "rillet": rillet,
        "rillet acknowledged=False": rillet,
        "redis-py loop": loop_xadd,
        "redis-py pipeline": pipeline_xadd,
    }[impl]
    benchmark.group = "publish 2,000 events to a Redis stream"
    benchmark.extra_info.update({"impl": impl, "per": EVENTS, "unit": "event", "series": "events", "size": EVENTS})
    try:
        benchmark.pedantic(run, setup=setup, rounds=15, warmup_rounds=2)
        assert client.xlen(keys[-1]) == EVENTS + (1 if impl.startswith("rillet") else 0)  # + the end entry
    finally:
        loop.run_until_complete(sink.aclose())
        loop.close()
        client.delete(*keys)
        client.close()


@pytest.mark.parametrize("impl", ["rillet", "rillet acknowledged=False", "redis-py loop", "redis-py pipeline"])
def test_publish(benchmark: Any, url: str, impl: str) -> None:
    _measure(benchmark, impl, url)
