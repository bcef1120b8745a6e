"""Cassettes: record an eval set's model replies once, replay them offline (the model is not
called), beside the eval set's file; a replay past the recording fails the run and says why."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rillet import ChatModelAgent, FunctionCall, Message, ScriptedModel, ToolCall, ToolInfo
from rillet.eval import run_eval
from rillet.eval.cassette import Cassette, CassetteError, cassette_path
from rillet.examples.demo import build_agent

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eval" / "travel.evalset.json"
PASSING = ["trip-with-booking", "booking-declined"]


def offline(messages: list[Message], tools: tuple[ToolInfo, ...]) -> str:
    raise AssertionError("the model was called during a replay")


def test_a_recorded_eval_set_replays_offline_with_the_same_outcome(tmp_path: Path) -> None:
    evalset = tmp_path / "travel.evalset.json"
    shutil.copy(EXAMPLE, evalset)
    recorded = run_eval(build_agent, evalset, cassette="record", progress=False)
    tape = cassette_path(evalset)
    assert tape == tmp_path / "travel.cassette.json" and tape.exists()
    runs = json.loads(tape.read_text())["runs"]
    assert sorted(runs) == sorted(c.case.id for c in recorded.cases)
    assert [len(r["travel_assistant"]) for r in runs["trip-with-booking"]] == [4]  # four model calls

    def no_model() -> ChatModelAgent:
        return build_agent(model=ScriptedModel(offline))  # type: ignore[no-any-return]

    replayed = run_eval(no_model, evalset, cassette="replay", progress=False)
    assert [(c.case.id, c.passed) for c in replayed.cases] == [(c.case.id, c.passed) for c in recorded.cases]
    # the same steps; a round's tool results in the order they finished (its tools run at once)
    assert [sorted(r.steps) for c in replayed.cases for r in c.runs] == [
        sorted(r.steps) for c in recorded.cases for r in c.runs
    ]


def test_a_replay_past_the_recording_fails_the_run_and_names_the_case(tmp_path: Path) -> None:
    evalset = tmp_path / "travel.evalset.json"
    shutil.copy(EXAMPLE, evalset)
    short = Cassette({"trip-with-booking": [{"travel_assistant": [Message.assistant("hi").to_dict()]}]})
    short.save(cassette_path(evalset))
    report = run_eval(build_agent, evalset, cassette="replay", progress=False)
    by_id = {c.case.id: c for c in report.cases}
    text = report.failure_text()
    assert not by_id["trip-with-booking"].passed and "expected an interrupt from book_hotel that never came" in text
    assert "the cassette has no recording of case 'booking-declined'" in text


def test_the_cli_records_then_replays_beside_the_eval_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rillet import cli

    evalset = tmp_path / "travel.evalset.json"
    shutil.copy(EXAMPLE, evalset)
    argv = ["eval", "rillet.examples.demo:build_agent", str(evalset), "--case", PASSING[0], "--json"]
    with pytest.raises(SystemExit) as missing:
        cli.main([*argv, "--cassette", "replay"])
    assert (
        missing.value.code == 2
        and "record one first (cassette='record', or rillet eval ... --cassette record)" in capsys.readouterr().err
    )
    assert cli.main([*argv, "--cassette", "record"]) == 0
    assert list(json.loads(cassette_path(evalset).read_text())["runs"]) == [PASSING[0]]
    capsys.readouterr()
    assert cli.main([*argv, "--cassette", "replay"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True


def test_replay_without_a_cassette_and_a_cassette_for_an_object_say_what_to_do(tmp_path: Path) -> None:
    evalset = tmp_path / "travel.evalset.json"
    shutil.copy(EXAMPLE, evalset)
    with pytest.raises(CassetteError, match=r"no cassette at .*travel.cassette.json: record one first"):
        run_eval(build_agent, evalset, cassette="replay", progress=False)
    from rillet.eval import load_eval_set

    with pytest.raises(ValueError, match="pass cassette_file"):
        run_eval(build_agent, load_eval_set(evalset), cassette="record", progress=False)


def _travel(tmp_path: Path) -> Path:
    evalset = tmp_path / "travel.evalset.json"
    shutil.copy(EXAMPLE, evalset)
    return evalset


@pytest.mark.parametrize(
    ("runs", "said"),
    [
        ('{"runs": []}', "not a cassette"),
        ('{"cases": {}}', "not a cassette"),
        ('{"runs": {"c": "x"}}', "case 'c': expected a list of runs"),
        ('{"runs": {"c": [["a"]]}}', "case 'c': expected a list of runs"),
        ('{"runs": {"c": [{"a": {"role": "assistant"}}]}}', "case 'c', run 1, agent 'a': expected a list of replies"),
        ('{"runs": {"c": [{"a": [{"nonsense": 1}]}]}}', "agent 'a': reply 1 is not an assistant message"),
        (
            '{"runs": {"c": [{"a": [{"request": "d", "reply": {"role": "user", "content": "x"}}]}]}}',
            "reply 1 is not an",
        ),
        ('{"runs": {"c": [{"a": [7]}]}}', "reply 1 is not an assistant message: 7"),
    ],
)
def test_a_damaged_cassette_is_a_cassette_error_when_read(tmp_path: Path, runs: str, said: str) -> None:
    """Not a plugin's AttributeError inside every run of the case."""
    tape = tmp_path / "travel.cassette.json"
    tape.write_text(runs)
    with pytest.raises(CassetteError, match=re.escape(said)):
        Cassette.load(tape)
    with pytest.raises(CassetteError, match=re.escape(said)):
        run_eval(build_agent, _travel(tmp_path), cassette="replay", progress=False)


