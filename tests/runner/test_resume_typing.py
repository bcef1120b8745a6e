"""A resumed run's events type-check as the message type the run was saved with: resume()
cannot know it, so its events are not pinned to Message (they were: a resumed AgenticMessage
run could not be typed ``AgentEvent[AgenticMessage]``, as the issue's acceptance asks)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

USER = """
from rillet import AgentEvent, AgenticMessage, ChatModelAgent, InMemoryCheckpointStore, Message, Runner, ScriptedModel

runner = Runner(ChatModelAgent("a", model=ScriptedModel(["x"])), checkpoint_store=InMemoryCheckpointStore())
blocks: list[AgentEvent[AgenticMessage]] = list(runner.resume("blocks"))
plain: list[AgentEvent[Message]] = list(runner.resume("plain"))
also: list[AgentEvent] = list(runner.resume("plain"))


async def main() -> None:
    async for event in await runner.aresume("blocks"):
        mv = event.message_output
        message: AgenticMessage | None = mv.get_message() if mv is not None else None
        print(message)
"""


def test_a_resumed_block_list_run_types_as_agent_event_of_agentic_message(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is not installed")
    (tmp_path / "user.py").write_text(USER, encoding="utf-8")
    python = str(Path(__file__).resolve().parents[2] / "python")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-color-output", "--cache-dir", str(tmp_path / "c"), "user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MYPYPATH": python},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
