"""Running an eval set: every case ``repeat`` times, several at once, each run in a Runner of
its own with a session and a checkpoint store, its interrupts answered as the case says."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

from rillet.checkpoint import InMemoryCheckpointStore
from rillet.eval.cassette import Cassette, CassetteMode, Player, cassette_path
from rillet.eval.checks import ActualCall, Check, call_text, check_answer, check_trajectory, judge_answer
from rillet.eval.sets import EvalCase, EvalSet, ExpectedInterrupt, Turn, load_eval_set
from rillet.runner import Runner
from rillet.sessions import InMemorySessionStore

if TYPE_CHECKING:
    from rillet.data.events import AgentEvent
    from rillet.models import ChatModel
    from rillet.run.agent import Agent
    from rillet.run.interrupts import InterruptCtx

__all__ = ["CaseResult", "CaseRun", "EvalReport", "Target", "arun_eval", "run_eval"]

Target: TypeAlias = "Agent | Callable[[], Agent]"
"""What an eval runs: an agent, or a function of no arguments that makes one (called for every
run of every case, so that runs share nothing)."""


@dataclass(slots=True)
class CaseRun:
    """One run of a case: its checks, its steps as one line each (each turn's user message, then
    the run's events; ``steps[0]`` is step 1), how long it took, and whether every check passed."""

    case_id: str
    attempt: int
    checks: list[Check]
    steps: list[str]
    duration: float

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "passed": self.passed,
            "duration_s": round(self.duration, 4),
            "checks": [c.to_json() for c in self.checks],
            "steps": self.steps,
        }


@dataclass(slots=True)
class CaseResult:
    """A case's runs; it passes when the share of runs that passed reaches ``min_pass_rate``."""

    case: EvalCase
    runs: list[CaseRun] = field(default_factory=list)

    @property
    def pass_rate(self) -> float:
        return sum(r.passed for r in self.runs) / len(self.runs) if self.runs else 0.0

    @property
    def passed(self) -> bool:
        return bool(self.runs) and self.pass_rate >= self.case.min_pass_rate

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.case.id,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "min_pass_rate": self.case.min_pass_rate,
            "runs": [r.to_json() for r in self.runs],
        }


@dataclass(slots=True)
class EvalReport:
    """The outcome of an eval set: one :class:`CaseResult` per case, in the set's order."""

    eval_set: str
    cases: list[CaseResult]
    duration: float

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)

    def to_json(self) -> dict[str, Any]:
        return {
            "eval_set": self.eval_set,
            "passed": self.passed,
            "cases_passed": sum(c.passed for c in self.cases),
            "cases": len(self.cases),
            "duration_s": round(self.duration, 4),
            "results": [c.to_json() for c in self.cases],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, indent=2, default=str)

    def failure_text(self) -> str:
        """What failed, a paragraph per failing case: each failing check of its first failing
        run, with the events around the one it points at."""
        return "\n\n".join(case_failure_text(c) for c in self.cases if not c.passed)


def where_text(check: Check) -> str:
    """``turn N``, or for a check of no turn (turn 0: the agent could not be made) what failed."""
    return f"turn {check.turn}" if check.turn else "making the agent"


def case_failure_text(result: CaseResult) -> str:
    """Why ``result`` failed, as :meth:`EvalReport.failure_text` gives it for one case."""
    passed = sum(r.passed for r in result.runs)
    lines = [
        f"case {result.case.id!r}: {passed} of {len(result.runs)} runs passed "
        f"(pass rate {result.pass_rate:.0%}, needs {result.case.min_pass_rate:.0%})"
    ]
    run = next((r for r in result.runs if not r.passed), None)
    if run is not None:
        for check in run.failures:
            lines.append(f"  {where_text(check)}, {check.kind}: {check.message}")
            if check.step is not None:
                first = max(check.step - 2, 1)
                for n in range(first, min(check.step + 1, len(run.steps)) + 1):
                    mark = ">>" if n == check.step else "  "
                    lines.append(f"    {mark} step {n}: {run.steps[n - 1]}")
    return "\n".join(lines)


def _is_agent(x: object) -> bool:
    return not isinstance(x, type) and callable(getattr(x, "run", None)) and isinstance(getattr(x, "name", None), str)


