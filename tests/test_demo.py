"""`rillet demo`: runs offline, shows every event kind, fits an 80-column terminal."""

from __future__ import annotations

import io
import subprocess
import sys

from rich.console import Console

from rillet import Runner
from rillet.demo import build_agent, main, render


def test_demo_runs_offline_and_fits_80_columns() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rillet.cli", "demo", "--fast", "--no-color"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    text = result.stdout
    for expected in [
        "→ calls get_weather",
        "← convert_currency",
        "← packing_tips (streaming)",
        "- sunglasses",
        "Boa viagem!",
        "6 events · 3 model calls",
    ]:
        assert expected in text


def test_demo_streams_and_non_streams_the_same_conversation() -> None:
    for streaming in (True, False):
        buf = io.StringIO()
        console = Console(file=buf, width=80, no_color=True)
        r = render(Runner(build_agent(0.0), streaming=streaming).query("hi"), console)
        assert (r.events, r.model_calls) == (6, 3)
        assert "184.00 EUR" in buf.getvalue()


def test_demo_main_returns_zero() -> None:
    assert main(delay=0.0, color=False) == 0
