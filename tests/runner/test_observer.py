"""rillet.RunObserver: what a run reports, from every agent of the tree, and an observer that
raises or is not an observer."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from rillet import (
    AgentTool,
    ChatModelAgent,
    FunctionCall,
    InterruptCtx,
    Message,
    ModelInfo,
    RunInfo,
    Runner,
    RunObserver,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    Usage,
    interrupt,
    tool,
)
from rillet._native import ResponseMeta
from rillet.checkpoint import InMemoryCheckpointStore
from rillet.tools.approval import approve


class Recorder(RunObserver):
    """Writes each notification as one short line."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def where(self, run: RunInfo) -> str:
        return "/".join(map(str, run.run_path))

    def on_run_start(self, run: RunInfo, messages: Sequence[Message]) -> None:
        self.lines.append(f"run_start {self.where(run)} ({len(messages)} messages)")

    def on_run_end(self, run: RunInfo, error: BaseException | None) -> None:
        self.lines.append(f"run_end {self.where(run)}" + (f" {type(error).__name__}" if error else ""))

    def on_model_start(self, run: RunInfo, model: ModelInfo, messages: Sequence[Message]) -> None:
        self.lines.append(f"model_start {self.where(run)} {model.name} ({len(messages)} messages)")

    def on_model_end(
        self, run: RunInfo, model: ModelInfo, reply: Message, usage: Usage | None, finish_reason: str
    ) -> None:
        tokens = f" {usage.prompt_tokens}+{usage.completion_tokens}" if usage else ""
        self.lines.append(f"model_end {self.where(run)} {finish_reason or '-'}{tokens}")

    def on_tool_start(self, run: RunInfo, tool: str, call_id: str, arguments: str) -> None:
        self.lines.append(f"tool_start {self.where(run)} {tool} {call_id} {arguments}")

    def on_tool_end(
        self, run: RunInfo, tool: str, call_id: str, result: str | None, error: BaseException | None
    ) -> None:
        failed = f" {type(error).__name__}" if error else ""
        self.lines.append(f"tool_end {self.where(run)} {tool} {call_id} {result!r}{failed}")

    def on_interrupt(self, run: RunInfo, causes: Sequence[InterruptCtx]) -> None:
        self.lines.append(f"interrupt {self.where(run)} {[c.info for c in causes]!r} at {causes[0].address[-1]}")

    def on_error(self, run: RunInfo, error: BaseException) -> None:
        self.lines.append(f"error {self.where(run)} {type(error).__name__}")


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> Message:
    return Message.assistant(tool_calls=[ToolCall(index=0, id=call_id, function=FunctionCall(name, json.dumps(args)))])


@tool
def add(a: int, b: int) -> int:
    """Adds.

    Args:
        a: one.
        b: two.
    """
    return a + b


@tool
def fail(why: str) -> str:
    """Fails.

    Args:
        why: the reason.
    """
    raise ValueError(why)


def math_agent() -> ChatModelAgent:
    done = Message("assistant", "3", response_meta=ResponseMeta("stop", Usage(7, 1, 8)))
    return ChatModelAgent(
        "math",
        description="adds",
        model=ScriptedModel([call("add", {"a": 1, "b": 2}), call("fail", {"why": "no"}, "c2"), done]),
        tools=[add, fail],
    )


@pytest.mark.parametrize("streaming", [False, True])
def test_a_tool_using_run_reports_each_step_in_order(streaming: bool) -> None:
    rec = Recorder()
    list(Runner(math_agent(), streaming=streaming, observers=[rec]).query("1+2?"))
    assert rec.lines == [
        "run_start math (1 messages)",
        "model_start math ScriptedModel (1 messages)",
        "model_end math -",
        'tool_start math add c1 {"a": 1, "b": 2}',
        "tool_end math add c1 '3'",
        "model_start math ScriptedModel (3 messages)",
        "model_end math -",
        'tool_start math fail c2 {"why": "no"}',
        "tool_end math fail c2 'Error: no' ValueError",  # sent to the model, and reported
        "model_start math ScriptedModel (5 messages)",
        "model_end math stop 7+1",
        "run_end math",
    ]


