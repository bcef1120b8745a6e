"""The crash test of step durability: a process running a 30-step ReAct agent with
durability="step" is SIGKILLed at a random step; a new process resumes the run and completes
it; every model call and tool call ran exactly once over both processes (counted in a side
file) and the answer equals an uninterrupted run's. ``crash_trials`` takes any store URL that
tests/support/step_crash_child.py opens (SQLite here; Redis and PostgreSQL where those stores exist).

The reused-call-id tests kill the process from outside: the child says it reached a named point
(a model or tool call that has begun, tests/support/step_agents.py) and waits there; the test SIGKILLs it
and resumes the run in a new process, possibly killing that one too at a later point."""

from __future__ import annotations

import random
import select
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from rillet import Runner
from support.optional import need
from support.step_agents import counting_agent, reused_id_agent

CHILD = str(Path(__file__).resolve().parents[1] / "support" / "step_crash_child.py")
STEPS = 30


def crash_trials(url: str, trials: int, tmp_path: Path, seed: int = 22, id_prefix: str = "") -> list[int]:
    """Runs ``trials`` kill-and-resume trials against the store at ``url``; returns the steps
    the processes were killed at."""
    (last,) = [e for e in Runner(counting_agent(STEPS)).query("go") if e.message_output is not None][-1:]
    assert last.message_output is not None
    expected = last.message_output.get_message().content
    rng = random.Random(seed)
    killed_at = []
    for t in range(trials):
        side, checkpoint_id = tmp_path / f"side{t}", f"{id_prefix}crash{t}"
        die_at = rng.randrange(1, 2 * STEPS + 1)  # 2k: model call k, 2k+1: tool call k
        first = subprocess.run(
            [sys.executable, CHILD, url, checkpoint_id, str(side), str(STEPS), "run", str(die_at)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert first.returncode == -signal.SIGKILL, (die_at, first.returncode, first.stderr[-2000:])
        second = subprocess.run(
            [sys.executable, CHILD, url, checkpoint_id, str(side), str(STEPS), "resume"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 0, (die_at, second.stderr[-2000:])
        assert second.stdout.strip() == expected, die_at
        seen = side.read_text().splitlines()
        want = [f"model {k}" for k in range(STEPS + 1)] + [f"tool {k}.0" for k in range(STEPS)]
        assert sorted(seen) == sorted(want), (die_at, [x for x in set(seen) if seen.count(x) > 1])
        killed_at.append(die_at)
    return killed_at


@pytest.mark.slow
def test_sqlite_runs_survive_sigkill_at_random_steps(tmp_path: Path) -> None:
    killed_at = crash_trials(f"sqlite:///{tmp_path / 'steps.db'}", 20, tmp_path)
    print("killed at steps", killed_at)


@pytest.mark.slow
def test_redis_runs_survive_sigkill_at_random_steps(tmp_path: Path, redis_url: str) -> None:
    need("redis")
    killed_at = crash_trials(redis_url, 5, tmp_path, seed=23, id_prefix=f"{uuid.uuid4().hex}-")
    print("killed at steps", killed_at)


@pytest.mark.slow
def test_postgres_runs_survive_sigkill_at_random_steps(tmp_path: Path, postgres_url: str) -> None:
    need("psycopg")
    killed_at = crash_trials(postgres_url, 5, tmp_path, seed=24, id_prefix=f"{uuid.uuid4().hex}-")
    print("killed at steps", killed_at)


def kill_at(args: list[str], stop: str) -> None:
    """Runs the child ``args`` until it reaches the point ``stop``, then SIGKILLs it there."""
    with subprocess.Popen(
        [sys.executable, CHILD, *args, stop],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        ready, _, _ = select.select([child.stdout], [], [], 60)
        line = child.stdout.readline() if ready else "(nothing within 60 s)"
        child.kill()
        _, err = child.communicate()
    assert line == f"at {stop}\n", (stop, line, err[-2000:])
    assert child.returncode == -signal.SIGKILL


def uninterrupted(kind: str, tmp_path: Path) -> tuple[str, list[str]]:
    """The answer of an uninterrupted run of the reused-id agent ``kind`` and the points it
    passed, in order (every model and tool call, once)."""
    name, _, extra = kind.partition("+")
    side = tmp_path / f"whole-{kind}"
    events = list(Runner(reused_id_agent(name, str(side), lookup=extra == "lookup")).query("go"))
    last = events[-1].message_output
    assert last is not None and not [e.error for e in events if e.error is not None]
    return last.get_message().content, side.read_text().splitlines()


def crash_and_resume(kind: str, stops: list[str], tmp_path: Path, run: str) -> tuple[str, list[str]]:
    """Starts a step run of ``kind`` (SQLite) killed at the point ``stops[0]``, resumes it in a
    new process killed at each further stop, then resumes it to its end: its answer and the
    points passed over all the processes."""
    side = tmp_path / f"side-{run}"
    args = ["reused", kind, f"sqlite:///{tmp_path / 'steps.db'}", run, str(side)]
    kill_at([*args, "run"], stops[0])
    for stop in stops[1:]:
        kill_at([*args, "resume"], stop)
    last = subprocess.run(
        [sys.executable, CHILD, *args, "resume"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert last.returncode == 0, (stops, last.stderr[-2000:])
    return last.stdout.strip(), side.read_text().splitlines()


def test_an_agent_tool_called_again_under_the_same_id_resumes_to_its_own_answer(tmp_path: Path) -> None:
    """The outer model calls the agent tool in two rounds under one call id; the process dies
    inside the second round's inner model call. The resumed run makes that call (it must not
    replay the first round's inner run in its place) and answers as an uninterrupted run."""
    answer, passed = crash_and_resume("agent-tool", ["inner B model 0"], tmp_path, "r")
    assert answer == "answer to A | answer to B"
    assert passed.count("inner B model 0") == 1  # made by the resumed process
    assert sorted(passed) == sorted(uninterrupted("agent-tool", tmp_path)[1])


@pytest.mark.parametrize(("kind", "stop"), [("plain", "fetch B"), ("agent-tool+lookup", "lookup B")])
def test_a_tool_called_again_under_the_same_id_resumes_to_its_own_answer(kind: str, stop: str, tmp_path: Path) -> None:
    answer, passed = crash_and_resume(kind, [stop], tmp_path, "r")
    whole, points = uninterrupted(kind, tmp_path)
    assert answer == whole
    assert sorted(passed) == sorted(points)


@pytest.mark.parametrize("kind", ["one-round", "one-round-sequential"])
def test_two_agent_tool_calls_with_one_id_in_one_round_resume_apart(kind: str, tmp_path: Path) -> None:
    """One round holding two calls of the agent tool under the same id (a model may send it):
    each call keeps its own record, so the resumed run answers both requests."""
    answer, passed = crash_and_resume(kind, ["inner B model 0"], tmp_path, "r")
    whole, points = uninterrupted(kind, tmp_path)
    assert answer == whole == "answer to A | answer to B"
    assert passed.count("inner B model 0") == 1
    assert set(passed) == set(points)
    if kind == "one-round-sequential":  # (concurrent: A's reply may have been under way to the store)
        assert sorted(passed) == sorted(points)


@pytest.mark.slow
def test_agent_tool_runs_with_reused_ids_survive_sigkill_at_random_points(tmp_path: Path) -> None:
    """20 runs of an agent tool called in two rounds under one id (its inner agent calling a
    tool under that id too), each SIGKILLed at a random model or tool call of the outer or the
    inner agent, half of them again at a later call while resuming: every run resumes to the
    uninterrupted answer, and every model and tool call ran once over all the processes."""
    kind = "agent-tool+lookup"
    whole, points = uninterrupted(kind, tmp_path)
    rng = random.Random(30)
    plans = []
    for _ in range(20):
        first = rng.randrange(len(points))
        later = [rng.randrange(first + 1, len(points))] if first + 1 < len(points) and rng.random() < 0.5 else []
        plans.append([points[i] for i in [first, *later]])
    killed = {p for plan in plans for p in plan}
    # outer and inner calls, in both rounds of the reused id
    assert {"outer model 1", "inner A model 0", "lookup A", "inner B model 0", "lookup B"} <= killed, killed
    for t, plan in enumerate(plans):
        answer, passed = crash_and_resume(kind, plan, tmp_path, f"r{t}")
        assert answer == whole, plan
        assert sorted(passed) == sorted(points), plan
    print("killed at", plans)
