"""Making an agent with one tool built inline, and what its first run costs, for rillet and Agno.

Run: .venv/bin/python -m pytest benches/bench_agent_construction.py --benchmark-only -s \
         --benchmark-columns=median,mean,rounds --benchmark-group-by=group

* ``construct``: ``ChatModelAgent(..., tools=[rillet.tool(add)])`` against Agno's
  ``Agent(model=OpenAIChat(...), tools=[add])`` (the model object made once, outside the
  timing; Agno contacts nothing until run). Each also prints the bytes one agent holds
  (tracemalloc, over 200 agents kept alive), as "bytes/agent".
* ``construct+first run``: make the agent as above and run it once: a scripted model asks
  for one ``add`` call, then answers. So a saving at construction that only moves to the run
  shows here. ``warm``: the same function every round (its schema is cached after the first
  round); ``cold``: a new function object every round (made outside the timing), so every
  round builds a schema. Agno has no offline test model, so it is not in this group (the peer
  suite, ``benches/peers/run.py``, brings one).

Comparing before and after a change: run the file once on each tree (PYTHONPATH=<tree>/python);
Agno in both runs is the yardstick for how busy the machine was.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
import types
from collections.abc import Callable
from typing import Any

import pytest
import rillet
from rillet import FunctionCall, Message, ToolCall
from rillet.chatmodel import ChatModelAgent
from rillet.models import ScriptedModel
from rillet.runner import Runner


def add(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


def fresh_add() -> Callable[..., int]:
    """A new function object with add's code, hints and docstring: nothing cached for it."""
    f = types.FunctionType(add.__code__, add.__globals__, "add")
    f.__annotations__ = dict(add.__annotations__)
    f.__doc__ = add.__doc__
    return f


def bytes_per_agent(make: Callable[[], Any], n: int = 200) -> int:
    make()
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    keep = [make() for _ in range(n)]
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del keep
    return (after - before) // n


def rillet_agent(fn: Callable[..., Any] = add, model: Any = None) -> ChatModelAgent:
    return ChatModelAgent(
        name="calc", description="adds", instruction="You add.", model=model or MODEL, tools=[rillet.tool(fn)]
    )


MODEL = ScriptedModel(["unused"])


def agno_maker() -> Callable[[], Any]:
    agno_agent = pytest.importorskip("agno.agent")
    agno_openai = pytest.importorskip("agno.models.openai")
    model = agno_openai.OpenAIChat(id="gpt-4o-mini", api_key="unused")
    return lambda: agno_agent.Agent(model=model, instructions="You add.", tools=[add])


@pytest.mark.parametrize("impl", ["rillet", "agno"])
def test_construct(benchmark: Any, impl: str) -> None:
    make = rillet_agent if impl == "rillet" else agno_maker()
    benchmark.group = "construct (one tool, built inline)"
    benchmark.extra_info["impl"] = impl
    size = bytes_per_agent(make)
    benchmark.extra_info["bytes_per_agent"] = size
    print(f"\n{impl}: {size} bytes/agent")
    benchmark.pedantic(make, rounds=400, iterations=10, warmup_rounds=20)


def reply() -> list[Any]:
    call = ToolCall(index=0, id="c0", function=FunctionCall("add", json.dumps({"a": 2, "b": 3})))
    return [Message.assistant("", [call]), "done"]


def first_run(fn: Callable[..., Any]) -> None:
    agent = rillet_agent(fn, ScriptedModel(reply(), record=False))
    events = list(Runner(agent).query("go"))
    assert events[1].message_output is not None and events[1].message_output.message.content == "5"


@pytest.mark.parametrize("cache", ["warm", "cold"])
def test_construct_and_first_run(benchmark: Any, cache: str) -> None:
    benchmark.group = "construct+first run (one tool call)"
    benchmark.extra_info["impl"] = f"rillet-{cache}"
    if cache == "warm":
        benchmark.pedantic(first_run, args=(add,), rounds=200, warmup_rounds=5)
    else:
        benchmark.pedantic(first_run, setup=lambda: ((fresh_add(),), {}), rounds=200, warmup_rounds=5)