def _agent_of(target: Target) -> Agent:
    if _is_agent(target):
        return target  # type: ignore[return-value]  # an Agent, by the check above
    if callable(target):
        made = target()
        if not _is_agent(made):
            raise TypeError(f"the eval's agent factory returned a {type(made).__name__}, not an agent")
        return made
    raise TypeError(f"an eval runs an agent or a function of no arguments that makes one, got {type(target).__name__}")


def _tool_of(ctx: InterruptCtx) -> str | None:
    """The tool an interrupt comes from: its info's ``tool``, else its address's last tool segment."""
    if isinstance(ctx.info, dict) and isinstance(ctx.info.get("tool"), str):
        return str(ctx.info["tool"])
    for segment in reversed(tuple(ctx.address)):
        if str(segment).startswith("tool:"):
            return str(segment).split(":")[1]
    return None


def _arguments(text: str) -> Any:
    try:
        return json.loads(text) if text else {}
    except json.JSONDecodeError:
        return text


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _CaseRunner:
    """One run of one case."""

    def __init__(
        self,
        case: EvalCase,
        attempt: int,
        target: Target,
        judge_model: ChatModel | None,
        cassette: tuple[Cassette, CassetteMode] | None,
    ) -> None:
        self.case, self.attempt, self.judge_model = case, attempt, judge_model
        self.tape = cassette[0].plugin(case.id, attempt, cassette[1]) if cassette is not None else None
        plugins = [self.tape] if self.tape is not None else []
        self.runner = Runner(
            _agent_of(target),
            checkpoint_store=InMemoryCheckpointStore(),
            session_store=InMemorySessionStore(),
            plugins=plugins,
        )
        self.session = f"eval-{uuid.uuid4().hex[:12]}"
        self.steps: list[str] = []
        self.checks: list[Check] = []
        self.turn = 0
        self.start = time.perf_counter()

    def timed_out(self, timeout: float) -> CaseRun:
        """The run as far as it got when it took longer than ``timeout`` seconds (it was cancelled)."""
        message = f"the run did not finish in {timeout:g}s (at step {len(self.steps)}); it was stopped"
        self.checks.append(Check(self.turn, "timeout", False, message, len(self.steps) or None))
        return CaseRun(self.case.id, self.attempt, self.checks, self.steps, time.perf_counter() - self.start)

    async def run(self) -> CaseRun:
        start = self.start = time.perf_counter()
        for t, turn in enumerate(self.case.turns, 1):
            self.turn = t
            try:
                ok = await self._turn(t, turn)
            except Exception as e:  # noqa: BLE001  # the Runner refusing, a failing judge: this run fails, the others go on
                self.checks.append(Check(t, "error", False, f"{type(e).__name__}: {e}", len(self.steps) or None))
                ok = False
            if not ok:
                break
        else:
            left = self.tape.unused() if isinstance(self.tape, Player) else []
            if left:  # the replay took another path than the recording: what it checked is not this agent's
                t = len(self.case.turns)
                message = f"the run left {', '.join(left)} of the cassette unused: the agent or the case changed since"
                self.checks.append(Check(t, "cassette", False, message + " it was recorded; record it again"))
        return CaseRun(self.case.id, self.attempt, self.checks, self.steps, time.perf_counter() - start)

    async def _turn(self, t: int, turn: Turn) -> bool:
        """Runs turn ``t`` and checks it; False if the case cannot go on (an error, an interrupt
        that was not expected, or one expected that did not come)."""
        calls: list[ActualCall] = []
        answer: tuple[str, int] | None = None
        expected = list(turn.interrupts)
        checkpoint = f"{self.session}-{t}"
        events = self.runner.query(
            turn.input,
            session_id=self.session,
            checkpoint_id=checkpoint,
            session_values=self.case.session_state if t == 1 else None,
        )
        self.steps.append(f"user: {_short(turn.input)}")
        go_on = True
        while True:
            asked: list[InterruptCtx] = []
            async for ev in events:
                answer = await self._event(t, ev, calls, asked) or answer
            if not asked:
                break
            targets, go_on = self._answers(t, asked, expected)
            if not go_on:
                break
            events = await self.runner.aresume(checkpoint, targets=targets)
        if not go_on or any(c.kind == "error" and c.turn == t for c in self.checks):
            return False  # the turn did not finish: its failure says where; its answer would only repeat it
        if expected:
            what = ", ".join(f"from {e.tool}" if e.tool else "(any)" for e in expected)
            self.checks.append(Check(t, "interrupts", False, f"expected an interrupt {what} that never came"))
        if turn.trajectory is not None:
            self.checks.append(check_trajectory(t, turn.trajectory, calls))
        if turn.answer is not None:
            text, where = answer if answer is not None else (None, None)
            self.checks += check_answer(t, turn.answer, text, where)
            if turn.answer.judge is not None and text is not None:
                judged = await judge_answer(t, turn.answer.judge, self.judge_model, turn.input, text, where)
                self.checks.append(judged)
        return not expected

    async def _event(
        self, t: int, ev: AgentEvent, calls: list[ActualCall], asked: list[InterruptCtx]
    ) -> tuple[str, int] | None:
        """Records event ``ev`` as a step; returns the answer it carries, if any."""
        n = len(self.steps) + 1
        who = ev.agent_name
        answer = None
        line = f"{who}: (no output)"
        if ev.message_output is not None:
            m = await ev.message_output.aget_message()
            if m.role == "tool":
                line = f"{who}: {m.tool_name or 'tool'} returned {_short(m.content)!r}"
            elif m.tool_calls:
                made = [ActualCall(c.function.name, _arguments(c.function.arguments), n) for c in m.tool_calls]
                calls += made
                line = f"{who}: calls " + ", ".join(call_text(c.name, c.arguments) for c in made)
            else:
                line = f"{who}: says {_short(m.content)!r}"
                if m.role == "assistant" and m.content:
                    answer = (m.content, n)
        if ev.action is not None:
            a = ev.action
            if a.interrupted is not None:
                asked += a.interrupted.interrupt_contexts
                line = f"{who}: interrupted: " + ", ".join(
                    f"{_tool_of(c) or 'interrupt'} asks {_short(json.dumps(c.info, default=str))}"
                    for c in a.interrupted.interrupt_contexts
                )
            elif a.transfer_to_agent is not None:
                line = f"{who}: transfers to {a.transfer_to_agent.dest_agent_name}"
            elif a.exit:
                line += " (exit)"
        if ev.error is not None:
            line = f"{who}: error: {type(ev.error).__name__}: {_short(str(ev.error), 200)}"
            self.checks.append(Check(t, "error", False, f"the run failed at step {n}: {ev.error}", n))
        self.steps.append(line)
        return answer

    def _answers(
        self, t: int, asked: Sequence[InterruptCtx], expected: list[ExpectedInterrupt]
    ) -> tuple[dict[str, Any], bool]:
        """The resume targets for the interrupts ``asked``, from the ``expected`` ones (taken off
        the list); False if one was not expected."""
        targets: dict[str, Any] = {}
        for ctx in asked:
            tool = _tool_of(ctx)
            found = next((e for e in expected if e.tool is None or e.tool == tool), None)
            if found is None:
                n = len(self.steps)
                what = f"from {tool}" if tool else "(not from a tool)"
                info = _short(json.dumps(ctx.info, default=str))
                self.checks.append(Check(t, "interrupts", False, f"unexpected interrupt {what} at step {n}: {info}", n))
                return targets, False
            expected.remove(found)
            targets[ctx.id] = found.resume
        return targets, True


