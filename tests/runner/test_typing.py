"""Type checking a user's code against the Runner: a resumed run's events type-check as the
message type the run was saved with (resume() cannot know it, so they are not pinned to Message),
and a plugin's model hooks may give AgenticMessages."""

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


PLUGIN = """
from rillet import AgentEvent, AgenticMessage, Message, ModelContext, Plugin


class Blocks(Plugin):
    def before_model(self, ctx: ModelContext) -> AgenticMessage | list[AgenticMessage] | None:
        return None

    async def after_model(self, ctx: ModelContext, reply: Message | AgenticMessage) -> Message | AgenticMessage | None:
        return None

    def on_model_error(self, ctx: ModelContext, error: Exception) -> AgenticMessage | None:
        return None


class Narrow(Plugin):
    async def after_model(self, ctx: ModelContext, reply: AgenticMessage) -> AgenticMessage | None:
        return None

    def on_event(self, event: AgentEvent[AgenticMessage]) -> AgentEvent[AgenticMessage] | None:
        return None


class Plain(Plugin):
    def before_model(self, ctx: ModelContext) -> Message | list[Message] | None:
        return None

    def on_event(self, event: AgentEvent) -> AgentEvent | None:
        return None

    async def after_model(self, ctx: ModelContext, reply: Message) -> Message | None:
        return None
"""


def test_a_plugin_for_block_list_runs_type_checks(tmp_path: Path) -> None:
    """A plugin's model hooks may give AgenticMessages (the plugin sees every agent's calls,
    block-list runs' too): Plugin's hooks were typed to return Message only."""
    pytest.importorskip("mypy", reason="mypy is not installed")
    (tmp_path / "user.py").write_text(PLUGIN, encoding="utf-8")
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
