"""Runnable multi-agent examples, offline on scripted models.

* :mod:`rillet.examples.team`: a supervisor that transfers to a billing and a tech-support agent.
* :mod:`rillet.examples.research`: a researcher that calls two agents as tools.
* :mod:`rillet.examples.review_loop`: a writer and a reviewer in a loop until the reviewer approves.
* :mod:`rillet.examples.deep`: a DeepAgent with a todo list, a sub-agent behind its task tool, and files.
* :mod:`rillet.examples.plan`: Plan-Execute-Replan: a planner, then an executor and a replanner in a loop.

Run one with ``rillet demo team`` (``research``, ``review``, ``deep``, ``plan``) or
``python -m rillet.examples.team`` (``research``, ``review_loop``, ``deep``, ``plan``);
``--fast`` skips the pauses between streamed tokens and ``--no-color`` prints plain text.
docs/multi-agent.md walks through the first three, docs/prebuilt.md the last two.

Layer: applications, beside rillet.cli, rillet.web and rillet.benchmarks (which may import each
other), with :mod:`.demo` (the offline agent of ``rillet demo`` and the renderer the CLI and the
examples share). May import rillet.a2a, rillet.mcp, rillet.redis, rillet.temporal, rillet.tracing
and every layer under them (the import-linter contract in pyproject.toml; docs/architecture.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rillet._native import FunctionCall, Message, ToolCall

if TYPE_CHECKING:
    from rich.console import Console

    from rillet.examples.demo import Renderer
    from rillet.models import ScriptedModel
    from rillet.run.agent import Agent

__all__ = ["EXAMPLES", "call", "run_example", "scripted"]

EXAMPLES = {
    "team": "rillet.examples.team",
    "research": "rillet.examples.research",
    "review": "rillet.examples.review_loop",
    "deep": "rillet.examples.deep",
    "plan": "rillet.examples.plan",
}
"""The examples ``rillet demo <name>`` runs, by name, with the module that holds each."""


def call(i: int, name: str, arguments: str, id: str = "") -> ToolCall:
    """A scripted tool call: position ``i`` in its message, JSON ``arguments``."""
    return ToolCall(index=i, id=id or f"call_{name}_{i}", function=FunctionCall(name, arguments))


def scripted(replies: list[Message | str], delay: float) -> ScriptedModel:
    """The examples' model: plays ``replies`` in order, streamed in 3-character chunks
    ``delay`` seconds apart (0: at once)."""
    from rillet.models import ScriptedModel

    return ScriptedModel(replies, chunk_size=3, delay=delay)


def run_example(
    title: str,
    question: str,
    agent: Agent,
    *,
    delay: float,
    streaming: bool,
    color: bool | None,
    epilogue: Callable[[Console, Renderer], None] | None = None,
) -> int:
    """Runs ``agent`` on ``question`` with a Runner and prints the transcript: the title, the
    question, every event with its run path, ``epilogue(console, renderer)`` and a summary.
    Returns the process exit code (1 if any event was an error)."""
    from rillet.examples.demo import make_console, print_summary, print_user, render
    from rillet.runner import Runner

    console = make_console(color)
    console.print(title)
    print_user(console, question)
    start = time.perf_counter()
    r = render(Runner(agent, streaming=streaming).query(question), console, run_paths=True)
    took = time.perf_counter() - start
    if epilogue is not None:
        epilogue(console, r)
    print_summary(console, r, took, delay)
    return 1 if r.errors else 0
