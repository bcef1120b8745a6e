"""`rillet run`: any agent from MODULE:ATTRIBUTE, events live, the run-path tree, interrupts
answered by flags or at the prompt, --json lines, --session chats, and one-line errors."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from support.cli_harness import ctrl_c_at_prompt, one_line_error, rillet, write_agents


@pytest.fixture
def here(tmp_path: Path) -> Path:
    return write_agents(tmp_path)


@pytest.mark.parametrize("spec", ["agents:agent", "agents:build"])
def test_runs_an_agent_or_a_factory_and_shows_its_answer(here: Path, spec: str) -> None:
    result = rillet("run", spec, "hello there", "--no-color", cwd=here)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:4] == ["user", "  hello there", "clerk (model call 1)", "  heard: hello there"]
    assert "1 event · 1 model call · " in result.stdout


def test_a_transfer_draws_the_run_path_tree(here: Path) -> None:
    result = rillet("run", "agents:team", "hi", "--no-color", cwd=here)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "  action: transfer to clerk" in lines
    at = lines.index("desk")
    assert lines[at : at + 3] == ["desk", "  └ clerk", "clerk (model call 2)"]
    assert lines.index("desk (model call 1)") < at


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["agents", "q"], "'agents': expected MODULE:ATTRIBUTE, for example myapp.agents:build_agent"),
        (["no_such_module:x", "q"], "cannot import 'no_such_module': ModuleNotFoundError: No module named"),
        (["agents:missing", "q"], "'agents:missing': agents has no attribute 'missing'"),
        (["agents:number", "q"], "'agents:number' is an int, not an agent"),
        (["agents:broken", "q"], "calling it raised RuntimeError: no model configured (--verbose shows its traceback)"),
        (["agents:agnet", "q"], "agents has no attribute 'agnet'; did you mean 'agent'?"),
        (
            ["agents.py:build", "q"],
            "'agents.py' is a file name: give the module's name, as Python imports it: agents:build",
        ),
        (
            ["./agents:build", "q"],
            "'./agents' is a file name: give the module's name, as Python imports it: agents:build",
        ),
        (
            ["sub/agents.py:build", "q"],
            "'sub/agents.py' is a file name: give the module's name, as Python imports it: sub.agents:build",
        ),
        (["/srv/app/agents.py:build", "q"], "as Python imports it: agents:build, from the folder /srv/app"),
        (["agents:book", "q"], "'agents:book' is a tool (book), not an agent: give the agent that uses it"),
        (["agents:label", "q"], "'agents:label' returned a str ('clerk'), not an agent: the function must return"),
        (["agents:build_for", "q"], "'agents:build_for' is a function that takes arguments (model): give an agent"),
        (["agents:ChatModelAgent", "q"], "is the class ChatModelAgent, not an agent: give an instance of it"),
        (["agents:agent"], 'no question: rillet run MODULE:ATTRIBUTE "QUESTION" (or --session ID to chat)'),
        (["agents:agent", "q", "--approve", "=1"], "--approve '=1': expected ID or ID=VALUE"),
    ],
)
def test_a_bad_agent_or_question_is_one_line_exit_2(here: Path, args: list[str], says: str) -> None:
    result = rillet("run", *args, cwd=here)
    one_line_error(result, 2, says)
    assert result.stderr.startswith("rillet run: ")


def test_an_unusable_store_is_one_line_exit_2(here: Path) -> None:
    (here / "folder.db").mkdir()
    (here / "junk.db").write_bytes(b"not a database at all" * 100)
    conn = sqlite3.connect(here / "foreign.db")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    for db, says in [
        ("folder.db", "--db 'folder.db' is a directory"),
        ("junk.db", "is not a SQLite database"),
        ("foreign.db", "is a SQLite database of another application"),
        ("nowhere/x.db", "cannot open 'nowhere/x.db'"),
    ]:
        one_line_error(rillet("run", "agents:agent", "q", "--db", db, cwd=here), 2, says)


def test_an_approval_answered_by_flags(here: Path) -> None:
    approved = rillet("run", "agents:build", "please book", "--no-color", "--approve", "book", cwd=here)
    assert approved.returncode == 0, approved.stderr
    out = approved.stdout
    assert "action: paused: book(city='Lisbon', nights=2) needs approval" in out
    assert "approval needed: book (" in out and "tool said: booked 2 nights in Lisbon" in out
    rejected = rillet("run", "agents:build", "please book", "--no-color", "--reject", "book=too dear", cwd=here)
    assert rejected.returncode == 0, rejected.stderr
    assert "The user rejected this call of book (too dear)" in " ".join(rejected.stdout.split())
    edited = rillet(
        "run", "agents:build", "please book", "--no-color", "--approve", 'book={"city": "Porto", "nights": 1}', cwd=here
    )
    assert "tool said: booked 1 nights in Porto" in edited.stdout
    unused = rillet("run", "agents:build", "hello", "--approve", "nothing-here", cwd=here)
    assert unused.returncode == 0
    assert unused.stderr == (
        "rillet run: --approve nothing-here matched no interrupt of this run; "
        "the run asked for no approval or other answer\n"
    )
    asked = rillet("run", "agents:build", "please book", "--approve", "book", "--reject", "refundd", cwd=here)
    assert asked.returncode == 0
    assert asked.stderr.startswith(
        "rillet run: --reject refundd matched no interrupt of this run; it asked for: book ("
    )


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("a\n", "tool said: booked 2 nights in Lisbon"),
        ("r not today\n", "The user rejected this call of book (not today)"),
        ('e {"city": "Porto", "nights": 3}\n', "tool said: booked 3 nights in Porto"),
        ('what\ne\n{"city": "Oslo", "nights": 1}\n', "tool said: booked 1 nights in Oslo"),
    ],
)
def test_an_approval_answered_at_the_prompt(here: Path, typed: str, says: str) -> None:
    result = rillet("run", "agents:build", "please book", "--no-color", cwd=here, stdin=typed)
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "book: [a]pprove, [r]eject [reason], [e]dit [JSON]?" in out and says in out


def test_no_answer_stops_the_run_with_status_3_and_a_resume_command_that_works(here: Path) -> None:
    unsaved = rillet("run", "agents:build", "please book", cwd=here)
    one_line_error(unsaved, 3, "rillet run: stopped at book (")
    assert "nothing was saved (with --db FILE it could be resumed later)" in unsaved.stderr
    saved = rillet("run", "agents:build", "please book", "--db", "runs.db", "--checkpoint-id", "trip", cwd=here)
    one_line_error(saved, 3, "it is saved: rillet resume trip --db runs.db agents:build --approve book")
    command = saved.stderr.split("it is saved: ")[1].split()
    resumed = rillet(*command[1:], "--no-color", cwd=here)
    assert resumed.returncode == 0, resumed.stderr
    assert "tool said: booked 2 nights in Lisbon" in resumed.stdout


def test_json_is_one_object_per_event(here: Path) -> None:
    result = rillet("run", "agents:team", "please book", "--json", "--approve", "book", cwd=here)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    call = {"id": "c1", "name": "book", "arguments": '{"city": "Lisbon", "nights": 2}'}
    assert [{k: v for k, v in e.items() if k != "streamed"} for e in events[:2]] == [
        {
            "agent": "desk",
            "run_path": ["desk"],
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "t1", "name": "transfer_to_agent", "arguments": '{"agent_name": "clerk"}'}],
            },
        },
        {
            "agent": "desk",
            "run_path": ["desk"],
            "message": {
                "role": "tool",
                "content": "successfully transferred to agent [clerk]",
                "tool_name": "transfer_to_agent",
                "tool_call_id": "t1",
            },
            "action": {"transfer_to": "clerk"},
        },
    ]
    assert events[2] == {
        "agent": "clerk",
        "run_path": ["desk", "clerk"],
        "message": {"role": "assistant", "content": "Booking.", "tool_calls": [call]},
        "streamed": True,
    }
    (interrupt,) = events[3]["action"]["interrupted"]
    assert interrupt["address"] == ["agent:desk", "agent:clerk", "tool:book:c1"]
    assert interrupt["info"] == {"tool": "book", "arguments": {"city": "Lisbon", "nights": 2}}
    assert [(e["agent"], e["message"]["role"], e["message"]["content"]) for e in events[4:]] == [
        ("clerk", "tool", "booked 2 nights in Lisbon"),
        ("clerk", "assistant", "tool said: booked 2 nights in Lisbon"),
    ]
    stopped = rillet("run", "agents:build", "please book", "--json", cwd=here, stdin="a\n")  # --json never prompts
    assert stopped.returncode == 3
    assert "interrupted" in json.loads(stopped.stdout.splitlines()[-1])["action"]


def test_a_session_remembers_the_first_turn_across_processes_and_in_the_chat_loop(here: Path) -> None:
    first = rillet("run", "agents:build", "I am Ada", "--session", "ada", "--db", "chat.db", "--no-color", cwd=here)
    assert first.returncode == 0, first.stderr
    assert "heard: I am Ada" in first.stdout
    second = rillet("run", "agents:build", "what is my name", "--session", "ada", "--db", "chat.db", "--json", cwd=here)
    assert second.returncode == 0, second.stderr
    (answer,) = [json.loads(line) for line in second.stdout.splitlines()]
    assert answer["message"]["content"] == "heard: I am Ada | what is my name"
    loop = rillet(
        "run", "agents:build", "--session", "bo", "--no-color", cwd=here, stdin="I am Bo\n\nwho am I\n/exit\nignored\n"
    )
    assert loop.returncode == 0, loop.stderr
    assert "heard: I am Bo | who am I" in loop.stdout and "ignored" not in loop.stdout


def test_any_other_interrupt_takes_its_resume_data_from_the_prompt_or_an_id(here: Path) -> None:
    typed = rillet("run", "agents:build", "my budget", "--no-color", cwd=here, stdin='{"eur": 500}\n')
    assert typed.returncode == 0, typed.stderr
    assert "resume data for " in typed.stdout and "tool said: budget is {'eur': 500}" in typed.stdout
    stopped = rillet("run", "agents:build", "my budget", "--json", "--db", "r.db", "--checkpoint-id", "b", cwd=here)
    assert stopped.returncode == 3 and "--approve " in stopped.stderr and "=VALUE" in stopped.stderr
    (asked,) = json.loads(stopped.stdout.splitlines()[-1])["action"]["interrupted"]
    assert asked["info"] == {"question": "what is your budget?"}
    resumed = rillet(
        "resume", "b", "--db", "r.db", "agents:build", "--json", "--approve", f"{asked['id'][:6]}=cheap", cwd=here
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["message"]["content"] == "tool said: budget is 'cheap'"


ODD_OUTPUTS = """
import dataclasses
import datetime

