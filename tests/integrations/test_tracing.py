"""rillet.tracing.OpenTelemetryObserver with the SDK's in-memory exporter: span names, parent
links along a transfer, an agent tool and a workflow, GenAI attributes and token counts,
content recorded only when asked, and a consumer that stops early ending every span quietly."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.optional import need

need("opentelemetry.sdk")

import rillet
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rillet import (
    AgentTool,
    ChatModelAgent,
    FunctionCall,
    Message,
    ParallelAgent,
    Runner,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    interrupt,
    set_sub_agents,
    tool,
)
from rillet._native import ResponseMeta, Usage
from rillet.checkpoint import InMemoryCheckpointStore
from rillet.tracing import OpenTelemetryObserver


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    yield InMemorySpanExporter()


def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> Message:
    return Message.assistant(tool_calls=[ToolCall(index=0, id=call_id, function=FunctionCall(name, json.dumps(args)))])


def answer(text: str, prompt: int, completion: int) -> Message:
    return Message(
        "assistant", text, response_meta=ResponseMeta("stop", Usage(prompt, completion, prompt + completion))
    )


def tree(spans: tuple[ReadableSpan, ...]) -> dict[str, str | None]:
    """Each span's name -> its parent's name (names are unique in these runs)."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    names = [s.name for s in spans]
    assert len(names) == len(set(names)), names
    return {s.name: (by_id[s.parent.span_id].name if s.parent is not None else None) for s in spans}


