"""rillet on the peer workload set (``benches/peers/run.py`` runs it with the current Python).

Unlike the other ``bench_*.py`` scripts, this one runs where rillet is installed: mypy checks
it (with ``_common`` from this folder, as the harness starts it) and benches/bench_react.py
reuses its model double.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from typing import Any

import rillet
from _common import (
    APPROVAL_TOOL,
    COMPLETION_TOKENS,
    EVAL_CITIES,
    EVAL_TOOL,
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
    eval_answer,
    eval_city,
    eval_question,
    eval_workload,
    expected_answer,
    gathered,
    import_workload,
    lookup,
    main,
    make_tools,
    report,
    skip,
    step_call,
    time_async,
    time_on_one_loop,
    time_sync,
    us,
)
from rillet import (
    AgentEvent,
    ChatModelAgent,
    FunctionCall,
    Message,
    ParallelAgent,
    ResponseMeta,
    Runner,
    SequentialAgent,
    SqliteCheckpointStore,
    ToolCall,
    Usage,
)
from rillet.tools.approval import approve, requires_approval

USAGE = Usage(PROMPT_TOKENS, COMPLETION_TOKENS, PROMPT_TOKENS + COMPLETION_TOKENS)


def _call(i: int, name: str, args: str) -> ToolCall:
    return ToolCall(index=0, id=call_id(i), type="function", function=FunctionCall(name, args))


class RilletDouble:
    """rillet's model double (the ChatModel protocol) for the scripted ReAct run: at call ``i``
    it asks for ``step_call(i)``, after ``k`` calls it answers "done"; streamed replies come in
    three chunks. Counts its calls in ``TALLY.models``."""

    def __init__(self, k: int = STEPS) -> None:
        self.k = k
        self.i = 0

    def reset(self) -> None:
        self.i = 0

    def _next(self) -> tuple[int, str, str]:
        TALLY.models += 1
        i = self.i
        self.i += 1
        if i >= self.k:
            return i, "", ""
        name, args = step_call(i)
        return i, name, json.dumps(args)

    async def generate(self, messages: list[Message], *, tools: Any = None, **options: Any) -> Message:
        i, name, args = self._next()
        if not name:
            return Message(role="assistant", content="done", response_meta=ResponseMeta("stop", USAGE))
        return Message(
            role="assistant", tool_calls=[_call(i, name, args)], response_meta=ResponseMeta("tool_calls", USAGE)
        )

    async def stream(
        self, messages: list[Message], *, tools: Any = None, **options: Any
    ) -> rillet.StreamReader[Message]:
        i, name, args = self._next()
        if not name:
            meta = ResponseMeta("stop", USAGE)
            chunks = [Message(role="assistant", content="do"), Message(content="ne"), Message(response_meta=meta)]
        else:
            body = ToolCall(index=0, type="", function=FunctionCall("", args))
            chunks = [
                Message(role="assistant", tool_calls=[_call(i, name, "")]),
                Message(tool_calls=[body]),
                Message(response_meta=ResponseMeta("tool_calls", USAGE)),
            ]
        return rillet.stream_from_list(chunks)


class ReplyDouble:
    """A model that answers ``reply(messages)`` (a text or one tool call), counting its calls;
    after ``release`` is set, when one is given."""

    def __init__(self, reply: Callable[[list[Message]], Message], release: asyncio.Event | None = None) -> None:
        self.reply = reply
        self.release = release

    async def generate(self, messages: list[Message], *, tools: Any = None, **options: Any) -> Message:
        if self.release is not None:
            await self.release.wait()
        TALLY.models += 1
        return self.reply(messages)

    async def stream(
        self, messages: list[Message], *, tools: Any = None, **options: Any
    ) -> rillet.StreamReader[Message]:
        return rillet.stream_from_list([await self.generate(messages, tools=tools, **options)])


def answer(text: str) -> Callable[[list[Message]], Message]:
    return lambda messages: Message(role="assistant", content=text, response_meta=ResponseMeta("stop", USAGE))


async def consume(run: rillet.RunIterator) -> str:
    """Reads every event of ``run`` and every chunk of its streamed messages (an error event
    raises); returns the text of the last message."""
    text = ""
    async for ev in run:
        text = text_of(ev, text)
        mv = ev.message_output
        if mv is not None and mv.message_stream is not None:
            text = ""
            async for chunk in mv.message_stream:
                text += chunk.content
    return text


def text_of(ev: AgentEvent, text: str) -> str:
    """The event's message text, or ``text`` when it has none; an error event raises."""
    if ev.error is not None:
        raise ev.error
    mv = ev.message_output
    return mv.message.content if mv is not None and mv.message is not None else text


