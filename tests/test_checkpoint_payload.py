"""The checkpoint payload: what a saved run restores, for every payload version ever written."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from payload_scenarios import (
    INFO,
    ROOT,
    VALUES,
    agent_tool_runner,
    events_session,
    kinds_of_events,
    paid,
    parallel_runner,
    signal,
)

from rillet import AgentEvent, Message
from rillet.agent import StateDelta
from rillet.checkpoint.payload import RecordedError, dump, load

GOLDEN = Path(__file__).parent / "golden"


def golden(name: str) -> list[Any]:
    files = sorted(GOLDEN.glob(f"payload_v*/{name}.bin"))
    assert files, f"no golden {name}.bin: run tests/golden/make_payload_golden.py"
    return [pytest.param(f.read_bytes(), id=f.parent.name) for f in files]


def chunks(ev: AgentEvent) -> list[Message]:
    mv = ev.message_output
    assert mv is not None and mv.message_stream is not None
    return list(mv.message_stream)


def describe(ev: AgentEvent) -> tuple[Any, ...]:
    """What a checkpoint keeps of an event, comparable with ==; reads streams."""
    out: Any = None
    if ev.output is not None:
        mv = ev.output.message_output
        variant = None if mv is None else (mv.is_streaming, mv.get_message(), mv.role, mv.tool_name)
        out = (variant, ev.output.customized_output)
    act: Any = None
    if ev.action is not None:
        a = ev.action
        brk = a.break_loop
        act = (
            a.exit,
            a.transfer_to_agent.dest_agent_name if a.transfer_to_agent else None,
            (brk.from_agent, brk.done, brk.current_iterations) if brk else None,
            type(a.customized_action).__name__,
            a.customized_action,
        )
    err = None if ev.error is None else (getattr(ev.error, "type_name", type(ev.error).__name__), str(getattr(ev.error, "message", ev.error)))
    return (ev.agent_name, [s.agent_name for s in ev.run_path], out, act, err)


def check_kinds_of_events(events: list[AgentEvent]) -> None:
    want = [describe(ev) for ev in kinds_of_events()]
    assert [type(ev.error) for ev in events if ev.error is not None] == [RecordedError, RecordedError]
    for i in (2, 3):  # streamed events come back as one-chunk streams, unread
        mv = events[i].message_output
        assert mv is not None and mv.is_streaming and mv.message is None
        assert chunks(events[i]) == [Message.assistant(["Lisbon", "read before"][i - 2])]
        mv.message_stream = None
        mv.message = Message.assistant(["Lisbon", "read before"][i - 2])
    assert [describe(ev) for ev in events] == want


@pytest.mark.parametrize("data", golden("events"))
def test_a_saved_session_restores_every_kind_of_event(data: bytes) -> None:
    loaded = load(data, "golden")
    check_kinds_of_events(loaded.session.events)
    assert loaded.session.values == VALUES
    assert len(loaded.session.stamps) == len(loaded.session.events)
    assert list(loaded.root_input.messages) == list(ROOT.messages) and loaded.root_input.enable_streaming
    assert loaded.addresses == {"root-1": ("agent:trip",), "child-1": ("agent:trip", "tool:pay:c9")}
    assert loaded.states == {"root-1": None, "child-1": {"amount": 9}}
    assert loaded.info == INFO


def test_dump_then_load_restores_every_kind_of_event() -> None:
    data = asyncio.run(dump(ROOT, events_session(), signal(), INFO))
    check_kinds_of_events(load(data, "fresh").session.events)


def test_a_state_delta_comes_back_as_a_state_delta() -> None:
    data = asyncio.run(dump(ROOT, events_session(), signal(), INFO))
    (delta,) = [ev.action.customized_action for ev in load(data, "x").session.events if ev.action and isinstance(ev.action.customized_action, StateDelta)]
    assert delta == {"budget": 900}


def resume_golden(runner: Any, data: bytes) -> list[AgentEvent]:
    runner.checkpoint_store.set("golden", data)
    targets = {i: "approve" for i in load(data, "golden").addresses}
    return list(runner.resume("golden", targets=targets))


def texts(events: list[AgentEvent]) -> list[str]:
    return [e.message_output.get_message().content for e in events if e.message_output is not None]


@pytest.mark.parametrize("data", golden("parallel"))
def test_a_saved_parallel_run_resumes_and_joins_the_saved_lanes(data: bytes) -> None:
    runner, after = parallel_runner(resumed=True)
    paid.clear()
    assert texts(resume_golden(runner, data)) == ["paid 1", "approved", "merged"]
    assert paid == [1]
    seen = [m.content for m in after.model.calls[0].messages]  # type: ignore[attr-defined]
    assert "For context: [x] said: from x." in seen and "For context: [y] said: approved." in seen


@pytest.mark.parametrize("data", golden("agent_tool"))
def test_a_saved_agent_tool_run_resumes_with_its_inner_events(data: bytes) -> None:
    paid.clear()
    assert texts(resume_golden(agent_tool_runner(resumed=True), data)) == ["inner done", "all done"]
    assert paid == [9]
