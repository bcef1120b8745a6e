"""Google ADK on the peer workloads (see _common.py); runs inside its own virtual environment.

The offline test model is a ``BaseLlm`` subclass: it reads the request's contents to know which
step it is at (the function responses so far), yields one ``LlmResponse`` when not streaming,
and partial responses then the final aggregated one when the run config asks for SSE, the way
ADK's own model classes stream.
"""

from __future__ import annotations

import os

# No telemetry, no prompt text in spans, no model-price download: the only network is loopback.
# ADK still builds its GenAI span attributes from the whole request on every model call with
# the SDK disabled (about a fifth of a ReAct run's profile, growing with the conversation): that
# is ADK's default cost, with no documented switch to skip it, so it stays in the numbers.
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", "false")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

import asyncio
import logging
import uuid
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from _common import (
    APPROVAL_TOOL,
    COMPLETION_TOKENS,
    INPUT,
    PARALLEL_AGENTS,
    PIPELINE_AGENTS,
    PROMPT_TOKENS,
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
    main,
    make_tools,
    report,
    skip,
    step_call,
    time_async,
    time_sync,
    us,
)
from google.adk.agents import LlmAgent, ParallelAgent, SequentialAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools import FunctionTool
from google.genai import types

logging.disable(logging.WARNING)  # ADK logs experimental-feature warnings per call
warnings.filterwarnings("ignore")

APP, USER = "bench", "user"
USAGE = types.GenerateContentResponseUsageMetadata(
    prompt_token_count=PROMPT_TOKENS,
    candidates_token_count=COMPLETION_TOKENS,
    total_token_count=PROMPT_TOKENS + COMPLETION_TOKENS,
)
STREAM = RunConfig(streaming_mode=StreamingMode.SSE)
PLAIN = RunConfig()


def _text(text: str, *, partial: bool = False) -> LlmResponse:
    content = types.Content(role="model", parts=[types.Part(text=text)])
    if partial:
        return LlmResponse(content=content, partial=True)
    return LlmResponse(content=content, partial=False, turn_complete=True, usage_metadata=USAGE)


def _call(name: str, args: dict[str, Any], id: str, *, partial: bool = False) -> LlmResponse:
    part = types.Part(function_call=types.FunctionCall(id=id, name=name, args=args))
    content = types.Content(role="model", parts=[part])
    if partial:
        return LlmResponse(content=content, partial=True)
    return LlmResponse(content=content, partial=False, turn_complete=True, usage_metadata=USAGE)


async def _reply(final: LlmResponse, stream: bool) -> AsyncGenerator[LlmResponse, None]:
    """One model turn: the final response alone, or (SSE) two partial chunks and then it."""
    if stream:
        part = final.content.parts[0]
        if part.function_call is not None:  # the name chunk, the arguments chunk
            call = part.function_call
            yield _call(call.name or "", {}, call.id or "", partial=True)
            yield _call(call.name or "", dict(call.args or {}), call.id or "", partial=True)
        else:
            text = part.text or ""
            yield _text(text[:2], partial=True)
            yield _text(text[2:], partial=True)
    yield final


def _responses(request: LlmRequest) -> int:
    """How many function responses the conversation holds: the step the model is at."""
    return sum(1 for c in request.contents for p in c.parts or () if p.function_response is not None)


class ReactModel(BaseLlm):
    """At step i asks for step_call(i); after STEPS steps answers "done"."""

    model: str = "bench-react"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        TALLY.models += 1
        i = _responses(llm_request)
        if i < STEPS:
            name, args = step_call(i)
            final = _call(name, args, call_id(i))
        else:
            final = _text("done")
        async for response in _reply(final, stream):
            yield response


class TextModel(BaseLlm):
    """Answers one text (the workflow agents), optionally after awaiting ``release``."""

    model: str = "bench-text"
    answer: str = "done"
    release: Any = None  # an asyncio.Event for the concurrent workload

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        TALLY.models += 1
        if self.release is not None:
            await self.release.wait()
        async for response in _reply(_text(self.answer), stream):
            yield response


class BookModel(BaseLlm):
    """Calls book(city="Paris"); once the tool's result is in the conversation answers "booked"."""

    model: str = "bench-book"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        TALLY.models += 1
        done = _responses(llm_request) > 0
        final = _text("booked") if done else _call(APPROVAL_TOOL, {"city": "Paris"}, "call_book")
        async for response in _reply(final, stream):
            yield response


