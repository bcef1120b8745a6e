"""Plan-Execute-Replan (Eino's ``adk/prebuilt/planexecute``): a planner writes a plan, then an
executor carries out its first step and a replanner either writes the plan of what is left or
answers, in a loop.

``PlanExecuteReplan(planner, executor, replanner)`` is
``SequentialAgent("plan_execute_replan", [planner, LoopAgent("execute_replan", [executor,
replanner])])``. The three agents talk through session values under Eino's keys:

* ``UserInput``: the planner's input messages (the user's request);
* ``Plan``: the current :class:`Plan` (the planner's, then each replanner's);
* ``ExecutedStep``: the executor's answer for the step it ran (its ``output_key``);
* ``ExecutedSteps``: every step run so far with its result (:class:`ExecutedStep`), appended
  by the replanner.

The planner and the replanner each make one model call and emit one assistant event whose text
is the JSON they produced (a plan, or the replanner's ``{"response": ...}``); when the replanner
calls ``respond`` it then emits a break-loop action, which ends the loop and the run.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rillet._core.scope import OBSERVING
from rillet._native import Message
from rillet.chatmodel import ChatModelAgent
from rillet.chatmodel.config import maybe_await
from rillet.compose.workflow import LoopAgent, SequentialAgent
from rillet.data import codec
from rillet.data.events import AgentEvent, event_from_message, new_break_loop_action
from rillet.data.run_config import count_llm_call
from rillet.run import observer
from rillet.run.agent import AgentInput, BaseAgent
from rillet.run.context import add_session_value, get_session_value
from rillet.tools import ToolInfo

if TYPE_CHECKING:
    from rillet.models.base import ChatModel

__all__ = [
    "EXECUTED_STEPS_KEY",
    "EXECUTED_STEP_KEY",
    "PLAN_KEY",
    "PLAN_TOOL",
    "RESPOND_TOOL",
    "USER_INPUT_KEY",
    "ExecutedStep",
    "ExecutionContext",
    "Plan",
    "PlanExecuteReplan",
    "Planner",
    "Replanner",
    "executor",
]

USER_INPUT_KEY = "UserInput"
PLAN_KEY = "Plan"
EXECUTED_STEP_KEY = "ExecutedStep"
EXECUTED_STEPS_KEY = "ExecutedSteps"


@codec.register_type(name="rillet.prebuilt.plan")
@dataclass(frozen=True, slots=True)
class Plan:
    """The steps still to run, in order (the session value under ``Plan``)."""

    steps: tuple[str, ...]

    @property
    def first_step(self) -> str:
        """The step the executor runs next ("" for an empty plan)."""
        return self.steps[0] if self.steps else ""

    def to_json(self) -> str:
        """The plan as the model wrote it: ``{"steps": [...]}``."""
        return json.dumps({"steps": list(self.steps)}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str, who: str) -> Plan:
        """The plan in ``text``; ValueError naming ``who`` wrote it and what is wrong."""
        try:
            data = json.loads(text or "null")
        except ValueError as e:
            raise ValueError(f"{who}: the plan is not valid JSON ({e}): {text[:200]!r}") from None
        steps = data.get("steps") if isinstance(data, dict) else None
        if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
            raise ValueError(f'{who}: a plan is {{"steps": [str, ...]}}, got {text[:200]!r}')
        if not steps:
            # the executor would run an empty step; a finished objective is answered with respond
            raise ValueError(f"{who}: the plan has no steps; a plan needs one (the replanner answers with respond)")
        return cls(tuple(steps))


@codec.register_type(name="rillet.prebuilt.executed_step")
@dataclass(frozen=True, slots=True)
class ExecutedStep:
    """A step the executor ran and what it answered."""

    step: str
    result: str


@dataclass(frozen=True, slots=True)
class ExecutionContext:
    """What the executor and the replanner build their model input from."""

    user_input: tuple[Message, ...]
    plan: Plan
    executed_steps: tuple[ExecutedStep, ...]


GenInput = Callable[[ExecutionContext], "Sequence[Message] | Awaitable[Sequence[Message]]"]

PLAN_TOOL = ToolInfo(
    "plan",
    "Writes the plan: the steps to run, in order. Each step is one clear, self-contained action; "
    "the last one produces the answer.",
    {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": {"type": "string"}, "description": "The steps, in the order to run."}
        },
        "required": ["steps"],
    },
)

RESPOND_TOOL = ToolInfo(
    "respond",
    "Answers the user, when the steps run so far are enough for a complete answer.",
    {
        "type": "object",
        "properties": {"response": {"type": "string", "description": "The complete answer for the user."}},
        "required": ["response"],
    },
)

PLANNER_INSTRUCTION = """You plan. Break the user's objective into a short list of steps that another agent will run one at a time, in order.
Each step must be concrete and self-contained: it names what to do and what it needs, and can be done without seeing the other steps.
Leave out steps that add nothing. The last step produces the answer the user asked for."""

EXECUTOR_INSTRUCTION = "You run one step of a plan, carefully, using your tools where they help, and report its result."

REPLANNER_INSTRUCTION = """You review progress toward an objective and choose exactly one action:
- call `{respond}` with the complete answer when the objective is met;
- otherwise call `{plan}` with the steps still to do (leave out the steps already done; adjust the plan to what the results showed)."""


def _format_input(messages: Sequence[Message]) -> str:
    return "".join(f"{m.content}\n" for m in messages)


def _format_steps(steps: Sequence[ExecutedStep]) -> str:
    return "".join(f"Step: {s.step}\nResult: {s.result}\n\n" for s in steps)


def executor_input(ctx: ExecutionContext) -> list[Message]:
    """The executor's default model input: the objective, the plan, the steps done and the
    step to run now."""
    return [
        Message.system(EXECUTOR_INSTRUCTION),
        Message.user(
            f"## OBJECTIVE\n{_format_input(ctx.user_input)}## PLAN\n{ctx.plan.to_json()}\n"
            f"## STEPS DONE, WITH THEIR RESULTS\n{_format_steps(ctx.executed_steps)}"
            f"## RUN THIS STEP NOW\n{ctx.plan.first_step}"
        ),
    ]


def replanner_input(ctx: ExecutionContext, plan_tool: str = "plan", respond_tool: str = "respond") -> list[Message]:
    """The replanner's default model input."""
    return [
        Message.system(REPLANNER_INSTRUCTION.format(plan=plan_tool, respond=respond_tool)),
        Message.user(
            f"## OBJECTIVE\n{_format_input(ctx.user_input)}\n## PLAN\n{ctx.plan.to_json()}\n\n"
            f"## STEPS DONE, WITH THEIR RESULTS\n{_format_steps(ctx.executed_steps)}"
        ),
    ]


