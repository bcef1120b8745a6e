"""ChatModelAgent's guardrails: input guardrails before (or beside) the first model call,
output guardrails on the final answer, with exact event sequences, in both streaming modes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pydantic
import pytest
from rillet import (
    AgentEvent,
    ChatModelAgent,
    FunctionCall,
    GuardrailContext,
    GuardrailError,
    GuardrailRejection,
    GuardrailRetry,
    InMemoryCheckpointStore,
    InputGuardrail,
    InputRejectedError,
    Message,
    OutputGuardrail,
    OutputRejectedError,
    Runner,
    ScriptedModel,
    StreamReader,
    ToolCall,
    codec,
    interrupt,
    tool,
)

STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["generate", "stream"])
RETRY_PROMPT = "Your answer was not accepted (polite): rude. Answer again, correcting this."


def rows(events: list[AgentEvent]) -> list[tuple[Any, ...]]:
    """Each event as (agent, what, detail): a message's role and text, an action's
    customized value, an error's type and message."""
    out: list[tuple[Any, ...]] = []
    for ev in events:
        mv = ev.message_output
        if mv is not None:
            out.append((ev.agent_name, mv.role, mv.get_message().content))
        elif ev.action is not None and ev.action.customized_action is not None:
            out.append((ev.agent_name, "action", ev.action.customized_action))
        elif ev.output is not None and ev.output.customized_output is not None:
            out.append((ev.agent_name, "output", ev.output.customized_output))
        elif ev.action is not None and ev.action.interrupted is not None:
            out.append((ev.agent_name, "interrupted", ev.action.interrupted.data))
        else:
            out.append((ev.agent_name, "error", type(ev.error).__name__, str(ev.error)))
    return out


def no_passwords(ctx: GuardrailContext) -> GuardrailRejection | None:
    if "password" in ctx.messages[-1].content:
        return GuardrailRejection("asks for a password", info={"word": "password"})
    return None


async def polite(ctx: GuardrailContext) -> GuardrailRejection | None:
    assert ctx.answer is not None
    return GuardrailRejection("rude", retry=True) if "stupid" in ctx.answer.content else None


REJECTED = (
    "a",
    "error",
    "InputRejectedError",
    "ChatModelAgent 'a': input guardrail 'no_passwords' rejected the run's input: asks for a password",
)


# --- input guardrails ------------------------------------------------------------------------


@STREAMING
def test_a_rejected_input_ends_the_run_before_any_model_call(streaming: bool) -> None:
    model = ScriptedModel(["never sent"])
    agent = ChatModelAgent("a", model=model, input_guardrails=[no_passwords])
    events = list(Runner(agent, streaming=streaming).query("what is my password?"))
    assert rows(events) == [REJECTED]
    assert model.call_count == 0
    error = events[0].error
    assert isinstance(error, InputRejectedError)
    assert (error.stage, error.agent_name, error.guardrail, error.reason, error.info) == (
        "input",
        "a",
        "no_passwords",
        "asks for a password",
        {"word": "password"},
    )


@STREAMING
def test_an_accepted_input_runs_as_without_guardrails(streaming: bool) -> None:
    seen: list[list[str]] = []

    def record(ctx: GuardrailContext) -> None:
        seen.append([m.content for m in ctx.messages])

    model = ScriptedModel(["hello"])
    agent = ChatModelAgent("a", instruction="Be kind.", model=model, input_guardrails=[record, no_passwords])
    assert rows(list(Runner(agent, streaming=streaming).query("hi"))) == [("a", "assistant", "hello")]
    assert seen == [["hi"]]  # the run's input: not the instruction


@STREAMING
def test_a_concurrent_rejection_drops_the_model_calls_output(streaming: bool) -> None:
    """The model answers before the guardrail decides; its answer never becomes an event."""

    answered = asyncio.Event()

    def reply(messages: list[Message], tools: Any) -> str:
        answered.set()
        return "Your password is hunter2"

    async def slow_no_passwords(ctx: GuardrailContext) -> GuardrailRejection | None:
        await answered.wait()  # decides once the model has answered
        return no_passwords(ctx)

    model = ScriptedModel(reply, delay=0.001)
    guard = InputGuardrail(slow_no_passwords, concurrent=True, name="no_passwords")
    agent = ChatModelAgent("a", model=model, input_guardrails=[guard])
    assert rows(list(Runner(agent, streaming=streaming).query("what is my password?"))) == [REJECTED]
    assert model.call_count == 1  # it ran beside the guardrail, and was dropped


