"""`rillet eval save-case`: a saved session or a checkpointed run (paused at an interrupt)
written into an eval set file, created or extended, and the case passing `rillet eval` on the
agent that made it (the round trip); and what it refuses, in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rillet import Runner, SqliteCheckpointStore, SqliteSessionStore, cli
from rillet.eval import load_eval_set
from rillet.examples.demo import build_agent
from rillet.tools.approval import approve

AGENT = "rillet.examples.demo:build_agent"


def _paused(db: Path, *, session: str = "trip", checkpoint: str = "c1", streaming: bool = False) -> tuple[Runner, str]:
    """A run of the demo agent on ``db`` stopped at book_hotel's approval; its interrupt id."""
    stores = {"checkpoint_store": SqliteCheckpointStore(db), "session_store": SqliteSessionStore(db)}
    runner = Runner(build_agent(delay=0), streaming=streaming, **stores)
    asked = None
    for ev in runner.query("Lisbon trip?", session_id=session, checkpoint_id=checkpoint):
        if ev.action and ev.action.interrupted:
            asked = ev.action.interrupted.interrupt_contexts[0].id
    assert asked is not None
    return runner, asked


def test_a_session_written_as_a_case_passes_rillet_eval(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db, evalset = tmp_path / "runs.db", tmp_path / "saved.evalset.json"
    runner, asked = _paused(db)
    for _ in runner.resume("c1", targets={asked: approve()}):
        pass
    for _ in runner.query("And again?", session_id="trip"):
        pass

    argv = ["eval", "save-case", "--db", str(db), "--session", "trip", "-o", str(evalset)]
    assert cli.main([*argv, "--answer", "book_hotel=approve"]) == 0
    out = capsys.readouterr()
    assert (
        out.out == f"rillet eval save-case: case 'trip' (2 turn(s), 4 tool call(s)) written to {evalset} (1 case(s))\n"
    )
    assert out.err == ""
    saved = load_eval_set(evalset)
    assert saved.name == "saved"
    first, second = saved.cases[0].turns
    assert first.input == "Lisbon trip?" and second.input == "And again?"
    assert [(i.tool, i.resume) for i in first.interrupts] == [("book_hotel", "approve")]
    assert first.answer is not None and first.answer.exact is not None and "LIS-4821" in first.answer.exact

    assert cli.main(["eval", AGENT, str(evalset), "--no-color"]) == 0  # the round trip
    assert "1 of 1 cases passed" in capsys.readouterr().out

    # a second case extends the file; the same id again is refused, unless replaced
    assert cli.main([*argv, "--id", "second", "--answer-check", "contains"]) == 0
    assert [c.id for c in load_eval_set(evalset).cases] == ["trip", "second"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as again:
        cli.main(argv)
    assert again.value.code == 2
    assert "it has a case 'trip' already" in capsys.readouterr().err
    assert cli.main([*argv, "--replace", "--match", "subset"]) == 0
    (replaced, _) = load_eval_set(evalset).cases
    assert replaced.turns[0].trajectory is not None and replaced.turns[0].trajectory.match == "subset"


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
def test_a_checkpointed_run_expects_its_pending_interrupt(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, streaming: bool
) -> None:
    db, evalset = tmp_path / "runs.db", tmp_path / "paused.json"
    _paused(db, streaming=streaming)  # rillet run streams: its checkpoints hold the messages as streams
    argv = ["eval", "save-case", "--db", str(db), "--checkpoint", "c1", "-o", str(evalset), "--name", "paused runs"]
    assert cli.main(argv) == 0
    out = capsys.readouterr()
    assert "case 'c1' (1 turn(s), 4 tool call(s))" in out.out
    # the checkpoint holds the question, not its answer: said, and left null in the file
    assert "the answer to book_hotel's interrupt is not known" in out.err
    data = json.loads(evalset.read_text())
    assert data["name"] == "paused runs"
    (turn,) = data["cases"][0]["turns"]
    assert turn["interrupts"] == [{"tool": "book_hotel"}]
    assert turn["trajectory"]["match"] == "in_order"
    assert [c["name"] for c in turn["trajectory"]["calls"]] == [
        "get_weather",
        "convert_currency",
        "packing_tips",
        "book_hotel",
    ]
    assert "answer" not in turn  # the run had not answered yet

    assert cli.main([*argv, "--answer", 'book_hotel={"decision": "approve"}', "--replace"]) == 0
    (case,) = load_eval_set(evalset).cases
    assert case.turns[0].interrupts[0].resume == {"decision": "approve"}
    capsys.readouterr()
    assert cli.main(["eval", AGENT, str(evalset), "--no-color"]) == 0  # the round trip
    assert "1 of 1 cases passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give one of --session ID or --checkpoint ID"),
        (["--session", "trip", "--checkpoint", "c1"], "give one of --session ID or --checkpoint ID"),
        (["--session", "nope"], "no session 'nope' in the store"),
        (["--checkpoint", "nope"], "no checkpoint 'nope' in the store"),
        (["--checkpoint", "c1", "-o", "set.yaml"], "cases are written to JSON eval sets only"),
    ],
)
def test_what_save_case_refuses_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    db = tmp_path / "runs.db"
    _paused(db)
    output = ["-o", str(tmp_path / "set.json")] if "-o" not in args else []
    args = [str(tmp_path / a) if a.endswith(".yaml") else a for a in args]
    with pytest.raises(SystemExit) as refused:
        cli.main(["eval", "save-case", "--db", str(db), *output, *args])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("rillet eval save-case: ") and message in err and err.count("\n") == 1


def test_eval_is_a_group_whose_default_command_runs_a_set(capsys: pytest.CaptureFixture[str]) -> None:
    example = str(Path(__file__).resolve().parents[2] / "examples" / "eval" / "travel.evalset.json")
    assert cli.main(["eval", "run", AGENT, example, "--case", "trip-with-booking", "--no-color"]) == 0
    assert "1 of 1 cases passed" in capsys.readouterr().out
    assert cli.main(["eval", "--help"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\brun +run an eval set", out) and re.search(r"save-case +write a saved session", out)
    assert cli.main(["--help"]) == 0  # rillet's own help still says what eval does
    assert re.search(r"\beval +run an eval set against an agent", capsys.readouterr().out)


def test_a_db_that_is_not_sqlite_or_an_output_that_cannot_be_written_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A SessionError traceback (exit 1) and a FileNotFoundError traceback before."""
    text = tmp_path / "notes.db"
    text.write_text("not a database")
    db = tmp_path / "runs.db"
    _paused(db)
    for args, message in [
        (
            ["--db", str(text), "--session", "trip", "-o", str(tmp_path / "s.json")],
            "notes.db' is not a SQLite database",
        ),
        (
            ["--db", str(db), "--checkpoint", "c1", "-o", str(tmp_path / "no" / "s.json")],
            f"-o {tmp_path / 'no' / 's.json'}: cannot write it: No such file or directory",
        ),
    ]:
        with pytest.raises(SystemExit) as refused:
            cli.main(["eval", "save-case", *args])
        err = capsys.readouterr().err
        assert refused.value.code == 2 and err.startswith("rillet eval save-case: ") and message in err, err
        assert err.count("\n") == 1