# --- (a) react ------------------------------------------------------------------------------


def react(options: Options) -> None:
    for kind, mode in itertools.product(("def", "async"), ("invoke", "stream")):
        react_variant(kind, mode, options)
    react_sync(options)


def react_variant(kind: str, mode: str, options: Options) -> None:
    model = RilletDouble()
    tools = [rillet.tool(f) for f in make_tools(kind)]
    agent = ChatModelAgent("bench", instruction=SYSTEM, model=model, tools=tools, max_iterations=STEPS + 1)
    runner = Runner(agent, streaming=mode == "stream")

    async def run() -> None:
        TALLY.reset()
        model.reset()
        if await consume(runner.query(INPUT)) != "done":
            TALLY.models = -1

    samples = time_async(run, options.rounds)
    seen = {"tools": TALLY.tools, "models": TALLY.models}
    expected = {"tools": STEPS, "models": STEPS + 1}
    report("react", f"{kind}-{mode}", unit="us/step", samples=us(samples, STEPS + 1), expected=expected, seen=seen)


def react_sync(options: Options) -> None:
    """ "def-invoke-sync": def tools, the run consumed with a plain ``for`` (no event loop of ours)."""
    model = RilletDouble()
    agent = ChatModelAgent(
        "bench",
        instruction=SYSTEM,
        model=model,
        tools=[rillet.tool(f) for f in make_tools("def")],
        max_iterations=STEPS + 1,
    )
    runner = Runner(agent)

    def run() -> None:
        TALLY.reset()
        model.reset()
        text = ""
        for ev in runner.query(INPUT):
            text = text_of(ev, text)
        if text != "done":
            TALLY.models = -1

    samples = time_sync(run, options.rounds)
    report(
        "react",
        "def-invoke-sync",
        unit="us/step",
        samples=us(samples, STEPS + 1),
        expected={"tools": STEPS, "models": STEPS + 1},
        seen={"tools": TALLY.tools, "models": TALLY.models},
    )


# --- (b) workflow ---------------------------------------------------------------------------


def workflow(options: Options) -> None:
    def team(n: int) -> list[ChatModelAgent]:
        return [ChatModelAgent(f"a{j}", model=ReplyDouble(answer(f"text {j}"))) for j in range(n)]

    cases: list[tuple[str, rillet.Agent, int, str]] = [
        (
            "sequential3",
            SequentialAgent("seq", sub_agents=team(PIPELINE_AGENTS)),
            PIPELINE_AGENTS,
            f"text {PIPELINE_AGENTS - 1}",
        ),
        ("parallel8", ParallelAgent("par", sub_agents=team(PARALLEL_AGENTS)), PARALLEL_AGENTS, ""),
    ]
    for variant, agent, n, last in cases:
        pipeline(variant, agent, n, last, options)


def pipeline(variant: str, agent: rillet.Agent, n: int, last: str, options: Options) -> None:
    runner = Runner(agent)
    texts: list[str] = []

    async def run() -> None:
        TALLY.reset()
        texts.append(await consume(runner.query(INPUT)))

    samples = time_async(run, options.rounds)
    seen = {"models": TALLY.models if not last or texts[-1] == last else -1}
    report("workflow", variant, unit="us/run", samples=us(samples), expected={"models": n}, seen=seen)