def _message(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def _session(runner: Runner) -> str:
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    return session.id


async def _drain(runner: Runner, session_id: str, message: types.Content, config: RunConfig) -> Any:
    """Reads every event of one run; returns the last one with content."""
    last = None
    async for event in runner.run_async(user_id=USER, session_id=session_id, new_message=message, run_config=config):
        if event.content is not None:
            last = event
    return last


def _final_text(event: Any) -> str:
    return "".join(p.text or "" for p in event.content.parts) if event and event.content else ""


# --- (a) react ------------------------------------------------------------------------------


def _react_runner(kind: str) -> Runner:
    agent = LlmAgent(name="react", model=ReactModel(), instruction=SYSTEM, tools=make_tools(kind))
    return Runner(agent=agent, app_name=APP, session_service=InMemorySessionService())


def react(options: Options) -> None:
    rounds = 1 if options.quick else options.rounds
    expected = {"tools": STEPS, "models": STEPS + 1}
    for kind in ("def", "async"):
        for mode, config in (("invoke", PLAIN), ("stream", STREAM)):
            runner = _react_runner(kind)
            answers: list[str] = []

            async def run(runner: Runner = runner, config: RunConfig = config, answers: list[str] = answers) -> None:
                TALLY.reset()
                last = await _drain(runner, await _session(runner), _message(INPUT), config)
                answers.append(_final_text(last))

            samples = time_async(run, rounds)
            seen = {"tools": TALLY.tools, "models": TALLY.models}
            if answers[-1] != "done":
                seen["answer"] = 0  # a run that did not end with the answer is not ok
            report(
                "react", f"{kind}-{mode}", unit="us/step", samples=us(samples, STEPS + 1), expected=expected, seen=seen
            )
    # ADK's sync entry point: Runner.run drives run_async on a thread of its own, per call.
    runner = _react_runner("def")
    session_ids = [asyncio.run(_session(runner)) for _ in range(rounds + 1)]
    answers = []

    def run_sync() -> None:
        TALLY.reset()
        last = None
        for event in runner.run(user_id=USER, session_id=session_ids.pop(), new_message=_message(INPUT)):
            if event.content is not None:
                last = event
        answers.append(_final_text(last))

    samples = time_sync(run_sync, rounds)
    seen = {"tools": TALLY.tools, "models": TALLY.models}
    if answers[-1] != "done":
        seen["answer"] = 0
    report("react", "def-invoke-sync", unit="us/step", samples=us(samples, STEPS + 1), expected=expected, seen=seen)


# --- (b) workflow ---------------------------------------------------------------------------


def workflow(options: Options) -> None:
    rounds = 3 if options.quick else options.rounds
    stages = [
        LlmAgent(name=f"stage{i}", model=TextModel(answer=f"stage {i} done"), instruction=SYSTEM)
        for i in range(PIPELINE_AGENTS)
    ]
    branches = [
        LlmAgent(name=f"branch{i}", model=TextModel(answer=f"branch {i} done"), instruction=SYSTEM)
        for i in range(PARALLEL_AGENTS)
    ]
    shapes = (
        ("sequential3", SequentialAgent(name="pipeline", sub_agents=stages), PIPELINE_AGENTS),
        ("parallel8", ParallelAgent(name="fanout", sub_agents=branches), PARALLEL_AGENTS),
    )
    for variant, root, models in shapes:
        runner = Runner(agent=root, app_name=APP, session_service=InMemorySessionService())

        async def run(runner: Runner = runner) -> None:
            TALLY.reset()
            await _drain(runner, await _session(runner), _message(INPUT), PLAIN)

        samples = time_async(run, rounds)
        report(
            "workflow",
            variant,
            unit="us/run",
            samples=us(samples),
            expected={"models": models},
            seen={"models": TALLY.models},
        )


# --- (c) approval ---------------------------------------------------------------------------


def book(city: str) -> str:
    """Books a trip to a city."""
    TALLY.tools += 1
    return f"booked {city}"


def _approval_runner(path: str) -> Runner:
    """A fresh agent, app and runner over the SQLite session file (what a resuming process builds).
    The plain confirmation round trip needs no ResumabilityConfig: the runner finds the paused
    call from the FunctionResponse that answers it."""
    agent = LlmAgent(
        name="booker",
        model=BookModel(),
        instruction=SYSTEM,
        tools=[FunctionTool(book, require_confirmation=True)],
    )
    app = App(name=APP, root_agent=agent)
    return Runner(app=app, session_service=SqliteSessionService(path))


def _confirmation(event: Any) -> str | None:
    """The function call id of the confirmation request an event carries."""
    for call in event.get_function_calls():
        if call.name == "adk_request_confirmation":
            return str(call.id)
    return None


def approval(options: Options) -> None:
    rounds = 3 if options.quick else options.rounds
    db_dir = options.db_dir or os.path.join(os.getcwd(), ".bench-adk")
    os.makedirs(db_dir, exist_ok=True)
    answers: list[str] = []
    # one file for every cycle, a new session each, as the other frameworks keep one database:
    # a file per cycle timed the file's creation and ADK's schema set-up on every cycle
    path = os.path.join(db_dir, f"adk-approval-{uuid.uuid4().hex}.db")

    async def cycle() -> None:
        TALLY.reset()
        first = _approval_runner(path)
        session_id = await _session(first)
        pending = None
        async for event in first.run_async(user_id=USER, session_id=session_id, new_message=_message(INPUT)):
            pending = _confirmation(event) or pending
        if pending is None:
            raise RuntimeError("the run did not stop for the booking's confirmation")
        await first.close()
        # The person approves; a new runner (new agent, new session service) resumes from the file.
        second = _approval_runner(path)
        approve = types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=pending, name="adk_request_confirmation", response={"confirmed": True}
                    )
                )
            ],
        )
        last = None
        async for event in second.run_async(user_id=USER, session_id=session_id, new_message=approve):
            if event.content is not None:
                last = event
        await second.close()
        answers.append(_final_text(last))

    try:
        samples = time_async(cycle, rounds)
    finally:
        os.remove(path)
    seen = {"tools": TALLY.tools, "models": TALLY.models}
    if answers[-1] != "booked":
        seen["answer"] = 0
    report(
        "approval",
        "interrupt-resume",
        unit="us/cycle",
        samples=us(samples),
        expected={"tools": 1, "models": 2},
        seen=seen,
        how="FunctionTool(book, require_confirmation=True); approved by a FunctionResponse to"
        " adk_request_confirmation; SqliteSessionService, ADK's own SQLite store (what sqlite:// URIs"
        " select; no ResumabilityConfig needed)",
    )


