"""The crash test of step durability: a process running a 30-step ReAct agent with
durability="step" is SIGKILLed at a random step; a new process resumes the run and completes
it; every model call and tool call ran exactly once over both processes (counted in a side
file) and the answer equals an uninterrupted run's. ``crash_trials`` takes any store URL that
tests/step_crash_child.py opens (SQLite here; Redis and PostgreSQL where those stores exist)."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from optional import need
from rillet import Runner
from step_agents import counting_agent

CHILD = str(Path(__file__).parent / "step_crash_child.py")
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
