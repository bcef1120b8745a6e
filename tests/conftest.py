"""Session fixtures shared by many test files (the real servers of tests/support/servers.py), and
the tests that run alone when the suite runs on several processes (pytest-xdist).

The suite is safe in parallel: servers and ports are picked free per process, files go to
tmp_path, and no test reads another's state. Two kinds of slow test are kept out of the parallel
pass (scripts/test-all runs them after it, with nothing else running):
- SERIAL: the tests that time how cost grows (wall-clock ratios) or measure import time; their
  slow tests are marked ``serial`` and run alone, in one process.
- STRESS: the tests that load the cores for long with many threads (nothing may be lost,
  doubled, crash or hang); their slow tests are marked ``stress`` and run on two processes, one a
  core, beside each other only: each stress child is mostly one busy thread at a time (its
  threads take turns on the GIL), so one at a time left a core idle, and beside the parallel
  pass they would slow tests that wait with deadlines.
Only slow tests are marked, so `make test-fast` (-m "not slow") is one parallel pass."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.openai_server import FakeOpenAIServer
from support.servers import server_or_skip, start_postgres, start_redis


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A Redis 7 server on loopback for this test session (redis://127.0.0.1:<port>/0)."""
    yield from server_or_skip(start_redis)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server on loopback for this test session (postgresql://postgres@...)."""
    yield from server_or_skip(start_postgres)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    """A loopback OpenAI-compatible server (tests/support/openai_server.py) for one test module."""
    srv = FakeOpenAIServer()
    yield srv
    srv.close()


TESTS = Path(__file__).resolve().parent
SERIAL = (  # node ids under tests/, or whole files
    "checkpoint/test_checkpoint_payload.py::test_saving_and_loading_a_long_loop_grows_linearly_with_its_rounds",
    "contract/test_packaging.py::test_every_extra_installs_together_and_import_stays_fast",
    "data/test_concat_scaling.py",
    "compose/test_transfer.py::test_10000_transfers_run_at_flat_cost_per_hop",
    "compose/test_workflows.py::test_loop_children_that_never_read_their_input_cost_the_same_at_8000_iterations_as_at_1000",
)
STRESS = (
    "data/test_channel_stress.py",
    "data/test_streams_stress.py",
    "data/test_streams.py::test_bounded_pipe_threads_to_asyncio_stress",
    "data/test_streams.py::test_copy3_consumed_at_different_speeds_from_threads_stress",
    "run/test_faults.py::test_many_threads_mixing_interrupted_and_healthy_runs_on_the_shared_loop_all_finish",
)


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks SERIAL's slow tests ``serial`` and STRESS's ``stress`` (a stress file's quick
    variants stay in the parallel pass)."""
    for item in items:
        if not item.get_closest_marker("slow"):
            continue
        path = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
        ids = {path, f"{path}::{getattr(item, 'originalname', item.name)}"}
        if ids & set(SERIAL):
            item.add_marker(pytest.mark.serial)
        elif ids & set(STRESS):
            item.add_marker(pytest.mark.stress)
