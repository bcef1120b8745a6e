"""A DeepAgent: it plans with a todo list, hands research to a sub-agent through its ``task``
tool, and writes its result to a file.

``release_notes`` is a :class:`rillet.prebuilt.DeepAgent` over an in-memory file area holding
a changelog. It writes its todo list (``write_todos``: the list goes into the session values),
asks the ``researcher`` sub-agent, through ``task(subagent_type, description)``, which changes
matter to users (the sub-agent runs in a fresh conversation, reads the changelog itself and
its last message comes back as the tool's result), then writes ``RELEASE.md`` and answers.

Run it: ``rillet demo deep`` or ``python -m rillet.examples.deep`` (``--fast``,
``--no-color``).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from rillet._native import Message
from rillet.examples import call, run_example, scripted

if TYPE_CHECKING:
    from rich.console import Console

    from rillet.examples.demo import Renderer
    from rillet.prebuilt import DeepAgent, InMemoryBackend

__all__ = ["CHANGELOG", "QUESTION", "build_agent", "main"]

QUESTION = "Write the release notes for 0.4 into RELEASE.md, for users, not developers."

CHANGELOG = """0.4
- channel: wakeups coalesced per receiver
- ci: cache the cargo registry
- checkpoint: resume refuses a checkpoint saved by another agent
- refactor: split chatmodel into steps
"""

NOTES = (
    "# rillet 0.4\n\n"
    "- Faster event delivery: a burst of events wakes a reader once.\n"
    "- Safer resumes: a checkpoint only resumes the agent that saved it.\n"
)


def _todos(*statuses: str) -> str:
    steps = ["Find the user-facing changes", "Write RELEASE.md"]
    return json.dumps({"todos": [{"content": c, "status": s} for c, s in zip(steps, statuses, strict=True)]})


def build_agent(delay: float = 0.0) -> tuple[DeepAgent, InMemoryBackend]:
    """The deep agent (what a Runner runs) and its file area."""
    from rillet.chatmodel import ChatModelAgent
    from rillet.prebuilt import DeepAgent, InMemoryBackend, file_tools

    files = InMemoryBackend({"CHANGELOG.md": CHANGELOG})
    researcher = ChatModelAgent(
        name="researcher",
        description="Reads the project's files and reports what they say.",
        instruction="Read what you need, then report briefly.",
        model=scripted(
            [
                Message.assistant("", [call(0, "read_file", '{"path": "CHANGELOG.md"}')]),
                "Two of the four changes matter to users: coalesced wakeups (faster delivery) "
                "and checkpoints that only resume their own agent. CI and the refactor do not.",
            ],
            delay,
        ),
        tools=[t for t in file_tools(files) if t.info.name == "read_file"],
    )
    request = "Which changes in CHANGELOG.md under 0.4 matter to users? Say why for each."
    agent = DeepAgent(
        scripted(
            [
                Message.assistant("", [call(0, "write_todos", _todos("in_progress", "pending"))]),
                Message.assistant(
                    "", [call(0, "task", json.dumps({"subagent_type": "researcher", "description": request}))]
                ),
                Message.assistant("", [call(0, "write_todos", _todos("completed", "in_progress"))]),
                Message.assistant("", [call(0, "write_file", json.dumps({"path": "RELEASE.md", "content": NOTES}))]),
                Message.assistant("", [call(0, "write_todos", _todos("completed", "completed"))]),
                "RELEASE.md lists the two changes users will notice: faster event delivery and "
                "safer resumes. The CI and refactoring changes are left out.",
            ],
            delay,
        ),
        name="release_notes",
        sub_agents=[researcher],
        backend=files,
        general_agent=False,
    )
    return agent, files


def main(*, delay: float = 0.02, streaming: bool = True, color: bool | None = None) -> int:
    """Runs the deep agent on the request and prints the transcript, the todo list and the file."""
    from rillet.prebuilt import TODOS_KEY
    from rillet.run.context import get_session_value

    agent, files = build_agent(delay)
    seen: dict[str, Any] = {}
    agent.after_agent.append(lambda _: seen.update(todos=get_session_value(TODOS_KEY)))

    def epilogue(console: Console, r: Renderer) -> None:
        console.print("\n[bold]Todo list[/] (session value):")
        for t in seen.get("todos") or []:
            console.print(f"  [{t.status}] {t.content}", markup=False)
        console.print("\n[bold]RELEASE.md[/] (in the agent's file area):")
        for line in files.files.get("RELEASE.md", "").splitlines():
            console.print(f"  {line}", markup=False)

    title = "[bold]rillet demo deep[/]: a DeepAgent with todos, a sub-agent and files (offline)"
    return run_example(title, QUESTION, agent, delay=delay, streaming=streaming, color=color, epilogue=epilogue)


if __name__ == "__main__":
    from rillet.cli import main as cli

    raise SystemExit(cli(["demo", "deep", *sys.argv[1:]]))