ProgressFn: TypeAlias = "Callable[[int, int], None]"


def progress_line(stream: TextIO) -> ProgressFn:
    """A progress function writing `\\r  eval: DONE/TOTAL runs` to ``stream``, a newline after the last."""

    def show(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        stream.write(f"\r  eval: {done}/{total} runs{end}")
        stream.flush()

    return show


async def arun_eval(
    target: Target,
    eval_set: EvalSet | str | Path,
    *,
    repeat: int | None = None,
    concurrency: int = 4,
    judge_model: ChatModel | None = None,
    progress: bool | ProgressFn | None = None,
    cassette: CassetteMode | None = None,
    cassette_file: str | Path | None = None,
    timeout: float | None = None,  # noqa: ASYNC109  # per run, not for the whole call: asyncio.timeout cannot say which run
) -> EvalReport:
    """Runs every case of ``eval_set`` (an :class:`EvalSet`, or the path of its file) on
    ``target`` (an agent, or a function that makes one for every run), each case ``repeat``
    times (when None: the case's ``repeat``, else the set's, else once), at most ``concurrency`` runs at once.
    ``judge_model`` answers the cases' judge criteria. ``progress``: True shows a progress line
    on stderr, a function ``(done, total)`` is called after each run, None shows the line when
    stderr is a terminal.

    ``cassette="record"`` records every run's model replies into ``cassette_file`` (default:
    beside the eval set's file, :func:`~rillet.eval.cassette.cassette_path`), keeping the
    other cases' recordings; ``"replay"`` answers every model call from it instead of the
    model, offline (a call past the recording fails the run, naming the case and agent).

    ``timeout`` (seconds) stops a run that takes longer (an agent that hangs): it fails, with
    the steps it got to; None (the default) waits as long as a run takes."""
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a number of seconds above 0, got {timeout}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if repeat is not None and repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    evals = eval_set if isinstance(eval_set, EvalSet) else load_eval_set(eval_set)
    tape = _cassette(eval_set, cassette, cassette_file)
    if progress is None:
        progress = sys.stderr.isatty()
    report_progress: ProgressFn | None = (
        progress_line(sys.stderr) if progress is True else progress if callable(progress) else None
    )
    results = [CaseResult(case) for case in evals.cases]
    jobs = [
        (result, attempt) for result in results for attempt in range(repeat or result.case.repeat or evals.repeat or 1)
    ]
    limit = asyncio.Semaphore(concurrency)
    done = 0
    start = time.perf_counter()

    async def one(result: CaseResult, attempt: int) -> CaseRun:
        nonlocal done
        async with limit:
            try:
                runner = _CaseRunner(result.case, attempt, target, judge_model, tape and tape[:2])
                try:
                    run = await asyncio.wait_for(runner.run(), timeout)
                except TimeoutError:
                    run = runner.timed_out(timeout or 0.0)
            except Exception as e:  # noqa: BLE001  # making the agent failed: a failed run, with the reason
                run = CaseRun(result.case.id, attempt, [Check(0, "error", False, f"{type(e).__name__}: {e}")], [], 0.0)
        done += 1
        if report_progress is not None:
            report_progress(done, len(jobs))
        return run

    runs = await asyncio.gather(*(one(result, attempt) for result, attempt in jobs))
    for (result, _), run in zip(jobs, runs, strict=True):
        result.runs.append(run)
    if tape is not None and tape[1] == "record":
        tape[0].save(tape[2])
    return EvalReport(evals.name, results, time.perf_counter() - start)


def _cassette(
    eval_set: EvalSet | str | Path, mode: CassetteMode | None, file: str | Path | None
) -> tuple[Cassette, CassetteMode, Path] | None:
    """The cassette to record into or replay from, with its mode and path; None without a mode."""
    if mode is None:
        return None
    if mode not in ("record", "replay"):
        raise ValueError(f'cassette must be "record" or "replay", got {mode!r}')
    if file is not None:
        path = Path(file)
    elif isinstance(eval_set, EvalSet):
        raise ValueError("an eval set given as an object has no file to keep its cassette beside: pass cassette_file")
    else:
        path = cassette_path(eval_set)
    if mode == "replay" or path.exists():
        return Cassette.load(path), mode, path
    return Cassette(), mode, path


def run_eval(
    target: Target,
    eval_set: EvalSet | str | Path,
    *,
    repeat: int | None = None,
    concurrency: int = 4,
    judge_model: ChatModel | None = None,
    progress: bool | ProgressFn | None = None,
    cassette: CassetteMode | None = None,
    cassette_file: str | Path | None = None,
    timeout: float | None = None,
) -> EvalReport:
    """:func:`arun_eval` for code without an event loop (inside one, ``await arun_eval(...)``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("run_eval() was called inside a running event loop; use `await arun_eval(...)` there")
    return asyncio.run(
        arun_eval(
            target,
            eval_set,
            repeat=repeat,
            concurrency=concurrency,
            judge_model=judge_model,
            progress=progress,
            cassette=cassette,
            cassette_file=cassette_file,
            timeout=timeout,
        )
    )
