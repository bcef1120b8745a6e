"""Function tools describe themselves lazily: making one (and an agent holding it) builds no
schema; the first use builds it once per function, even when many threads ask at once."""

from __future__ import annotations

import asyncio
import functools
import inspect
import pickle
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import rillet.tools as tools_module
from rillet import FunctionCall, Message, ToolCall
from rillet.chatmodel import ChatModelAgent
from rillet.models import ScriptedModel
from rillet.runner import Runner
from rillet.tools import FunctionTool, ToolInfo, tool


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def fresh_add() -> Callable[..., int]:
    """A new function object each call: a cold cache, whatever ran before."""

    def add(a: int, b: int = 1) -> int:
        """Adds two integers.

        Args:
            a: The first addend.
            b: The second addend.
        """
        return a + b

    return add


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the tools whose spec (pydantic model and schema) was built, in order."""
    seen: list[str] = []
    real = tools_module._build_spec

    def counting(fn: Callable[..., Any], name: str, description: str | None) -> Any:
        seen.append(name)
        return real(fn, name, description)

    monkeypatch.setattr(tools_module, "_build_spec", counting)
    return seen


def asks_add(a: int) -> Message:
    return Message.assistant("", [ToolCall(index=0, id="c0", function=FunctionCall("add", f'{{"a": {a}}}'))])


def test_making_a_tool_and_an_agent_builds_no_schema(builds: list[str]) -> None:
    add = fresh_add()
    model = ScriptedModel([asks_add(2), "done"])
    agent = ChatModelAgent(name="a", description="adds", model=model, tools=[tool(add)])
    assert agent.tools[0].info.name == "add"
    assert builds == []  # name read, nothing built
    events = list(Runner(agent).query("go"))
    assert builds == ["add"]
    assert [ev.message_output.message.content for ev in events if ev.message_output is not None] == ["", "3", "done"]
    offered = model.calls[0].tools
    assert offered is not None and offered[0].parameters["required"] == ["a"]
    assert offered[0].parameters["properties"]["a"] == {"type": "integer", "description": "The first addend."}

    # the spec is cached per function: an agent made again with tool(add) inline builds nothing
    again = ChatModelAgent(name="a", description="adds", model=ScriptedModel([asks_add(5), "ok"]), tools=[tool(add)])
    assert [ev.message_output.message.content for ev in Runner(again).query("go") if ev.message_output] == [
        "",
        "6",
        "ok",
    ]
    assert builds == ["add"]
    # another name or description is another tool: built once more
    assert tool(name="plus")(add).info.parameters["required"] == ["a"]
    assert builds == ["add", "plus"]


def test_each_first_use_builds(builds: list[str]) -> None:
    for use in (
        lambda t: t.info.parameters,
        lambda t: t.info.description,
        lambda t: t.is_streaming,
        lambda t: run(t.invoke('{"a": 1}')),
        lambda t: t.info == ToolInfo("add", "Adds two integers.", t.info.parameters),
    ):
        t = tool(fresh_add())
        assert builds == []
        use(t)
        assert builds == ["add"]
        builds.clear()
    t = tool(fresh_add())
    t.fn(1, 2)
    t(1, 2)
    assert repr(t) == "<FunctionTool add>" and t.__name__ == "add" and t.__doc__ is not None
    assert builds == []  # calling the function directly needs no schema


def test_a_lazy_info_is_an_ordinary_tool_info() -> None:
    t = tool(fresh_add())
    plain = ToolInfo(t.info.name, t.info.description, t.info.parameters)
    assert t.info == plain and plain == t.info and isinstance(t.info, ToolInfo)
    assert repr(t.info) == repr(plain)
    assert type(pickle.loads(pickle.dumps(t.info))) is ToolInfo
    assert pickle.loads(pickle.dumps(tool(fresh_add()).info)) == plain  # pickled before its first read
    assert t.info.to_openai()["function"]["parameters"] is t.info.parameters


def test_many_threads_first_use_one_tool_build_it_once(builds: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    real = tools_module._build_spec  # the counting one
    arrived, came = [0], threading.Condition()

    def slow(fn: Callable[..., Any], name: str, description: str | None) -> Any:
        with came:  # every thread arrives while the first one builds
            came.wait_for(lambda: arrived[0] == n, 30)
        return real(fn, name, description)

    monkeypatch.setattr(tools_module, "_build_spec", slow)
    add = fresh_add()
    shared = tool(add)
    own = [tool(add) for _ in range(16)]  # one function, many tools: still one build
    n = 32
    barrier = threading.Barrier(n)
    seen: list[Any] = [None] * n
    errors: list[BaseException] = []

    def first_use(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            t = shared if i % 2 else own[i // 2]
            with came:
                arrived[0] += 1
                came.notify_all()
            params = t.info.parameters  # never a half-built info: whole, or built here
            assert run(t.invoke(f'{{"a": {i}}}')) == str(i + 1)
            assert t.info.description == "Adds two integers."
            seen[i] = params
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=first_use, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert not errors and not any(th.is_alive() for th in threads)
    assert builds == ["add"]  # `slow` wraps the counting fixture: 32 threads, 17 tools, one build
    assert all(p is seen[0] for p in seen) and seen[0]["required"] == ["a"]
    assert len({id(t._spec()) for t in [shared, *own]}) == 1


def test_many_threads_build_once_counted(builds: list[str]) -> None:
    add = fresh_add()
    tools = [tool(add) for _ in range(24)]
    barrier = threading.Barrier(len(tools))

    def use(t: FunctionTool) -> None:
        barrier.wait(timeout=10)
        assert t.info.parameters

    threads = [threading.Thread(target=use, args=(t,)) for t in tools]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert builds == ["add"]


def test_an_undescribable_tool_fails_at_the_start_of_the_run_naming_it(builds: list[str]) -> None:
    def lookup(key: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821  # resolved on first use
        """Looks a key up."""
        return "x"

    model = ScriptedModel(["never"])
    agent = ChatModelAgent(name="a", description="d", model=model, tools=[tool(lookup)])  # made fine
    events = list(Runner(agent).query("go"))
    err = events[-1].error
    assert isinstance(err, TypeError)
    assert "tool 'lookup': cannot resolve the type hints" in str(err) and "first use" in str(err)
    assert model.call_count == 0  # before the model was called
    # a failed build is not cached: once the name exists, the tool works
    lookup.__annotations__["key"] = str
    assert tool(lookup).info.parameters["required"] == ["key"]


def test_no_docstring_still_warns_when_made_and_an_empty_summary_on_first_use() -> None:
    def bare(x: int) -> int:
        return x

    with pytest.warns(UserWarning, match="tool 'bare' has no description"):
        t = tool(bare)
    assert t.info.description == ""

    def only_args(x: int) -> int:
        """
        Args:
            x: A number.
        """
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t2 = tool(only_args)  # a docstring: what it says is read on first use
    with pytest.warns(UserWarning, match="tool 'only_args' has no description"):
        assert t2.info.parameters["properties"]["x"]["description"] == "A number."


class Box:
    def get(self, key: str, /, n: int = 1, *, strict: bool = False) -> str:
        """Gets."""
        return key * n

    def spread(self, *items: int) -> int:
        """Spreads."""
        return 0


def _kwonly(a: int, *, b: int, **more: int) -> int:
    return 0


def _varargs(a: int, *rest: int, c: int = 0) -> int:
    return 0


def _posonly(a: int, /, b: int) -> int:
    return 0


@functools.wraps(_posonly)
def _wrapped(*args: Any, **kwargs: Any) -> int:
    return 0


def _gen() -> Iterator[str]:
    yield "x"


@pytest.mark.parametrize(
    "fn",
    [Box().get, Box().spread, _kwonly, _varargs, _posonly, _wrapped, _gen, functools.partial(_posonly, 1), len],
)
def test_the_parameters_read_off_the_code_match_inspect_signature(fn: Callable[..., Any]) -> None:
    stars: dict[Any, str] = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    expected = [(p.name, stars.get(p.kind, "")) for p in inspect.signature(fn).parameters.values()]
    assert tools_module._parameters("t", fn) == expected