# --- (d) import, (e) construct, (f) concurrent ----------------------------------------------

adk_import = import_workload("from google.adk.agents import LlmAgent")

_MODEL = TextModel()
construct = construction_workload(lambda: LlmAgent(name="agent", model=_MODEL, tools=[lookup]))


async def _start_runs(n: int, release: asyncio.Event) -> Callable[[], Awaitable[int]]:
    agent = LlmAgent(name="waiter", model=TextModel(release=release), instruction=SYSTEM)
    runner = Runner(agent=agent, app_name=APP, session_service=InMemorySessionService())
    session_ids = [await _session(runner) for _ in range(n)]

    async def one(session_id: str) -> bool:
        return _final_text(await _drain(runner, session_id, _message(INPUT), PLAIN)) == "done"

    return gathered(one(s) for s in session_ids)


concurrent = concurrent_workload(_start_runs)


# --- (g) http -------------------------------------------------------------------------------


def http(options: Options) -> None:
    if not options.base_url:
        skip("http", "one-tool-call", "no --base-url (the harness starts the loopback server)")
        return
    import litellm
    from google.adk.models.lite_llm import LiteLlm

    litellm.telemetry = False
    model = LiteLlm(model="openai/bench-model", api_base=options.base_url, api_key="x")
    agent = LlmAgent(name="http", model=model, instruction=SYSTEM, tools=[lookup])
    runner = Runner(agent=agent, app_name=APP, session_service=InMemorySessionService())
    rounds = 3 if options.quick else options.rounds
    answers: list[str] = []

    async def run() -> None:
        TALLY.reset()
        answers.append(_final_text(await _drain(runner, await _session(runner), _message(INPUT), STREAM)))

    samples = time_async(run, rounds)
    seen = {"tools": TALLY.tools}
    if answers[-1] != "done":
        seen["answer"] = 0
    report(
        "http",
        "one-tool-call",
        unit="ms/run",
        samples=[s * 1e3 for s in samples],
        expected={"tools": 1},
        seen=seen,
        how="LiteLlm(model='openai/bench-model', api_base=...) streaming (SSE); LiteLLM's OpenAI client",
    )


if __name__ == "__main__":
    main(
        {
            "react": react,
            "workflow": workflow,
            "approval": approval,
            "import": adk_import,
            "construct": construct,
            "concurrent": concurrent,
            "http": http,
        }
    )
