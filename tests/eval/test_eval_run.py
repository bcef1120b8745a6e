"""Running eval sets: turns in one session, interrupts answered by id, repeats and pass rates,
the concurrency limit, progress, failures that name their step, and the sync wrapper."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from typing import Any

import pytest
from rillet import ChatModelAgent, FunctionCall, Message, ScriptedModel, ToolCall, ToolInfo, get_session_value, tool
from rillet.eval import (
    Answer,
    EvalCase,
    EvalSet,
    ExpectedCall,
    ExpectedInterrupt,
    Judge,
    Trajectory,
    Turn,
    arun_eval,
    run_eval,
)
from rillet.tools.approval import requires_approval


@tool
def greet(who: str) -> str:
    """Greets someone.

    Args:
        who: the name.
    """
    return f"hello {who} ({get_session_value('title')})"


def pay(amount: int) -> str:
    """Pays.

    Args:
        amount: how much.
    """
    return f"paid {amount}"


def reply(messages: list[Message], tools: tuple[ToolInfo, ...]) -> Message | str:
    """Calls greet, then pay, then answers with what the tools said; the second turn answers 'bye'."""
    users = [m for m in messages if m.role == "user"]
    if len(users) > 1:
        return "bye"
    done = [m.content for m in messages if m.role == "tool"]
    if not done:
        return Message.assistant(tool_calls=[ToolCall(id="c1", function=FunctionCall("greet", '{"who": "ana"}'))])
    if len(done) == 1:
        return Message.assistant(tool_calls=[ToolCall(id="c2", function=FunctionCall("pay", '{"amount": 5}'))])
    return " / ".join(done)


def make_agent() -> ChatModelAgent:
    return ChatModelAgent(
        "clerk", description="greets and pays", model=ScriptedModel(reply), tools=[greet, requires_approval(tool(pay))]
    )


def two_turns(**turn: Any) -> EvalCase:
    first = Turn.model_validate(
        {
            "input": "greet and pay",
            "trajectory": {"calls": [{"name": "greet", "arguments": {"who": "ana"}}, {"name": "pay"}]},
            "interrupts": [{"tool": "pay", "resume": "approve"}],
            "answer": {"contains": ["hello ana (Dr)", "paid 5"]},
            **turn,
        }
    )
    return EvalCase(
        id="two-turns", session_state={"title": "Dr"}, turns=(first, Turn(input="thanks", answer=Answer(exact="bye")))
    )


def test_a_case_of_two_turns_with_state_and_an_approved_interrupt_passes() -> None:
    report = run_eval(make_agent, EvalSet(name="s", cases=(two_turns(),)), progress=False)
    assert report.passed, report.failure_text()
    run = report.cases[0].runs[0]
    assert [c.kind for c in run.checks] == ["trajectory", "answer.contains", "answer.contains", "answer.exact"]
    assert run.steps[0] == "user: greet and pay"
    assert any("interrupted: pay asks" in s for s in run.steps) and run.steps[-2] == "user: thanks"
    data = json.loads(report.dumps())
    assert data["passed"] is True and data["results"][0]["runs"][0]["steps"] == run.steps


def test_a_rejected_interrupt_reaches_the_answer_and_fails_its_criterion() -> None:
    case = two_turns(interrupts=[{"tool": "pay", "resume": "reject"}])
    report = run_eval(make_agent, EvalSet(name="s", cases=(case,)), progress=False)
    assert not report.passed
    text = report.failure_text()
    assert "case 'two-turns': 0 of 1 runs passed (pass rate 0%, needs 100%)" in text
    assert "turn 1, answer.contains: expected it to contain 'paid 5'" in text
    assert ">> step " in text  # the step carrying the answer, with the steps before it


def test_an_unexpected_interrupt_stops_the_case_at_its_step() -> None:
    report = run_eval(make_agent, EvalSet(name="s", cases=(two_turns(interrupts=[]),)), progress=False)
    run = report.cases[0].runs[0]
    (check,) = run.failures
    assert check.kind == "interrupts" and check.step is not None
    assert check.message.startswith(f"unexpected interrupt from pay at step {check.step}: ")
    assert "interrupted: pay asks" in run.steps[check.step - 1]
    assert "user: thanks" not in run.steps  # the case stopped there


def test_an_answer_that_is_no_approval_decision_fails_the_case_saying_why() -> None:
    # "aprove" settles nothing: the call asks again, which the case did not expect (before, the
    # model was told an error and carried on, and a case checking only the trajectory passed).
    case = two_turns(interrupts=[{"tool": "pay", "resume": "aprove"}], answer=None)
    report = run_eval(make_agent, EvalSet(name="s", cases=(case,)), progress=False)
    (check,) = report.cases[0].runs[0].failures
    assert check.kind == "interrupts" and check.message.startswith("unexpected interrupt from pay at step ")
    assert "approval resume data 'aprove' is no decisio" in check.message  # (the info is shortened)


def test_an_expected_interrupt_that_never_comes_fails() -> None:
    extra = [{"tool": "pay", "resume": "approve"}, {"tool": "greet", "resume": "approve"}]
    report = run_eval(make_agent, EvalSet(name="s", cases=(two_turns(interrupts=extra),)), progress=False)
    assert [c.message for c in report.cases[0].runs[0].failures] == ["expected an interrupt from greet that never came"]


def test_a_trajectory_failure_names_the_step_where_the_run_left_it() -> None:
    case = two_turns(trajectory={"calls": [{"name": "pay"}, {"name": "greet"}]})
    report = run_eval(make_agent, EvalSet(name="s", cases=(case,)), progress=False)
    check = report.cases[0].runs[0].failures[0]
    assert check.kind == "trajectory" and check.step == 2
    assert "left the expected trajectory at step 2 (call 1): expected pay(...), got greet(" in check.message


def test_repeats_give_a_pass_rate_against_the_case_threshold() -> None:
    flips = itertools.cycle(["yes", "no"])
    lock = threading.Lock()

    def flaky() -> ChatModelAgent:
        with lock:
            answer = next(flips)
        return ChatModelAgent("coin", description="d", model=ScriptedModel([answer]))

    turn = Turn(input="heads?", answer=Answer(exact="yes"))
    strict = EvalCase(id="strict", turns=(turn,))
    lenient = EvalCase(id="lenient", turns=(turn,), min_pass_rate=0.5)
    report = run_eval(flaky, EvalSet(name="s", cases=(strict, lenient)), repeat=4, concurrency=1, progress=False)
    assert [(c.case.id, len(c.runs), c.pass_rate, c.passed) for c in report.cases] == [
        ("strict", 4, 0.5, False),
        ("lenient", 4, 0.5, True),
    ]
    assert not report.passed
    assert report.to_json()["cases_passed"] == 1


def test_runs_go_in_parallel_up_to_the_limit_and_progress_counts_them() -> None:
    running = peak = 0
    three: asyncio.Event | None = None

    async def slow(messages: list[Message], tools: tuple[ToolInfo, ...]) -> str:
        """Holds the first calls until three run at once: with a limit of 3, never more."""
        nonlocal running, peak, three
        three = three or asyncio.Event()
        running += 1
        peak = max(peak, running)
        if running == 3:
            three.set()
        await three.wait()
        running -= 1
        return "done"

    agent = ChatModelAgent("slow", description="d", model=ScriptedModel(slow))
    cases = tuple(EvalCase(id=f"c{i}", turns=(Turn(input="go", answer=Answer(exact="done")),)) for i in range(6))
    seen: list[tuple[int, int]] = []
    report = run_eval(agent, EvalSet(name="s", cases=cases), concurrency=3, progress=lambda d, t: seen.append((d, t)))
    assert report.passed and peak == 3
    assert seen == [(i, 6) for i in range(1, 7)]


def test_a_judge_criterion_uses_the_judge_model() -> None:
    judge = ScriptedModel(['{"verdict": "fail", "reason": "too curt"}'])
    case = EvalCase(id="j", turns=(Turn(input="thanks", answer=Answer(judge=Judge(rubric="polite"))),))
    agent = ChatModelAgent("a", description="d", model=ScriptedModel(["bye"]))
    report = run_eval(agent, EvalSet(name="s", cases=(case,)), judge_model=judge, progress=False)
    assert [c.message for c in report.cases[0].runs[0].failures] == ["the judge says: too curt"]
    assert "polite" in judge.calls[0].messages[1].content


def test_a_failing_run_is_a_failed_check_not_an_exception() -> None:
    agent = ChatModelAgent("a", description="d", model=ScriptedModel([]))  # no reply scripted
    case = EvalCase(id="x", turns=(Turn(input="q", answer=Answer(contains=("x",))),))
    report = run_eval(agent, EvalSet(name="s", cases=(case,)), progress=False)
    kinds = [c.kind for c in report.cases[0].runs[0].failures]
    assert kinds[0] == "error" and "ScriptExhaustedError" in report.failure_text()

    def broken() -> ChatModelAgent:
        raise RuntimeError("no key")

    report = run_eval(broken, EvalSet(name="s", cases=(case,)), progress=False)
    assert report.cases[0].runs[0].failures[0].message == "RuntimeError: no key"
    assert "  making the agent, error: RuntimeError: no key" in report.failure_text()  # not 'turn 0'
    from io import StringIO

    from rich.console import Console
    from rillet.eval.report import print_report

    out = StringIO()
    print_report(report, Console(file=out, width=200, no_color=True))
    assert "making the agent, error" in out.getvalue() and "turn 0" not in out.getvalue()


def test_the_sync_wrapper_refuses_a_running_loop_and_the_async_core_runs_there() -> None:
    case = EvalCase(id="x", turns=(Turn(input="q", answer=Answer(exact="a")),))

    async def inside() -> bool:
        with pytest.raises(RuntimeError, match=r"use `await arun_eval\(...\)`"):
            run_eval(make_agent, EvalSet(name="s", cases=(case,)))
        agent = ChatModelAgent("a", description="d", model=ScriptedModel(["a"]))
        return (await arun_eval(agent, EvalSet(name="s", cases=(case,)), progress=False)).passed

    assert asyncio.run(inside())
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        run_eval(make_agent, EvalSet(name="s", cases=(case,)), concurrency=0)


def test_expected_calls_and_interrupts_can_be_written_in_python() -> None:
    turn = Turn(
        input="greet and pay",
        trajectory=Trajectory(calls=(ExpectedCall(name="pay"),), match="in_order"),
        interrupts=(ExpectedInterrupt(tool="pay", resume={"decision": "approve"}),),
    )
    report = run_eval(make_agent, EvalSet(name="s", cases=(EvalCase(id="py", turns=(turn,)),)), progress=False)
    assert report.passed, report.failure_text()


def test_the_progress_line_counts_runs_on_one_line() -> None:
    import io

    from rillet.eval.run import progress_line

    out = io.StringIO()
    show = progress_line(out)
    for done in (1, 2, 3):
        show(done, 3)
    assert out.getvalue() == "\r  eval: 1/3 runs\r  eval: 2/3 runs\r  eval: 3/3 runs\n"


def test_a_run_that_hangs_is_stopped_by_the_timeout_and_fails_with_its_steps() -> None:
    """Without a timeout one hanging agent hung the whole eval (and rillet eval) for ever."""
    stopped = threading.Event()

    @tool
    async def wait_forever(x: str) -> str:
        """Never returns.

        Args:
            x: anything.
        """
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return "never"

    def hangs_on_q(messages: list[Message], tools: tuple[ToolInfo, ...]) -> Message | str:
        if messages[-1].role == "user" and messages[-1].content == "hang":
            return Message.assistant(
                tool_calls=[ToolCall(id="c1", function=FunctionCall("wait_forever", '{"x": "1"}'))]
            )
        return "fine"

    def agent() -> ChatModelAgent:
        return ChatModelAgent("a", description="d", model=ScriptedModel(hangs_on_q), tools=[wait_forever])

    cases = (
        EvalCase(id="hangs", turns=(Turn(input="hang"),)),
        EvalCase(id="ok", turns=(Turn(input="q", answer=Answer(exact="fine")),)),
    )
    report = run_eval(agent, EvalSet(name="s", cases=cases), timeout=0.2, progress=False)
    hung, ok = report.cases
    assert ok.passed and not hung.passed and stopped.is_set()  # the hanging tool was cancelled
    [failure] = hung.runs[0].failures
    assert failure.kind == "timeout" and failure.turn == 1 and failure.step == 2
    assert failure.message == "the run did not finish in 0.2s (at step 2); it was stopped"
    assert hung.runs[0].steps == ["user: hang", 'a: calls wait_forever({"x": "1"})']
    with pytest.raises(ValueError, match="timeout must be a number of seconds above 0"):
        run_eval(agent, EvalSet(name="s", cases=cases), timeout=0)


def test_the_cli_takes_a_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    from rillet import cli

    example = str(Path(__file__).resolve().parents[2] / "examples" / "eval" / "travel.evalset.json")
    argv = ["eval", "rillet.examples.demo:build_agent", example, "--case", "trip-with-booking", "--json"]
    assert cli.main([*argv, "--timeout", "30"]) == 0
    with pytest.raises(SystemExit) as bad:
        cli.main([*argv, "--timeout", "0"])
    assert bad.value.code == 2 and "--timeout" in capsys.readouterr().err


def test_a_judge_that_raises_fails_its_check_and_the_next_turn_still_runs() -> None:
    """It was an 'error' of the run ('RuntimeError: ...', not saying the judge) that skipped the
    turns after it."""

    class DownJudge(ScriptedModel):
        async def generate(self, *args: Any, **kwargs: Any) -> Message:
            raise RuntimeError("judge service down")

    turns = (
        Turn(input="q", answer=Answer(judge=Judge(rubric="polite"))),
        Turn(input="again", answer=Answer(exact="fine")),
    )
    agent = ChatModelAgent("a", description="d", model=ScriptedModel(lambda m, t: "fine"))
    report = run_eval(
        agent, EvalSet(name="s", cases=(EvalCase(id="j", turns=turns),)), judge_model=DownJudge([]), progress=False
    )
    checks = report.cases[0].runs[0].checks
    assert [(c.turn, c.kind, c.passed) for c in checks] == [(1, "answer.judge", False), (2, "answer.exact", True)]
    assert checks[0].message == "the judge model failed: RuntimeError: judge service down" and checks[0].step == 2


def test_stress_every_run_of_every_case_once_within_the_limit_from_several_threads() -> None:
    """200 cases x 3 repeats at most 5 at once, in 3 threads each with its own event loop: no run
    lost or counted twice, each answer checked against its own case's input."""
    lock = threading.Lock()
    running: dict[int, int] = {}
    peaks: dict[int, int] = {}

    async def echo(messages: list[Message], tools: tuple[ToolInfo, ...]) -> str:
        me = threading.get_ident()
        with lock:
            running[me] = running.get(me, 0) + 1
            peaks[me] = max(peaks.get(me, 0), running[me])
        await asyncio.sleep(0)  # lets the other runs of this loop in
        with lock:
            running[me] -= 1
        return f"echo {messages[-1].content}"

    def agent() -> ChatModelAgent:
        return ChatModelAgent("echo", description="d", model=ScriptedModel(echo))

    cases = tuple(
        EvalCase(id=f"c{i}", turns=(Turn(input=f"q{i}", answer=Answer(exact=f"echo q{i}")),)) for i in range(200)
    )
    reports: list[Any] = []

    def one() -> None:
        reports.append(run_eval(agent, EvalSet(name="s", cases=cases), repeat=3, concurrency=5, progress=False))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(reports) == 3
    for report in reports:
        assert report.passed, report.failure_text()
        assert [r.case.id for r in report.cases] == [c.id for c in cases]
        assert all([run.attempt for run in r.runs] == [0, 1, 2] for r in report.cases)
    assert len(peaks) == 3 and all(peak <= 5 for peak in peaks.values()), peaks


