"""Plan-Execute-Replan: a planner writes the steps, an executor runs them one at a time, and a
replanner revises what is left or answers.

:class:`rillet.prebuilt.PlanExecuteReplan` runs ``planner`` once, then ``executor`` and
``replanner`` in a loop. The planner's plan (``{"steps": [...]}``, from its ``plan`` tool)
goes into the session value ``Plan``; the executor (a ChatModelAgent with a ``convert`` tool)
runs the plan's first step and its answer is stored as ``ExecutedStep``; the replanner adds it
to ``ExecutedSteps`` and calls ``plan`` with the steps left, or ``respond``, whose break-loop
action ends the run.

Run it: ``rillet demo plan`` or ``python -m rillet.examples.plan`` (``--fast``,
``--no-color``).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from rillet._native import Message
from rillet.examples import call, run_example, scripted

if TYPE_CHECKING:
    from rich.console import Console

    from rillet.examples.demo import Renderer
    from rillet.prebuilt import PlanExecuteReplan

__all__ = ["QUESTION", "RATES", "build_agent", "convert", "main"]

QUESTION = "I have 120 USD and 80 GBP. How much is that in EUR altogether?"

RATES = {"USD": 0.92, "GBP": 1.17}
"""EUR per unit: a stand-in for an exchange-rate service, so the example runs offline."""


def convert(amount: float, currency: str) -> str:
    """Converts an amount of a currency to EUR.

    Args:
        amount: how much.
        currency: the ISO code, such as USD.
    """
    return f"{amount * RATES[currency]:.2f} EUR"


def _plan(*steps: str) -> Message:
    return Message.assistant("", [call(0, "plan", json.dumps({"steps": list(steps)}))])


def build_agent(delay: float = 0.0) -> PlanExecuteReplan:
    """The plan-execute-replan agent, on scripted models."""
    from rillet.prebuilt import PlanExecuteReplan, Planner, Replanner, executor
    from rillet.tools import tool

    planner = Planner(scripted([_plan("Convert 120 USD to EUR", "Convert 80 GBP to EUR", "Add the amounts")], delay))
    runner = executor(
        scripted(
            [
                Message.assistant("", [call(0, "convert", '{"amount": 120, "currency": "USD"}')]),
                "120 USD is 110.40 EUR.",
                Message.assistant("", [call(0, "convert", '{"amount": 80, "currency": "GBP"}')]),
                "80 GBP is 93.60 EUR.",
            ],
            delay,
        ),
        tools=[tool(convert)],
    )
    respond = json.dumps({"response": "120 USD and 80 GBP make 204.00 EUR (110.40 + 93.60)."})
    replanner = Replanner(
        scripted(
            [
                _plan("Convert 80 GBP to EUR", "Add the amounts"),
                Message.assistant("", [call(0, "respond", respond)]),
            ],
            delay,
        )
    )
    return PlanExecuteReplan(planner, runner, replanner)


def main(*, delay: float = 0.02, streaming: bool = True, color: bool | None = None) -> int:
    """Runs the agent on the question and prints the transcript and the steps it ran."""
    from rillet.prebuilt import EXECUTED_STEPS_KEY
    from rillet.run.context import get_session_values

    agent = build_agent(delay)
    seen: dict[str, Any] = {}
    agent.after_agent_callbacks.append(lambda _: seen.update(get_session_values()))

    def epilogue(console: Console, r: Renderer) -> None:
        console.print("\n[bold]Executed steps[/] (session value ExecutedSteps):")
        for i, s in enumerate(seen.get(EXECUTED_STEPS_KEY) or [], 1):
            console.print(f"  {i}. {s.step} → {s.result}", markup=False)

    title = "[bold]rillet demo plan[/]: plan, execute, replan (offline)"
    return run_example(title, QUESTION, agent, delay=delay, streaming=streaming, color=color, epilogue=epilogue)


if __name__ == "__main__":
    from rillet.cli import main as cli

    raise SystemExit(cli(["demo", "plan", *sys.argv[1:]]))