# --- (c) approval ---------------------------------------------------------------------------


def book(city: str) -> str:
    """Books a trip to a city."""
    TALLY.tools += 1
    return f"booked {city}"


def book_or_answer(messages: list[Message]) -> Message:
    """Calls "book" until the tool's result is in the conversation, then answers "booked"."""
    if any(m.role == "tool" for m in messages):
        return answer("booked")(messages)
    call = _call(0, APPROVAL_TOOL, json.dumps({"city": "Paris"}))
    return Message(role="assistant", tool_calls=[call], response_meta=ResponseMeta("tool_calls", USAGE))


def approval(options: Options) -> None:
    db = os.path.join(options.db_dir or tempfile.mkdtemp(prefix="rillet-bench-"), "rillet-approval.db")
    ids = itertools.count()
    texts: list[str] = []

    def runner() -> Runner:  # what a later process would build again: a new agent and runner
        agent = ChatModelAgent(
            "booker", model=ReplyDouble(book_or_answer), tools=[requires_approval(rillet.tool(book))]
        )
        return Runner(agent, checkpoint_store=SqliteCheckpointStore(db))

    async def cycle() -> None:
        TALLY.reset()
        checkpoint_id = f"trip-{next(ids)}"
        targets = {}
        async for ev in runner().query(INPUT, checkpoint_id=checkpoint_id):
            text_of(ev, "")
            if ev.action is not None and ev.action.interrupted is not None:
                targets.update({ctx.id: approve() for ctx in ev.action.interrupted.interrupt_contexts})
        resumed = await runner().aresume(checkpoint_id, targets=targets)
        texts.append(await consume(resumed))

    samples = time_async(cycle, options.rounds)
    seen = {"tools": TALLY.tools, "models": TALLY.models if texts[-1] == "booked" else -1}
    report(
        "approval",
        "interrupt-resume",
        unit="us/cycle",
        samples=us(samples),
        expected={"tools": 1, "models": 2},
        seen=seen,
        how="SqliteCheckpointStore",
    )


# --- (d) import, (e) construct --------------------------------------------------------------

cold_import = import_workload("import rillet; from rillet import ChatModelAgent, Runner, tool")


def construct(options: Options) -> None:
    model = RilletDouble()
    construction_workload(lambda: ChatModelAgent("bench", model=model, tools=[rillet.tool(lookup)]))(options)


# --- (f) concurrent -------------------------------------------------------------------------


async def start_runs(n: int, release: asyncio.Event) -> Callable[[], Awaitable[int]]:
    runner = Runner(ChatModelAgent("waiter", model=ReplyDouble(answer("done"), release)))

    async def one() -> bool:
        return (await consume(runner.query(INPUT))) == "done"

    return gathered(one() for _ in range(n))


concurrent = concurrent_workload(start_runs)


# --- (g) http -------------------------------------------------------------------------------


def http(options: Options) -> None:
    if not options.base_url:
        skip("http", "one-tool-call", "no --base-url (the harness starts the loopback server)")
        return
    model = rillet.OpenAIChatModel("bench-model", base_url=options.base_url, api_key="bench")
    agent = ChatModelAgent("bench", model=model, tools=[rillet.tool(lookup)])
    runner = Runner(agent, streaming=True)
    texts: list[str] = []

    async def run() -> None:
        TALLY.reset()
        texts.append(await consume(runner.query(INPUT)))

    cases: list[tuple[str, Callable[[], list[float]], str]] = [
        ("one-tool-call", lambda: time_async(run, options.rounds), "a fresh loop per run: a new httpx client"),
        ("one-tool-call-warm", lambda: time_on_one_loop(run, options.rounds, model.aclose), "one loop, client reused"),
    ]
    for variant, timed, how in cases:
        samples = [s * 1e3 for s in timed()]
        seen = {"tools": TALLY.tools if texts[-1] == "done" else -1}
        report("http", variant, unit="ms/run", samples=samples, expected={"tools": 1}, seen=seen, how=how)
    httpx_floor(options)


