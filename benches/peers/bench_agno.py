"""Agno's side of the peer workloads (run by ``benches/peers/run.py`` in Agno's own venv).

The offline test model is a subclass of Agno's ``Model`` (the base class every provider
implements): ``ainvoke``/``invoke`` return one ``ModelResponse`` and the ``*_stream`` methods
yield the reply in CHUNKS_PER_REPLY deltas, so Agno's own response loop, tool runner and
stream assembly do all the work they do with a real provider.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

# Agno reports usage unless told not to; set before it is imported. Nothing here may touch
# the network except the loopback server of the HTTP workload.
os.environ["AGNO_TELEMETRY"] = "false"

from _common import (
    APPROVAL_TOOL,
    INPUT,
    PARALLEL_AGENTS,
    PIPELINE_AGENTS,
    STEPS,
    SYSTEM,
    TALLY,
    Options,
    call_id,
    concurrent_workload,
    construction_workload,
    gathered,
    import_workload,
    lookup,
    make_tools,
    report,
    skip,
    step_call,
    time_async,
    time_on_one_loop,
    time_sync,
    us,
)
from agno.agent import Agent
from agno.metrics import MessageMetrics
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse


def _quiet_agno_logs() -> None:
    """Agno's loggers write to stdout when it is not a terminal; stdout carries only JSON lines."""
    for name in ("agno", "agno-team", "agno-workflow"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.addHandler(logging.StreamHandler(sys.stderr))
        logger.setLevel(logging.WARNING)


_quiet_agno_logs()

# --- the offline test model ------------------------------------------------------------------

# A turn of the script: ("text", answer) or ("call", name, args, id).
Turn = tuple[Any, ...]


def _usage() -> MessageMetrics:
    return MessageMetrics(input_tokens=10, output_tokens=5, total_tokens=15)


@dataclass
class ScriptModel(Model):
    """Plays ``script(messages)`` (the conversation so far -> the next turn); counts its calls.
    ``gate``, when set, is awaited before an async reply (the concurrent workload's slow model)."""

    id: str = "bench-model"
    name: str = "ScriptModel"
    provider: str = "bench"
    script: Callable[[list[Message]], Turn] = lambda messages: ("text", "done")
    gate: asyncio.Event | None = None

    def _whole(self, messages: list[Message]) -> ModelResponse:
        TALLY.models += 1
        turn = self.script(messages)
        if turn[0] == "text":
            return ModelResponse(role="assistant", content=turn[1], response_usage=_usage())
        _, name, args, ident = turn
        call = {"id": ident, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        return ModelResponse(role="assistant", tool_calls=[call], response_usage=_usage())

    def _chunks(self, messages: list[Message]) -> list[ModelResponse]:
        TALLY.models += 1
        turn = self.script(messages)
        finish = ModelResponse(response_usage=_usage())
        if turn[0] == "text":
            half = len(turn[1]) // 2
            return [
                ModelResponse(role="assistant", content=turn[1][:half]),
                ModelResponse(content=turn[1][half:]),
                finish,
            ]
        _, name, args, ident = turn
        head = {"index": 0, "id": ident, "type": "function", "function": {"name": name, "arguments": ""}}
        body = {"index": 0, "function": {"arguments": json.dumps(args)}}
        return [ModelResponse(role="assistant", tool_calls=[head]), ModelResponse(tool_calls=[body]), finish]

    def invoke(self, messages: list[Message], **_: Any) -> ModelResponse:
        return self._whole(messages)

    async def ainvoke(self, messages: list[Message], **_: Any) -> ModelResponse:
        if self.gate is not None:
            await self.gate.wait()
        return self._whole(messages)

    def invoke_stream(self, messages: list[Message], **_: Any) -> Iterator[ModelResponse]:
        yield from self._chunks(messages)

    async def ainvoke_stream(self, messages: list[Message], **_: Any) -> AsyncIterator[ModelResponse]:  # type: ignore[override]
        if self.gate is not None:
            await self.gate.wait()
        for chunk in self._chunks(messages):
            yield chunk

    def parse_tool_calls(self, tool_calls_data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Joins streamed tool-call deltas by index, as a provider's streaming parser does."""
        calls: dict[int, dict[str, Any]] = {}
        for delta in tool_calls_data:
            call = calls.setdefault(
                delta["index"], {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            )
            call["id"] = delta.get("id") or call["id"]
            function = delta.get("function", {})
            call["function"]["name"] += function.get("name") or ""
            call["function"]["arguments"] += function.get("arguments") or ""
        return list(calls.values())

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


def react_script(messages: list[Message]) -> Turn:
    """Step i = one after the call whose result ends the conversation (0 after the user's input)."""
    last = messages[-1]
    step = int(last.tool_call_id.rsplit("_", 1)[1]) + 1 if last.role == "tool" and last.tool_call_id else 0
    if step >= STEPS:
        return ("text", "done")
    name, args = step_call(step)
    return ("call", name, args, call_id(step))


def approval_script(messages: list[Message]) -> Turn:
    last = messages[-1]
    if last.role == "tool":  # answers "booked" only when the approved tool really ran
        return ("text", "booked" if str(last.content).startswith("booked") else f"not booked: {last.content}")
    return ("call", APPROVAL_TOOL, {"city": "Paris"}, call_id(0))


def answer(text: str) -> Callable[[list[Message]], Turn]:
    return lambda messages: ("text", text)


# --- (a) react ----------------------------------------------------------------------------


async def _drain_stream(agent: Agent) -> int:
    """Consumes every chunk of a streamed run; returns how many were read."""
    chunks = 0
    async for _ in agent.arun(INPUT, stream=True):
        chunks += 1
    return chunks


def _react_variant(kind: str, mode: str, rounds: int) -> None:
    """One of the four async variants: Agent.arun, its answer awaited or its stream read whole."""
    agent = Agent(model=ScriptModel(script=react_script), instructions=SYSTEM, tools=make_tools(kind))
    outputs: list[Any] = []

    async def once() -> None:
        TALLY.reset()
        if mode == "stream":
            outputs.append(await _drain_stream(agent))
        else:
            outputs.append((await agent.arun(INPUT)).content)

    samples = time_async(once, rounds)
    seen = {"tools": TALLY.tools, "models": TALLY.models}
    # Agno's stream (stream_events off, its default) carries the answer's content chunks only.
    extra = {"chunks": outputs[-1], "how": "arun(stream=True), every event read"} if mode == "stream" else {}
    if mode == "invoke" and outputs[-1] != "done":
        seen["answer_not_done"] = 1
    report(
        "react",
        f"{kind}-{mode}",
        unit="us/step",
        samples=us(samples, STEPS + 1),
        expected={"tools": STEPS, "models": STEPS + 1},
        seen=seen,
        **extra,
    )


def react(options: Options) -> None:
    rounds = 2 if options.quick else options.rounds
    for kind in ("def", "async"):
        for mode in ("invoke", "stream"):
            _react_variant(kind, mode, rounds)

    agent = Agent(model=ScriptModel(script=react_script), instructions=SYSTEM, tools=make_tools("def"))
    answers: list[Any] = []

    def sync_once() -> None:
        TALLY.reset()
        answers.append(agent.run(INPUT).content)

    samples = time_sync(sync_once, rounds)
    seen = {"tools": TALLY.tools, "models": TALLY.models}
    if answers[-1] != "done":
        seen["answer_not_done"] = 1
    report(
        "react",
        "def-invoke-sync",
        unit="us/step",
        samples=us(samples, STEPS + 1),
        expected={"tools": STEPS, "models": STEPS + 1},
        seen=seen,
        how="Agent.run (sync)",
    )


# --- (b) workflow -------------------------------------------------------------------------


def relay(i: int) -> Callable[[list[Message]], Turn]:
    """A pipeline agent: answers its input with its own mark appended, so the final answer
    shows every agent's output fed the next one."""
    return lambda messages: ("text", f"{messages[-1].get_content_string()}>a{i}")


def _time_flow(variant: str, flow: Any, agents: int, how: str, check: Callable[[Any], bool], rounds: int) -> None:
    results: list[Any] = []

    async def once() -> None:
        TALLY.reset()
        results.append(await flow.arun(INPUT))

    samples = time_async(once, rounds)
    seen = {"models": TALLY.models}
    if not check(results[-1]):
        seen["wrong_output"] = 1
        print(f"workflow/{variant}: output {results[-1].content!r}", file=sys.stderr)
    report("workflow", variant, unit="us/run", samples=us(samples), expected={"models": agents}, seen=seen, how=how)


def workflow(options: Options) -> None:
    from agno.workflow import Parallel, Step, Workflow

    rounds = 2 if options.quick else options.rounds

    def step(i: int, script: Callable[[list[Message]], Turn]) -> Step:
        agent = Agent(name=f"agent{i}", model=ScriptModel(script=script), instructions=SYSTEM)
        return Step(name=f"step{i}", agent=agent)

    sequential = Workflow(name="sequential", steps=[step(i, relay(i)) for i in range(PIPELINE_AGENTS)])
    chain = ">".join(f"a{i}" for i in range(PIPELINE_AGENTS))
    _time_flow(
        "sequential3",
        sequential,
        PIPELINE_AGENTS,
        "Workflow(steps=[Step(agent=...)] * 3).arun",
        lambda output: str(output.content).endswith(chain),
        rounds,
    )
    parallel = Workflow(
        name="parallel",
        steps=[Parallel(*(step(i, answer(f"out{i}")) for i in range(PARALLEL_AGENTS)), name="fan-out")],
    )
    _time_flow(
        "parallel8",
        parallel,
        PARALLEL_AGENTS,
        "Workflow(steps=[Parallel(Step(agent=...) * 8)]).arun",
        # The run's own content is one branch's; the Parallel step's output holds all eight.
        lambda output: [s.content for s in output.step_results[0].steps] == [f"out{i}" for i in range(PARALLEL_AGENTS)],
        rounds,
    )


# --- (c) approval -------------------------------------------------------------------------


def approval(options: Options) -> None:
    from agno.db.sqlite import SqliteDb
    from agno.tools import tool

    rounds = 2 if options.quick else options.rounds
    db_dir = options.db_dir or tempfile.mkdtemp(prefix="bench-agno-")
    db = SqliteDb(db_file=os.path.join(db_dir, "agno-approval.db"))
    model = ScriptModel(script=approval_script)

    @tool(name=APPROVAL_TOOL, requires_confirmation=True)
    def book(city: str) -> str:
        """Books a trip to a city (a person approves first)."""
        TALLY.tools += 1
        return f"booked {city}"

    finals: list[Any] = []

    async def cycle() -> None:
        TALLY.reset()
        session = uuid.uuid4().hex
        paused = await Agent(model=model, instructions=SYSTEM, tools=[book], db=db).arun(INPUT, session_id=session)
        if not paused.is_paused:
            raise RuntimeError(f"the run did not pause for approval: {paused.status}")
        # A new agent object: the paused run comes back from SQLite, not from memory.
        resumer = Agent(model=model, instructions=SYSTEM, tools=[book], db=db)
        stored = await resumer.aget_run_output(paused.run_id, session_id=session)
        if stored is None:
            raise RuntimeError("the paused run is not in SQLite")
        for requirement in stored.active_requirements:
            requirement.confirm()
        # By run id with the confirmed requirements: given run_response=stored instead, Agno 3.1
        # reads the approval from stored.tools (other objects, unconfirmed) and rejects the call.
        finals.append(
            await resumer.acontinue_run(run_id=paused.run_id, session_id=session, requirements=stored.requirements)
        )

    samples = time_async(cycle, rounds)
    seen = {"tools": TALLY.tools, "models": TALLY.models}
    if finals[-1].content != "booked":
        seen["answer_not_booked"] = 1
    report(
        "approval",
        "interrupt-resume",
        unit="us/cycle",
        samples=us(samples),
        expected={"tools": 1, "models": 2},
        seen=seen,
        how="@tool(requires_confirmation=True); SqliteDb; new Agent: aget_run_output, confirm, acontinue_run(run_id)",
    )


# --- (f) concurrent -----------------------------------------------------------------------


async def start_runs(n: int, release: asyncio.Event) -> Callable[[], Awaitable[int]]:
    agent = Agent(model=ScriptModel(script=answer("done"), gate=release), instructions=SYSTEM)

    async def one() -> bool:
        return (await agent.arun(INPUT)).content == "done"

    return gathered(one() for _ in range(n))


# --- (g) http -----------------------------------------------------------------------------


async def _http_run(model: Any) -> str:
    """One streamed run through OpenAIChat; returns the answer's text."""
    TALLY.reset()
    text = ""
    async for event in Agent(model=model, instructions=SYSTEM, tools=[lookup]).arun(INPUT, stream=True):
        text += getattr(event, "content", None) or ""
    return text


def _warm_samples(model: Any, rounds: int, texts: list[str]) -> list[float]:
    """Seconds per run on ONE event loop with one model (so one OpenAI client and its
    keep-alive connection) across runs: the steady state of a long-lived service."""

    async def run() -> None:
        texts.append(await _http_run(model))

    return time_on_one_loop(run, rounds, lambda: model.get_async_client().close())


def http(options: Options) -> None:
    if not options.base_url:
        skip("http", "one-tool-call", "no --base-url (the harness starts the loopback server)")
        return
    from agno.models.openai import OpenAIChat

    rounds = 3 if options.quick else options.rounds
    texts: list[str] = []

    async def once() -> None:
        # A model (so an OpenAI client) per run, closed at its end: the client OpenAIChat caches
        # is bound to the event loop it was made on, and each timed run is on a fresh loop.
        model = OpenAIChat(id="bench-model", base_url=options.base_url, api_key="unused")
        texts.append(await _http_run(model))
        await model.get_async_client().close()

    for variant, make_samples, how in (
        ("one-tool-call", lambda: time_async(once, rounds), "OpenAIChat made per run (fresh loop), arun(stream=True)"),
        (
            "one-tool-call-warm",
            lambda: _warm_samples(
                OpenAIChat(id="bench-model", base_url=options.base_url, api_key="unused"), rounds, texts
            ),
            "one loop, one OpenAIChat (client and connection reused), arun(stream=True)",
        ),
    ):
        samples = make_samples()
        seen = {"tools": TALLY.tools}
        if texts[-1] != "done":
            seen["answer_not_done"] = 1
        report(
            "http",
            variant,
            unit="ms/run",
            samples=[s * 1e3 for s in samples],
            expected={"tools": 1},
            seen=seen,
            how=how,
        )


_construct_model = ScriptModel()

if __name__ == "__main__":
    from _common import main

    main(
        {
            "react": react,
            "workflow": workflow,
            "approval": approval,
            "import": import_workload("from agno.agent import Agent"),
            "construct": construction_workload(lambda: Agent(model=_construct_model, tools=[lookup])),
            "concurrent": concurrent_workload(start_runs),
            "http": http,
        }
    )