def test_agent_tools_and_workflow_children_report_to_the_run_observers() -> None:
    inner = ChatModelAgent("inner", description="i", model=ScriptedModel(["42"]))
    caller = ChatModelAgent(
        "caller",
        description="c",
        model=ScriptedModel([call("inner", {"request": "q"}), "ok"]),
        tools=[AgentTool(inner)],
    )
    after = ChatModelAgent("after", description="a", model=ScriptedModel(["bye"]))
    rec = Recorder()
    list(Runner(SequentialAgent("seq", sub_agents=[caller, after]), observers=[rec]).query("go"))
    starts = [line for line in rec.lines if line.startswith(("run_", "tool_"))]
    assert starts == [
        "run_start seq (1 messages)",
        "run_start seq/caller (0 messages)",  # rebuilt from the history
        'tool_start seq/caller inner c1 {"request": "q"}',
        "run_start inner (1 messages)",  # an agent tool's own run
        "run_end inner",
        "tool_end seq/caller inner c1 '42'",
        "run_end seq/caller",
        "run_start seq/caller/after (0 messages)",  # a sequence's run path grows, as in Eino
        "run_end seq/caller/after",
        "run_end seq",
    ]


def test_an_interrupt_and_an_error_are_reported() -> None:
    @tool
    def ask(question: str) -> str:
        """Asks.

        Args:
            question: the question.
        """
        raise interrupt(question)

    rec = Recorder()
    agent = ChatModelAgent("a", description="d", model=ScriptedModel([call("ask", {"question": "sure?"})]), tools=[ask])
    runner = Runner(agent, checkpoint_store=InMemoryCheckpointStore(), observers=[rec])
    list(runner.query("x", checkpoint_id="k"))
    assert rec.lines[-3:] == ["tool_end a ask c1 None Interrupted", "interrupt a ['sure?'] at tool:ask:c1", "run_end a"]
    rec.lines.clear()
    list(Runner(ChatModelAgent("b", description="d", model=ScriptedModel([])), observers=[rec]).query("x"))
    assert rec.lines[-2:] == ["error b ScriptExhaustedError", "run_end b ScriptExhaustedError"]


class Raising(RunObserver):
    def on_run_start(self, run: RunInfo, messages: Sequence[Message]) -> None:
        raise RuntimeError("sink down")

    def on_tool_end(
        self, run: RunInfo, tool: str, call_id: str, result: str | None, error: BaseException | None
    ) -> None:
        raise KeyError("broken sink")


def test_an_observer_that_raises_is_logged_and_the_run_and_other_observers_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rec = Recorder()
    with caplog.at_level(logging.ERROR, logger="rillet"):
        events = list(Runner(math_agent(), observers=[Raising(), rec]).query("1+2?"))
    assert events[-1].error is None and events[-1].message_output is not None
    assert events[-1].message_output.get_message().content == "3"
    assert len(rec.lines) == 12  # the second observer saw everything
    failures = [r for r in caplog.records if r.name == "rillet" and "run observer" in r.getMessage()]
    assert [r.getMessage().split(" raised in ")[1] for r in failures] == [
        "on_run_start; the run goes on",
        "on_tool_end; the run goes on",
        "on_tool_end; the run goes on",
    ]
    assert all(r.exc_info for r in failures)


def test_something_that_is_not_an_observer_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError, match=r"has no on_run_start, .*subclasses rillet.RunObserver"):
        Runner(math_agent(), observers=[object()]).query("x")  # type: ignore[list-item]


def test_a_runner_without_observers_sets_none() -> None:
    from rillet._core.scope import OBSERVING

    seen: list[object] = []

    @tool
    def look() -> str:
        """Looks."""
        seen.append(OBSERVING.get())
        return "ok"

    agent = ChatModelAgent("a", description="d", model=ScriptedModel([call("look", {}), "done"]), tools=[look])
    list(Runner(agent).query("x"))
    assert seen == [None]


def test_the_demo_counts_model_calls_and_tokens_with_an_observer() -> None:
    from rillet.examples.demo import QUESTION, _ModelCalls, build_agent

    counts = _ModelCalls()
    runner = Runner(build_agent(0.0), checkpoint_store=InMemoryCheckpointStore(), observers=[counts])
    events = list(runner.query(QUESTION, checkpoint_id="d"))
    pause = next(ev for ev in events if ev.action is not None and ev.action.interrupted is not None)
    assert pause.action is not None and pause.action.interrupted is not None
    list(runner.resume("d", targets={pause.action.interrupted.interrupt_contexts[0].id: approve()}))
    assert (counts.model_calls, counts.tokens) == (4, 1234)  # what `rillet demo` prints
