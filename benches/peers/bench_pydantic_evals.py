"""Pydantic Evals on the eval workload (h) of ``benches/peers/run.py``; runs in its own virtual
environment (requirements: ``pydantic_evals.txt``).

The cases are a ``pydantic_evals.Dataset`` of ``Case`` objects; the task runs a Pydantic AI
``Agent`` on a ``FunctionModel`` (an ``async def``, as in bench_pydantic_ai.py) and records the
run's tool calls, read from the agent's messages, as an eval attribute; the evaluators are
``EqualsExpected`` (the exact answer), ``Contains`` (the city) and a trajectory evaluator of our
own comparing the recorded calls, names and arguments, with the case's. ``Dataset.evaluate``
runs the cases as tasks (``max_concurrency``: None, its default, is unbounded), each in a
logfire-api span (a no-op here: logfire is not installed) with a context for its attributes and
metrics, then runs the evaluators and builds an ``EvaluationReport``.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from _common import (
    EVAL_CITIES,
    EVAL_TOOL,
    Options,
    eval_answer,
    eval_city,
    eval_question,
    eval_workload,
    expected_answer,
    lookup,
    main,
)
from pydantic_ai import Agent, ModelResponse, TextPart, Tool, ToolCallPart, ToolReturnPart
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset, set_eval_attribute
from pydantic_evals.evaluators import Contains, EqualsExpected, Evaluator, EvaluatorContext

logging.disable(logging.WARNING)
warnings.filterwarnings("ignore")


async def eval_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls lookup for the question's city, then answers with the tool's result."""
    returned = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
    if not returned:
        question = next(
            p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)
        )
        assert isinstance(question, str)
        return ModelResponse(parts=[ToolCallPart(EVAL_TOOL, {"city": eval_city(question)}, tool_call_id="call_0")])
    return ModelResponse(parts=[TextPart(eval_answer(str(returned[-1].content)))])


@dataclass
class TrajectoryMatches(Evaluator[str, str, list[dict[str, Any]]]):
    """The run's tool calls (the task's ``tool_calls`` attribute) equal the case's metadata:
    the same names with the same arguments, in order, and no others."""

    def evaluate(self, ctx: EvaluatorContext[str, str, list[dict[str, Any]]]) -> bool:
        return ctx.attributes.get("tool_calls") == ctx.metadata


def eval_pydantic(options: Options) -> None:
    agent = Agent(FunctionModel(eval_reply), tools=[Tool(lookup)])

    async def task(question: str) -> str:
        result = await agent.run(question)
        calls = [
            {"name": p.tool_name, "arguments": p.args_as_dict()}
            for m in result.all_messages()
            if isinstance(m, ModelResponse)
            for p in m.parts
            if isinstance(p, ToolCallPart)
        ]
        set_eval_attribute("tool_calls", calls)
        return result.output

    dataset = Dataset[str, str, list[dict[str, Any]]](
        name="weather",
        cases=[
            Case(
                name=f"case-{i}",
                inputs=eval_question(city),
                expected_output=expected_answer(city),
                metadata=[{"name": EVAL_TOOL, "arguments": {"city": city}}],
                evaluators=(Contains(city),),
            )
            for i, city in enumerate(EVAL_CITIES)
        ],
        evaluators=[EqualsExpected(), TrajectoryMatches()],
    )

    def evaluate(concurrency: int | None) -> Callable[[], Awaitable[int]]:
        async def run() -> int:
            report = await dataset.evaluate(task, max_concurrency=concurrency, progress=False)
            return sum(
                len(c.assertions) == 3 and all(a.value is True for a in c.assertions.values()) for c in report.cases
            )

        return run

    eval_workload(evaluate, None, "unbounded")(options)


if __name__ == "__main__":
    main({"eval": eval_pydantic})
