"""PlanExecuteReplan (Eino's adk/prebuilt/planexecute): Sequential(planner, Loop(executor,
replanner)) talking through the session keys UserInput, Plan, ExecutedStep, ExecutedSteps."""

from __future__ import annotations

from typing import Any

import pytest
from rillet import AgentAction, CallbackContext, Message, Runner, ScriptedModel, get_session_values, tool
from rillet.data.events import AgentEvent
from rillet.prebuilt import (
    EXECUTED_STEP_KEY,
    EXECUTED_STEPS_KEY,
    PLAN_KEY,
    USER_INPUT_KEY,
    ExecutedStep,
    Plan,
    PlanExecuteReplan,
    Planner,
    Replanner,
    executor,
)
from support.event_rows import calls
from support.event_rows import row as event_row


def row(ev: AgentEvent) -> tuple[str, str, str, str]:
    author, path, what, action = event_row(ev)
    return author, path.replace("plan_execute_replan", "per"), what, action


@tool
def lookup(city: str) -> str:
    """Looks up a city's population.

    Args:
        city: the city.
    """
    return {"Lisbon": "545000", "Porto": "232000"}[city]


def build(
    max_iterations: int = 10,
) -> tuple[PlanExecuteReplan, ScriptedModel, ScriptedModel, ScriptedModel, dict[str, Any]]:
    planner_model = ScriptedModel([calls("plan", {"steps": ["population of Lisbon", "population of Porto", "sum"]})])
    executor_model = ScriptedModel(
        [
            calls("lookup", {"city": "Lisbon"}, "l1"),
            "Lisbon: 545000",
            calls("lookup", {"city": "Porto"}, "l2"),
            "Porto: 232000",
        ]
    )
    replanner_model = ScriptedModel(
        [
            calls("plan", {"steps": ["population of Porto", "sum"]}),
            calls("respond", {"response": "Together: 777000."}),
        ]
    )
    per = PlanExecuteReplan(
        Planner(planner_model),
        executor(executor_model, tools=[lookup]),
        Replanner(replanner_model),
        max_iterations=max_iterations,
    )
    seen: dict[str, Any] = {}

    def spy(ctx: CallbackContext) -> None:
        seen.update(get_session_values())

    per.after_agent_callbacks.append(spy)
    return per, planner_model, executor_model, replanner_model, seen


QUESTION = "How many people live in Lisbon and Porto together?"


def test_plan_execute_replan_events_and_session_values() -> None:
    per, planner_model, executor_model, replanner_model, seen = build()
    events = list(Runner(per).query(QUESTION))
    loop1 = "per/planner/execute_replan"
    assert [row(e) for e in events] == [
        ("planner", "per/planner", 'assistant:{"steps": ["population of Lisbon", "population of Porto", "sum"]}', ""),
        ("executor", f"{loop1}/executor", "assistant:lookup", ""),
        ("executor", f"{loop1}/executor", "tool:545000", ""),
        ("executor", f"{loop1}/executor", "assistant:Lisbon: 545000", ""),
        ("replanner", f"{loop1}/executor/replanner", 'assistant:{"steps": ["population of Porto", "sum"]}', ""),
        ("executor", f"{loop1}/executor/replanner/executor", "assistant:lookup", ""),
        ("executor", f"{loop1}/executor/replanner/executor", "tool:232000", ""),
        ("executor", f"{loop1}/executor/replanner/executor", "assistant:Porto: 232000", ""),
        (
            "replanner",
            f"{loop1}/executor/replanner/executor/replanner",
            'assistant:{"response": "Together: 777000."}',
            "",
        ),
        ("replanner", f"{loop1}/executor/replanner/executor/replanner", "", "break_loop:replanner:1:True"),
    ]
    assert seen[USER_INPUT_KEY] == [Message.user(QUESTION)]
    assert seen[PLAN_KEY] == Plan(("population of Porto", "sum"))
    assert seen[EXECUTED_STEP_KEY] == "Porto: 232000"
    assert seen[EXECUTED_STEPS_KEY] == [
        ExecutedStep("population of Lisbon", "Lisbon: 545000"),
        ExecutedStep("population of Porto", "Porto: 232000"),
    ]
    # forced tool calls, as Eino's planner and replanner make them
    assert [t.name for t in planner_model.calls[0].tools] == ["plan"]
    assert planner_model.calls[0].options == {"tool_choice": "required"}
    assert [t.name for t in replanner_model.calls[0].tools] == ["plan", "respond"]
    # the executor is told the objective, the plan, what is done and the step to run
    prompt = executor_model.calls[2].messages[-1].content
    assert prompt.endswith("## RUN THIS STEP NOW\npopulation of Porto")
    assert "Step: population of Lisbon\nResult: Lisbon: 545000" in prompt
    assert QUESTION in prompt