def test_cancelling_an_eval_cancels_its_runs_and_their_tools() -> None:
    started: list[str] = []
    finished: list[str] = []
    two, both_stopped = asyncio.Event(), asyncio.Event()

    @tool
    async def block(x: str) -> str:
        """Waits until cancelled.

        Args:
            x: anything.
        """
        started.append(x)
        if len(started) == 2:
            two.set()
        try:
            await asyncio.Event().wait()
        finally:
            finished.append(x)
            if len(finished) == 2:
                both_stopped.set()
        return "never"

    def calls_block(messages: list[Message], tools: tuple[ToolInfo, ...]) -> Message:
        return Message.assistant(tool_calls=[ToolCall(id="c1", function=FunctionCall("block", '{"x": "1"}'))])

    def agent() -> ChatModelAgent:
        return ChatModelAgent("a", description="d", model=ScriptedModel(calls_block), tools=[block])

    cases = tuple(EvalCase(id=f"c{i}", turns=(Turn(input="q"),)) for i in range(5))

    async def main() -> None:
        task = asyncio.ensure_future(arun_eval(agent, EvalSet(name="s", cases=cases), concurrency=2, progress=False))
        await two.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The runs' streams are closed as the eval unwinds; their tasks end on the loop's next
        # turns (RunIterator.close cancels, it does not wait), so wait for the tools to stop.
        await asyncio.wait_for(both_stopped.wait(), 30)
        assert len(started) == 2 and len(finished) == 2  # the limit held; no third run started

    asyncio.run(main())