def named(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    return next(s for s in spans if s.name == name)


def test_spans_follow_a_transfer_and_an_agent_tool_with_genai_attributes(exporter: InMemorySpanExporter) -> None:
    helper = ChatModelAgent("helper", description="helps", model=ScriptedModel([answer("42", 5, 1)]))
    billing = ChatModelAgent(
        "billing",
        description="bills",
        model=ScriptedModel([call("helper", {"request": "sum"}, "h1"), answer("done", 10, 3)]),
        tools=[AgentTool(helper)],
    )
    router = ChatModelAgent(
        "router", description="routes", model=ScriptedModel([call("transfer_to_agent", {"agent_name": "billing"})])
    )
    set_sub_agents(router, [billing])
    events = list(Runner(router, observers=[OpenTelemetryObserver(provider(exporter))]).query("my bill"))
    assert all(ev.error is None for ev in events)
    spans = exporter.get_finished_spans()
    # the model spans are told apart by their agent
    renamed = tuple(spans)
    parents = {
        (s.name, s.attributes["gen_ai.agent.name"] if s.attributes else None): (
            next(p for p in renamed if p.context.span_id == s.parent.span_id).name if s.parent else None
        )
        for s in renamed
    }
    assert parents == {
        ("invoke_agent router", "router"): None,
        ("chat ScriptedModel", "router"): "invoke_agent router",
        ("execute_tool transfer_to_agent", "router"): "invoke_agent router",
        ("invoke_agent billing", "billing"): "invoke_agent router",  # a transfer runs inside its sender
        ("chat ScriptedModel", "billing"): "invoke_agent billing",
        ("execute_tool helper", "billing"): "invoke_agent billing",
        ("invoke_agent helper", "helper"): "execute_tool helper",  # an agent tool's run, under its call
        ("chat ScriptedModel", "helper"): "invoke_agent helper",
    }
    assert len(spans) == 9  # billing made two model calls
    assert len({s.context.trace_id for s in spans}) == 1
    tool_span = named(spans, "execute_tool helper")
    assert tool_span.attributes is not None
    assert tool_span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool_span.attributes["gen_ai.tool.name"] == "helper"
    assert tool_span.attributes["gen_ai.tool.call.id"] == "h1"
    last = [
        s
        for s in spans
        if s.name == "chat ScriptedModel" and s.attributes and "gen_ai.usage.input_tokens" in s.attributes
    ]
    counts = sorted(
        (s.attributes["gen_ai.usage.input_tokens"], s.attributes["gen_ai.usage.output_tokens"])
        for s in last
        if s.attributes
    )
    assert counts == [(5, 1), (10, 3)]
    assert all(s.attributes and s.attributes["gen_ai.response.finish_reasons"] == ("stop",) for s in last)
    chat = last[0].attributes
    assert chat is not None and chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.system"] == "ScriptedModel" and chat["gen_ai.request.model"] == "ScriptedModel"
    billing_span = named(spans, "invoke_agent billing")
    assert billing_span.attributes is not None and billing_span.attributes["rillet.run_path"] == "router/billing"
    assert not any("gen_ai.input.messages" in (s.attributes or {}) for s in spans)  # content is off by default


def test_workflow_children_are_spans_under_the_workflow(exporter: InMemorySpanExporter) -> None:
    first = ChatModelAgent("first", description="1", model=ScriptedModel(["one"]))
    second = ChatModelAgent("second", description="2", model=ScriptedModel(["two"]))
    flow = SequentialAgent("pipeline", description="both", sub_agents=[first, second])
    list(Runner(flow, observers=[OpenTelemetryObserver(provider(exporter))]).query("go"))
    parents = tree(tuple(s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")))
    assert parents == {
        "invoke_agent pipeline": None,
        "invoke_agent first": "invoke_agent pipeline",
        "invoke_agent second": "invoke_agent pipeline",
    }


def test_content_is_recorded_only_when_asked(exporter: InMemorySpanExporter) -> None:
    @tool
    def shout(text: str) -> str:
        """Shouts.

        Args:
            text: what to shout.
        """
        return text.upper()

    agent = ChatModelAgent(
        "a", description="d", model=ScriptedModel([call("shout", {"text": "hi"}), "said HI"]), tools=[shout]
    )
    list(Runner(agent, observers=[OpenTelemetryObserver(provider(exporter), record_content=True)]).query("secret"))
    spans = exporter.get_finished_spans()
    run = named(spans, "invoke_agent a").attributes
    assert run is not None and "secret" in str(run["gen_ai.input.messages"])
    tool_attrs = named(spans, "execute_tool shout").attributes
    assert tool_attrs is not None
    assert (
        tool_attrs["gen_ai.tool.call.arguments"] == '{"text": "hi"}' and tool_attrs["gen_ai.tool.call.result"] == "HI"
    )
    outputs = [str((s.attributes or {}).get("gen_ai.output.messages")) for s in spans if s.name.startswith("chat")]
    assert any("said HI" in o for o in outputs)


def test_errors_and_interrupts_are_span_events(exporter: InMemorySpanExporter) -> None:
    @tool
    def ask(question: str) -> str:
        """Asks a person.

        Args:
            question: the question.
        """
        raise interrupt(question)

    tp = provider(exporter)
    agent = ChatModelAgent(
        "asker", description="d", model=ScriptedModel([call("ask", {"question": "ok?"})]), tools=[ask]
    )
    store = InMemoryCheckpointStore()
    list(Runner(agent, checkpoint_store=store, observers=[OpenTelemetryObserver(tp)]).query("x", checkpoint_id="k"))
    run = named(exporter.get_finished_spans(), "invoke_agent asker")
    assert [e.name for e in run.events] == ["rillet.interrupt"]
    assert [e.name for e in named(exporter.get_finished_spans(), "execute_tool ask").events] == ["rillet.interrupt"]
    exporter.clear()

    broken = ChatModelAgent("broken", description="d", model=ScriptedModel([]))  # runs out of replies
    events = list(Runner(broken, observers=[OpenTelemetryObserver(tp)]).query("x"))
    assert events[-1].error is not None
    run = named(exporter.get_finished_spans(), "invoke_agent broken")
    assert [e.name for e in run.events] == ["exception"]
    assert run.status.status_code.name == "ERROR"
    chat = named(exporter.get_finished_spans(), "chat ScriptedModel")  # the failed call ends with its run
    assert chat.status.status_code.name == "ERROR"


EARLY_STOP = textwrap.dedent(
    """
    import asyncio, logging, threading
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from rillet import ChatModelAgent, Runner, ScriptedModel, AgentTool, FunctionCall, Message, ToolCall, tool
    from rillet.tracing import OpenTelemetryObserver

    logging.basicConfig(level=logging.DEBUG)  # anything logged by rillet or OpenTelemetry shows
    logging.getLogger("asyncio").setLevel(logging.WARNING)  # (it names its selector at DEBUG)

    changed = threading.Condition()  # a span started or ended

    class Count(SpanProcessor):
        started = ended = 0
        def on_start(self, span, parent_context=None):
            with changed:
                Count.started += 1
                changed.notify_all()
        def on_end(self, span):
            with changed:
                Count.ended += 1
                changed.notify_all()

    tp = TracerProvider()
    tp.add_span_processor(Count())
    open_when_stopped = []
    inside = threading.Event()  # the run is inside the slow tool, deep in an agent tool

    @tool
    async def slow(x: str) -> str:
        \"\"\"Waits until the run is abandoned.

        Args:
            x: anything.
        \"\"\"
        inside.set()
        await asyncio.Event().wait()
        return x

    def runner(streaming):
        def call(name, args):
            return Message.assistant(tool_calls=[ToolCall(index=0, id="c", function=FunctionCall(name, args))])
        inner = ChatModelAgent("inner", description="i", tools=[slow],
                               model=ScriptedModel([call("slow", '{"x": "y"}'), "ok"], delay=0.001))
        outer = ChatModelAgent("outer", description="o", tools=[AgentTool(inner)],
                               model=ScriptedModel([call("inner", '{"request": "r"}'), "done"], delay=0.001))
        return Runner(outer, streaming=streaming, observers=[OpenTelemetryObserver(tp, record_content=True)])

    def stopped():
        if not inside.wait(60):
            raise SystemExit("the run never reached the slow tool")
        inside.clear()
        open_when_stopped.append(Count.started - Count.ended)

    def settled():
        with changed:
            if not changed.wait_for(lambda: Count.started == Count.ended, 60):
                raise SystemExit(f"open spans: {Count.started - Count.ended}")

    for streaming in (False, True):
        for ev in runner(streaming).query("hi"):
            stopped()
            break
        settled()
        it = runner(streaming).query("hi")
        next(it)
        stopped()
        it.close()
        settled()

    async def main():
        for streaming in (False, True):
            async for ev in runner(streaming).query("hi"):
                await asyncio.to_thread(stopped)
                break
            await asyncio.to_thread(settled)  # the abandoned run ends its spans on this loop
            async def consume():
                async for ev in runner(streaming).query("hi"):
                    await asyncio.sleep(60)  # a consumer busy when it is cancelled
            task = asyncio.create_task(consume())
            await asyncio.to_thread(stopped)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            await asyncio.to_thread(settled)
    asyncio.run(main())
    settled()
    assert min(open_when_stopped) >= 4, open_when_stopped  # two agent runs, two tool calls, at least
    print("ok", Count.started, Count.ended, open_when_stopped)
    """
)


def test_a_consumer_that_stops_early_ends_every_span_and_logs_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-c", EARLY_STOP],
        capture_output=True,
        text=True,
        timeout=60,
        # The rillet under test (the source tree, or the installed wheel under make test), no other path.
        env={"PYTHONPATH": str(Path(rillet.__file__).resolve().parents[1]), "PATH": ""},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok"), result.stdout
    assert result.stderr == ""


def test_without_the_otel_extra_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'rillet\[otel\]'"):
        OpenTelemetryObserver()


def test_a_run_started_inside_an_application_span_is_its_child(exporter: InMemorySpanExporter) -> None:
    tp = provider(exporter)
    agent = ChatModelAgent("a", description="d", model=ScriptedModel(["hi"]))
    with tp.get_tracer("app").start_as_current_span("request"):
        list(Runner(agent, observers=[OpenTelemetryObserver(tp)]).query("x"))
    assert tree(exporter.get_finished_spans()) == {
        "chat ScriptedModel": "invoke_agent a",
        "invoke_agent a": "request",  # the Runner's run copies the caller's context
        "request": None,
    }


def test_concurrent_tool_calls_and_parallel_branches_each_get_their_span(exporter: InMemorySpanExporter) -> None:
    @tool
    async def echo(text: str) -> str:
        """Echoes.

        Args:
            text: the text.
        """
        return text

    two_calls = Message.assistant(
        tool_calls=[
            ToolCall(index=0, id="e1", function=FunctionCall("echo", '{"text": "a"}')),
            ToolCall(index=1, id="e2", function=FunctionCall("echo", '{"text": "b"}')),
        ]
    )
    left = ChatModelAgent("left", description="l", model=ScriptedModel([two_calls, "ab"]), tools=[echo])
    right = ChatModelAgent("right", description="r", model=ScriptedModel(["c"]))
    both = ParallelAgent("both", description="b", sub_agents=[left, right])
    list(Runner(both, observers=[OpenTelemetryObserver(provider(exporter))]).query("go"))
    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    parent = {
        (s.name, (s.attributes or {}).get("gen_ai.tool.call.id")): by_id[s.parent.span_id].name
        for s in spans
        if s.parent is not None and not s.name.startswith("chat")
    }
    assert parent == {
        ("invoke_agent left", None): "invoke_agent both",
        ("invoke_agent right", None): "invoke_agent both",
        ("execute_tool echo", "e1"): "invoke_agent left",
        ("execute_tool echo", "e2"): "invoke_agent left",
    }
