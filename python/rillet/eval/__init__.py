"""Evaluation: check that an agent still behaves (docs/evaluation.md).

An :class:`EvalSet` holds cases of one or more turns, each with what the agent should do (the
tool calls of :class:`Trajectory`, the interrupts it should stop at and the answers to give
them) and answer (:class:`Answer`: exact text, contains, a regex, a JSON schema or pydantic
model, a :class:`Judge` model's verdict on a rubric). :func:`run_eval` (and its ``await`` twin
:func:`arun_eval`) runs every case, several at once and each as many times as asked, and gives
an :class:`EvalReport`; ``rillet eval MODULE:ATTRIBUTE evalset.json`` does the same from the
command line, and :func:`rillet.eval.testing.eval_test` makes pytest run the cases as tests.

Layer: applications, beside rillet.cli, rillet.web, rillet.examples and rillet.benchmarks (which
may import each other). May import rillet.a2a, rillet.mcp, rillet.redis, rillet.temporal,
rillet.tracing and every layer under them (the import-linter contract in pyproject.toml;
docs/architecture.md).
"""

from rillet.eval.checks import ActualCall, Check, check_answer, check_trajectory, judge_answer
from rillet.eval.run import CaseResult, CaseRun, EvalReport, Target, arun_eval, run_eval
from rillet.eval.sets import (
    SCHEMA_PATH,
    Answer,
    EvalCase,
    EvalSet,
    EvalSetError,
    ExpectedCall,
    ExpectedInterrupt,
    Judge,
    Trajectory,
    Turn,
    eval_set_schema,
    load_eval_set,
)

__all__ = [
    "SCHEMA_PATH",
    "ActualCall",
    "Answer",
    "CaseResult",
    "CaseRun",
    "Check",
    "EvalCase",
    "EvalReport",
    "EvalSet",
    "EvalSetError",
    "ExpectedCall",
    "ExpectedInterrupt",
    "Judge",
    "Target",
    "Trajectory",
    "Turn",
    "arun_eval",
    "check_answer",
    "check_trajectory",
    "eval_set_schema",
    "judge_answer",
    "load_eval_set",
    "run_eval",
]
