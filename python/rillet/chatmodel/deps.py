"""What a ChatModelAgent's run depends on, as one frozen record: :class:`ReactDeps`.

The agent makes it when a run starts (:meth:`ChatModelAgent._begin_run`: the last run's
record again when nothing it holds was replaced since) and hands it to
every step of the run (:mod:`rillet.chatmodel.steps`), to each tool call
(:mod:`rillet.chatmodel.tool_call`) and to the live run (:mod:`rillet.chatmodel.live`). They
read only the record, never the agent: the agent's fields may change (a public attribute set
between two runs, sub-agents wired before the first) without any step knowing where they are.

The record holds the agent's own objects, not copies: a list a user grows in place between
runs (``agent.input_guardrails.append(...)``) is seen as before. A ``before_agent`` hook's
changes make a record of their own for that run (:meth:`ReactDeps.with_tools`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rillet._native import AgenticMessage, Message
from rillet.chatmodel.config import maybe_await
from rillet.chatmodel.task import TASK_INSTRUCTION
from rillet.run.context import current_run

if TYPE_CHECKING:
    from rillet.chatmodel.callbacks import Callbacks
    from rillet.chatmodel.config import GenModelInput, ToolWrapper
    from rillet.chatmodel.guardrails import InputGuardrail, OutputGuardrail
    from rillet.chatmodel.middleware import Hooks
    from rillet.chatmodel.output import OutputSpec
    from rillet.live import LiveModel
    from rillet.models.base import ChatModel
    from rillet.run.agent import AgentInput
    from rillet.tools import BaseTool, ToolInfo

__all__ = ["ReactDeps"]


@dataclass(frozen=True, slots=True)
class ReactDeps:
    """One run's view of its ChatModelAgent: what the steps read, fixed when the run starts."""

    name: str
    model: ChatModel
    tool_index: dict[str, BaseTool]  # the tools by name (what a call runs)
    tool_infos: list[ToolInfo]  # what the model is offered: the tools, and the final-answer tool
    return_directly: set[str]
    emits: bool  # a tool sends the events of its inner run (an AgentTool's emit_internal_events)
    hooks: Hooks
    tool_wrappers: list[ToolWrapper]  # hooks.wrap_tool_call: read on every tool call, one attribute
    output: OutputSpec | None
    output_key: str | None
    input_guardrails: list[InputGuardrail]
    output_guardrails: list[OutputGuardrail]
    max_iterations: int
    execute_tools_sequentially: bool
    tool_error: Literal["return", "raise"]
    mode: str  # "task": a successful finish_task ends the run
    instruction: str
    transfer_instruction: str  # who it may transfer to, added to the instruction ("" if nobody)
    gen_model_input: GenModelInput | None
    model_options: dict[str, Any]
    live_model: LiveModel | None
    callbacks: Callbacks | None = None  # the model and tool callbacks (the plugins' first), None without

    def with_tools(
        self,
        instruction: str,
        tool_index: dict[str, BaseTool],
        tool_infos: list[ToolInfo],
        return_directly: set[str],
        emits: bool,
    ) -> ReactDeps:
        """This record with what ``before_agent`` hooks set for one run."""
        return dataclasses.replace(
            self,
            instruction=instruction,
            tool_index=tool_index,
            tool_infos=tool_infos,
            return_directly=return_directly,
            emits=emits,
        )

    async def model_input(self, input: AgentInput, *, transfer: bool = True) -> list[Message]:
        """The first model call's messages: always a new list (the run appends to it).
        ``transfer=False`` leaves out the transfer instruction (a live run does not transfer)."""
        if self.gen_model_input is not None:
            return list(await maybe_await(self.gen_model_input(self.instruction, input)))
        instruction = self.instruction
        if self.transfer_instruction and transfer:
            instruction = f"{instruction}\n\n{self.transfer_instruction}" if instruction else self.transfer_instruction
        instruction = self._format_instruction(instruction)
        if self.mode == "task":  # added after formatting: its backticks are not format fields
            instruction = f"{instruction}\n\n{TASK_INSTRUCTION}" if instruction else TASK_INSTRUCTION
        if not instruction:
            return list(input.messages)
        messages: list[Any] = input.messages
        if messages and type(messages[0]) is AgenticMessage:  # a block-list conversation stays one
            return [AgenticMessage.system(instruction), *messages]
        return [Message.system(instruction), *messages]

    def _format_instruction(self, instruction: str) -> str:
        run = current_run()
        if not instruction or run is None:
            return instruction
        with run.session.lock:
            values = dict(run.session.values)
        if not values:
            return instruction
        try:
            return instruction.format_map(values)
        except (KeyError, ValueError, IndexError, AttributeError) as e:
            raise ValueError(
                f"ChatModelAgent {self.name!r}: the instruction is formatted with the session values "
                f"({', '.join(sorted(values))}) and failed: {e!r}. Double literal braces ({{{{ and }}}}) or "
                "pass gen_model_input to build the model input yourself"
            ) from e
