"""Loading a session for a turn, at 10, 100 and 500 turns: with a last-N policy the load
reads N turn rows whatever the session's length; without a policy it reads every turn.

A load is what ``runner.run(..., session_id=...)`` does before the agent starts
(:func:`rillet.sessions.session_run.open_run`: mark the session busy, read its head and the turns
the policy keeps, decode them) plus the release at the end. Sessions are built with
``SqliteSessionStore.append`` (one row per turn: a question and a three-sentence answer,
~400 bytes), in a file per size.

Run: .venv/bin/python -m pytest benches/bench_sessions.py --benchmark-only \
         --benchmark-columns=median,mean,rounds --benchmark-group-by=group
After the pytest-benchmark tables it prints "session load: median by turns", one row per policy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rillet import LastTurns, Message, SqliteSessionStore
from rillet.sessions.protocol import encode_messages
from rillet.sessions.session_run import open_run

SIZES = (10, 100, 500)
POLICIES: dict[str, Any] = {"last 5 turns": LastTurns(5), "no policy (all)": None}
_medians: dict[tuple[str, int], tuple[float, int]] = {}


def _turn(i: int) -> bytes:
    answer = f"Answer {i}: " + "the forecast says sun in the morning and light rain later in the afternoon. " * 3
    return encode_messages(
        [Message.user(f"Question {i}: what will the weather be like tomorrow?"), Message.assistant(answer)]
    )


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[int, SqliteSessionStore]:
    out = {}
    for n in SIZES:
        store = SqliteSessionStore(Path(tmp_path_factory.mktemp("sessions")) / f"{n}.db")
        for i in range(n):
            store.append("chat", _turn(i), {})
        out[n] = store
    return out


@pytest.fixture(scope="module", autouse=True)
def table(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is None or capture is None or not _medians:
        return
    with capture.global_and_fixture_disabled():
        _print_table(reporter)


def _print_table(reporter: Any) -> None:
    reporter.write_line("")
    reporter.write_line("session load: median by turns (µs), turn rows read per load")
    reporter.write_line(f"{'policy':<18}" + "".join(f"{n:>10} turns" for n in SIZES))
    for name in POLICIES:
        cells = [_medians.get((name, n)) for n in SIZES]
        row = "".join(f"{c[0] * 1e6:>9.0f} ({c[1]:>3})" if c else f"{'-':>16}" for c in cells)
        reporter.write_line(f"{name:<18}{row}")


@pytest.mark.parametrize("turns", SIZES)
@pytest.mark.parametrize("policy", list(POLICIES))
def test_session_load(benchmark: Any, stores: dict[int, SqliteSessionStore], turns: int, policy: str) -> None:
    store = stores[turns]

    def load() -> list[Message]:
        run = open_run(store, "chat", POLICIES[policy])
        run.release()
        return run.history

    benchmark.group = f"session load: {policy}"
    benchmark.extra_info.update({"turns": turns})
    read = store.rows_read
    history = benchmark.pedantic(load, rounds=200, warmup_rounds=5)
    rows = (store.rows_read - read) // 205
    assert len(history) == 2 * (min(turns, 5) if POLICIES[policy] else turns)
    if benchmark.stats is not None:
        _medians[(policy, turns)] = (benchmark.stats.stats.median, rows)