def _context(who: str, executed: Sequence[ExecutedStep] | None = None) -> ExecutionContext:
    """The session's user input, plan and executed steps; a clear error when the planner has
    not run (an executor or replanner used outside PlanExecuteReplan)."""
    plan = get_session_value(PLAN_KEY)
    user_input = get_session_value(USER_INPUT_KEY)
    if not isinstance(plan, Plan) or user_input is None:
        raise ValueError(
            f"{who}: no {PLAN_KEY!r} or {USER_INPUT_KEY!r} in the session values; run it after a Planner "
            "(PlanExecuteReplan(planner, executor, replanner) wires them)"
        )
    if executed is None:
        executed = get_session_value(EXECUTED_STEPS_KEY) or ()
    return ExecutionContext(tuple(user_input), plan, tuple(executed))


async def _ask(agent: str, model: ChatModel, messages: list[Message], tools: list[ToolInfo], **options: Any) -> Message:
    """One model call, counted in the run's budget and told to the run's observers like a
    ChatModelAgent's."""
    count_llm_call(agent)
    obs = OBSERVING.get()
    if obs is not None:
        observer.model_start(obs, agent, model, messages)
    reply: Message = await maybe_await(model.generate(messages, tools=tools or None, **options))
    if obs is not None:
        observer.model_end(obs, agent, model, reply)
    return reply


def _first_call_arguments(who: str, reply: Message, tools: Sequence[str]) -> tuple[str, str]:
    if not reply.tool_calls:
        raise ValueError(
            f"{who}: the model answered without calling {' or '.join(map(repr, tools))} "
            f"(text: {reply.content[:200]!r}); use a model that calls tools when told to"
        )
    fn = reply.tool_calls[0].function
    return fn.name, fn.arguments


