"""The checks of a turn: the tool trajectory against the expected one, the answer against its
criteria (a judge model among them). Each gives a :class:`Check`; a failed trajectory check
names the step (a user message or an event of the run) where the run left the expected trajectory."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from rillet._native import Message
from rillet.eval.sets import Answer, ExpectedCall, Judge, Trajectory

if TYPE_CHECKING:
    from rillet.models import ChatModel

__all__ = ["ActualCall", "Check", "check_answer", "check_trajectory", "judge_answer"]


@dataclass(frozen=True, slots=True)
class ActualCall:
    """A tool call the agent made: its name, its arguments (parsed JSON, else the text as sent)
    and the step of the run that carried it (the steps of a run: each turn's user message,
    then each event, numbered from 1)."""

    name: str
    arguments: Any
    step: int


@dataclass(frozen=True, slots=True)
class Check:
    """One check of one run of a case: which ``turn`` (1 for the first), what ``kind``
    (``trajectory``, ``answer.exact``, ``answer.contains``, ``answer.regex``,
    ``answer.json_schema``, ``answer.output_model``, ``answer.judge``, ``interrupts``, ``error``),
    whether it ``passed``, why not (``message``), and the ``step`` it points at (see
    :class:`ActualCall`), if any."""

    turn: int
    kind: str
    passed: bool
    message: str = ""
    step: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, "kind": self.kind, "passed": self.passed, "message": self.message, "step": self.step}


def call_text(name: str, arguments: Any) -> str:
    """``name({...})``, as the report shows a call."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return f"{name}({args})"


def _expected_text(e: ExpectedCall) -> str:
    if e.arguments is None:
        return f"{e.name}(...)"
    text = call_text(e.name, e.arguments)
    return text[:-1] + ", ...)" if e.arguments_match == "subset" else text


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal as JSON: Python's ``==`` says ``True == 1`` and
    ``1.0 == True``, but a boolean is not a number (``30`` and ``30.0`` are the same number)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) or isinstance(b, (int, float)):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same_json(a[k], b[k]) for k in a)
        )
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (
            isinstance(a, (list, tuple))
            and isinstance(b, (list, tuple))
            and len(a) == len(b)
            and all(same_json(x, y) for x, y in zip(a, b, strict=True))
        )
    return bool(a == b)


def _matches(e: ExpectedCall, a: ActualCall) -> bool:
    if e.name != a.name:
        return False
    if e.arguments is None:
        return True
    if e.arguments_match == "exact":
        return same_json(a.arguments, e.arguments)
    return isinstance(a.arguments, dict) and all(
        k in a.arguments and same_json(a.arguments[k], v) for k, v in e.arguments.items()
    )


def _augment(i: int, edges: list[list[int]], owner: dict[int, int], seen: set[int]) -> bool:
    """Kuhn's augmenting path from left node ``i``: True if it got a right node (``owner``
    maps a right node to the left node holding it)."""
    for j in edges[i]:
        if j in seen:
            continue
        seen.add(j)
        if j not in owner or _augment(owner[j], edges, owner, seen):
            owner[j] = i
            return True
    return False


def _made(actual: Sequence[ActualCall]) -> str:
    return ", ".join(f"{call_text(a.name, a.arguments)} at step {a.step}" for a in actual) or "no tool calls"


def check_trajectory(turn: int, expected: Trajectory, actual: Sequence[ActualCall]) -> Check:
    """Compares the calls a turn made with ``expected`` (see :class:`Trajectory` for the modes)."""
    exp = expected.calls
    fail = _MODES[expected.match](exp, actual)
    if fail is None:
        return Check(turn, "trajectory", True)
    message, step = fail
    return Check(turn, "trajectory", False, f"{expected.match}: {message}", step)


def _exact(exp: Sequence[ExpectedCall], actual: Sequence[ActualCall]) -> tuple[str, int | None] | None:
    for i in range(max(len(exp), len(actual))):
        if i >= len(actual):
            after = f" after step {actual[-1].step}" if actual else ""
            return f"the run stopped calling tools{after}; expected call {i + 1}: {_expected_text(exp[i])}", None
        a = actual[i]
        if i >= len(exp):
            return f"left the expected trajectory at step {a.step}: extra call {call_text(a.name, a.arguments)}", a.step
        if not _matches(exp[i], a):
            got = call_text(a.name, a.arguments)
            return (
                f"left the expected trajectory at step {a.step} (call {i + 1}): expected {_expected_text(exp[i])}, "
                f"got {got}",
                a.step,
            )
    return None


def _in_order(exp: Sequence[ExpectedCall], actual: Sequence[ActualCall]) -> tuple[str, int | None] | None:
    j, last = 0, -1
    for k, a in enumerate(actual):
        if j < len(exp) and _matches(exp[j], a):
            j, last = j + 1, k
    if j == len(exp):
        return None
    rest = actual[last + 1 :]
    where = f"after step {actual[last].step}" if last >= 0 else "from the start"
    return (
        f"left the expected trajectory {where}: expected {_expected_text(exp[j])} next (call {j + 1} of {len(exp)}), "
        f"the run made {_made(rest)}",
        rest[0].step if rest else None,
    )


def _any_order(exp: Sequence[ExpectedCall], actual: Sequence[ActualCall]) -> tuple[str, int | None] | None:
    # Each expected call needs a call of its own: a matching, not a first-fit (an expected call
    # with any arguments must not take the one call a more precise expected call needs).
    edges = [[k for k, a in enumerate(actual) if _matches(e, a)] for e in exp]
    owner: dict[int, int] = {}
    missing = [_expected_text(e) for i, e in enumerate(exp) if not _augment(i, edges, owner, set())]
    if not missing:
        return None
    return f"never made {', '.join(missing)}; the run made {_made(actual)}", None


