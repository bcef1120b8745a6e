"""pytest: an eval set's cases as parametrized tests, with readable failures.

In a test module::

    from rillet.eval.testing import eval_test
    from myapp.agents import build_agent

    test_travel = eval_test(build_agent, "evals/travel.evalset.json")

pytest collects ``test_travel`` once per case (the case's id is the test's id); a failing case
fails with the report's text: the checks that failed and the steps they point at. Nothing is
registered with pytest, so the rest of a suite is unaffected.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rillet.eval.cassette import CassetteMode, cassette_path
from rillet.eval.run import Target, run_eval
from rillet.eval.sets import EvalCase, EvalSet, load_eval_set

if TYPE_CHECKING:
    from rillet.models import ChatModel

__all__ = ["eval_test"]


def eval_test(
    target: Target,
    eval_set: EvalSet | str | Path,
    *,
    repeat: int | None = None,
    judge_model: ChatModel | None = None,
    timeout: float | None = None,
    cassette: CassetteMode | None = None,
    cassette_file: str | Path | None = None,
) -> Callable[[EvalCase], None]:
    """A test function parametrized over the cases of ``eval_set`` (an :class:`EvalSet` or the
    path of its file, read now): each runs its case on ``target`` as :func:`run_eval` does and
    fails with the report's text when the case fails. ``timeout``, ``cassette`` and
    ``cassette_file`` are :func:`run_eval`'s (the cassette beside the eval set's file by default):
    record once with ``cassette="record"`` (not under pytest-xdist: each case's test writes the
    file), then replay offline with ``"replay"``. Assign it to a ``test_...`` name."""
    import pytest  # only tests call this: pytest is not a dependency of rillet

    evals = eval_set if isinstance(eval_set, EvalSet) else load_eval_set(eval_set)
    if cassette is not None and cassette_file is None:
        if isinstance(eval_set, EvalSet):
            raise ValueError(
                "an eval set given as an object has no file to keep its cassette beside: pass cassette_file"
            )
        cassette_file = cassette_path(eval_set)

    @pytest.mark.parametrize("case", evals.cases, ids=[c.id for c in evals.cases])
    def test_case(case: EvalCase) -> None:
        one = EvalSet(name=evals.name, cases=(case,), repeat=evals.repeat)
        report = run_eval(
            target,
            one,
            repeat=repeat,
            judge_model=judge_model,
            progress=False,
            timeout=timeout,
            cassette=cassette,
            cassette_file=cassette_file,
        )
        if not report.passed:
            pytest.fail(report.failure_text(), pytrace=False)

    test_case.__name__ = test_case.__qualname__ = f"test_{evals.name}"
    return test_case
