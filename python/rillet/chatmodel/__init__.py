"""ChatModelAgent: Eino's ReAct loop over a chat model and tools.

Each iteration calls the model with the agent's whole message state; if the reply asks for
tools, they run (concurrently by default), their results join the state and the model is called
again; a reply without tool calls is the final answer. ``max_iterations`` bounds model calls.

Events, in order: one per model call (a stream, emitted before the agent reads its own copy,
when the run streams), one per tool call as each call finishes (role ``tool``), and, if a
return-directly tool was called, its event last, once the whole round is done. There is no
separate "final" event: the last model event is the answer.

The package: :mod:`.config` (errors, callback contexts and types, argument checks),
:mod:`.state` (the loop's state record and the checkpointed round state), :mod:`.deps` (what a
run takes from its agent when it starts, the one thing the steps read of it), :mod:`.steps` (the
model and tool steps, each returning the next), :mod:`.tool_call` (one tool call), :mod:`.output` (answers checked against an ``output_type``),
:mod:`.middleware` (``ChatModelAgentMiddleware`` and the hooks an agent runs),
:mod:`.guardrails` (input and output guardrails) and
:mod:`.agent` (the agent, which drives the steps).

Layer: ReAct and sessions, rillet.chatmodel beside rillet.sessions (neither imports the other). May
import rillet.compose and the layers under it (the import-linter contract in pyproject.toml;
docs/architecture.md).
"""

from rillet.chatmodel.agent import ChatModelAgent
from rillet.chatmodel.config import (
    AfterAgent,  # noqa: F401  (a callback type, importable from here as before)
    AfterModel,  # noqa: F401  (a callback type, importable from here as before)
    BeforeAgent,  # noqa: F401  (a callback type, importable from here as before)
    BeforeModel,  # noqa: F401  (a callback type, importable from here as before)
    ExceedMaxIterationsError,
    GenModelInput,  # noqa: F401  (a callback type, importable from here as before)
    ModelContext,
    ToolCallContext,
    ToolCallError,
    ToolWrapper,  # noqa: F401  (a callback type, importable from here as before)
)
from rillet.chatmodel.guardrails import (
    GuardrailContext,
    GuardrailRejection,
    GuardrailRetry,
    InputGuardrail,
    OutputGuardrail,
)

__all__ = [
    "ChatModelAgent",
    "ExceedMaxIterationsError",
    "GuardrailContext",
    "GuardrailRejection",
    "GuardrailRetry",
    "InputGuardrail",
    "OutputGuardrail",
    "ModelContext",
    "ToolCallContext",
    "ToolCallError",
]
