"""`rillet inspect` and `rillet resume MODULE:ATTRIBUTE` on a run saved by `rillet run` in a real
SQLite file, through subprocesses: what a checkpoint holds, the list of them, and one-line errors."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from support.cli_harness import one_line_error, rillet, write_agents


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A folder with agents.py and runs.db holding checkpoint `trip`: the desk transferred to the
    clerk, whose booking waits for approval."""
    write_agents(tmp_path)
    result = rillet("run", "agents:team", "please book", "--db", "runs.db", "--checkpoint-id", "trip", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    return tmp_path


def test_inspect_lists_checkpoints_with_size_and_age(saved: Path) -> None:
    listed = rillet("inspect", "--db", "runs.db", "--no-color", cwd=saved)
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["checkpoint", "size", "age"]
    assert row.split()[0] == "trip" and row.split()[2] == "KB" and row.endswith("s ago")
    (entry,) = [
        json.loads(line) for line in rillet("inspect", "--db", "runs.db", "--json", cwd=saved).stdout.splitlines()
    ]
    assert entry["id"] == "trip" and entry["size"] > 500 and 0 <= entry["age_seconds"] < 60
    assert entry["updated_at"].endswith("+00:00")


def test_inspect_shows_a_checkpoint_without_running_it(saved: Path) -> None:
    shown = rillet("inspect", "trip", "--db", "runs.db", "--no-color", cwd=saved)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    lines = out.splitlines()
    assert lines[0].startswith("checkpoint trip · 1.") and lines[1] == "agent: desk"
    assert "user" in lines and "  please book" in lines and "session values: none" in lines
    assert "events (3)" in lines and "  action: transfer to clerk" in lines and "  └ clerk" in lines
    assert "→ calls book" in out and "booked" not in out  # shown, not run
    tree = lines[lines.index("interrupts (2)") + 1 :]
    assert tree[0] == "  agent:clerk" and tree[2] == "    address agent:desk / agent:clerk"
    leaf = tree.index("    tool:book:c1 waiting")
    assert (
        tree[leaf + 1].startswith("      id ")
        and tree[leaf + 2] == "      address agent:desk / agent:clerk / tool:book:c1"
    )
    assert tree[leaf + 3] == """      info {"tool": "book", "arguments": {"city": "Lisbon", "nights": 2}}"""
    assert tree[leaf + 4] == """      state {'arguments': '{"city": "Lisbon", "nights": 2}'}"""

    data = json.loads(rillet("inspect", "trip", "--db", "runs.db", "--json", cwd=saved).stdout)
    assert data["agent"]["name"] == "desk" and data["input"] == [{"role": "user", "content": "please book"}]
    assert data["session_values"] == {} and data["session"] is None and data["info"] is None
    assert [e["agent"] for e in data["events"]] == ["desk", "desk", "clerk"]
    assert data["events"][1]["action"] == {"transfer_to": "clerk"}
    outer, leaf_json = sorted(data["interrupts"], key=lambda i: len(i["address"]))
    assert outer["address"] == ["agent:desk", "agent:clerk"] and outer["parent"] is None and not outer["root_cause"]
    assert leaf_json["parent"] == outer["id"] and leaf_json["root_cause"]
    assert leaf_json["state"] == {"arguments": '{"city": "Lisbon", "nights": 2}'}
    assert leaf_json["info"] == {"tool": "book", "arguments": {"city": "Lisbon", "nights": 2}}
    assert outer["info"] is None


def test_inspect_and_resume_show_what_an_interrupt_asks(tmp_path: Path) -> None:
    write_agents(tmp_path)
    asked = rillet("run", "agents:build", "my budget?", "--db", "runs.db", "--checkpoint-id", "b", cwd=tmp_path)
    assert asked.returncode == 3, asked.stderr
    shown = rillet("inspect", "b", "--db", "runs.db", "--no-color", cwd=tmp_path).stdout.splitlines()
    leaf = shown.index("    tool:budget:b1 waiting")
    assert shown[leaf + 3] == '      info {"question": "what is your budget?"}'
    data = json.loads(rillet("inspect", "b", "--db", "runs.db", "--json", cwd=tmp_path).stdout)
    (root_cause,) = [i for i in data["interrupts"] if i["root_cause"]]
    assert root_cause["info"] == {"question": "what is your budget?"}
    resumed = rillet("resume", "b", "--db", "runs.db", "agents:build", "--no-color", cwd=tmp_path, stdin="900\n")
    assert resumed.returncode == 0, resumed.stderr
    assert '  info {"question": "what is your budget?"}' in resumed.stdout.splitlines()
    assert "budget is 900" in resumed.stdout


def test_inspect_errors_are_one_line(saved: Path) -> None:
    (saved / "junk.db").write_bytes(b"not a database at all" * 100)
    one_line_error(
        rillet("inspect", "nope", "--db", "runs.db", cwd=saved), 1, "rillet inspect: no checkpoint 'nope' in"
    )
    one_line_error(rillet("inspect", "--db", "absent.db", cwd=saved), 2, "no checkpoint database at absent.db")
    assert not (saved / "absent.db").exists()  # nothing created
    one_line_error(rillet("inspect", "--db", "junk.db", cwd=saved), 2, "is not a SQLite database")
    one_line_error(rillet("inspect", "--db", ".", cwd=saved), 2, "--db '.' is a directory")


def test_resume_and_inspect_both_need_db_and_say_which_file(saved: Path) -> None:
    import tempfile

    demo_db = str(Path(tempfile.gettempdir()) / "rillet-demo.db")
    for command in (["inspect", "trip"], ["inspect"], ["resume", "trip", "agents:team", "--approve"]):
        missing = rillet(*command, cwd=saved)
        one_line_error(
            missing, 2, f"rillet {command[0]}: --db FILE is missing: give the SQLite file the run was saved in"
        )
        assert f"rillet demo's is {demo_db}" in missing.stderr
    for command in ("inspect", "resume"):
        assert "the SQLite file the run was saved in" in " ".join(rillet(command, "--help", cwd=saved).stdout.split())


def test_resume_with_the_agent_as_an_argument_and_an_approval(saved: Path) -> None:
    refused = rillet("resume", "trip", "--db", "runs.db", "agents:team", cwd=saved)  # no answer: nothing runs
    one_line_error(refused, 2, "waits for an approval (book (")
    assert (
        "pass --approve or --reject (nothing was run): rillet resume trip --db runs.db agents:team --approve book"
        in (refused.stderr)
    )
    mistyped = rillet("resume", "trip", "--db", "runs.db", "agents:team", "--approve", "bok", cwd=saved)
    assert mistyped.returncode == 2
    assert mistyped.stderr.splitlines()[0].startswith(
        "rillet resume: --approve bok matched no interrupt of this run; it waits for: book ("
    )
    assert mistyped.stderr.splitlines()[0].endswith("did you mean --approve book?")
    resumed = rillet("resume", "trip", "--db", "runs.db", "agents:team", "--no-color", "--approve", "book", cwd=saved)
    assert resumed.returncode == 0, resumed.stderr
    assert "approval needed: book (" in resumed.stdout and "tool said: booked 2 nights in Lisbon" in resumed.stdout
    gone = rillet("inspect", "--db", "runs.db", "--no-color", cwd=saved)
    assert gone.stdout.startswith("no checkpoints in")  # a finished run's checkpoint is deleted


def test_resume_answers_at_the_prompt_and_as_json(saved: Path) -> None:
    resumed = rillet("resume", "trip", "--db", "runs.db", "agents:team", "--json", "--reject", "book=later", cwd=saved)
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert [e["message"]["role"] for e in events] == ["tool", "assistant"]
    assert events[0]["message"]["content"].startswith("The user rejected this call of book (later)")
    assert all(e["run_path"] == ["desk", "clerk"] for e in events)
    again = rillet("run", "agents:build", "please book", "--db", "runs.db", "--checkpoint-id", "t2", cwd=saved)
    assert again.returncode == 3
    typed = rillet("resume", "t2", "--db", "runs.db", "agents:build", "--no-color", cwd=saved, stdin="y\n")
    assert typed.returncode == 0, typed.stderr
    assert "tool said: booked 2 nights in Lisbon" in typed.stdout


def test_resume_reads_a_bare_approve_before_the_agent_and_refuses_two_agents(saved: Path) -> None:
    bare = rillet("resume", "trip", "--db", "runs.db", "--no-color", "--approve", "agents:team", cwd=saved)
    assert bare.returncode == 0, bare.stderr
    assert "tool said: booked 2 nights in Lisbon" in bare.stdout
    twice = rillet("resume", "x", "--db", "runs.db", "agents:team", "--agent", "agents:build", cwd=saved)
    one_line_error(twice, 2, "the agent is given twice (agents:team and --agent agents:build): give it once")
    bad = rillet("resume", "x", "--db", "runs.db", "agents:number", cwd=saved)
    one_line_error(bad, 2, "rillet resume: 'agents:number' is an int, not an agent")


def test_resume_on_an_unusable_store_is_one_line_exit_1(saved: Path) -> None:
    conn = sqlite3.connect(saved / "foreign.db")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    one_line_error(rillet("resume", "x", "--db", "foreign.db", "agents:team", cwd=saved), 1, "another application")
    one_line_error(rillet("resume", "x", "--db", ".", "agents:team", cwd=saved), 1, "is a directory")
    one_line_error(rillet("resume", "nope", "--db", "runs.db", "agents:team", cwd=saved), 1, "no checkpoint 'nope'")


def test_a_resumed_tool_result_comes_under_its_agent_header(saved: Path) -> None:
    again = rillet("run", "agents:build", "please book", "--db", "runs.db", "--checkpoint-id", "t3", cwd=saved)
    assert again.returncode == 3
    resumed = rillet("resume", "t3", "--db", "runs.db", "agents:build", "--no-color", "--approve", "book", cwd=saved)
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stdout.splitlines()
    at = lines.index("  ← book")
    assert lines[at - 1] == "clerk (tool results)", resumed.stdout
    assert lines[at + 1 :] == [
        "    booked 2 nights in Lisbon",
        "",
        "clerk (model call 1)",
        "  tool said: booked 2 nights in Lisbon",
    ]


def test_inspect_lists_and_shows_sessions(tmp_path: Path) -> None:
    write_agents(tmp_path)
    for turn in ("I am Ada", "please book"):
        said = rillet(
            "run", "agents:build", turn, "--session", "ada", "--db", "chat.db", "--approve", "book", cwd=tmp_path
        )
        assert said.returncode == 0, said.stderr
    assert rillet("run", "agents:build", "hi", "--session", "bo", "--db", "chat.db", cwd=tmp_path).returncode == 0

    checkpoints = rillet("inspect", "--db", "chat.db", "--no-color", cwd=tmp_path).stdout.splitlines()
    assert checkpoints == [
        "no checkpoints in chat.db",
        "sessions: 2 (rillet inspect --sessions --db chat.db lists them)",
    ]
    listed = rillet("inspect", "--sessions", "--db", "chat.db", "--no-color", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["session", "turns", "last", "turn"]
    assert [row.split()[:2] for row in rows] == [["bo", "1"], ["ada", "2"]]  # the last used first
    assert all(row.endswith("s ago") for row in rows)
    as_json = [
        json.loads(line)
        for line in rillet("inspect", "--sessions", "--db", "chat.db", "--json", cwd=tmp_path).stdout.splitlines()
    ]
    assert [(e["id"], e["turns"]) for e in as_json] == [("bo", 1), ("ada", 2)]

    shown = rillet("inspect", "--session", "ada", "--db", "chat.db", "--no-color", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("session ada · 2 turns · last turn ") and lines[1] == "values: none"
    second = lines[lines.index("turn 2") :]
    assert second == [
        "turn 2",
        "  user",
        "    please book",
        "  assistant",
        "    Booking.",
        '    → calls book({"city": "Lisbon", "nights": 2})',
        "  ← book",
        "    booked 2 nights in Lisbon",
        "  assistant",
        "    tool said: booked 2 nights in Lisbon",
    ]
    data = json.loads(rillet("inspect", "--session", "ada", "--db", "chat.db", "--json", cwd=tmp_path).stdout)
    assert data["id"] == "ada" and data["values"] == {} and data["summary"] == []
    assert [t["index"] for t in data["turns"]] == [1, 2]
    assert data["turns"][0]["messages"] == [
        {"role": "user", "content": "I am Ada"},
        {"role": "assistant", "content": "heard: I am Ada"},
    ]


def test_inspect_session_errors_say_what_to_do(tmp_path: Path) -> None:
    write_agents(tmp_path)
    assert rillet("run", "agents:build", "hi", "--session", "bo", "--db", "chat.db", cwd=tmp_path).returncode == 0
    one_line_error(
        rillet("inspect", "--session", "nope", "--db", "chat.db", cwd=tmp_path),
        1,
        "rillet inspect: no session 'nope' in chat.db (rillet inspect --sessions --db chat.db lists them)",
    )
    one_line_error(
        rillet("inspect", "trip", "--session", "bo", "--db", "chat.db", cwd=tmp_path),
        2,
        "CHECKPOINT and --session given together: give one (a checkpoint, --sessions, or --session ID)",
    )
    one_line_error(
        rillet("inspect", "--sessions", "--db", "absent.db", cwd=tmp_path), 2, "no checkpoint database at absent.db"
    )
    assert rillet("run", "agents:build", "hi", "--db", "plain.db", cwd=tmp_path).returncode == 0
    empty = rillet("inspect", "--sessions", "--db", "plain.db", "--no-color", cwd=tmp_path)
    assert empty.stdout == "no sessions in plain.db (rillet run --session ID --db plain.db starts one)\n"
    assert rillet("inspect", "--sessions", "--db", "plain.db", "--json", cwd=tmp_path).stdout == ""
    one_line_error(
        rillet("inspect", "--session", "bo", "--db", "plain.db", cwd=tmp_path),
        1,
        "rillet inspect: no session 'bo' in plain.db: it holds no sessions (rillet run --session ID --db plain.db starts one)",
    )
    # the command in the hint runs as printed: a path with a space is quoted
    (tmp_path / "my runs.db").write_bytes((tmp_path / "plain.db").read_bytes())
    spaced = rillet("inspect", "--sessions", "--db", "my runs.db", "--no-color", cwd=tmp_path)
    assert "rillet run --session ID --db 'my runs.db' starts one" in spaced.stdout
    # looking is read only: a file of checkpoints is not given session tables
    with sqlite3.connect(tmp_path / "plain.db") as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "sessions" not in tables and "checkpoints" in tables


FLAKY = """
import os

from rillet import ChatModelAgent, Message, ScriptedModel


def reply(messages, tools=None):
    if os.path.exists("model-down"):
        raise ConnectionError("the model endpoint is down")
    return Message.assistant("back up: " + messages[-1].content)


agent = ChatModelAgent("flaky", description="answers when its model is up", model=ScriptedModel(reply))
"""


def test_resume_continues_the_step_record_of_a_run_that_failed(tmp_path: Path) -> None:
    """A run of Runner(durability="step") that failed keeps its step record for a retry:
    `rillet resume` refused it, saying to "continue it with Runner.resume(id)", in Python."""
    import subprocess
    import sys

    (tmp_path / "flaky.py").write_text(FLAKY)
    (tmp_path / "model-down").write_text("")
    failed = subprocess.run(
        [sys.executable, "-c", (
            "from rillet import Runner, SqliteCheckpointStore\n"
            "from flaky import agent\n"
            "store = SqliteCheckpointStore('runs.db')\n"
            "events = list(Runner(agent, checkpoint_store=store, durability='step').query('hi', checkpoint_id='s1'))\n"
            "assert events[-1].error is not None, events\n"
        )],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert failed.returncode == 0, failed.stderr
    (tmp_path / "model-down").unlink()
    shown = rillet("inspect", "s1", "--db", "runs.db", cwd=tmp_path)
    one_line_error(shown, 1, "continue it with: rillet resume s1 --db runs.db MODULE:ATTRIBUTE")
    without_agent = rillet("resume", "s1", "--db", "runs.db", cwd=tmp_path)
    one_line_error(without_agent, 2, "checkpoint[s1] is the step record of a run that did not finish")
    assert "rillet resume s1 --db runs.db MODULE:ATTRIBUTE" in without_agent.stderr
    resumed = rillet("resume", "s1", "--db", "runs.db", "flaky:agent", "--no-color", cwd=tmp_path)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert "back up: hi" in resumed.stdout
    listed = rillet("inspect", "--db", "runs.db", cwd=tmp_path)
    assert "s1" not in listed.stdout  # the run finished: its record is gone


def test_inspect_and_resume_leave_an_empty_file_as_it_is(tmp_path: Path) -> None:
    """`rillet inspect --db FILE` opens the file, never creates one; an empty file (a typo's
    `touch`, a download that failed) was made a rillet database and reported to hold nothing."""
    (tmp_path / "empty.db").write_bytes(b"")
    for args in (["inspect", "--db", "empty.db"], ["resume", "x", "--db", "empty.db", "agents:build"]):
        result = rillet(*args, cwd=write_agents(tmp_path))
        assert result.returncode in (1, 2), result.stderr
        assert result.stderr.endswith(
            "empty.db is an empty file, not a checkpoint database (give the --db the run used)\n"
        )
        assert (tmp_path / "empty.db").read_bytes() == b""