class Waiting:
    """A model that answers only once ``gate`` is set, and notes when it was cancelled."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate, self.started, self.cancelled = gate, asyncio.Event(), False

    async def generate(self, messages: list[Message], *, tools: Sequence[Any] | None = None, **o: Any) -> Message:
        self.started.set()
        try:
            await (self.gate.wait() if self.gate is not None else asyncio.Event().wait())
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return Message.assistant("answered")

    async def stream(
        self, messages: list[Message], *, tools: Sequence[Any] | None = None, **o: Any
    ) -> StreamReader[Message]:
        raise NotImplementedError


def test_a_concurrent_guardrail_runs_beside_the_model_call() -> None:
    """The guardrail waits until the model call has started: run one after the other, this
    would never finish."""

    async def main() -> list[tuple[Any, ...]]:
        model = Waiting(asyncio.Event())

        async def waits_for_the_model(ctx: GuardrailContext) -> None:
            await model.started.wait()
            assert model.gate is not None
            model.gate.set()

        agent = ChatModelAgent(
            "a", model=model, input_guardrails=[InputGuardrail(waits_for_the_model, concurrent=True)]
        )
        return rows([ev async for ev in Runner(agent).query("hi")])

    assert asyncio.run(asyncio.wait_for(main(), 10)) == [("a", "assistant", "answered")]


def test_a_concurrent_rejection_cancels_a_model_call_still_running() -> None:
    async def main() -> tuple[list[tuple[Any, ...]], Waiting]:
        model = Waiting()  # never answers

        async def rejects_once_called(ctx: GuardrailContext) -> GuardrailRejection:
            await model.started.wait()
            return GuardrailRejection("asks for a password")

        guard = InputGuardrail(rejects_once_called, concurrent=True, name="no_passwords")
        agent = ChatModelAgent("a", model=model, input_guardrails=[guard])
        return rows([ev async for ev in Runner(agent).query("hi")]), model

    events, model = asyncio.run(asyncio.wait_for(main(), 10))
    assert events == [REJECTED] and model.cancelled


def test_a_plain_guardrail_runs_on_a_worker_thread() -> None:
    threads: list[int] = []

    def note(ctx: GuardrailContext) -> None:
        threads.append(threading.get_ident())

    agent = ChatModelAgent("a", model=ScriptedModel(["ok"]), input_guardrails=[InputGuardrail(note, concurrent=True)])
    assert rows(list(Runner(agent).query("hi"))) == [("a", "assistant", "ok")]
    assert threads and threads[0] != threading.get_ident()


@tool
def ask_human(question: str) -> str:
    """Asks a person; interrupts the first time."""
    raise interrupt({"question": question})


@STREAMING
def test_a_resumed_run_does_not_run_its_input_guardrails_again(streaming: bool) -> None:
    checks: list[str] = []

    def counted(ctx: GuardrailContext) -> None:
        checks.append(ctx.messages[-1].content)

    call = Message.assistant(tool_calls=[ToolCall(id="c1", function=FunctionCall("ask_human", '{"question": "ok?"}'))])
    model = ScriptedModel([call, "done"])
    agent = ChatModelAgent(
        "a", model=model, tools=[ask_human], input_guardrails=[counted], output_guardrails=[OutputGuardrail(polite)]
    )
    runner = Runner(agent, checkpoint_store=InMemoryCheckpointStore(), streaming=streaming)
    first = rows(list(runner.query("start", checkpoint_id="cp")))
    assert first[0] == ("a", "assistant", "") and first[1][1] == "interrupted"
    assert checks == ["start"]
    resumed = list(runner.resume("cp"))  # no target: the tool interrupts again
    assert rows(resumed)[-1][1] == "interrupted"
    assert checks == ["start"]


# --- output guardrails -----------------------------------------------------------------------


@STREAMING
def test_an_output_guardrails_retry_reaches_the_model_with_the_reason(streaming: bool) -> None:
    model = ScriptedModel(["You are stupid", "Sorry: here is the answer"])
    agent = ChatModelAgent("a", model=model, output_guardrails=[polite])
    events = list(Runner(agent, streaming=streaming).query("hi"))
    assert rows(events) == [
        ("a", "assistant", "You are stupid"),
        ("a", "action", GuardrailRetry("polite", "rude")),
        ("a", "assistant", "Sorry: here is the answer"),
    ]
    assert [m.content for m in model.calls[1].messages] == ["hi", "You are stupid", RETRY_PROMPT]
    assert model.calls[1].messages[-1].role == "user"


@STREAMING
def test_a_second_rude_answer_is_rejected(streaming: bool) -> None:
    model = ScriptedModel(["You are stupid", "Still stupid"])
    agent = ChatModelAgent("a", model=model, output_guardrails=[polite])
    assert rows(list(Runner(agent, streaming=streaming).query("hi"))) == [
        ("a", "assistant", "You are stupid"),
        ("a", "action", GuardrailRetry("polite", "rude")),
        ("a", "assistant", "Still stupid"),
        (
            "a",
            "error",
            "OutputRejectedError",
            "ChatModelAgent 'a': output guardrail 'polite' rejected the answer: rude",
        ),
    ]


def test_an_output_rejection_without_retry_ends_the_run() -> None:
    def no_digits(ctx: GuardrailContext) -> GuardrailRejection | None:
        assert ctx.answer is not None and [m.content for m in ctx.messages] == ["hi", ctx.answer.content]
        return GuardrailRejection("has digits", info=3) if any(c.isdigit() for c in ctx.answer.content) else None

    model = ScriptedModel(["call 555 0100"])
    events = list(Runner(ChatModelAgent("a", model=model, output_guardrails=[no_digits])).query("hi"))
    assert rows(events) == [
        ("a", "assistant", "call 555 0100"),
        (
            "a",
            "error",
            "OutputRejectedError",
            "ChatModelAgent 'a': output guardrail 'no_digits' rejected the answer: has digits",
        ),
    ]
    assert isinstance(events[-1].error, OutputRejectedError) and events[-1].error.info == 3
    assert model.call_count == 1


def test_output_guardrails_check_only_the_final_answer() -> None:
    answers: list[str] = []

    def note(ctx: GuardrailContext) -> None:
        assert ctx.answer is not None
        answers.append(ctx.answer.content)

    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    call = Message.assistant("adding", [ToolCall(id="c1", function=FunctionCall("add", '{"a": 1, "b": 2}'))])
    agent = ChatModelAgent("a", model=ScriptedModel([call, "3"]), tools=[add], output_guardrails=[note])
    assert rows(list(Runner(agent).query("1+2?"))) == [
        ("a", "assistant", "adding"),
        ("a", "tool", "3"),
        ("a", "assistant", "3"),
    ]
    assert answers == ["3"]


# --- failing guardrails, bad arguments, checkpoints -----------------------------------------


def test_a_guardrail_that_raises_or_returns_the_wrong_thing_is_a_guardrail_error() -> None:
    def broken(ctx: GuardrailContext) -> None:
        raise KeyError("oops")

    def wrong(ctx: GuardrailContext) -> str:
        return "no"

    wrong_message = (
        "ChatModelAgent 'a': input guardrail 'wrong' returned str; return None to pass or "
        "GuardrailRejection(reason) to reject"
    )
    for guard, message, cause in (
        (broken, "ChatModelAgent 'a': input guardrail 'broken' failed: KeyError('oops')", KeyError),
        (wrong, wrong_message, type(None)),
    ):
        model = ScriptedModel(["x"])
        agent = ChatModelAgent("a", model=model, input_guardrails=[guard])  # type: ignore[list-item]
        events = list(Runner(agent).query("hi"))
        assert rows(events) == [("a", "error", "GuardrailError", message)]
        assert type(events[0].error) is GuardrailError and model.call_count == 0
        assert type(events[0].error.__cause__) is cause


def test_bad_guardrail_arguments_are_named() -> None:
    with pytest.raises(
        TypeError, match="input_guardrails: a guardrail must be a function of a GuardrailContext, got int"
    ):
        ChatModelAgent("a", model=ScriptedModel([]), input_guardrails=[42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="an OutputGuardrail is given; pass it to output_guardrails="):
        ChatModelAgent("a", model=ScriptedModel([]), input_guardrails=[OutputGuardrail(polite)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="reason must be a non-empty str"):
        GuardrailRejection("")


def test_the_retry_event_is_encodable_for_checkpoints() -> None:
    retry = GuardrailRetry("polite", "rude")
    assert codec.decode(codec.encode(retry)) == retry


class City(pydantic.BaseModel):
    name: str


@STREAMING
def test_with_an_output_type_the_validated_answer_is_checked(streaming: bool) -> None:
    def not_rome(ctx: GuardrailContext) -> GuardrailRejection | None:
        assert ctx.answer is not None
        return GuardrailRejection("not Rome", retry=True) if "Rome" in ctx.answer.content else None

    model = ScriptedModel(['{"name": "Rome"}', '{"name": "Paris"}'])
    agent = ChatModelAgent("a", model=model, output_type=City, output_guardrails=[not_rome])
    assert rows(list(Runner(agent, streaming=streaming).query("a city?"))) == [
        ("a", "assistant", '{"name": "Rome"}'),
        ("a", "output", City(name="Rome")),
        ("a", "action", GuardrailRetry("not_rome", "not Rome")),
        ("a", "assistant", '{"name": "Paris"}'),
        ("a", "output", City(name="Paris")),
    ]


def test_a_checkpoint_after_a_retry_keeps_the_retry_event() -> None:
    """The retry event is among the run's events a checkpoint encodes (an interrupt later in
    the run saves them)."""
    call = Message.assistant(tool_calls=[ToolCall(id="c1", function=FunctionCall("ask_human", '{"question": "ok?"}'))])
    model = ScriptedModel(["You are stupid", call])
    agent = ChatModelAgent("a", model=model, tools=[ask_human], output_guardrails=[polite])
    runner = Runner(agent, checkpoint_store=InMemoryCheckpointStore())
    events = rows(list(runner.query("hi", checkpoint_id="cp")))
    assert [e[:2] for e in events] == [
        ("a", "assistant"),
        ("a", "action"),
        ("a", "assistant"),
        ("a", "interrupted"),
    ]