def test_the_loop_stops_after_max_iterations_without_a_response() -> None:
    planner = Planner(ScriptedModel([calls("plan", {"steps": ["a", "b", "c"]})]))
    ex = executor(ScriptedModel(["did a", "did b"]))
    again = calls("plan", {"steps": ["more"]})
    replanner = Replanner(ScriptedModel([again, again]))
    events = list(Runner(PlanExecuteReplan(planner, ex, replanner, max_iterations=2)).query("go"))
    assert [row(e)[0] for e in events] == ["planner", "executor", "replanner", "executor", "replanner"]
    # no exit, break or interrupt (the executor's answers carry their output_key as a state delta)
    assert all(
        e.error is None and (e.action is None or e.action == AgentAction(state_delta=e.action.state_delta))
        for e in events
    )


def test_a_planner_with_structured_output_reads_the_plan_from_the_text() -> None:
    model = ScriptedModel(['{"steps": ["only step"]}'])
    ex = executor(ScriptedModel(["done"]))
    replanner = Replanner(ScriptedModel([calls("respond", {"response": "ok"})]))
    per = PlanExecuteReplan(Planner(model, structured_output=True), ex, replanner)
    events = list(Runner(per).query("go"))
    assert row(events[0])[2] == 'assistant:{"steps": ["only step"]}'
    assert model.calls[0].tools == ()
    assert model.calls[0].options["response_format"].model_json_schema()["required"] == ["steps"]
    assert ex.model.calls[0].messages[-1].content.endswith("only step")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("I will not plan.", "the model answered without calling 'plan'"),
        (calls("plan", {"stages": ["a"]}), 'a plan is {"steps": [str, ...]}'),
        (calls("plan", {"steps": []}), "the plan has no steps"),
    ],
)
def test_a_planner_reply_that_is_not_a_plan_is_an_error_event(reply: Any, problem: str) -> None:
    per = PlanExecuteReplan(
        Planner(ScriptedModel([reply])), executor(ScriptedModel(["x"])), Replanner(ScriptedModel(["x"]))
    )
    events = list(Runner(per).query("go"))
    assert events[-1].error is not None and problem in str(events[-1].error)
    assert all(e.agent_name == "planner" for e in events)


def test_a_replanner_calling_another_tool_is_an_error_event() -> None:
    per = PlanExecuteReplan(
        Planner(ScriptedModel([calls("plan", {"steps": ["a"]})])),
        executor(ScriptedModel(["did a"])),
        Replanner(ScriptedModel([calls("shrug", {})])),
    )
    events = list(Runner(per).query("go"))
    assert "the model called 'shrug'; it may call 'plan' or 'respond'" in str(events[-1].error)


def test_a_replanner_responding_with_arguments_that_are_not_an_object_is_an_error_event() -> None:
    per = PlanExecuteReplan(
        Planner(ScriptedModel([calls("plan", {"steps": ["a"]})])),
        executor(ScriptedModel(["did a"])),
        Replanner(ScriptedModel([calls("respond", "All done, no JSON.")])),
    )
    events = list(Runner(per).query("go"))
    assert "'respond' was called with 'All done, no JSON.'; its arguments are a JSON object" in str(events[-1].error)
    assert not any(e.action is not None and e.action.break_loop is not None for e in events)


def test_an_executor_outside_plan_execute_replan_says_what_is_missing() -> None:
    events = list(Runner(executor(ScriptedModel(["x"]))).query("go"))
    assert "no 'Plan' or 'UserInput' in the session values; run it after a Planner" in str(events[-1].error)
