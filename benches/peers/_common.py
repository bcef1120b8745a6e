"""What every peer script shares: the workloads' script, timing, and the JSON lines it prints.

Each peer script (``<peer>.py`` in this folder) runs inside its own virtual environment, where
rillet is not installed, so this module uses the standard library only; the script's folder is
``sys.path[0]`` when it runs as a file, which is how the harness starts it::

    <venv>/bin/python <this folder>/<peer>.py --workloads react,pipeline --rounds 5 [--quick]

A script calls :func:`main` with its workloads. Each workload runs its variants and reports
one JSON object per variant on stdout (:func:`report`); anything else goes to stderr. A run
whose tools did not run the expected number of times is reported with ``"ok": false``, never
silently timed.
"""

# No `from __future__ import annotations`: the tools' annotations stay real types, as a user
# writes them, so a framework that reads them per call (LangChain) pays no string evaluation.
import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

# --- the scripted conversation every framework's test model plays ------------------------

SYSTEM = "You are a benchmark agent."
INPUT = "go"
STEPS = 50  # (a) tool steps per ReAct run; the model answers "done" after them
PIPELINE_AGENTS = 3  # (b) agents in the sequential pipeline
PARALLEL_AGENTS = 8  # (b) sub-agents run in parallel
CHUNKS_PER_REPLY = 3  # streamed replies come in this many chunks in every framework
APPROVAL_TOOL = "book"  # (c) the tool that needs a person's approval
CONCURRENT_RUNS = 10_000  # (f) default N; --concurrent overrides
PROMPT_TOKENS, COMPLETION_TOKENS = 10, 5


def step_call(i: int) -> tuple[str, dict[str, Any]]:
    """The tool call the model asks for at ReAct step ``i``: add(2, 3) on even steps, echo on odd."""
    return ("add", {"a": 2, "b": 3}) if i % 2 == 0 else ("echo", {"text": "hello"})


def call_id(i: int) -> str:
    return f"call_{i}"


@dataclass
class Tally:
    """Counts tool and model calls so every run proves it did the work it was timed for."""

    tools: int = 0
    models: int = 0

    def reset(self) -> None:
        self.tools = 0
        self.models = 0


TALLY = Tally()


def make_tools(kind: str) -> list[Callable[..., Any]]:
    """The two ReAct tools, as ``def`` or ``async def`` functions with the same names and docs;
    each counts its calls in :data:`TALLY`."""
    if kind == "def":

        def add(a: int, b: int) -> int:
            """Adds two integers."""
            TALLY.tools += 1
            return a + b

        def echo(text: str) -> str:
            """Returns the text unchanged."""
            TALLY.tools += 1
            return text

        return [add, echo]

    async def add(a: int, b: int) -> int:  # type: ignore[no-redef]
        """Adds two integers."""
        TALLY.tools += 1
        return a + b

    async def echo(text: str) -> str:  # type: ignore[no-redef]
        """Returns the text unchanged."""
        TALLY.tools += 1
        return text

    return [add, echo]


def lookup(city: str) -> str:
    """Looks up the weather in a city (the one tool of the construction and HTTP workloads;
    named as the loopback server's tool call asks, and counted like the ReAct tools)."""
    TALLY.tools += 1
    return f"sunny in {city}"


# --- options and output -------------------------------------------------------------------


@dataclass
class Options:
    rounds: int = 5
    quick: bool = False
    concurrent: int = CONCURRENT_RUNS
    base_url: str = ""  # (g) the loopback OpenAI-compatible server, started by the harness
    db_dir: str = ""  # (c) where SQLite files go
    extra: dict[str, Any] = field(default_factory=dict)


def report(
    workload: str,
    variant: str,
    *,
    unit: str,
    samples: list[float],
    expected: dict[str, int] | None = None,
    seen: dict[str, int] | None = None,
    **extra: Any,
) -> None:
    """Prints one result line: the median of ``samples`` in ``unit``, every sample, and whether
    the counts ``seen`` equal the counts ``expected`` (tool calls, model calls, ...)."""
    ok = expected == seen
    line = {
        "workload": workload,
        "variant": variant,
        "unit": unit,
        "median": statistics.median(samples) if samples else None,
        "samples": samples,
        "ok": ok,
        "expected": expected,
        "seen": seen,
        **extra,
    }
    print(json.dumps(line), flush=True)
    if not ok:
        print(f"{workload}/{variant}: expected {expected}, saw {seen}", file=sys.stderr)


