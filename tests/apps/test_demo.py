"""`rillet demo` and `rillet resume`: offline, every event kind, approval through SQLite, 80 columns."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rillet import Runner
from rillet.checkpoint import InMemoryCheckpointStore
from rillet.examples.demo import build_agent, main, render
from rillet.tools.approval import approve


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``rillet ARGS``, ``stdin`` piped in (by default nothing: the prompt finds the input's end)."""
    return subprocess.run(
        [sys.executable, "-m", "rillet.cli", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def test_demo_runs_offline_asks_approval_resumes_from_sqlite_and_fits_80_columns(tmp_path: Path) -> None:
    result = cli("demo", "--fast", "--no-color", "--db", str(tmp_path / "d.db"))
    assert result.returncode == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    for expected in [
        "→ calls get_weather",
        "← convert_currency",
        "← packing_tips (streaming)",
        "- sunglasses",
        "paused: book_hotel(city='Lisbon', nights=2) needs approval",
        "No answer on stdin: approving",
        "resuming checkpoint demo-",
        "Booked 2 nights",
        "Your room is",
        "9 events · 4 model calls",
    ]:
        assert expected in result.stdout


def test_demo_names_the_real_path_of_its_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "where.db"
    assert main(delay=0.0, color=False, decision="approve", db=db) == 0
    out = "".join(capsys.readouterr().out.split())  # rich may fold a long path
    assert f"from{db}" in out and "fromwhere.db" not in out


REJECTED = "The user rejected this call of book_hotel (the traveller declined)."


def test_demo_main_with_a_rejection_tells_the_model_and_books_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(delay=0.0, color=False, decision="reject", db=tmp_path / "x.db") == 0
    out = " ".join(capsys.readouterr().out.split())  # unwrapped: rich folds long lines
    assert "paused: book_hotel(city='Lisbon', nights=2) needs approval" in out
    assert out.index("resuming checkpoint demo-") < out.index(REJECTED) < out.index("I did not book the hotel")
    assert "Booked" not in out and "LIS-4821" not in out
    assert "9 events · 4 model calls" in out


def test_rillet_demo_reject_flag_declines_the_booking(tmp_path: Path) -> None:
    result = cli("demo", "--fast", "--no-color", "--reject", "--db", str(tmp_path / "r.db"))
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "No answer on stdin" not in out and "[a]pprove" not in out  # the flag decided, not the prompt
    assert "The user rejected this call of book_hotel (rejected with --reject)." in out
    assert "I did not book the hotel" in out and "Booked" not in out and "LIS-4821" not in out


def test_the_demo_takes_the_approve_and_reject_flags_of_rillet_run(tmp_path: Path) -> None:
    db = str(tmp_path / "f.db")
    named = cli("demo", "--fast", "--no-color", "--reject", "book_hotel=too pricey", "--db", db)
    assert named.returncode == 0, named.stderr
    assert "The user rejected this call of book_hotel (too pricey)." in " ".join(named.stdout.split())
    edited = cli("demo", "--fast", "--no-color", "--approve", 'book_hotel={"city": "Lisbon", "nights": 4}', "--db", db)
    assert "Booked 4 nights at Casa do Rio, Lisbon" in edited.stdout
    mistyped = cli("demo", "--fast", "--no-color", "--approve", "book_hotl", "--db", db)
    assert mistyped.returncode == 0, mistyped.stderr
    assert "book_hotel: [a]pprove, [r]eject [reason], [e]dit [JSON]?" in mistyped.stdout  # asked, then approved
    assert mistyped.stderr.startswith(
        "rillet demo: --approve book_hotl matched no interrupt of this run; it asked for: book_hotel ("
    )
    assert mistyped.stderr.rstrip().endswith("did you mean --approve book_hotel?")


def test_rillet_demo_approve_flag_books(tmp_path: Path) -> None:
    result = cli("demo", "--fast", "--no-color", "--approve", "--db", str(tmp_path / "a.db"))
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "No answer on stdin" not in out and "rejected" not in out
    assert "Booked 2 nights" in out and "LIS-4821" in out


def test_stop_at_approval_then_resume_from_another_process(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    first = cli("demo", "--fast", "--no-color", "--stop-at-approval", "--db", db)
    assert first.returncode == 0, first.stderr
    line = next(l for l in first.stdout.splitlines() if "rillet resume" in l)
    checkpoint_id = line.split()[2]
    second = cli("resume", checkpoint_id, "--db", db, "--reject", "--no-color")
    assert second.returncode == 0, second.stderr
    assert "The user rejected this call of book_hotel" in second.stdout
    assert "I did not book" in second.stdout
    missing = cli("resume", "nope", "--db", db, "--no-color")
    assert missing.returncode == 1 and "no checkpoint 'nope'" in missing.stderr
    nowhere = tmp_path / "none.db"
    absent = cli("resume", "nope", "--db", str(nowhere), "--no-color")
    assert absent.returncode == 1 and "no checkpoint database" in absent.stderr
    assert not nowhere.exists()  # nothing created


def test_demo_streams_and_non_streams_the_same_conversation() -> None:
    for streaming in (True, False):
        buf = io.StringIO()
        console = Console(file=buf, width=80, no_color=True)
        runner = Runner(build_agent(0.0), streaming=streaming, checkpoint_store=InMemoryCheckpointStore())
        r = render(runner.query("hi", checkpoint_id="c"), console)
        ask = next(e for e in r.seen if e.action and e.action.interrupted).action.interrupted.interrupt_contexts[0]
        render(runner.resume("c", targets={ask.id: approve()}), console, into=r)
        assert (r.events, r.model_calls) == (9, 4)
        assert "184.00 EUR" in buf.getvalue() and "LIS-4821" in buf.getvalue()


def test_make_demo_sets_up_light_installs_nothing_system_wide_and_make_test_fully() -> None:
    """`make demo` builds the light setup and never runs apt-get; the test targets install what they drive."""
    import shutil

    if shutil.which("make") is None:
        pytest.skip("no make")
    root = Path(__file__).resolve().parents[2]

    def dry(target: str) -> str:
        return subprocess.run(
            ["make", "-n", target], cwd=root, capture_output=True, text=True, timeout=30, check=True
        ).stdout

    demo = dry("demo")
    assert "./scripts/setup --light" in demo
    assert "test-services" not in demo and "apt-get" not in demo
    assert "apt-get" not in (root / "scripts/setup").read_text(), (
        "scripts/setup (make demo's) must not install system packages"
    )
    for target in ("test", "test-fast"):
        out = dry(target)
        assert "./scripts/setup\n" in out and "--light" not in out and "./scripts/test-services" in out
    bad = subprocess.run([str(root / "scripts/setup"), "--bogus"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "usage: scripts/setup [--light]" in bad.stderr


# --- the demo's --delay check, approval prompt and key check ------------------------------


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_demo_refuses_a_negative_delay(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    from rillet.cli import main

    with pytest.raises(SystemExit) as e:
        main(["demo", "--delay", value])
    assert e.value.code == 2
    assert f"Invalid value for '--delay': must be a number of seconds >= 0, got {value}" in capsys.readouterr().err


def test_the_demo_asks_for_approval_with_the_prompt_of_rillet_run(tmp_path: Path) -> None:
    rejected = cli("demo", "--fast", "--no-color", "--db", str(tmp_path / "p.db"), stdin="r too pricey\n")
    assert rejected.returncode == 0, rejected.stderr
    lines = rejected.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("approval needed: book_hotel ("))
    assert lines[at + 1] == "  book_hotel: [a]pprove, [r]eject [reason], [e]dit [JSON]? r too pricey"
    out = " ".join(rejected.stdout.split())
    assert "The user rejected this call of book_hotel (too pricey)" in out and "I did not book" in out
    edited = cli(
        "demo", "--fast", "--no-color", "--db", str(tmp_path / "p.db"), stdin='e {"city": "Lisbon", "nights": 3}\n'
    )
    assert edited.returncode == 0, edited.stderr
    assert "Booked 3 nights at Casa do Rio, Lisbon" in edited.stdout


def test_ctrl_c_at_the_demos_prompt_says_the_run_is_saved_and_how_to_resume_it(tmp_path: Path) -> None:
    from support.cli_harness import ctrl_c_at_prompt

    db = str(tmp_path / "c.db")
    stopped = ctrl_c_at_prompt("demo", "--fast", "--no-color", "--db", db, cwd=tmp_path)
    assert stopped.returncode == 130, stopped.stderr
    assert "Aborted!" not in stopped.stderr and "Traceback" not in stopped.stderr
    assert "Stopped at the approval (Ctrl-C); the run is saved. Continue it with:" in stopped.stdout
    command = stopped.stdout.splitlines()[-1].split()
    assert command[:2] == ["rillet", "resume"] and command[3:] == ["--db", db, "--approve"]
    resumed = cli(*command[1:], "--no-color")
    assert resumed.returncode == 0, resumed.stderr
    assert "Booked 2 nights" in resumed.stdout


def test_ctrl_c_while_the_demo_runs_says_what_was_saved_and_exits_130(tmp_path: Path) -> None:
    """Ctrl-C while the model streamed (not at the prompt) printed only click's "Aborted!", status 1."""
    from support.cli_harness import ctrl_c_at_prompt

    db = str(tmp_path / "c.db")
    # a token every 60 s: the model's reply has begun (its heading is out) and streams when Ctrl-C comes
    stopped = ctrl_c_at_prompt("demo", "--delay", "60", "--no-color", "--db", db, cwd=tmp_path, prompt="(model call 1)")
    assert stopped.returncode == 130, (stopped.stdout, stopped.stderr)
    assert "Aborted!" not in stopped.stderr and "Traceback" not in stopped.stderr
    assert "Stopped (Ctrl-C) before the run asked for approval: nothing was saved." in stopped.stdout
    other = ctrl_c_at_prompt("demo", "team", "--delay", "60", "--no-color", cwd=tmp_path, prompt="(model call 1)")
    assert other.returncode == 130, (other.stdout, other.stderr)
    assert other.stderr.strip() == "rillet demo: stopped by Ctrl-C"


def test_demo_on_openai_without_a_key_stops_before_sending(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    from rillet.cli import main
    from rillet.models.openai import OpenAIChatModel

    async def no_request(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a request was sent")

    monkeypatch.setattr(OpenAIChatModel, "_post", no_request)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["demo", "--model", "openai", "--no-color", "--db", str(tmp_path / "d.db")]) == 2
    out = capsys.readouterr().out
    assert "--model openai: no OPENAI_API_KEY is set for https://api.openai.com/v1" in out
    assert "OPENAI_BASE_URL" in out and "Ollama" in out
    assert len(out.strip().splitlines()) == 1, out  # one line, not wrapped at the console's width


def test_a_keyless_local_endpoint_is_fine(monkeypatch: pytest.MonkeyPatch) -> None:
    from rillet.examples.demo import make_chat_model, make_console, missing_key

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    assert missing_key(make_console(False), make_chat_model("openai")) is False
