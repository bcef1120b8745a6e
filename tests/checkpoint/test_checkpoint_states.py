"""Agent states in checkpoints: registered frozen dataclasses, and the tagged dicts of older
checkpoints still read (converted to the dataclasses) with the same results."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from rillet import (
    ChatModelAgent,
    FunctionCall,
    LoopAgent,
    Message,
    ParallelAgent,
    Runner,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    codec,
    get_interrupt_state,
    interrupt,
    tool,
)
from rillet.chatmodel.state import RoundState
from rillet.checkpoint import InMemoryCheckpointStore
from rillet.checkpoint.payload import load, seal
from rillet.checkpoint.state import checkpoint_state, saved_state
from rillet.compose.agent_tool import AgentToolState
from rillet.compose.workflow import LoopState, ParallelState, SequentialState
from support.calls import asks, tool_call
from support.payload_scenarios import agent_tool_runner, paid, parallel_runner, run_checkpoint

GOLDEN = Path(__file__).resolve().parents[1] / "support" / "golden"
STATES = (RoundState, SequentialState, LoopState, ParallelState, AgentToolState)


def texts(events: list[Any]) -> list[str]:
    return [e.message_output.get_message().content for e in events if e.message_output is not None]


# --- the dataclasses ------------------------------------------------------------------------


@pytest.mark.parametrize("cls", STATES)
def test_each_state_is_a_registered_frozen_dataclass(cls: type) -> None:
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    name, version, _, _ = codec._BY_TYPE[cls]
    assert name == cls.LEGACY_KIND and version == 1  # type: ignore[attr-defined]


def test_states_round_trip_through_the_codec() -> None:
    msg = Message.user("hi")
    for state in (
        RoundState((msg,), {1: Message.tool_message("r", "c", "t")}, 3, 2, None),
        SequentialState(2),
        LoopState(4, 1),
        ParallelState(([], [["rec"]]), ([], [0])),
        AgentToolState((msg,), []),
    ):
        back = codec.decode(codec.encode(state))
        assert type(back) is type(state) and back == state


def test_checkpoint_state_refuses_a_class_that_is_not_a_frozen_dataclass() -> None:
    @dataclasses.dataclass
    class Mutable:
        x: int

    with pytest.raises(TypeError, match="frozen dataclass"):
        checkpoint_state("test.mutable")(Mutable)


def _counter(version: int) -> type:
    """The class of a state ``test.counter`` as a version of an application defines it (the
    same qualified name each time, as after an upgrade): version 2 added ``step``."""
    if version == 1:

        @dataclasses.dataclass(frozen=True)
        class Counter:
            n: int

    else:

        @dataclasses.dataclass(frozen=True)  # type: ignore[no-redef]
        class Counter:
            n: int
            step: int

    migrate = None if version == 1 else (lambda state, old: {**state, "step": 1})
    return checkpoint_state("test.counter", version=version, migrate=migrate)(Counter)


def test_a_newer_state_version_migrates_the_older_one_as_it_is_read() -> None:
    old = codec.encode(_counter(1)(3))
    new = _counter(2)
    assert codec.decode(old) == new(3, 1)


def test_legacy_dicts_convert_to_the_dataclasses() -> None:
    msg, result = Message.user("hi"), Message.tool_message("r", "c", "t")
    cases = [
        (
            {
                "kind": "rillet.chatmodel.round",
                "messages": [msg],
                "completed": {"1": result},
                "remaining": 3,
                "iteration": 2,
            },
            RoundState((msg,), {1: result}, 3, 2, None),
        ),
        ({"kind": "rillet.sequential", "index": 2}, SequentialState(2)),
        ({"kind": "rillet.loop", "iteration": 4, "index": 1}, LoopState(4, 1)),
        (
            {"kind": "rillet.parallel", "lanes": {"0": [], "1": [["r"]]}, "order": {"0": [], "1": [0]}},
            ParallelState(([], [["r"]]), ([], [0])),
        ),
        ({"kind": "rillet.parallel", "lanes": {"0": ["a"]}}, ParallelState((["a"],), None)),
        ({"kind": "rillet.agent_tool", "messages": [msg], "events": []}, AgentToolState((msg,), [])),
    ]
    for legacy, want in cases:
        assert saved_state(legacy, type(want)) == want
    assert saved_state({"kind": "rillet.loop", "iteration": 0, "index": 0}, SequentialState) is None  # another agent's
    assert saved_state({"amount": 9}, RoundState) is None  # a user tool's state


# --- checkpoints ----------------------------------------------------------------------------


def test_new_checkpoints_hold_the_dataclasses() -> None:
    data = run_checkpoint(parallel_runner(False)[0], "go")
    kinds = {type(s) for s in load(data, "x").states.values()}
    assert {SequentialState, ParallelState, RoundState} <= kinds


def _as_legacy(state: Any) -> Any:
    """A state as checkpoints before the dataclasses held it."""
    if isinstance(state, RoundState):
        out = {
            "kind": state.LEGACY_KIND,
            "messages": list(state.messages),
            "completed": {str(k): v for k, v in state.completed.items()},
            "remaining": state.remaining,
            "iteration": state.iteration,
        }
        return out if state.final is None else {**out, "final": state.final}
    if isinstance(state, SequentialState):
        return {"kind": state.LEGACY_KIND, "index": state.index}
    if isinstance(state, LoopState):
        return {"kind": state.LEGACY_KIND, "iteration": state.iteration, "index": state.index}
    if isinstance(state, ParallelState):
        order = {str(i): p for i, p in enumerate(state.order)} if state.order is not None else None
        return {"kind": state.LEGACY_KIND, "lanes": {str(i): r for i, r in enumerate(state.lanes)}, "order": order}
    if isinstance(state, AgentToolState):
        return {"kind": state.LEGACY_KIND, "messages": list(state.messages), "events": state.events}
    return state


def _legacy_checkpoint(data: bytes) -> bytes:
    payload = codec.decode(data[8:])  # past the sealed envelope's head
    for entry in payload["interrupts"].values():
        entry["state"] = _as_legacy(entry["state"])
    return seal(codec.encode(payload, compress=True))


def _resume(runner: Runner, data: bytes) -> list[str]:
    runner.checkpoint_store.set("k", data)
    return texts(list(runner.resume("k", targets={i: "approve" for i in load(data, "k").addresses})))


def test_a_checkpoint_with_legacy_states_resumes_as_the_typed_one() -> None:
    data = run_checkpoint(parallel_runner(False)[0], "go")
    legacy = _legacy_checkpoint(data)
    assert all(isinstance(s, dict) for s in load(legacy, "k").states.values())
    for blob in (data, legacy):
        paid.clear()
        assert _resume(parallel_runner(True)[0], blob) == ["paid 1", "approved", "merged"]
        assert paid == [1]
    data = run_checkpoint(agent_tool_runner(False), "go")
    for blob in (data, _legacy_checkpoint(data)):
        paid.clear()
        assert _resume(agent_tool_runner(True), blob) == ["inner done", "all done"]
        assert paid == [9]


def _loop_runner(resumed: bool) -> Runner:
    """A loop of (ask, note) for 2 rounds; ``ask`` pays in round 2 (the interrupt)."""
    from support.payload_scenarios import pay

    def call(i: int) -> Message:
        return Message.assistant(
            "", [ToolCall(index=0, id=f"c{i}", function=FunctionCall("pay", json.dumps({"amount": i})))]
        )

    asks = ["first"] if not resumed else []
    asks += [call(2), "second"] if not resumed else ["second"]
    ask = ChatModelAgent("ask", model=ScriptedModel(asks), tools=[pay])
    note = ChatModelAgent("note", model=ScriptedModel(["noted 1", "noted 2"] if not resumed else ["noted 2"]))
    return Runner(
        SequentialAgent("seq", sub_agents=[LoopAgent("loop", sub_agents=[ask, note], max_iterations=2)]),
        checkpoint_store=InMemoryCheckpointStore(),
    )


def test_a_loop_checkpoint_with_legacy_states_resumes_as_the_typed_one() -> None:
    data = run_checkpoint(_loop_runner(False), "go")
    assert LoopState(1, 0) in load(data, "k").states.values()
    for blob in (data, _legacy_checkpoint(data)):
        paid.clear()
        assert _resume(_loop_runner(True), blob) == ["paid 2", "second", "noted 2"]
        assert paid == [2]


@pytest.mark.parametrize("name", ["parallel", "agent_tool"])
def test_the_golden_checkpoint_of_the_typed_form_holds_dataclasses(name: str) -> None:
    data = (GOLDEN / "payload_v3_typed_states" / f"{name}.bin").read_bytes()
    states = load(data, "g").states.values()
    assert not any(isinstance(s, dict) and "kind" in s for s in states)
    assert any(isinstance(s, RoundState) for s in states)


def test_agents_take_everything_after_name_by_keyword() -> None:
    model = ScriptedModel(["x"])
    with pytest.raises(TypeError, match="positional"):
        ChatModelAgent("a", "d", "", model)  # type: ignore[misc]
    a = ChatModelAgent("a", description="d", model=model)
    for cls in (SequentialAgent, LoopAgent, ParallelAgent):
        with pytest.raises(TypeError, match="positional"):
            cls("w", "", [a])  # type: ignore[misc]


# --- agent callbacks' state -----------------------------------------------------------------


def test_agent_callback_state_deltas_are_saved_in_checkpoints() -> None:
    @tool
    def ask() -> str:
        """Interrupts."""
        was, _, _ = get_interrupt_state()
        if not was:
            raise interrupt("ok?")
        return "yes"

    def remember(ctx: Any) -> None:
        ctx.state["v"] = 1

    agent = ChatModelAgent(
        "a", model=ScriptedModel([asks(tool_call("ask", {})), "done"]), tools=[ask], before_agent_callbacks=[remember]
    )
    runner = Runner(agent, checkpoint_store=InMemoryCheckpointStore())
    events = list(runner.query("x", checkpoint_id="k"))
    assert all(e.error is None for e in events)
    ctx = events[-1].action.interrupted.interrupt_contexts[0]
    assert [
        e.message_output.get_message().content for e in runner.resume("k", targets={ctx.id: 1}) if e.message_output
    ][-1] == "done"