def skip(workload: str, variant: str, why: str) -> None:
    """Says a variant cannot be expressed in this framework (the table shows why)."""
    print(json.dumps({"workload": workload, "variant": variant, "skipped": why}), flush=True)


# --- timing ---------------------------------------------------------------------------------


def _timed(call: Callable[[], Any]) -> float:
    """Seconds ``call()`` takes, garbage collection off meanwhile (after a full collection)."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        call()
        return time.perf_counter() - start
    finally:
        gc.enable()


def time_sync(fn: Callable[[], Any], rounds: int, warmup: int = 1) -> list[float]:
    """Seconds per call of ``fn``, one sample per round, garbage collection off while timing."""
    for _ in range(warmup):
        fn()
    return [_timed(fn) for _ in range(rounds)]


def time_async(make: Callable[[], Awaitable[Any]], rounds: int, warmup: int = 1) -> list[float]:
    """Seconds per awaited ``make()``, each on a fresh event loop made and closed outside the timing."""

    def once() -> float:
        loop = asyncio.new_event_loop()
        try:
            return _timed(lambda: loop.run_until_complete(make()))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    for _ in range(warmup):
        once()
    return [once() for _ in range(rounds)]


def time_on_one_loop(
    make: Callable[[], Awaitable[Any]], rounds: int, close: Callable[[], Awaitable[Any]]
) -> list[float]:
    """Seconds per awaited ``make()``, every run on ONE event loop (after a warm-up run), so a
    client and its keep-alive connection are reused: a long-lived service's steady state."""
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(make())
        samples = [_timed(lambda: loop.run_until_complete(make())) for _ in range(rounds)]
        loop.run_until_complete(close())
        return samples
    finally:
        loop.close()


def rss_bytes() -> int:
    """This process's resident set size now (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{os.getpid()}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def us(samples: list[float], per: int = 1) -> list[float]:
    """Seconds per run -> microseconds per item (``per`` items a run)."""
    return [s * 1e6 / per for s in samples]


# --- the entry point ----------------------------------------------------------------------

Workload = Callable[[Options], None]


def main(workloads: dict[str, Workload]) -> None:
    """Parses the harness's arguments and runs the asked workloads in order; a workload that
    raises is reported as an error line and the others still run."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", default=",".join(workloads))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--concurrent", type=int, default=CONCURRENT_RUNS)
    parser.add_argument("--base-url", default="")
    parser.add_argument("--db-dir", default="")
    args = parser.parse_args()
    options = Options(args.rounds, args.quick, args.concurrent, args.base_url, args.db_dir)
    for name in args.workloads.split(","):
        if name not in workloads:
            skip(name, "-", "not written for this framework")
            continue
        try:
            workloads[name](options)
        except Exception as error:  # noqa: BLE001 - one workload's failure is data, the others run
            print(
                json.dumps({"workload": name, "variant": "-", "error": f"{type(error).__name__}: {error}"}), flush=True
            )