class Planner(BaseAgent):
    """The agent that writes the first plan: one model call, forced to call the ``plan`` tool
    (or, with ``structured_output=True``, answering with the plan's JSON as its text, passing
    ``response_format`` to a model that takes one). It stores its input under ``UserInput``
    and the plan under ``Plan``, and emits one assistant event holding the plan's JSON.

    ``gen_input(messages)`` replaces the default model input (an instruction + the user's
    messages); ``plan_tool`` replaces the ``plan`` tool's description and schema (its
    arguments must still be ``{"steps": [...]}``).
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        name: str = "planner",
        description: str = "writes a plan of steps for the objective",
        structured_output: bool = False,
        plan_tool: ToolInfo = PLAN_TOOL,
        gen_input: Callable[[list[Message]], Sequence[Message] | Awaitable[Sequence[Message]]] | None = None,
    ) -> None:
        super().__init__(name, description)
        if not callable(getattr(model, "generate", None)):
            raise TypeError(f"Planner: model must be a ChatModel (generate and stream), got {type(model).__name__}")
        self.model = model
        self.structured_output = structured_output
        self.plan_tool = plan_tool
        self.gen_input = gen_input

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        messages = list(input.messages)
        add_session_value(USER_INPUT_KEY, messages)
        if self.gen_input is not None:
            prompt = list(await maybe_await(self.gen_input(messages)))
        else:
            prompt = [Message.system(PLANNER_INSTRUCTION), *messages]
        if self.structured_output:
            extra: dict[str, Any] = {}
            if getattr(self.model, "supports_response_format", False) is True:
                extra["response_format"] = _plan_model()
            reply = await _ask(self.name, self.model, prompt, [], **extra)
            text = reply.content
        else:
            reply = await _ask(self.name, self.model, prompt, [self.plan_tool], tool_choice="required")
            _, text = _first_call_arguments(self.name, reply, [self.plan_tool.name])
        yield event_from_message(Message.assistant(text))
        add_session_value(PLAN_KEY, Plan.from_json(text, self.name))


def _plan_model() -> type[Any]:
    """The pydantic class of a plan, for ``response_format``."""
    import pydantic  # imported on first use: `import rillet` does not load pydantic

    class PlanSteps(pydantic.BaseModel):
        steps: list[str]

    return PlanSteps


class Replanner(BaseAgent):
    """The agent that, after each executed step, records it under ``ExecutedSteps`` and makes
    one model call forced to call ``plan`` (the steps left: the new ``Plan``) or ``respond``
    (the answer: a break-loop action ends the loop). It emits one assistant event holding the
    call's JSON arguments, then, for ``respond``, an event with the break-loop action."""

    def __init__(
        self,
        model: ChatModel,
        *,
        name: str = "replanner",
        description: str = "revises the plan after each step, or answers",
        plan_tool: ToolInfo = PLAN_TOOL,
        respond_tool: ToolInfo = RESPOND_TOOL,
        gen_input: GenInput | None = None,
    ) -> None:
        super().__init__(name, description)
        if not callable(getattr(model, "generate", None)):
            raise TypeError(f"Replanner: model must be a ChatModel (generate and stream), got {type(model).__name__}")
        if plan_tool.name == respond_tool.name:
            raise ValueError(f"Replanner: the plan and respond tools are both named {plan_tool.name!r}")
        self.model = model
        self.plan_tool = plan_tool
        self.respond_tool = respond_tool
        self.gen_input = gen_input

    async def _run(self, input: AgentInput, **options: Any) -> AsyncIterator[AgentEvent]:
        result = get_session_value(EXECUTED_STEP_KEY)
        before = _context(self.name)
        if result is None:
            raise ValueError(f"{self.name}: no {EXECUTED_STEP_KEY!r} in the session values; run it after the executor")
        executed = (*before.executed_steps, ExecutedStep(before.plan.first_step, str(result)))
        add_session_value(EXECUTED_STEPS_KEY, list(executed))
        ctx = _context(self.name, executed)
        if self.gen_input is not None:
            prompt = list(await maybe_await(self.gen_input(ctx)))
        else:
            prompt = replanner_input(ctx, self.plan_tool.name, self.respond_tool.name)
        tools = [self.plan_tool, self.respond_tool]
        reply = await _ask(self.name, self.model, prompt, tools, tool_choice="required")
        name, arguments = _first_call_arguments(self.name, reply, [t.name for t in tools])
        if name == self.respond_tool.name and not _is_json_object(arguments):
            raise ValueError(
                f"{self.name}: {name!r} was called with {arguments[:200]!r}; its arguments are a JSON object"
            )
        yield event_from_message(Message.assistant(arguments))
        if name == self.respond_tool.name:
            yield AgentEvent(action=new_break_loop_action(self.name))
            return
        if name != self.plan_tool.name:
            raise ValueError(
                f"{self.name}: the model called {name!r}; it may call {self.plan_tool.name!r} or "
                f"{self.respond_tool.name!r}"
            )
        add_session_value(PLAN_KEY, Plan.from_json(arguments, self.name))


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def executor(
    model: ChatModel,
    *,
    tools: Sequence[Any] = (),
    name: str = "executor",
    description: str = "runs the first step of the plan",
    max_iterations: int = 20,
    gen_input: GenInput | None = None,
    **options: Any,
) -> ChatModelAgent:
    """The executor: a ChatModelAgent whose model input is built from the session (objective,
    plan, steps done, the step to run; ``gen_input`` replaces it) and whose answer is stored
    under ``ExecutedStep``. Other keywords go to :class:`~rillet.ChatModelAgent`."""
    build = gen_input or executor_input

    async def model_input(instruction: str, input: AgentInput) -> list[Message]:
        return list(await maybe_await(build(_context(name))))

    return ChatModelAgent(
        name,
        description=description,
        model=model,
        tools=tools,
        max_iterations=max_iterations,
        output_key=EXECUTED_STEP_KEY,
        gen_model_input=model_input,
        **options,
    )


class PlanExecuteReplan(SequentialAgent):
    """``SequentialAgent(name, [planner, LoopAgent("execute_replan", [executor, replanner],
    max_iterations)])``: plan, then run a step and replan until the replanner responds or
    ``max_iterations`` rounds have run (default 10, as in Eino; the run then ends without a
    response)."""

    def __init__(
        self,
        planner: Any,
        executor: Any,
        replanner: Any,
        *,
        max_iterations: int = 10,
        name: str = "plan_execute_replan",
        description: str = "plans, runs each step, and replans until it can answer",
    ) -> None:
        if max_iterations <= 0:
            max_iterations = 10
        self.loop = LoopAgent(
            "execute_replan",
            description="runs a step, then replans",
            sub_agents=[executor, replanner],
            max_iterations=max_iterations,
        )
        super().__init__(name, description=description, sub_agents=[planner, self.loop])