from pydantic import BaseModel

from rillet import AgentEvent, AgentOutput, BaseAgent


class City(BaseModel):
    name: str
    when: datetime.date


@dataclasses.dataclass
class Point:
    x: int


class Oddity(BaseAgent):
    async def _run(self, input, **options):
        loop = {"a": 1}
        loop["self"] = loop
        values = ({(1, 2): "a tuple key"}, loop, City(name="Lisbon", when=datetime.date(2026, 1, 2)), Point(3), b"ab")
        for value in values:
            yield AgentEvent(self.name, output=AgentOutput(customized_output=value))


oddity = Oddity("oddity", "emits outputs JSON has no type for")
"""


def test_json_lines_carry_outputs_json_has_no_type_for(tmp_path: Path) -> None:
    (tmp_path / "odd.py").write_text(ODD_OUTPUTS)
    result = rillet("run", "odd:oddity", "hi", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    outputs = [json.loads(line)["customized_output"] for line in result.stdout.splitlines()]
    assert outputs[0] == {"(1, 2)": "a tuple key"}
    assert outputs[1]["a"] == 1 and isinstance(outputs[1]["self"], dict)  # a cycle is cut, not a crash
    assert outputs[2:] == [{"name": "Lisbon", "when": "2026-01-02"}, {"x": 3}, "b'ab'"]


def test_the_text_transcript_shows_an_agents_typed_output_too(tmp_path: Path) -> None:
    (tmp_path / "odd.py").write_text(ODD_OUTPUTS)
    result = rillet("run", "odd:oddity", "hi", "--no-color", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    shown = [line for line in result.stdout.splitlines() if line.startswith("output: ")]
    assert 'output: {"name": "Lisbon", "when": "2026-01-02"}' in shown and len(shown) == 5


def test_a_mistyped_approve_is_named_when_the_run_stops_for_want_of_it(here: Path) -> None:
    result = rillet("run", "agents:build", "please book", "--db", "runs.db", "--approve", "bok", cwd=here)
    assert result.returncode == 3
    first = result.stderr.splitlines()[0]
    assert first.startswith("rillet run: --approve bok matched no interrupt of this run; it waits for: book (")
    assert first.endswith("); did you mean --approve book?")
    assert result.stderr.splitlines()[1].startswith("rillet run: stopped at book (")
    far = rillet("run", "agents:build", "please book", "--approve", "refundd", cwd=here)
    assert far.returncode == 3
    assert far.stderr.splitlines()[0].endswith(
        "(give --approve a tool's name or an interrupt id, or --approve alone for every approval)"
    )


def test_ctrl_c_at_the_prompt_says_the_run_is_saved_and_how_to_resume_it(here: Path) -> None:
    args = ("agents:build", "please book", "--db", "runs.db", "--checkpoint-id", "trip", "--no-color")
    stopped = ctrl_c_at_prompt("run", *args, cwd=here)
    assert stopped.returncode == 130, stopped.stderr
    assert "Aborted!" not in stopped.stderr and "Traceback" not in stopped.stderr
    assert stopped.stderr.startswith("rillet run: stopped at book (")
    assert stopped.stderr.endswith(
        "Ctrl-C at the prompt; it is saved: rillet resume trip --db runs.db agents:build --approve book\n"
    )
    left = ctrl_c_at_prompt("resume", "trip", "--db", "runs.db", "agents:build", "--no-color", cwd=here)
    assert left.returncode == 130, left.stderr
    assert "Aborted!" not in left.stderr and len(left.stderr.splitlines()) == 1
    assert (
        "rillet resume: Ctrl-C at the prompt: nothing was run and checkpoint[trip] still waits for book ("
        in left.stderr
    )
    assert left.stderr.endswith("to answer it later: rillet resume trip --db runs.db agents:build --approve book\n")
    resumed = rillet("resume", "trip", "--db", "runs.db", "agents:build", "--approve", "book", "--no-color", cwd=here)
    assert resumed.returncode == 0, resumed.stderr
    assert "tool said: booked 2 nights in Lisbon" in resumed.stdout


def test_the_resume_hint_names_a_tool_once_for_its_parallel_calls() -> None:
    from rillet.cli.drive import Pending, resume_hint

    calls = [Pending(f"id{i}", ("agent:a", f"tool:book:c{i}"), None, "book", {}) for i in range(2)]
    assert resume_hint("cp", "runs.db", "m:a", calls) == "rillet resume cp --db runs.db m:a --approve book"


FAILING = '''
from rillet import ChatModelAgent, FunctionCall, Message, ScriptedModel, ToolCall, tool


@tool
def lookup(city: str) -> str:
    """Looks a city up.

    Args:
        city: which.
    """
    raise KeyError(f"no such city: {city}")


def calls_lookup(messages, tools=None):
    if any(m.role == "tool" for m in messages):
        return Message.assistant("sorry")
    return Message.assistant("", [ToolCall(index=0, id="k1", function=FunctionCall("lookup", '{"city": "Oz"}'))])


def no_model(messages, tools=None):
    raise ConnectionError("model endpoint refused the connection")


def tool_fails():
    return ChatModelAgent("scout", description="looks up", model=ScriptedModel(calls_lookup), tools=[lookup])


def model_fails():
    return ChatModelAgent("scout", description="looks up", model=ScriptedModel(no_model))


def factory_fails():
    raise RuntimeError("no key")
'''


@pytest.fixture
def failing(tmp_path: Path) -> Path:
    (tmp_path / "failing.py").write_text(FAILING)
    return tmp_path


def test_a_model_error_shows_its_type_and_verbose_its_traceback(failing: Path) -> None:
    plain = rillet("run", "failing:model_fails", "q", "--no-color", cwd=failing)
    assert plain.returncode == 1
    lines = plain.stdout.splitlines()
    at = lines.index("error from scout: ConnectionError: model endpoint refused the connection")
    assert lines[at + 1] == "    (--verbose shows its traceback)"
    assert "Traceback" not in plain.stderr
    verbose = rillet("run", "failing:model_fails", "q", "--no-color", "--verbose", cwd=failing)
    assert verbose.returncode == 1
    assert "error from scout: ConnectionError: model endpoint refused the connection" in verbose.stdout
    assert "--verbose shows" not in verbose.stdout
    assert verbose.stderr.startswith("Traceback (most recent call last):")
    assert 'failing.py", line' in verbose.stderr and "in no_model" in verbose.stderr
    assert verbose.stderr.rstrip().endswith("ConnectionError: model endpoint refused the connection")
    as_json = rillet("run", "failing:model_fails", "q", "--json", "-v", cwd=failing)
    (line,) = as_json.stdout.splitlines()
    assert json.loads(line)["error"]["type"] == "ConnectionError" and "in no_model" in as_json.stderr


def test_a_tool_error_shows_its_type_under_its_result_and_verbose_its_traceback(failing: Path) -> None:
    plain = rillet("run", "failing:tool_fails", "q", "--no-color", cwd=failing)
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    at = lines.index("  ← lookup")
    assert lines[at + 1 : at + 4] == [
        "    Error: 'no such city: Oz'",
        "    lookup raised KeyError: 'no such city: Oz'",
        "    (--verbose shows its traceback)",
    ]
    verbose = rillet("run", "failing:tool_fails", "q", "--no-color", "-v", cwd=failing)
    assert "    lookup raised KeyError: 'no such city: Oz'" in verbose.stdout.splitlines()
    assert verbose.stderr.startswith("Traceback (most recent call last):") and "in lookup" in verbose.stderr
    assert verbose.stderr.rstrip().endswith("KeyError: 'no such city: Oz'")


def test_a_factory_error_offers_verbose_and_verbose_shows_its_traceback(failing: Path) -> None:
    one_line_error(
        rillet("run", "failing:factory_fails", "q", cwd=failing),
        2,
        "rillet run: 'failing:factory_fails': calling it raised RuntimeError: no key (--verbose shows its traceback)",
    )
    verbose = rillet("run", "failing:factory_fails", "q", "--verbose", cwd=failing)
    assert verbose.returncode == 2
    assert verbose.stderr.startswith("Traceback (most recent call last):") and "in factory_fails" in verbose.stderr
    assert (
        verbose.stderr.splitlines()[-1] == "rillet run: 'failing:factory_fails': calling it raised RuntimeError: no key"
    )


def test_commands_that_run_agents_take_verbose(here: Path) -> None:
    for command in ("run", "resume", "demo"):
        assert "print the traceback of a model or tool error" in " ".join(
            rillet(command, "--help", cwd=here).stdout.split()
        )


def test_a_chat_names_an_unmatched_flag_once_at_its_end_not_after_a_turn_that_did_not_need_it(here: Path) -> None:
    chat = rillet(
        "run",
        "agents:build",
        "hello",
        "--session",
        "s",
        "--approve",
        "book",
        "--reject",
        "refund",
        cwd=here,
        stdin="please book\n",
    )
    assert chat.returncode == 0, chat.stderr
    assert chat.stderr.startswith("rillet run: --reject refund matched no interrupt of this run; it asked for: book (")
    assert len(chat.stderr.splitlines()) == 1 and "--approve book" not in chat.stderr


HANGING = '''
import asyncio
import json

from rillet import ChatModelAgent, FunctionCall, Message, ScriptedModel, ToolCall, tool
from rillet.tools.approval import requires_approval


@tool
def book(city: str) -> str:
    """Books a room.

    Args:
        city: where.
    """
    return f"booked {city}"


@tool
async def hang() -> str:
    """Never returns (a call that takes too long, left with Ctrl-C)."""
    await asyncio.Event().wait()
    return "never"


def call(name, args):
    return Message.assistant(name, [ToolCall(index=0, id="c_" + name, function=FunctionCall(name, json.dumps(args)))])


def reply(messages, tools=None):
    if "book" in messages[-1].content and messages[-1].role == "user":
        return call("book", {"city": "Lisbon"})
    return call("hang", {})


def build():
    return ChatModelAgent("clerk", model=ScriptedModel(reply), tools=[requires_approval(book), hang])
'''


def test_ctrl_c_while_the_run_is_going_says_what_was_kept_and_exits_130(tmp_path: Path) -> None:
    """Ctrl-C during a tool call (not at a prompt) printed only click's "Aborted!" with status 1."""
    (tmp_path / "hanging.py").write_text(HANGING)
    left = ctrl_c_at_prompt("run", "hanging:build", "wait for it", "--no-color", cwd=tmp_path, prompt="calls hang(")
    assert left.returncode == 130, (left.stdout, left.stderr)
    assert "Aborted!" not in left.stderr and "Traceback" not in left.stderr
    assert left.stderr.splitlines() == [
        "rillet run: stopped by Ctrl-C while the run was going; nothing was saved (a run is saved where it "
        "stops for an answer, with --db FILE)"
    ]


