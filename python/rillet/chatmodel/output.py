"""Structured output: a ChatModelAgent's ``output_type``.

A model that declares ``supports_response_format = True`` is sent ``response_format=<the
pydantic class>`` and its text answer is validated; any other model is offered a final-answer
tool, :data:`OUTPUT_TOOL_NAME`, whose parameters are the type's schema, and the arguments of
its call are validated. A reply that fails goes back to the model with the problems, up to
``output_retries`` times; then the run fails with :class:`OutputValidationError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rillet._native import Message
from rillet.chatmodel.state import run_typed
from rillet.data.events import AgentEvent, AgentOutput, MessageVariant, event_from_message
from rillet.errors import OutputValidationError
from rillet.tools import ToolInfo

if TYPE_CHECKING:
    from pydantic import BaseModel

    from rillet.chatmodel.state import ReactLoop

__all__ = ["OUTPUT_TOOL_NAME", "OutputSpec", "output_spec"]

OUTPUT_TOOL_NAME = "final_result"


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """The agent's output type, its retries, and the final-answer tool (None when the model
    takes a response_format)."""

    type: type[BaseModel]
    retries: int
    tool: ToolInfo | None


def output_spec(agent_name: str, output_type: Any, output_retries: Any, model: Any) -> OutputSpec | None:
    """The checked output configuration (None without an output type)."""
    import pydantic  # imported here: `import rillet` does not load pydantic

    where = f"ChatModelAgent {agent_name!r}"
    if not isinstance(output_retries, int) or isinstance(output_retries, bool) or output_retries < 0:
        raise ValueError(f"{where}: output_retries must be an int >= 0, got {output_retries!r}")
    if output_type is None:
        return None
    if not (isinstance(output_type, type) and issubclass(output_type, pydantic.BaseModel)):
        raise TypeError(
            f"{where}: output_type must be a pydantic model class (class Answer(pydantic.BaseModel): ...), "
            f"got {output_type!r}"
        )
    if getattr(model, "supports_response_format", False) is True:
        return OutputSpec(output_type, output_retries, None)
    description = f"Give your final answer as a {output_type.__name__}: call this once, with the whole answer."
    return OutputSpec(
        output_type, output_retries, ToolInfo(OUTPUT_TOOL_NAME, description, output_type.model_json_schema())
    )


def _validate(spec: OutputSpec, text: str) -> tuple[Any, str]:
    """(the validated object, "") or (None, the problems in one line)."""
    import pydantic  # imported here: `import rillet` does not load pydantic

    try:
        return spec.type.model_validate_json(text), ""
    except pydantic.ValidationError as e:
        problems = []
        for err in e.errors(include_url=False):
            where = ".".join(str(part) for part in err["loc"])
            got = "" if err["type"] in ("missing", "json_invalid") else f" (got {err['input']!r:.80})"
            problems.append(f"{where + ': ' if where else ''}{err['msg']}{got}")
        return None, "; ".join(problems)


def check_reply(name: str, spec: OutputSpec, loop: ReactLoop, reply: Message, has_tools: bool) -> bool | None:
    """Checks the reply (already in ``loop.messages``) against the output type.

    True: it is valid; the final event is in ``loop.out`` and the object in ``loop.value``.
    False: it is not; the problems went back to the model, which is to be called again.
    None: the reply calls ordinary tools, to be run as usual.
    Raises :class:`OutputValidationError` when the retries ran out.
    """
    type_name = spec.type.__name__
    calls = reply.tool_calls
    if spec.tool is None and calls and has_tools:
        return None
    if spec.tool is None or not calls:
        value, problems = _validate(spec, reply.content)
        if value is not None:
            loop.value = value
            loop.out.append(AgentEvent("", (), AgentOutput(None, value)))
            return True
        if spec.tool is not None:
            problems = f"the reply called no tool; call {OUTPUT_TOOL_NAME} with your answer"
            feedback = (
                f"Give your final answer by calling the {OUTPUT_TOOL_NAME} tool with arguments that match its schema."
            )
        else:
            feedback = (
                f"Your answer is not a valid {type_name}: {problems}. Answer again with only the corrected JSON object."
            )
        _retry(name, spec, loop, problems, [run_typed(loop, Message.user(feedback))])
        return False
    final = [c for c in calls if c.function.name == OUTPUT_TOOL_NAME]
    if not final:
        return None
    call = final[-1]
    value, problems = _validate(spec, call.function.arguments or "{}")
    skipped = f"Not run: {OUTPUT_TOOL_NAME} was called in the same reply. Call other tools before {OUTPUT_TOOL_NAME}."
    # every call gets its answer, so that the conversation stays valid for the next request
    others = [run_typed(loop, Message.tool_message(skipped, c.id, c.function.name)) for c in calls if c is not call]
    if value is not None:
        loop.value = value
        msg = run_typed(loop, Message.tool_message(value.model_dump_json(), call.id, OUTPUT_TOOL_NAME))
        loop.messages.extend([*others, msg])
        _emit_answers(loop, others)
        mv = MessageVariant(False, msg.copy(), None, "tool", OUTPUT_TOOL_NAME)
        loop.out.append(AgentEvent("", (), AgentOutput(mv, value)))
        return True
    feedback = f"Invalid {type_name}: {problems}. Call {OUTPUT_TOOL_NAME} again with corrected arguments."
    answers = [*others, run_typed(loop, Message.tool_message(feedback, call.id, OUTPUT_TOOL_NAME))]
    _retry(name, spec, loop, problems, answers)
    _emit_answers(loop, answers)
    return False


def _emit_answers(loop: ReactLoop, answers: list[Message]) -> None:
    """Each tool answer the model is sent is an event too, as an ordinary tool's result is:
    a session storing the run's events then keeps every call answered (a provider refuses
    a conversation with an assistant tool call and no tool message for it)."""
    loop.out.extend(event_from_message(m.copy(), role="tool", tool_name=_tool_name(m)) for m in answers)


def _tool_name(answer: Message) -> str:
    """A tool answer's tool (a block-list run's is its tool_result block's)."""
    if type(answer) is Message:
        return answer.tool_name
    return next((b.name for b in answer.blocks if b.kind == "tool_result"), "")


def _retry(name: str, spec: OutputSpec, loop: ReactLoop, problems: str, feedback: list[Message]) -> None:
    """Sends the problems back to the model (the retry is an extra model call, beyond
    ``max_iterations``), or fails when the retries ran out."""
    loop.failures += 1
    if loop.failures > spec.retries:
        raise OutputValidationError(name, spec.type.__name__, loop.failures, problems)
    loop.messages.extend(feedback)
    loop.remaining += 1
