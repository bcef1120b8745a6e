"""A process of the step-durability crash test (tests/test_step_crash.py):

    python step_crash_child.py STORE_URL CHECKPOINT_ID SIDE_FILE STEPS run|resume [DIE_AT]

``run`` starts a 30-step counting agent (tests/step_agents.py) with durability="step", which
SIGKILLs its own process at step DIE_AT; ``resume`` continues the run and prints its answer."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from rillet import Runner, SqliteCheckpointStore
from step_agents import counting_agent


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
    runner = Runner(agent, checkpoint_store=open_store(url), durability="step")
    events = list(runner.resume(checkpoint_id) if mode == "resume" else runner.query("go", checkpoint_id=checkpoint_id))
    errors = [e.error for e in events if e.error is not None]
    if errors:
        raise SystemExit(f"the run failed: {errors}")
    last = events[-1].message_output
    assert last is not None
    print(last.get_message().content)


if __name__ == "__main__":
    main(*sys.argv[1:])