def cold_import(statement: str, rounds: int) -> list[float]:
    """Wall seconds of a fresh interpreter running ``statement`` (minus a bare interpreter's
    start, measured alike), one sample per round."""
    import subprocess

    def run(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - start

    samples = []
    for _ in range(rounds):
        bare = run("pass")
        samples.append(max(0.0, run(statement) - bare))
    return samples


def import_workload(statement: str) -> Workload:
    """(d): the cold import of what a user imports to build an agent in this framework."""

    def workload(options: Options) -> None:
        rounds = 3 if options.quick else max(5, options.rounds)
        report("import", "cold", unit="ms", samples=[s * 1e3 for s in cold_import(statement, rounds)])

    return workload


def construction_workload(build: Callable[[], Any], agents: int = 1000) -> Workload:
    """(e): microseconds per ``build()`` (an agent with one tool given inline) and the bytes each
    agent holds (tracemalloc, ``agents`` kept alive at once)."""

    def workload(options: Options) -> None:
        import tracemalloc

        count = 200 if options.quick else agents
        build()  # the first build pays one-time costs (imports, caches): not what is compared
        samples = us(time_sync(lambda: [build() for _ in range(count)], options.rounds), count)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        kept = [build() for _ in range(count)]
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        del kept
        report("construct", "one-tool-inline", unit="us/agent", samples=samples, bytes_per_agent=held / count)

    return workload


def gathered(runs: Iterable[Awaitable[bool]]) -> Callable[[], Awaitable[int]]:
    """Starts every run now (as a task) and returns ``drain()``, which awaits them all and
    counts those that returned True: what a ``start_runs`` of :func:`concurrent_workload` returns."""
    tasks = [asyncio.ensure_future(run) for run in runs]

    async def drain() -> int:
        return sum(await asyncio.gather(*tasks))

    return drain


def concurrent_workload(
    start_runs: Callable[[int, asyncio.Event], Awaitable[Callable[[], Awaitable[int]]]],
) -> Workload:
    """(f): ``N`` runs started at once, each waiting on a model that answers when ``release`` is
    set. ``start_runs(n, release)`` starts them and returns ``drain()``, which awaits them all
    and returns how many finished. Reports seconds to drain, and RSS bytes per waiting run."""

    def workload(options: Options) -> None:
        n = 1000 if options.quick else options.concurrent

        async def go() -> tuple[float, float, int]:
            release = asyncio.Event()
            gc.collect()
            base = rss_bytes()
            drain = await start_runs(n, release)
            for _ in range(3):  # let every run reach the model and park there
                await asyncio.sleep(0)
            await asyncio.sleep(0.05)
            held = rss_bytes() - base
            start = time.perf_counter()
            release.set()
            finished = await drain()
            return time.perf_counter() - start, held / n, finished

        seconds, per_run, finished = asyncio.run(go())
        report(
            "concurrent",
            f"waiting-{n}",
            unit="s to drain",
            samples=[seconds],
            expected={"finished": n},
            seen={"finished": finished},
            bytes_per_run=per_run,
        )

    return workload


# --- (h) eval: the same cases through each framework's own evaluation ------------------------

# Case i asks for the weather in EVAL_CITIES[i]; the scripted model calls lookup(city=...) with
# the city named at the end of the question, then answers "It is <the tool's result>." Each case
# checks the tool trajectory (name and arguments) and the final answer (exact, and contains the
# city), so a framework's eval does the same work: run the agent, compare calls, compare text.
EVAL_CITIES = (
    "Paris", "Lyon", "Berlin", "Madrid", "Rome", "Vienna", "Prague", "Oslo", "Lisbon", "Dublin",
    "Warsaw", "Athens", "Zurich", "Brussels", "Helsinki", "Riga", "Tallinn", "Sofia", "Porto", "Turin",
)  # fmt: skip
EVAL_TOOL = "lookup"


def eval_question(city: str) -> str:
    return f"What is the weather in {city}?"


def eval_city(question: str) -> str:
    """The city a case's question names (what the scripted model reads to make its call)."""
    return question.rsplit(" ", 1)[-1].rstrip("?")


def eval_answer(tool_result: str) -> str:
    """The scripted model's final answer once the tool returned ``tool_result``."""
    return f"It is {tool_result}."


def expected_answer(city: str) -> str:
    return eval_answer(f"sunny in {city}")


def eval_workload(
    evaluate: Callable[[int | None], Callable[[], Awaitable[int]]], natural: int | None, natural_text: str
) -> Workload:
    """(h): cases per second of a framework's own eval over the EVAL_CITIES cases, at
    concurrency 1 and at the framework's default (``natural``; None: unbounded, shown as
    ``natural_text``). ``evaluate(concurrency)`` returns an async function running the whole
    eval once and returning how many cases passed every check. Each round is one whole eval on a
    fresh event loop; reported in ms/case (the table's ratio: above 1, rillet is faster) with
    cases/s beside."""

    def variant(name: str, concurrency: int | None, shown: str, options: Options) -> None:
        n = len(EVAL_CITIES)
        passed: list[int] = []
        run = evaluate(concurrency)

        async def once() -> None:
            TALLY.reset()
            passed.append(await run())

        samples = time_async(once, options.rounds)
        report(
            "eval",
            name,
            unit="ms/case",
            samples=[s * 1e3 / n for s in samples],
            expected={"tools": n, "passed": n},
            seen={"tools": TALLY.tools, "passed": passed[-1]},
            cases_per_s=n / statistics.median(samples),
            concurrency=shown,
        )

    def workload(options: Options) -> None:
        variant("concurrency-1", 1, "1", options)
        variant("default-concurrency", natural, natural_text, options)

    return workload
