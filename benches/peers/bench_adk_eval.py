"""Google ADK's own evaluation on the eval workload (h) of ``benches/peers/run.py``; runs in its
own virtual environment (requirements: ``adk_eval.txt``: google-adk's ``eval`` extra, pinned).

The cases are an ADK ``EvalSet`` of ``EvalCase`` objects (one ``Invocation`` each: the user's
question, the expected final response, and the expected tool use as ``IntermediateData``), run
the way ``AgentEvaluator`` runs them (``_get_eval_results_by_eval_id``): an
``InMemoryEvalSetsManager`` holding the set, a ``LocalEvalService`` over the agent,
``perform_inference`` (per case: a ``Runner`` with an in-memory session, artifact and memory
service and ADK's internal eval plugins, the run's events turned into an ``Invocation``) and then
``evaluate`` with two metrics that run offline: ``tool_trajectory_avg_score`` (EXACT: the same
tool names with the same arguments, in order) and ``response_match_score`` (ROUGE-1 F-measure
of the final response against the expected one, from the rouge-score package; threshold 1.0).
ADK has no offline exact or contains metric for the answer: its other response metrics
(``final_response_match_v2``, rubric-based, hallucinations, safety) ask a judge model or Vertex
AI. The parallelism of both phases is ADK's default (4) or 1.

The scripted model is a ``BaseLlm`` subclass (as in bench_adk.py): it calls lookup for the
question's city, then answers with the tool's result.
"""

from __future__ import annotations

import os

# as bench_adk.py: no telemetry and no prompt text in spans; the only network is none at all
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", "false")

import logging
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable

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
from google.adk.agents import LlmAgent
from google.adk.evaluation.base_eval_service import (
    EvaluateConfig,
    EvaluateRequest,
    InferenceConfig,
    InferenceRequest,
)
from google.adk.evaluation.eval_case import EvalCase, IntermediateData, Invocation, SessionInput
from google.adk.evaluation.eval_metrics import EvalMetric, EvalStatus, PrebuiltMetrics
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.local_eval_service import LocalEvalService
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools import FunctionTool
from google.genai import types

logging.disable(logging.WARNING)  # ADK logs experimental-feature warnings per call
warnings.filterwarnings("ignore")

APP, USER, SET_ID = "bench", "user", "weather"


def _parts(request: LlmRequest) -> list[types.Part]:
    return [p for c in request.contents for p in (c.parts or [])]


class EvalModel(BaseLlm):
    """Calls lookup for the question's city; once the tool's result is in, answers with it."""

    model: str = "bench-eval"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = _parts(llm_request)
        returned = [p.function_response for p in parts if p.function_response is not None]
        if returned:
            result = (returned[-1].response or {}).get("result")
            part = types.Part(text=eval_answer(str(result)))
        else:
            question = next(p.text for p in parts if p.text)
            call = types.FunctionCall(id="call_0", name=EVAL_TOOL, args={"city": eval_city(question)})
            part = types.Part(function_call=call)
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def _text(text: str, role: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


def eval_adk(options: Options) -> None:
    agent = LlmAgent(name="weather", model=EvalModel(), tools=[FunctionTool(lookup)])
    eval_set = EvalSet(
        eval_set_id=SET_ID,
        eval_cases=[
            EvalCase(
                eval_id=f"case-{i}",
                conversation=[
                    Invocation(
                        invocation_id=f"inv-{i}",
                        user_content=_text(eval_question(city), "user"),
                        final_response=_text(expected_answer(city), "model"),
                        intermediate_data=IntermediateData(
                            tool_uses=[types.FunctionCall(name=EVAL_TOOL, args={"city": city})]
                        ),
                    )
                ],
                session_input=SessionInput(app_name=APP, user_id=USER),
            )
            for i, city in enumerate(EVAL_CITIES)
        ],
    )
    metrics = [
        EvalMetric(metric_name=PrebuiltMetrics.TOOL_TRAJECTORY_AVG_SCORE.value, threshold=1.0),
        EvalMetric(metric_name=PrebuiltMetrics.RESPONSE_MATCH_SCORE.value, threshold=1.0),
    ]

    def evaluate(concurrency: int | None) -> Callable[[], Awaitable[int]]:
        parallelism = concurrency or 4

        async def run() -> int:
            # what AgentEvaluator._get_eval_results_by_eval_id does, with an agent object
            # instead of a module path to import it from
            manager = InMemoryEvalSetsManager()
            manager.create_eval_set(app_name=APP, eval_set_id=SET_ID)
            for case in eval_set.eval_cases:
                manager.add_eval_case(app_name=APP, eval_set_id=SET_ID, eval_case=case)
            service = LocalEvalService(root_agent=agent, eval_sets_manager=manager)
            request = InferenceRequest(
                app_name=APP, eval_set_id=SET_ID, inference_config=InferenceConfig(parallelism=parallelism)
            )
            inferences = [r async for r in service.perform_inference(inference_request=request)]
            config = EvaluateConfig(eval_metrics=metrics, parallelism=parallelism)
            results = [
                r
                async for r in service.evaluate(
                    evaluate_request=EvaluateRequest(inference_results=inferences, evaluate_config=config)
                )
            ]
            return sum(
                r.final_eval_status == EvalStatus.PASSED and len(r.overall_eval_metric_results) == len(metrics)
                for r in results
            )

        return run

    eval_workload(evaluate, 4, "4")(options)


if __name__ == "__main__":
    main({"eval": eval_adk})
