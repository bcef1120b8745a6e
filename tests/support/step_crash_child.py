"""A process of the step-durability crash test (tests/runner/test_step_crash.py):

    python step_crash_child.py STORE_URL CHECKPOINT_ID SIDE_FILE STEPS run|resume [DIE_AT]

``run`` starts a 30-step counting agent (tests/support/step_agents.py) with durability="step", which
SIGKILLs its own process at step DIE_AT; ``resume`` continues the run and prints its answer.

    python step_crash_child.py reused KIND[+lookup] STORE_URL CHECKPOINT_ID SIDE_FILE run|resume [STOP]

runs (or resumes) the reused-call-id agent ``KIND`` of tests/support/step_agents.py, which stops at the
point STOP and waits there for the parent to kill it; it prints the answer when it finishes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, which holds support/

from rillet import Runner, SqliteCheckpointStore

from support.step_agents import counting_agent, reused_id_agent


def open_store(url: str) -> Any:
    """The checkpoint store at ``url``: ``sqlite:///PATH``, ``redis://...`` or ``postgresql://...``."""
    if url.startswith("sqlite:///"):
        return SqliteCheckpointStore(url.removeprefix("sqlite:///"))
    import rillet.checkpoint as checkpoint  # the server stores, where they exist

    name = "RedisCheckpointStore" if url.startswith("redis://") else "PostgresCheckpointStore"
    store_class = getattr(checkpoint, name, None)
    if store_class is None:
        raise SystemExit(f"no {name} in rillet.checkpoint for {url}")
    return store_class(url)


def main(url: str, checkpoint_id: str, side: str, steps: str, mode: str, die_at: str | None = None) -> None:
    agent = counting_agent(int(steps), side, die_at=int(die_at) if die_at is not None else None)
    print(drive(agent, open_store(url), checkpoint_id, mode))


def reused(kind: str, url: str, checkpoint_id: str, side: str, mode: str, stop: str | None = None) -> None:
    name, _, extra = kind.partition("+")
    store = open_store(url)
    # A resume killed here keeps its claim for claim_lease; resumes of this test never overlap,
    # so the next one may take it over at once.
    store.claim_lease = 0.0
    print(drive(reused_id_agent(name, side, stop, lookup=extra == "lookup"), store, checkpoint_id, mode))


def drive(agent: Any, store: Any, checkpoint_id: str, mode: str) -> str:
    """Runs (``run``) or resumes ``agent``'s step run to its end: its answer (the text of its
    last event); a failed run ends the process."""
    runner = Runner(agent, checkpoint_store=store, durability="step")
    events = list(runner.resume(checkpoint_id) if mode == "resume" else runner.query("go", checkpoint_id=checkpoint_id))
    errors = [e.error for e in events if e.error is not None]
    if errors:
        raise SystemExit(f"the run failed: {errors}")
    last = events[-1].message_output
    assert last is not None
    return str(last.get_message().content)


if __name__ == "__main__":
    if sys.argv[1] == "reused":
        reused(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