def _subset(exp: Sequence[ExpectedCall], actual: Sequence[ActualCall]) -> tuple[str, int | None] | None:
    # Each call made needs an expected call of its own (a matching, as for any_order); the first
    # call that cannot get one, with the calls before it placed, is where the run left the set.
    edges = [[j for j, e in enumerate(exp) if _matches(e, a)] for a in actual]
    owner: dict[int, int] = {}
    for k, a in enumerate(actual):
        if not _augment(k, edges, owner, set()):
            left = [_expected_text(e) for j, e in enumerate(exp) if j not in owner]
            return (
                f"left the expected trajectory at step {a.step}: {call_text(a.name, a.arguments)} is not one of "
                f"the expected calls left ({', '.join(left) or 'none'})",
                a.step,
            )
    return None


_MODES = {"exact": _exact, "in_order": _in_order, "any_order": _any_order, "subset": _subset}


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_answer(turn: int, criteria: Answer, answer: str | None, step: int | None) -> list[Check]:
    """The checks of ``answer`` (the turn's last assistant text, carried by ``step``; None if it
    gave none) against each criterion given, but the judge (:func:`judge_answer`, which is async)."""
    checks: list[Check] = []
    if answer is None:
        return [Check(turn, "answer", False, "the turn gave no answer (no assistant text)")]

    def add(kind: str, ok: bool, message: str) -> None:
        checks.append(Check(turn, f"answer.{kind}", ok, "" if ok else message, None if ok else step))

    got = f"got {_short(answer)!r}"
    if criteria.exact is not None:
        add("exact", answer.strip() == criteria.exact.strip(), f"expected {_short(criteria.exact)!r}, {got}")
    for text in criteria.contains:
        add("contains", text in answer, f"expected it to contain {text!r}, {got}")
    for text in criteria.not_contains:
        add("not_contains", text not in answer, f"expected it not to contain {text!r}, {got}")
    if criteria.regex is not None:
        add("regex", re.search(criteria.regex, answer) is not None, f"expected a match of /{criteria.regex}/, {got}")
    if criteria.json_schema is not None:
        add("json_schema", *_schema_check(criteria.json_schema, answer))
    if criteria.output_model is not None:
        try:
            criteria.output_model.model_validate_json(answer)
            add("output_model", True, "")
        except ValidationError as e:
            add("output_model", False, f"not a valid {criteria.output_model.__name__}: {_short(str(e), 300)}")
    return checks


def _schema_check(schema: dict[str, Any], answer: str) -> tuple[bool, str]:
    try:
        import jsonschema  # type: ignore[import-untyped]  # optional: the `eval` extra (no stubs installed)
    except ImportError:
        return False, "checking a JSON schema needs jsonschema: pip install 'rillet[eval]'"
    try:
        value = json.loads(answer)
    except json.JSONDecodeError as e:
        return False, f"the answer is not JSON ({e}): {_short(answer)!r}"
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if error is None:
        return True, ""
    where = "/".join(str(p) for p in error.absolute_path) or "the top"
    return False, f"at {where}: {error.message}"


_FENCE = re.compile(r"```(?:json)?\s*\n(.*)\n\s*```", re.DOTALL)
"""A reply that is one fenced block of code: the judge's JSON inside it is read."""

JUDGE_SYSTEM = (
    "You grade an AI agent's answer against a rubric. Reply with one JSON object and nothing else: "
    '{"verdict": "pass", "reason": "<one sentence>"} if the answer meets the rubric, '
    '{"verdict": "fail", "reason": "<one sentence>"} if it does not.'
)


async def judge_answer(
    turn: int, judge: Judge, model: ChatModel | None, question: str, answer: str, step: int | None
) -> Check:
    """Asks ``model`` whether ``answer`` to ``question`` meets ``judge.rubric``. The reply must be
    exactly ``{"verdict": "pass" | "fail", "reason": "..."}`` (alone, or alone in a fenced
    block of code); any other reply fails the check."""
    if model is None:
        return Check(
            turn,
            "answer.judge",
            False,
            "the case has a judge criterion but the run has no judge model: give run_eval's judge_model "
            "(rillet eval --judge MODULE:ATTRIBUTE)",
        )
    prompt = f"Rubric:\n{judge.rubric}\n\nThe user said:\n{question}\n\nThe agent answered:\n{answer}"
    try:
        reply = await model.generate([Message.system(JUDGE_SYSTEM), Message.user(prompt)])
    except Exception as e:  # noqa: BLE001  # the judge's failure fails this check, not the agent's run
        return Check(turn, "answer.judge", False, f"the judge model failed: {type(e).__name__}: {e}", step)
    text = reply.content.strip()
    fenced = _FENCE.fullmatch(text)  # many models put JSON in a ```json fence, asked or not
    try:
        verdict = json.loads(fenced.group(1) if fenced else text)
    except json.JSONDecodeError:
        verdict = None
    if (
        not isinstance(verdict, dict)
        or set(verdict) != {"verdict", "reason"}
        or verdict["verdict"] not in ("pass", "fail")
        or not isinstance(verdict["reason"], str)
    ):
        message = f'the judge did not reply {{"verdict": "pass" | "fail", "reason": "..."}}: {_short(text)!r}'
        return Check(turn, "answer.judge", False, message, step)
    if verdict["verdict"] == "pass":
        return Check(turn, "answer.judge", True)
    return Check(turn, "answer.judge", False, f"the judge says: {verdict['reason']}", step)
