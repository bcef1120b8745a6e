"""rillet.prebuilt's public names (pinned, like rillet's own in test_public_api.py), and that
`import rillet` does not load it."""

from __future__ import annotations

import subprocess
import sys

import rillet.prebuilt

PUBLIC = {
    "EXECUTED_STEPS_KEY",
    "EXECUTED_STEP_KEY",
    "GENERAL_AGENT_NAME",
    "PLAN_KEY",
    "PLAN_TOOL",
    "RESPOND_TOOL",
    "TODOS_KEY",
    "USER_INPUT_KEY",
    "Backend",
    "DeepAgent",
    "DirectoryBackend",
    "ExecutedStep",
    "ExecutionContext",
    "InMemoryBackend",
    "Plan",
    "PlanExecuteReplan",
    "Planner",
    "Replanner",
    "Supervisor",
    "TaskTool",
    "Todo",
    "WriteTodosTool",
    "executor",
    "file_tools",
}


def test_the_prebuilt_names_are_pinned() -> None:
    assert set(rillet.prebuilt.__all__) == PUBLIC
    assert all(hasattr(rillet.prebuilt, name) for name in PUBLIC)


def test_session_keys_are_eino_s() -> None:
    p = rillet.prebuilt
    assert (p.USER_INPUT_KEY, p.PLAN_KEY, p.EXECUTED_STEP_KEY, p.EXECUTED_STEPS_KEY) == (
        "UserInput",
        "Plan",
        "ExecutedStep",
        "ExecutedSteps",
    )
    assert p.TODOS_KEY == "deep_agent_session_key_todos"


def test_import_rillet_does_not_load_prebuilt() -> None:
    code = "import sys, rillet; print('rillet.prebuilt' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
