"""The checkpoint payload: what a saved run restores, for every payload version ever written."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from rillet import (
    AgentAction,
    AgentEvent,
    AgentInput,
    BaseAgent,
    DecodeError,
    Message,
    RunStep,
    codec,
    event_from_message,
)
from rillet._native import stream_from_list
from rillet.checkpoint.payload import PAYLOAD_VERSION, RecordedError, dump, events_to_records, load, records_to_events
from rillet.data.events import AgentOutput, MessageVariant
from rillet.run.agent import StateDelta
from rillet.run.context import Session
from support.payload_scenarios import (
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

GOLDEN = Path(__file__).resolve().parents[1] / "support" / "golden"


def golden(name: str) -> list[Any]:
    files = sorted(GOLDEN.glob(f"payload_v*/{name}.bin"))
    assert files, f"no golden {name}.bin: run tests/support/golden/make_payload_golden.py"
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
            type(a.state_delta).__name__,
            a.state_delta,
        )
    err = (
        None
        if ev.error is None
        else (getattr(ev.error, "type_name", type(ev.error).__name__), str(getattr(ev.error, "message", ev.error)))
    )
    return (ev.agent_name, [s.agent_name for s in ev.run_path], out, act, err, ev.branch)


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
    assert events[0].run_path is events[1].run_path  # one shared tuple per distinct path


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
    (delta,) = [ev.action.state_delta for ev in load(data, "x").session.events if ev.action and ev.action.state_delta]
    assert isinstance(delta, StateDelta) and delta == {"budget": 900}


def test_a_branch_and_a_state_delta_beside_other_actions_come_back() -> None:
    """A Parallel lane's event keeps its branch; a state delta beside a customized action
    keeps both (before, a checkpoint kept one of the two)."""
    session = Session()
    plain = event_from_message(Message.assistant("from a lane"))
    plain.agent_name, plain.run_path, plain.branch = "x", (RunStep("par"), RunStep("x")), "par.x"
    both = AgentEvent("y", (RunStep("y"),), None, AgentAction(customized_action={"k": 1}, state_delta={"v": 2}))
    both.branch = "outer.a.inner.y"
    session.record(plain)
    session.record(both)
    back = load(asyncio.run(dump(ROOT, session, signal(), INFO)), "x").session.events
    assert [ev.branch for ev in back] == ["par.x", "outer.a.inner.y"]
    assert back[1].action == AgentAction(customized_action={"k": 1}, state_delta={"v": 2})


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


# --- records ----------------------------------------------------------------------------------


def test_every_field_of_a_restored_event_is_set() -> None:
    """records_to_events fills the dataclasses without their __init__: a field added to one of
    them must be added there too."""
    data = asyncio.run(dump(ROOT, events_session(), signal(), INFO))
    for ev in load(data, "x").session.events:
        for obj in (ev, ev.output, ev.message_output):
            if obj is not None:
                for f in dataclasses.fields(obj):
                    getattr(obj, f.name)  # AttributeError if the restore left it unset


def test_without_unread_streams_events_to_records_never_suspends() -> None:
    events = [ev for ev in kinds_of_events() if not (ev.message_output and ev.message_output.message is None)]
    coro = events_to_records(events)
    with pytest.raises(StopIteration) as done:
        coro.send(None)  # ran to its end without awaiting anything
    assert len(done.value.value) == len(events) == 12
    assert done.value.value == asyncio.run(events_to_records(events))


def test_records_of_unread_streams_equal_those_of_streams_read_before() -> None:
    def events(read: bool) -> list[AgentEvent]:
        out = []
        for i in range(4):
            ev = event_from_message(
                None, stream_from_list([Message.assistant(f"part {i}. "), Message.assistant("end")])
            )
            ev.agent_name, ev.run_path = "a", (RunStep("a"),)
            if read or i % 2:
                ev.output.message_output.get_message()  # type: ignore[union-attr]
            out.append(ev)
        out.insert(2, event_from_message(Message.assistant("whole")))
        return out

    unread, read = events(False), events(True)
    got = asyncio.run(events_to_records(unread))
    assert got == asyncio.run(events_to_records(read))
    assert [r[2].content for r in got] == ["part 0. end", "part 1. end", "whole", "part 2. end", "part 3. end"]
    assert all(
        ev.message_output and ev.message_output.message is not None for ev in unread
    )  # kept, as get_message does


def test_a_run_path_is_written_once_then_by_index() -> None:
    a, ab = (RunStep("a"),), (RunStep("a"), RunStep("b"))
    events = [
        AgentEvent("a", a),
        AgentEvent("b", ab),
        AgentEvent("a", a),
        AgentEvent("b", (RunStep("a"), RunStep("b"))),
    ]
    records = asyncio.run(events_to_records(events))
    assert [r[1] for r in records] == [["a"], ["a", "b"], 0, 1]
    back = records_to_events(records)
    assert [ev.run_path for ev in back] == [a, ab, a, ab] and back[1].run_path is back[3].run_path


def test_a_run_path_a_step_longer_than_one_written_is_written_as_that_ones_index_and_the_step() -> None:
    from rillet import RunPath

    a = RunPath((RunStep("a"),))
    ab = a + (RunStep("b"),)
    abb = ab + (RunStep("b"),)
    events = [AgentEvent("a", a), AgentEvent("b", ab), AgentEvent("b", abb), AgentEvent("b", ab + (RunStep("c"),))]
    records = asyncio.run(events_to_records(events))
    assert [r[1] for r in records] == [["a"], [0, "b"], [1, "b"], [1, "c"]]
    back = records_to_events(records)
    assert [ev.run_path for ev in back] == [ev.run_path for ev in events]
    assert back[2].run_path[:2] is back[1].run_path and back[3].run_path[:2] is back[1].run_path  # shared again


@pytest.mark.slow
def test_saving_and_loading_a_long_loop_grows_linearly_with_its_rounds() -> None:
    from rillet import LoopAgent, Runner

    class Tick(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
            yield event_from_message(Message.assistant("tick"))

    def cost(rounds: int) -> tuple[float, int]:
        events = list(Runner(LoopAgent("loop", sub_agents=[Tick("t")], max_iterations=rounds)).query("go"))
        best = float("inf")
        for _ in range(5):  # the best of five: a busy machine only ever adds time
            t0 = time.perf_counter()
            data = codec.encode(asyncio.run(events_to_records(events)), compress=True)
            back = records_to_events(codec.decode(data))
            best = min(best, time.perf_counter() - t0)
        assert [e.run_path for e in back] == [e.run_path for e in events]
        return best, len(codec.encode(asyncio.run(events_to_records(events))))

    (t1, size1), (t4, size4) = cost(1000), cost(4000)
    assert size4 < 5 * size1, (size1, size4)  # four times the rounds (quadratic: sixteen)
    assert t4 < 8 * t1 + 0.2, (t1, t4)  # was 0.4 s and 5 s (each path written whole); now milliseconds


def test_version_1_records_in_an_interrupt_state_still_restore() -> None:
    v1 = [
        {
            "agent_name": "x",
            "run_path": ["p", "x"],
            "message": Message.assistant("hi"),
            "role": "assistant",
            "tool_name": "",
            "is_streaming": True,
        },
        {
            "agent_name": "x",
            "run_path": ["p", "x"],
            "message": Message.tool_message("r", "c", "t"),
            "role": "tool",
            "tool_name": "t",
            "is_streaming": False,
            "customized_output": 7,
            "action": {"exit": True},
        },
        {"agent_name": "x", "run_path": [], "error": {"type": "KeyError", "message": "k"}},
    ]
    evs = records_to_events(v1)
    assert [e.agent_name for e in evs] == ["x"] * 3 and evs[0].run_path is evs[1].run_path and evs[2].run_path == ()
    mv = evs[0].message_output
    assert (
        mv is not None
        and mv.is_streaming
        and mv.message_stream is not None
        and list(mv.message_stream) == [Message.assistant("hi")]
    )
    assert evs[1].output == AgentOutput(
        MessageVariant(False, Message.tool_message("r", "c", "t"), None, "tool", "t"), 7
    )
    assert evs[1].action is not None and evs[1].action.exit
    assert isinstance(evs[2].error, RecordedError) and evs[2].error.type_name == "KeyError" and evs[2].output is None


def test_a_malformed_or_newer_payload_is_refused_with_a_clear_error() -> None:
    good = codec.decode(asyncio.run(dump(ROOT, events_session(), signal(), INFO)))
    records = good["events"]
    for bad, why in [
        (["trip", 0], r"TypeError: event record 1 has 2 items, not 7"),
        ("trip", r"TypeError: event record 1 is not a list"),
        (["trip", 7, None, None, None, False, None], r"IndexError: event record 1 refers to run path 7, but 1 were"),
        (["trip", -1, None, None, None, False, None], r"IndexError: event record 1 refers to run path -1"),
        (
            ["trip", [5, "x"], None, None, None, False, None],
            r"IndexError: event record 1 refers to run path 5, but 1 were",
        ),
    ]:
        good["events"] = [*records[:1], bad, *records[2:]]
        with pytest.raises(
            DecodeError, match=rf"checkpoint\[bad\] \(payload version {PAYLOAD_VERSION}\) is malformed: " + why
        ):
            load(codec.encode(good), "bad")
    good["version"] = PAYLOAD_VERSION + 1
    with pytest.raises(DecodeError, match=r"payload version 4; this rillet reads versions 1, 2, 3"):
        load(codec.encode(good), "new")


# --- Session.restore --------------------------------------------------------------------------


def test_restore_appends_in_order_with_one_stamp_after_what_was_recorded() -> None:
    session = Session()
    session.record(AgentEvent("first"))
    evs = [AgentEvent(str(i)) for i in range(5)]
    session.restore(iter(evs))
    session.record(AgentEvent("last"))
    assert [e.agent_name for e in session.events] == ["first", "0", "1", "2", "3", "4", "last"]
    assert session.stamps == sorted(session.stamps) and len(set(session.stamps[1:6])) == 1


def test_restored_lanes_join_in_lane_order_before_new_events() -> None:
    parent = Session()
    parent.record(AgentEvent("before"))
    lanes = [parent.lane() for _ in range(3)]
    base = len(lanes[0].events)
    for i, lane in enumerate(lanes):
        lane.restore([AgentEvent(f"saved {i}.0"), AgentEvent(f"saved {i}.1")])
    lanes[2].record(AgentEvent("new 2"))
    time.sleep(0.001)
    lanes[0].record(AgentEvent("new 0"))
    parent.join(lanes, base)
    assert [e.agent_name for e in parent.events] == [
        "before",
        "saved 0.0",
        "saved 0.1",
        "saved 1.0",
        "saved 1.1",
        "saved 2.0",
        "saved 2.1",
        "new 2",
        "new 0",
    ]


def test_restore_holds_the_lock_once() -> None:
    session = Session()

    class Lock:
        def __init__(self) -> None:
            self.n = 0

        def __enter__(self) -> None:
            self.n += 1

        def __exit__(self, *exc: object) -> None:
            pass

    lock = Lock()
    session.lock = lock  # type: ignore[assignment]
    session.restore(AgentEvent(str(i)) for i in range(100))
    assert lock.n == 1 and len(session.events) == len(session.stamps) == 100


def test_events_are_only_built_of_classes_object_new_makes() -> None:
    from rillet._native import events_from_records
    from rillet.checkpoint.payload import _KINDS

    class NotPlain(dict):  # type: ignore[type-arg]
        __slots__ = ("agent_name", "run_path", "output", "action", "error")

    with pytest.raises(TypeError, match="NotPlain is not made by object.__new__"):
        events_from_records([["a", ["p"], None, None, None, False, None]], _KINDS._replace(event=NotPlain))


def test_what_each_interrupt_asks_is_saved_and_an_unencodable_ask_is_kept_as_text() -> None:
    from rillet._core.interrupt import InterruptSignal

    class Opaque:
        def __repr__(self) -> str:
            return "Opaque(42)"

    leaf = InterruptSignal("leaf", ("agent:a", "tool:t:c1"), info={"question": "pay 30?"})
    odd = InterruptSignal("odd", ("agent:a", "tool:u:c2"), info=Opaque())
    root = InterruptSignal("root", ("agent:a",), subs=[leaf, odd])
    data = asyncio.run(dump(AgentInput([Message.user("hi")]), Session({}), root))
    loaded = load(data, "c")
    assert loaded.infos == {"root": None, "leaf": {"question": "pay 30?"}, "odd": "Opaque(42)"}
    assert loaded.addresses["leaf"] == ("agent:a", "tool:t:c1")