def test_ctrl_c_during_a_resume_frees_the_checkpoint_for_the_next_resume(tmp_path: Path) -> None:
    """A resume left with Ctrl-C kept its claim on the checkpoint: for the claim's lease (10
    minutes) every `rillet resume` of it said it was "already being resumed"."""
    from rillet import SqliteCheckpointStore

    (tmp_path / "hanging.py").write_text(HANGING)
    first = rillet("run", "hanging:build", "book it", "--db", "runs.db", "--checkpoint-id", "t1", cwd=tmp_path)
    assert first.returncode == 3, first.stderr
    args = ("resume", "t1", "--db", "runs.db", "hanging:build", "--approve", "book", "--no-color")
    left = ctrl_c_at_prompt(*args, cwd=tmp_path, prompt="calls hang(")
    assert left.returncode == 130, (left.stdout, left.stderr)
    assert "Aborted!" not in left.stderr and "Traceback" not in left.stderr
    assert left.stderr.splitlines() == [
        "rillet resume: stopped by Ctrl-C while the run was going; checkpoint[t1] is kept as it was, to "
        "resume again: rillet resume t1 --db runs.db hanging:build --approve book"
    ]
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    try:
        assert store.claim("t1", "the next resume") is not None  # not "already being resumed"
    finally:
        store.close()
    again = ctrl_c_at_prompt(
        "run", "hanging:build", "book it", "--db", "runs.db", "--checkpoint-id", "t2", "--approve", "book",
        "--no-color", cwd=tmp_path, prompt="calls hang(",
    )  # fmt: skip
    assert again.returncode == 130, (again.stdout, again.stderr)
    assert again.stderr.splitlines() == [
        "rillet run: stopped by Ctrl-C while the run was going; checkpoint[t2] is kept as it was at its last "
        "interrupt, to resume again: rillet resume t2 --db runs.db hanging:build --approve book"
    ]


