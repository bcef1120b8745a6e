"""A research agent that uses two other agents as tools.

``researcher`` is a ChatModelAgent whose tools are two agents wrapped in
:class:`rillet.AgentTool`: ``searcher`` (itself an agent with a ``search_notes`` tool) and
``summarizer``. Each agent tool runs its agent on the ``request`` argument, with a fresh
conversation of its own, and returns the text of the agent's last message as the tool result.

The searcher is wrapped with ``emit_internal_events=True``, so its own model calls and tool
calls reach you too, under the run path ``researcher / searcher``; the summarizer is not, so
only its result shows.

Run it: ``rillet demo research`` or ``python -m rillet.examples.research`` (``--fast``,
``--no-color``).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from rillet._native import Message
from rillet.examples import call, run_example, scripted

if TYPE_CHECKING:
    from rillet.chatmodel import ChatModelAgent

__all__ = ["NOTES", "QUESTION", "build_researcher", "main"]

QUESTION = "How does rillet hand events from a worker thread to asyncio code, and is it fast?"

NOTES = {
    "channel": "Every event moves through rillet.Channel, an unbounded MPMC FIFO in Rust.",
    "wakeups": "Wakeups are coalesced: one per parked receiver, never one per item.",
    "threads": "A blocking recv releases the GIL; async for works on any event loop.",
}
"""The notes ``search_notes`` searches: a stand-in for a search engine, so the example runs
offline."""

_PASSAGES = "\n".join(f"[{key}] {text}" for key, text in NOTES.items())

_SUMMARY = (
    "- One Rust channel carries every event, between threads and event loops.\n"
    "- Receivers wait without holding the GIL, with sync or async iteration.\n"
    "- Wakeups are batched per receiver, so bursts cost one wakeup, not one each."
)


def search_notes(query: str) -> str:
    """Searches the project's notes; returns matching passages, one a line, with their keys.

    Args:
        query: words to look for.
    """
    words = {w.strip(".,?").lower() for w in query.split() if len(w) > 3}
    hits = [f"[{key}] {text}" for key, text in NOTES.items() if key in words or words & set(text.lower().split())]
    return "\n".join(hits) or "no passages found"


def build_researcher(delay: float = 0.0) -> tuple[ChatModelAgent, ChatModelAgent, ChatModelAgent]:
    """The researcher (what a Runner runs) and the two agents it calls as tools: the
    searcher and the summarizer."""
    from rillet.chatmodel import ChatModelAgent
    from rillet.compose.agent_tool import AgentTool
    from rillet.tools import tool

    searcher = ChatModelAgent(
        name="searcher",
        description="Finds passages in the project's notes that answer a question.",
        instruction="Search the notes and return the relevant passages verbatim, with their keys.",
        model=scripted(
            [
                Message.assistant("", [call(0, "search_notes", '{"query": "event channel threads wakeups"}')]),
                "Found 3 passages:\n" + _PASSAGES,
            ],
            delay,
        ),
        tools=[tool(search_notes)],
    )
    summarizer = ChatModelAgent(
        name="summarizer",
        description="Condenses passages into three short bullet points.",
        instruction="Summarise the passages in three bullets of at most twelve words.",
        model=scripted([_SUMMARY], delay),
    )
    researcher = ChatModelAgent(
        name="researcher",
        description="Answers questions about the project from its notes.",
        instruction="Answer from the notes only: search first, then summarise, then answer.",
        model=scripted(
            [
                Message.assistant(
                    "I'll search the notes first.",
                    [call(0, "searcher", json.dumps({"request": "how events cross from threads to asyncio"}))],
                ),
                Message.assistant(
                    "Three relevant passages. Let me condense them.",
                    [call(0, "summarizer", json.dumps({"request": _PASSAGES}))],
                ),
                "A worker thread sends into one Rust channel and your asyncio code reads it "
                "with `async for`; blocking readers release the GIL. It is fast because "
                "wakeups are coalesced per receiver, so a burst of events costs one wakeup "
                "[channel, threads, wakeups].",
            ],
            delay,
        ),
        tools=[AgentTool(searcher, emit_internal_events=True), AgentTool(summarizer)],
    )
    return researcher, searcher, summarizer


def main(*, delay: float = 0.02, streaming: bool = True, color: bool | None = None) -> int:
    """Runs the researcher on the question and prints the transcript."""
    researcher, _, _ = build_researcher(delay)
    title = "[bold]rillet demo research[/]: an agent calls two agents as tools (offline)"
    return run_example(title, QUESTION, researcher, delay=delay, streaming=streaming, color=color)


if __name__ == "__main__":
    from rillet.cli import main as cli

    raise SystemExit(cli(["demo", "research", *sys.argv[1:]]))
