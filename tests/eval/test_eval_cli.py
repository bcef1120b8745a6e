"""`rillet eval MODULE:ATTRIBUTE EVALSET` on the example eval set shipped in examples/eval:
the table, the JSON report, and the exit status (1 when a case fails, 0 when all pass, 2 when
the agent or the set cannot be loaded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rillet import cli

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "eval" / "travel.evalset.json")
AGENT = "rillet.examples.demo:build_agent"


def test_the_example_set_fails_on_its_failing_cases_with_the_step_shown(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", AGENT, EXAMPLE, "--no-color"]) == 1
    out = capsys.readouterr().out
    for case, result in [("trip-with-booking", "PASS"), ("booking-declined", "PASS"), ("wrong-order", "FAIL")]:
        assert any(case in line and result in line for line in out.splitlines()), out
    assert "left the expected trajectory at step 2 (call 1): expected convert_currency(...)" in " ".join(out.split())
    assert ">> step 2: travel_assistant: calls get_weather" in out
    assert "2 of 4 cases passed" in out


def test_only_passing_cases_exit_zero_and_the_json_report_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    written = tmp_path / "report.json"
    argv = ["eval", AGENT, EXAMPLE, "--case", "trip-with-booking", "--case", "booking-declined", "-n", "3"]
    assert cli.main([*argv, "--json", "-o", str(written)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == json.loads(written.read_text())
    assert report["passed"] is True and report["cases"] == 2
    assert [(r["id"], len(r["runs"]), r["pass_rate"]) for r in report["results"]] == [
        ("trip-with-booking", 3, 1.0),
        ("booking-declined", 3, 1.0),
    ]


def test_what_cannot_be_loaded_exits_2_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as bad_agent:
        cli.main(["eval", "rillet.examples.demo:nothing", EXAMPLE])
    assert bad_agent.value.code == 2
    assert (
        capsys.readouterr().err
        == "rillet eval: 'rillet.examples.demo:nothing': rillet.examples.demo has no attribute 'nothing'\n"
    )
    (tmp_path / "bad.json").write_text('{"name": "x"}')
    with pytest.raises(SystemExit) as bad_set:
        cli.main(["eval", AGENT, str(tmp_path / "bad.json")])
    assert bad_set.value.code == 2
    assert "bad.json: not an eval set: cases: Field required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["eval", AGENT, EXAMPLE, "--case", "nope"])
    assert "has no case 'nope'" in capsys.readouterr().err


def test_a_baseline_that_is_not_a_report_exits_2_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A result without an id was a KeyError traceback (and exit 1, as if a case had failed)."""
    for text, said in [
        ('{"results": [{"x": 1}]}', 'result 1 is not {"id": str, "pass_rate": number, "passed": bool}'),
        ('{"results": [{"id": "a", "pass_rate": "1", "passed": true}]}', "result 1 is not"),
        ("{", "not an eval report (not JSON"),
    ]:
        baseline = tmp_path / "before.json"
        baseline.write_text(text)
        with pytest.raises(SystemExit) as bad:
            cli.main(["eval", AGENT, EXAMPLE, "--baseline", str(baseline)])
        err = capsys.readouterr().err
        assert bad.value.code == 2 and err.startswith(f"rillet eval: --baseline {baseline}: ") and said in err, err
        assert "Traceback" not in err


def test_a_report_file_that_cannot_be_written_exits_2_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "no" / "such" / "report.json"
    with pytest.raises(SystemExit) as before_running:
        cli.main(["eval", AGENT, EXAMPLE, "-o", str(missing)])
    captured = capsys.readouterr()
    assert before_running.value.code == 2 and captured.out == ""  # refused before the set ran
    assert captured.err == f"rillet eval: -o {missing}: no directory {missing.parent} to write the report in\n"
    folder = tmp_path / "a-folder.json"
    folder.mkdir()
    with pytest.raises(SystemExit) as after:
        cli.main(["eval", AGENT, EXAMPLE, "--case", "trip-with-booking", "--no-color", "-o", str(folder)])
    captured = capsys.readouterr()
    assert after.value.code == 2 and "1 of 1 cases passed" in captured.out  # the report is still shown
    assert captured.err.startswith(f"rillet eval: -o {folder}: cannot write the report: ")


HANGS = '''
import asyncio
from pathlib import Path

from rillet import ChatModelAgent, FunctionCall, Message, ScriptedModel, ToolCall, tool


@tool
async def wait_forever(x: str) -> str:
    """Never returns.

    Args:
        x: anything.
    """
    Path("started").touch()
    await asyncio.Event().wait()
    return "never"


def reply(messages, tools):
    return Message.assistant(tool_calls=[ToolCall(id="c1", function=FunctionCall("wait_forever", '{"x": "1"}'))])


def build():
    return ChatModelAgent("a", description="d", model=ScriptedModel(reply), tools=[wait_forever])
'''


@pytest.mark.slow
def test_ctrl_c_stops_the_eval_with_status_130_not_1(tmp_path: Path) -> None:
    """Exit status 1 means a case failed; Ctrl-C gave it too (click's 'Aborted!')."""
    import signal
    import subprocess
    import sys

    from support.waiting import child_env, wait_until

    (tmp_path / "hangs.py").write_text(HANGS)
    (tmp_path / "hang.evalset.json").write_text(
        json.dumps({"name": "h", "cases": [{"id": "a", "turns": [{"input": "q"}]}]})
    )
    script = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler)  # a background shell ignores it\n"
        "from rillet.cli import main; sys.exit(main(['eval', 'hangs:build', 'hang.evalset.json']))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: (tmp_path / "started").exists(), "the hanging run to start")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (out, err)
    assert err.splitlines()[-1] == "rillet eval: interrupted (Ctrl-C): the eval stopped, no report"
    assert "Traceback" not in err


JUDGED = '''
from rillet import ChatModelAgent, ScriptedModel


def build():
    return ChatModelAgent("a", description="d", model=ScriptedModel(lambda messages, tools: "Thank you, sir."))


def strict():
    """A judge that passes only polite answers."""
    def verdict(messages, tools):
        polite = "Thank you" in messages[-1].content
        return '{"verdict": "%s", "reason": "looked for thanks"}' % ("pass" if polite else "fail")
    return ScriptedModel(verdict)


not_a_model = 42
'''


def test_the_cli_takes_a_judge_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --judge a judge criterion could only fail from the command line."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "judged_agents.py").write_text(JUDGED)
    (tmp_path / "tone.evalset.json").write_text(
        json.dumps(
            {
                "name": "tone",
                "cases": [{"id": "p", "turns": [{"input": "hi", "answer": {"judge": {"rubric": "polite"}}}]}],
            }
        )
    )
    argv = ["eval", "judged_agents:build", "tone.evalset.json", "--json"]
    assert cli.main(argv) == 1
    assert "rillet eval --judge MODULE:ATTRIBUTE" in capsys.readouterr().out
    assert cli.main([*argv, "--judge", "judged_agents:strict"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True
    for spec, said in [
        ("judged_agents:not_a_model", "--judge 'judged_agents:not_a_model' is a int, not a chat model"),
        ("judged_agents:nothing", "--judge 'judged_agents:nothing': AttributeError:"),
        ("judged_agents", "expected MODULE:ATTRIBUTE"),
    ]:
        with pytest.raises(SystemExit) as bad:
            cli.main([*argv, "--judge", spec])
        err = capsys.readouterr().err
        assert bad.value.code == 2 and said in err and err.count("\n") == 1, err
