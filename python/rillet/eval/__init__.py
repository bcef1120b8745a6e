"""Evaluation: check that an agent still behaves (docs/evaluation.md).

An :class:`EvalSet` holds cases of one or more turns, each with what the agent should do (the
tool calls of :class:`Trajectory`, the interrupts it should stop at and the answers to give
them) and answer (:class:`Answer`: exact text, contains, a regex, a JSON schema or pydantic
model, a :class:`Judge` model's verdict on a rubric). Eval sets are Python objects or
JSON files (YAML with the ``eval`` extra) of the shape the shipped JSON schema gives.

Layer: applications, beside rillet.cli, rillet.web, rillet.examples and rillet.benchmarks (which
may import each other). May import rillet.a2a, rillet.mcp, rillet.redis, rillet.temporal,
rillet.tracing and every layer under them (the import-linter contract in pyproject.toml;
docs/architecture.md).
"""

from rillet.eval.checks import ActualCall, Check, check_answer, check_trajectory, judge_answer
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
    "Check",
    "EvalCase",
    "EvalSet",
    "EvalSetError",
    "ExpectedCall",
    "ExpectedInterrupt",
    "Judge",
    "Trajectory",
    "Turn",
    "check_answer",
    "check_trajectory",
    "eval_set_schema",
    "judge_answer",
    "load_eval_set",
]
