"""A write -> review loop: a LoopAgent runs a writer and a reviewer until the reviewer approves.

Each round the ``writer`` drafts (or revises) a tagline and the ``reviewer`` either asks for
changes in plain text or calls its ``approve`` tool. That tool attaches a break-loop action to
its result with ``rillet.send_tool_gen_action(rillet.new_break_loop_action("reviewer"))``, and
``approve`` returns directly, so the reviewer's turn ends there and the loop stops after it.
``max_iterations`` is a safety net: without an approval the loop would stop after that many
rounds.

Both agents see the conversation so far: their own messages as they were, the other's
rewritten as ``For context: [reviewer] said: ...`` user messages.

Run it: ``rillet demo review`` or ``python -m rillet.examples.review_loop`` (``--fast``,
``--no-color``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rillet._native import Message
from rillet.examples import call, run_example, scripted

if TYPE_CHECKING:
    from rich.console import Console

    from rillet.chatmodel import ChatModelAgent
    from rillet.compose.workflow import LoopAgent
    from rillet.examples.demo import Renderer

__all__ = ["MAX_ROUNDS", "QUESTION", "approve", "build_loop", "main"]

QUESTION = "Write a one-line tagline for rillet, an agent development kit with a Rust core."

MAX_ROUNDS = 5


async def approve(note: str) -> str:
    """Approves the latest draft and ends the review loop.

    Args:
        note: why the draft is good enough.
    """
    from rillet.data.events import new_break_loop_action
    from rillet.run.context import send_tool_gen_action

    send_tool_gen_action(new_break_loop_action("reviewer"))
    return f"approved: {note}"


def build_loop(delay: float = 0.0) -> tuple[LoopAgent, ChatModelAgent, ChatModelAgent]:
    """The loop (what a Runner runs), its writer and its reviewer."""
    from rillet.chatmodel import ChatModelAgent
    from rillet.compose.workflow import LoopAgent
    from rillet.tools import tool

    writer = ChatModelAgent(
        name="writer",
        description="Drafts a tagline and revises it after review.",
        instruction="Write the tagline asked for. If the reviewer asked for changes, revise it.",
        model=scripted(
            [
                "rillet: an agent development kit for Python whose event channel, stream "
                "fan-out and checkpoint codec are all written in Rust",
                "rillet: agents that stream, on a Rust core.",
            ],
            delay,
        ),
    )
    reviewer = ChatModelAgent(
        name="reviewer",
        description="Reviews the latest draft: asks for changes, or approves it.",
        instruction="Review the latest draft. Ask for concrete changes, or call approve.",
        model=scripted(
            [
                "Too long, and it lists parts instead of a benefit. Keep it under eight "
                "words and say what the user gets.",
                Message.assistant("", [call(0, "approve", '{"note": "short, concrete, names the Rust core"}')]),
            ],
            delay,
        ),
        tools=[tool(approve)],
        return_directly=["approve"],
    )
    loop = LoopAgent(
        "review_loop", description="Writes, reviews, revises.", sub_agents=[writer, reviewer], max_iterations=MAX_ROUNDS
    )
    return loop, writer, reviewer


def main(*, delay: float = 0.02, streaming: bool = True, color: bool | None = None) -> int:
    """Runs the loop on the request and prints the transcript."""
    loop, writer, _ = build_loop(delay)

    def epilogue(console: Console, r: Renderer) -> None:
        rounds = writer.model.call_count  # type: ignore[attr-defined]
        approved = any(a.startswith("break loop") for a in r.actions)
        how = "the reviewer approved" if approved else "no approval"
        console.print(f"\n[bold]Loop ended after {rounds} of at most {MAX_ROUNDS} rounds:[/] {how}.")

    title = "[bold]rillet demo review[/]: a writer and a reviewer in a loop (offline)"
    return run_example(title, QUESTION, loop, delay=delay, streaming=streaming, color=color, epilogue=epilogue)


if __name__ == "__main__":
    from rillet.cli import main as cli

    raise SystemExit(cli(["demo", "review", *sys.argv[1:]]))