def httpx_floor(options: Options) -> None:
    """The transport floor: a bare httpx.AsyncClient making the same two streamed requests and
    reading the bytes (no parsing, no agent); a new client per run, and one reused ("-warm")."""
    import httpx  # the http workload's client, not needed by the others

    url = options.base_url.rstrip("/") + "/chat/completions"
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    arguments = json.dumps({"city": "Paris"})
    asked = {
        "role": "assistant",
        "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": arguments}}],
    }
    user = {"role": "user", "content": INPUT}
    answer = {"role": "tool", "tool_call_id": "call_0", "content": "sunny in Paris"}
    bodies = [
        {"model": "bench-model", "messages": [user], "tools": [tool], "stream": True},
        {"model": "bench-model", "messages": [user, asked, answer], "tools": [tool], "stream": True},
    ]
    done = [0]
    clients: list[httpx.AsyncClient] = []

    async def requests(client: httpx.AsyncClient) -> None:
        done[0] = 0
        for body in bodies:
            async with client.stream("POST", url, json=body) as response:
                async for _chunk in response.aiter_bytes():
                    pass
                done[0] += response.status_code == 200

    async def fresh() -> None:
        async with httpx.AsyncClient() as client:
            await requests(client)

    async def warm() -> None:
        if not clients:
            clients.append(httpx.AsyncClient())
        await requests(clients[0])

    async def close() -> None:
        await clients.pop().aclose()

    cases: list[tuple[str, Callable[[], list[float]]]] = [
        ("httpx-floor", lambda: time_async(fresh, options.rounds)),
        ("httpx-floor-warm", lambda: time_on_one_loop(warm, options.rounds, close)),
    ]
    for variant, timed in cases:
        samples = [s * 1e3 for s in timed()]
        report("http", variant, unit="ms/run", samples=samples, expected={"requests": 2}, seen={"requests": done[0]})


# --- (h) eval -------------------------------------------------------------------------------


def eval_reply(messages: list[Message], tools: tuple[Any, ...]) -> Message | str:
    """The scripted model of every eval case: call lookup for the question's city, then answer."""
    done = [m for m in messages if m.role == "tool"]
    if not done:
        args = json.dumps({"city": eval_city(messages[-1].content)})
        return Message.assistant(tool_calls=[ToolCall(id="call_0", function=FunctionCall(EVAL_TOOL, args))])
    return eval_answer(done[-1].content)


def eval_rillet(options: Options) -> None:
    """rillet.eval's run_eval over an EvalSet: per case a Runner with an in-memory session and
    checkpoint store, the run's events read into a trajectory and an answer, then checked."""
    from rillet.eval import Answer, EvalCase, EvalSet, ExpectedCall, Trajectory, Turn, arun_eval

    agent = ChatModelAgent("weather", model=rillet.ScriptedModel(eval_reply, record=False), tools=[rillet.tool(lookup)])
    cases = tuple(
        EvalCase(
            id=f"case-{i}",
            turns=(
                Turn(
                    input=eval_question(city),
                    trajectory=Trajectory(calls=(ExpectedCall(name=EVAL_TOOL, arguments={"city": city}),)),
                    answer=Answer(exact=expected_answer(city), contains=(city,)),
                ),
            ),
        )
        for i, city in enumerate(EVAL_CITIES)
    )
    evals = EvalSet(name="weather", cases=cases)

    def evaluate(concurrency: int | None) -> Callable[[], Awaitable[int]]:
        async def run() -> int:
            report = await arun_eval(agent, evals, concurrency=concurrency or 4, progress=False)
            return sum(c.passed for c in report.cases)

        return run

    eval_workload(evaluate, 4, "4")(options)


if __name__ == "__main__":
    main(
        {
            "react": react,
            "workflow": workflow,
            "approval": approval,
            "import": cold_import,
            "construct": construct,
            "concurrent": concurrent,
            "http": http,
            "eval": eval_rillet,
        }
    )