def test_the_resume_command_it_prints_runs_as_printed_with_spaces_in_the_path_or_id(here: Path) -> None:
    """The command that continues a saved run was printed unquoted: with a space in the --db
    path or the checkpoint id, pasted into a shell it named other files and ids."""
    import shlex

    stopped = rillet("run", "agents:build", "please book", "--db", "my runs.db", "--checkpoint-id", "a b", cwd=here)
    assert stopped.returncode == 3, stopped.stderr
    command = stopped.stderr.rpartition("it is saved: ")[2].strip()
    assert command == "rillet resume 'a b' --db 'my runs.db' agents:build --approve book"
    resumed = rillet(*shlex.split(command)[1:], "--no-color", cwd=here)
    assert resumed.returncode == 0, resumed.stderr
    assert "tool said: booked 2 nights in Lisbon" in resumed.stdout


def test_text_that_is_not_utf8_is_named_before_it_reaches_the_model(here: Path) -> None:
    """A question or a chat line holding bytes that are not UTF-8 (a file in another encoding)
    ended the run with a traceback (stdin read strictly, in a UTF-8 locale), or with "'utf-8' codec can't encode character '\\udcff' ... surrogates not
    allowed", after the question had been printed."""
    import os
    import subprocess
    import sys

    asked = rillet("run", "agents:build", "caf\udce9", cwd=here)  # b"caf\xe9": Latin-1
    one_line_error(asked, 2, "the question is not UTF-8 text (byte 0xe9 at position 3)")
    assert asked.stdout == ""
    for errors in ("surrogateescape", "strict"):  # how a C locale reads stdin, and a UTF-8 locale
        chat = subprocess.run(
            [sys.executable, "-m", "rillet.cli", "run", "agents:build", "--session", "s", "--no-color"],
            input=b"caf\xe9\nhello\n",
            capture_output=True,
            timeout=60,
            cwd=here,
            env={**os.environ, "PYTHONIOENCODING": f"utf-8:{errors}"},
        )
        assert chat.returncode == 0, chat.stderr
        assert b"that line is not UTF-8 text (byte 0xe9 at position 3): it was not sent" in chat.stderr
        assert b"heard: hello" in chat.stdout  # the chat went on
        answered = subprocess.run(  # at the approval prompt: asked again
            [sys.executable, "-m", "rillet.cli", "run", "agents:build", "please book", "--no-color"],
            input=b"r too dear\xe9\na\n",
            capture_output=True,
            timeout=60,
            cwd=here,
            env={**os.environ, "PYTHONIOENCODING": f"utf-8:{errors}"},
        )
        assert answered.returncode == 0, answered.stderr
        assert "that answer is not UTF-8 text (byte 0xe9 at position 10)" in answered.stdout.decode()
        assert "tool said: booked 2 nights in Lisbon" in answered.stdout.decode()


def test_a_checkpoint_id_that_is_taken_is_refused_not_overwritten(here: Path) -> None:
    """`--checkpoint-id trip` again, with the run saved as trip still waiting: the new run
    replaced it when it paused, and the first run's question was lost."""
    first = rillet("run", "agents:build", "please book", "--db", "runs.db", "--checkpoint-id", "trip", cwd=here)
    assert first.returncode == 3, first.stderr
    again = rillet("run", "agents:build", "book again", "--db", "runs.db", "--checkpoint-id", "trip", cwd=here)
    one_line_error(
        again,
        2,
        "rillet run: checkpoint 'trip' is in runs.db already, a run waiting to be resumed "
        "(rillet inspect trip --db runs.db shows it): resume it, rillet resume trip --db runs.db agents:build, "
        "or give another --checkpoint-id",
    )
    shown = rillet("inspect", "trip", "--db", "runs.db", "--no-color", cwd=here)
    assert "please book" in shown.stdout and "book again" not in shown.stdout
