"""The `rillet` command run as a user runs it: a subprocess, in a folder holding a small agent
module (agents.py: a scripted clerk with an approval-gated `book` tool, a desk that transfers to
it, and things that are not agents), against real SQLite files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

AGENTS = '''
import json

from rillet import ChatModelAgent, FunctionCall, Message, ScriptedModel, ToolCall, set_sub_agents, tool
from rillet.tools.approval import requires_approval
from rillet.run.interrupts import get_interrupt_state, get_resume_context, interrupt


@tool
def book(city: str, nights: int) -> str:
    """Books a room.

    Args:
        city: where.
        nights: how many nights.
    """
    return f"booked {nights} nights in {city}"


@tool
def budget() -> str:
    """Asks the person for a budget (an interrupt that is not an approval)."""
    if not get_interrupt_state()[0]:
        raise interrupt({"question": "what is your budget?"})
    return f"budget is {get_resume_context()[2]!r}"


def reply(messages, tools=None):
    """Books when a user message says so (once), reports the tool's result, else echoes
    every user message it was given: a second turn shows what the first said."""
    users = [m.content for m in messages if m.role == "user" and not m.content.startswith("For context")]
    done = [m for m in messages if m.role == "tool" and m.tool_name in ("book", "budget")]
    if done:
        return Message.assistant(f"tool said: {done[-1].content}")
    if any("budget" in u for u in users):
        return Message.assistant("", [ToolCall(index=0, id="b1", function=FunctionCall("budget", "{}"))])
    if any("book" in u for u in users):
        args = json.dumps({"city": "Lisbon", "nights": 2})
        return Message.assistant("Booking.", [ToolCall(index=0, id="c1", function=FunctionCall("book", args))])
    return Message.assistant("heard: " + " | ".join(users))


def build():
    return ChatModelAgent(
        "clerk", description="books rooms", model=ScriptedModel(reply, chunk_size=4), tools=[requires_approval(book), budget]
    )


def route(messages, tools=None):
    args = json.dumps({"agent_name": "clerk"})
    return Message.assistant("", [ToolCall(index=0, id="t1", function=FunctionCall("transfer_to_agent", args))])


def team():
    return set_sub_agents(ChatModelAgent("desk", description="routes", model=ScriptedModel(route)), [build()])


def broken():
    raise RuntimeError("no model configured")


def label():
    return "clerk"


def build_for(model):
    return build()


agent = build()
number = 42
'''


def write_agents(folder: Path) -> Path:
    (folder / "agents.py").write_text(AGENTS)
    return folder


def rillet(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``rillet ARGS`` in ``cwd``, plain text; ``stdin``: what is piped in (None: nothing, at once
    at its end: never a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "rillet.cli", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def one_line_error(result: subprocess.CompletedProcess[str], code: int, says: str) -> None:
    """``result`` failed with ``code`` and one line on stderr saying ``says``, no traceback."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def ctrl_c_at_prompt(*args: str, cwd: Path, prompt: str = "[e]dit [JSON]? ") -> subprocess.CompletedProcess[str]:
    """``rillet ARGS`` in ``cwd``, with stdin open (nothing typed) until ``prompt`` shows, then
    Ctrl-C (SIGINT), as a person leaving the prompt does; what it printed, all of it."""
    import os
    import select
    import signal
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "rillet.cli", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
    )
    assert proc.stdout is not None
    shown = b""
    deadline = time.monotonic() + 60
    while prompt.encode() not in shown and time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 1)[0]:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            shown += chunk
    from support.waiting import process_waits, wait_until

    wait_until(lambda: process_waits(proc.pid), "the prompt to wait for a line")  # the prompt printed whole
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, (shown + out).decode(), err.decode())