def test_a_cassette_that_is_not_utf8_is_a_cassette_error(tmp_path: Path) -> None:
    tape = tmp_path / "bad.cassette.json"
    tape.write_bytes(b'{"runs": {"\xff": []}}')
    with pytest.raises(CassetteError, match="cannot read the cassette"):
        Cassette.load(tape)


def test_a_replay_whose_request_differs_from_the_recording_fails_saying_record_again(tmp_path: Path) -> None:
    """The case's input was edited after recording: the old replies must not answer the new
    question (the run passed, on the recorded answer to another input)."""
    evalset = _travel(tmp_path)
    run_eval(build_agent, evalset, cassette="record", progress=False)
    data = json.loads(evalset.read_text())
    data["cases"][0]["turns"][0]["input"] = "Tell me a joke."
    evalset.write_text(json.dumps(data))
    report = run_eval(build_agent, evalset, cassette="replay", progress=False)
    first = report.cases[0]
    assert first.case.id == "trip-with-booking" and not first.passed
    message = first.runs[0].failures[0].message
    assert "does not fit call 1 of agent 'travel_assistant'" in message and 'user "Tell me a joke."' in message
    assert "record the case again" in message
    assert [c.passed for c in report.cases[1:]] == [True, False, False]  # the others replay as recorded


def test_a_replay_that_leaves_recorded_replies_unused_fails(tmp_path: Path) -> None:
    """A turn removed from the case after recording: the replay of what is left fits, but the
    run no longer is the one recorded."""
    evalset = _travel(tmp_path)
    data = json.loads(evalset.read_text())
    first = data["cases"][0]
    first["turns"].append({"input": "Thanks!"})
    data["cases"] = [first]
    evalset.write_text(json.dumps(data))
    assert run_eval(build_agent, evalset, cassette="record", progress=False).passed
    first["turns"].pop()
    evalset.write_text(json.dumps(data))
    report = run_eval(build_agent, evalset, cassette="replay", progress=False)
    [failure] = report.cases[0].runs[0].failures
    assert failure.kind == "cassette" and failure.turn == 1
    assert "left 1 of 5 replies of agent 'travel_assistant' of the cassette unused" in failure.message


_MESSAGES = st.one_of(
    st.text(max_size=10).map(Message.assistant),
    st.tuples(st.text(max_size=5), st.text(max_size=10)).map(
        lambda t: Message.assistant(tool_calls=[ToolCall(id="c1", function=FunctionCall(t[0], t[1]))])
    ),
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    runs=st.dictionaries(
        st.text(max_size=5),
        st.lists(
            st.dictionaries(
                st.text(max_size=5),
                st.lists(st.tuples(st.text("0123456789abcdef", min_size=16, max_size=16), _MESSAGES), max_size=3),
                max_size=2,
            ),
            max_size=2,
        ),
        max_size=3,
    )
)
def test_a_cassette_saved_loads_back_the_same(tmp_path: Path, runs: dict[str, Any]) -> None:
    data = {
        case: [
            {agent: [{"request": d, "reply": m.to_dict()} for d, m in entries] for agent, entries in attempt.items()}
            for attempt in attempts
        ]
        for case, attempts in runs.items()
    }
    path = tmp_path / "round.cassette.json"
    Cassette(data).save(path)
    loaded = Cassette.load(path)
    assert loaded.runs == data
    for case, attempts in runs.items():
        for n, attempt in enumerate(attempts):
            for agent, entries in attempt.items():
                for k, (_, message) in enumerate(entries):
                    assert Message.from_dict(loaded.runs[case][n][agent][k]["reply"]) == message


def test_two_eval_sets_in_one_folder_get_a_cassette_each() -> None:
    """trips.a.json and trips.b.json both recorded into trips.cassette.json, one case's replies
    over the other's when their ids met."""
    assert cassette_path("evals/travel.evalset.json") == Path("evals/travel.cassette.json")
    assert cassette_path("travel.evalset.yaml") == cassette_path("travel.yml") == Path("travel.cassette.json")
    assert cassette_path("trips.a.json") == Path("trips.a.cassette.json")
    assert cassette_path("trips.b.evalset.json") == Path("trips.b.cassette.json")


def test_a_replay_whose_tools_changed_fails_saying_record_again(tmp_path: Path) -> None:
    """The tools offered are part of the request: a tool renamed or re-described since the
    recording must not get the old replies (which call it by its old description's contract)."""
    from rillet import tool
    from rillet.eval import Answer, EvalCase, EvalSet, Turn

    def make(doc: str) -> ChatModelAgent:
        def lookup(invoice: str) -> str:
            return f"invoice {invoice}"

        lookup.__doc__ = f"{doc}\n\nArgs:\n    invoice: its number.\n"
        return ChatModelAgent("clerk", description="d", model=ScriptedModel(lambda m, t: "ok"), tools=[tool(lookup)])

    evals = EvalSet(name="s", cases=(EvalCase(id="c", turns=(Turn(input="q", answer=Answer(exact="ok")),)),))
    tape = tmp_path / "s.cassette.json"
    assert run_eval(
        lambda: make("Finds an invoice."), evals, cassette="record", cassette_file=tape, progress=False
    ).passed
    assert run_eval(
        lambda: make("Finds an invoice."), evals, cassette="replay", cassette_file=tape, progress=False
    ).passed
    changed = run_eval(
        lambda: make("Deletes an invoice."), evals, cassette="replay", cassette_file=tape, progress=False
    )
    assert not changed.passed and "does not fit call 1 of agent 'clerk'" in changed.failure_text()
