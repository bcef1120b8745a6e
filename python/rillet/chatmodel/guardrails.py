"""Guardrails of a ChatModelAgent: checks of the run's input, before the model answers, and
of its final answer.

A guardrail is a function (plain or ``async``) of a :class:`GuardrailContext` that returns
``None`` (the check passes) or a :class:`GuardrailRejection`. Input guardrails run when a run
starts, before the first model call (or beside it, for those marked ``concurrent``); output
guardrails run on the final answer. The steps that run them are in :mod:`.steps`; this
module holds their types and runs a list of them.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from rillet._core.loop import child_task, result_of
from rillet._core.workers import run_sync
from rillet._native import Message
from rillet.data import codec
from rillet.errors import GuardrailError

__all__ = [
    "GuardrailContext",
    "GuardrailFunction",
    "GuardrailRejection",
    "GuardrailRetry",
    "InputGuardrail",
    "OutputGuardrail",
    "as_input_guardrails",
    "as_output_guardrails",
    "run_guardrails",
]


@dataclass(slots=True)
class GuardrailContext:
    """What a guardrail sees. ``messages``: for an input guardrail, the run's input messages
    (not the instruction); for an output guardrail, the conversation with the answer last.
    ``answer``: the final answer (None for an input guardrail). Copies: changing them changes
    nothing."""

    agent_name: str
    messages: list[Message]
    answer: Message | None = None


@dataclass(frozen=True, slots=True)
class GuardrailRejection:
    """What a guardrail returns to reject: ``reason`` (for the error event, and for the model
    when it retries), ``retry`` (output guardrails only: send the answer back to the model
    with the reason, once, instead of ending the run) and ``info`` (anything, kept on the
    error as ``info``)."""

    reason: str
    retry: bool = False
    info: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not self.reason:
            raise TypeError(f"GuardrailRejection: reason must be a non-empty str, got {self.reason!r}")


@dataclass(frozen=True, slots=True)
class GuardrailRetry:
    """The ``action.customized_action`` of the event an agent sends when an output guardrail
    sends its answer back to the model: the guardrail's name and its reason."""

    guardrail: str
    reason: str


codec.register_type(GuardrailRetry, "rillet.guardrail_retry")  # events are kept in checkpoints

GuardrailResult: TypeAlias = "GuardrailRejection | None"
GuardrailFunction: TypeAlias = Callable[[GuardrailContext], "GuardrailResult | Awaitable[GuardrailResult]"]


@dataclass(frozen=True, slots=True)
class InputGuardrail:
    """An input guardrail. ``concurrent=True`` declares that it only reads the input: it then
    runs beside the first model call instead of before it (the reply is held until every
    guardrail passed; a rejection cancels the call and drops its output). ``name`` defaults to
    the function's name."""

    fn: GuardrailFunction
    concurrent: bool = False
    name: str = ""


@dataclass(frozen=True, slots=True)
class OutputGuardrail:
    """An output guardrail (a plain function given to ``output_guardrails=`` is one); ``name``
    defaults to the function's name."""

    fn: GuardrailFunction
    name: str = ""


def _named(fn: Any, name: str, where: str) -> str:
    if not callable(fn):
        raise TypeError(f"{where}: a guardrail must be a function of a GuardrailContext, got {type(fn).__name__}")
    return name or getattr(fn, "__name__", "") or type(fn).__name__


def as_input_guardrails(agent_name: str, guards: Iterable[Any]) -> list[InputGuardrail]:
    """The ``input_guardrails=`` argument, checked, as InputGuardrails with their names."""
    if type(guards) is tuple and not guards:  # the default: nothing to check (agent construction is hot)
        return []
    where = f"ChatModelAgent {agent_name!r}: input_guardrails"
    out = []
    for g in _iterable(guards, where):
        if isinstance(g, OutputGuardrail):
            raise TypeError(f"{where}: an OutputGuardrail is given; pass it to output_guardrails=")
        g = g if isinstance(g, InputGuardrail) else InputGuardrail(g)
        out.append(InputGuardrail(g.fn, bool(g.concurrent), _named(g.fn, g.name, where)))
    return out


def as_output_guardrails(agent_name: str, guards: Iterable[Any]) -> list[OutputGuardrail]:
    """The ``output_guardrails=`` argument, checked, as OutputGuardrails with their names."""
    if type(guards) is tuple and not guards:  # the default
        return []
    where = f"ChatModelAgent {agent_name!r}: output_guardrails"
    out = []
    for g in _iterable(guards, where):
        if isinstance(g, InputGuardrail):
            raise TypeError(f"{where}: an InputGuardrail is given; pass it to input_guardrails=")
        g = g if isinstance(g, OutputGuardrail) else OutputGuardrail(g)
        out.append(OutputGuardrail(g.fn, _named(g.fn, g.name, where)))
    return out


def _iterable(guards: Any, where: str) -> list[Any]:
    if callable(guards) or isinstance(guards, (InputGuardrail, OutputGuardrail)):
        return [guards]
    try:
        return list(guards)
    except TypeError:
        raise TypeError(f"{where} must be a list of guardrails, got {type(guards).__name__}") from None


Guard: TypeAlias = "InputGuardrail | OutputGuardrail"


async def run_guardrails(
    agent_name: str, stage: Literal["input", "output"], guards: list[Any], ctx: GuardrailContext
) -> tuple[str, GuardrailRejection] | None:
    """Runs ``guards`` at once on ``ctx``; returns the first rejection to arrive (the others
    are cancelled) with the guardrail's name, or None when all pass. A guardrail that raises
    or returns something else fails the check with :class:`GuardrailError`."""
    if len(guards) == 1:
        return await _check(agent_name, stage, guards[0], ctx)
    tasks = [child_task(_check(agent_name, stage, g, ctx)) for g in guards]
    try:
        pending: set[asyncio.Task[Any]] = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for t in sorted(done, key=tasks.index):  # several at once: in the list's order
                found: tuple[str, GuardrailRejection] | None = result_of(t)
                if found is not None:
                    return found
        return None
    finally:
        for t in tasks:
            t.cancel()


async def _check(
    agent_name: str, stage: str, guard: Guard, ctx: GuardrailContext
) -> tuple[str, GuardrailRejection] | None:
    fn = guard.fn
    try:
        if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):  # noqa: B004
            out = await fn(ctx)  # type: ignore[misc]
        else:  # a plain function runs on a worker thread: the model call goes on meanwhile
            out = await run_sync(fn, ctx)
            if inspect.isawaitable(out):
                out = await out
    except Exception as e:
        raise GuardrailError(f"ChatModelAgent {agent_name!r}: {stage} guardrail {guard.name!r} failed: {e!r}") from e
    if out is None:
        return None
    if not isinstance(out, GuardrailRejection):
        raise GuardrailError(
            f"ChatModelAgent {agent_name!r}: {stage} guardrail {guard.name!r} returned {type(out).__name__}; "
            "return None to pass or GuardrailRejection(reason) to reject"
        )
    return guard.name, out
