"""Tools: schemas from type hints and docstrings, argument validation, where functions run,
streaming tools, result encoding, ExitTool and as_tool."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import datetime
import enum
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import Annotated, Any, Literal, Optional, TypeVar, Union

import pydantic
import pytest
import rillet
from rillet import (
    ChatModelAgent,
    FunctionCall,
    InMemoryCheckpointStore,
    Message,
    Runner,
    ScriptedModel,
    ToolCall,
    context,
    get_interrupt_state,
    interrupt,
    new_exit_action,
    send_tool_gen_action,
)
from rillet._core import scope as run_scope
from rillet._core.workers import WorkerPool
from rillet.data.events import new_break_loop_action
from rillet.run.context import RunContext, Session, ToolCallScope
from rillet.tools import BaseTool, ExitTool, FunctionTool, ToolArgumentsError, ToolInfo, as_tool, exit_tool, tool
from support.calls import asks, tool_call
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

T = TypeVar("T")


def run(aw: Awaitable[T]) -> T:
    async def main() -> T:
        return await aw

    return asyncio.run(main())


async def collect(it: AsyncIterator[str]) -> list[str]:
    return [chunk async for chunk in it]


# --- schemas from docstrings ------------------------------------------------------------


def google(city: str, days: int = 3, metric: bool = True) -> str:
    """Gets the weather forecast.

    Looks the city up first.

    Args:
        city: The city to forecast,
            by its English name.
        days (int): How many days ahead.
        metric: Celsius when true.

    Returns:
        The forecast.
    """
    return city


def numpy_style(city: str, days: int = 3, metric: bool = True) -> str:
    """Gets the weather forecast.

    Looks the city up first.

    Parameters
    ----------
    city : str
        The city to forecast,
        by its English name.
    days : int, optional
        How many days ahead.
    metric : bool
        Celsius when true.

    Returns
    -------
    str
        The forecast.
    """
    return city


def sphinx_style(city: str, days: int = 3, metric: bool = True) -> str:
    """Gets the weather forecast.

    Looks the city up first.

    :param city: The city to forecast,
        by its English name.
    :param int days: How many days ahead.
    :param metric: Celsius when true.
    :type metric: bool
    :returns: The forecast.
    """
    return city


@pytest.mark.parametrize("fn", [google, numpy_style, sphinx_style], ids=["google", "numpy", "sphinx"])
def test_schema_and_descriptions_from_each_docstring_style(fn: Any) -> None:
    info = FunctionTool(fn).info
    assert info.name == fn.__name__
    assert info.description == "Gets the weather forecast.\n\nLooks the city up first."
    assert info.parameters == {
        "type": "object",
        "properties": {
            "city": {"description": "The city to forecast, by its English name.", "type": "string"},
            "days": {"default": 3, "description": "How many days ahead.", "type": "integer"},
            "metric": {"default": True, "description": "Celsius when true.", "type": "boolean"},
        },
        "required": ["city"],
    }
    assert list(info.parameters["properties"]) == ["city", "days", "metric"]


def test_to_openai_shape() -> None:
    info = FunctionTool(google).info
    assert info.to_openai() == {
        "type": "function",
        "function": {"name": "google", "description": info.description, "parameters": info.parameters},
    }
    json.dumps(info.to_openai())  # plain JSON data


def test_decorator_forms_and_direct_calls() -> None:
    @tool
    def a(x: int) -> int:
        """Doubles."""
        return 2 * x

    @tool()
    def b(x: int) -> int:
        return x

    @tool(name="renamed", description="Custom.")
    def c(x: int) -> int:
        """Ignored."""
        return x

    assert isinstance(a, FunctionTool) and isinstance(b, FunctionTool) and isinstance(c, BaseTool)
    assert (a.info.name, a.info.description) == ("a", "Doubles.")
    assert (b.info.name, b.info.description) == ("b", "")
    assert (c.info.name, c.info.description) == ("renamed", "Custom.")
    assert a(4) == 8  # the tool object still calls the function
    assert a.__name__ == "a"
    assert FunctionTool(google, name="w").info.name == "w"


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(pydantic.BaseModel):
    x: int
    y: int = 0
    title: str = "p"  # a field named "title" survives the title clean-up


class Span(TypedDict):
    start: int
    end: int


@dataclasses.dataclass
class Size:
    w: float
    h: float


def test_schema_for_rich_types_is_openai_friendly() -> None:
    def rich(
        maybe: Optional[int],
        either: Union[int, str],
        mode: Literal["fast", "slow"],
        color: Color,
        tags: list[str],
        weights: dict[str, float],
        point: Point,
        span: Span,
        size: Size,
        note: str | None = None,
    ) -> str:
        return ""

    params = FunctionTool(rich).info.parameters
    props = params["properties"]
    assert params["required"] == ["maybe", "either", "mode", "color", "tags", "weights", "point", "span", "size"]
    assert props["maybe"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert props["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert props["mode"] == {"enum": ["fast", "slow"], "type": "string"}
    assert props["color"] == {"$ref": "#/$defs/Color"}
    assert params["$defs"]["Color"] == {"enum": ["red", "blue"], "type": "string"}
    assert props["tags"] == {"items": {"type": "string"}, "type": "array"}
    assert props["weights"] == {"additionalProperties": {"type": "number"}, "type": "object"}
    assert params["$defs"]["Point"]["properties"]["title"] == {"default": "p", "type": "string"}
    assert params["$defs"]["Span"]["required"] == ["start", "end"]
    assert params["$defs"]["Size"]["required"] == ["w", "h"]
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert '"title"' not in json.dumps({k: v for k, v in params.items() if k != "$defs"})
    # the schema is stable: the same function gives the same text
    assert json.dumps(FunctionTool(rich).info.parameters) == json.dumps(params)


def test_rich_arguments_are_validated_into_their_types() -> None:
    seen: dict[str, Any] = {}

    @tool
    async def rich(color: Color, point: Point, span: Span, size: Size, when: datetime.date) -> str:
        seen.update(color=color, point=point, span=span, size=size, when=when)
        return "ok"

    args = {
        "color": "red",
        "point": {"x": 1},
        "span": {"start": 1, "end": 2},
        "size": {"w": 1, "h": 2.5},
        "when": "2024-05-01",
    }
    assert run(rich.invoke(json.dumps(args))) == "ok"
    assert seen == {
        "color": Color.RED,
        "point": Point(x=1),
        "span": {"start": 1, "end": 2},
        "size": Size(1.0, 2.5),
        "when": datetime.date(2024, 5, 1),
    }


def test_annotated_field_constraints_apply_and_an_explicit_description_wins() -> None:
    @tool
    def repeat(
        n: Annotated[int, pydantic.Field(ge=0, description="From Field.")],
        text: Annotated[str, pydantic.Field(max_length=3)] = "ab",
    ) -> str:
        """Repeats.

        Args:
            n: From the docstring.
            text: The text.
        """
        return text * n

    assert repeat.info.parameters["properties"] == {
        "n": {"description": "From Field.", "minimum": 0, "type": "integer"},
        "text": {"default": "ab", "description": "The text.", "maxLength": 3, "type": "string"},
    }
    with pytest.raises(ToolArgumentsError) as info:
        run(repeat.invoke('{"n": -1, "text": "abcd"}'))
    assert info.value.problems == [
        "argument 'n': Input should be greater than or equal to 0, got -1",
        "argument 'text': String should have at most 3 characters, got 'abcd'",
    ]


def test_unannotated_parameters_accept_any_json_value() -> None:
    @tool
    def loose(value, count: int = 1):  # type: ignore[no-untyped-def]
        """Echoes.

        Args:
            value: Anything.
        """
        return {"value": value, "count": count}

    assert loose.info.parameters["properties"]["value"] == {"description": "Anything."}
    assert run(loose.invoke('{"value": [1, {"a": null}]}')) == '{"value": [1, {"a": null}], "count": 1}'


def test_parameter_names_that_pydantic_reserves_still_work() -> None:
    @tool
    def odd(json: str, schema: int, model_config: bool, _private: str = "p", /) -> str:
        return f"{json}|{schema}|{model_config}|{_private}"

    assert set(odd.info.parameters["properties"]) == {"json", "schema", "model_config", "_private"}
    assert run(odd.invoke('{"json": "j", "schema": 2, "model_config": true}')) == "j|2|True|p"


def test_bound_methods_and_callable_objects_become_tools() -> None:
    class Counter:
        def __init__(self) -> None:
            self.n = 0

        def bump(self, by: int) -> int:
            """Bumps the counter."""
            self.n += by
            return self.n

        async def __call__(self, text: str) -> str:
            """Shouts."""
            return text.upper()

    c = Counter()
    bump = FunctionTool(c.bump)
    assert bump.info.parameters["required"] == ["by"]
    assert run(bump.invoke('{"by": 2}')) == "2"
    shout = FunctionTool(c, name="shout")
    assert shout.info.description == "Shouts."
    assert run(shout.invoke('{"text": "hi"}')) == "HI"


@pytest.mark.parametrize(
    ("define", "needle"),
    [
        ("def f(self, x: int) -> int: return x", "parameter 'self'"),
        ("def f(cls, x: int) -> int: return x", "parameter 'cls'"),
        ("def f(*args: int) -> int: return 0", "parameter *args is not supported"),
        ("def f(x: int, **kwargs: int) -> int: return x", "parameter **kwargs is not supported"),
    ],
)
def test_unusable_functions_are_refused_when_the_tool_is_made(define: str, needle: str) -> None:
    ns: dict[str, Any] = {"threading": threading}
    exec(define, ns)
    with pytest.raises(TypeError, match="tool 'f'") as info:
        tool(ns["f"])
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("define", "needle"),
    [
        ("def f(x: threading.Lock) -> int: return 0", "cannot build the JSON schema of its parameters"),
        ("def f(x: 'Missing') -> int: return 0", "cannot resolve the type hints"),
    ],
)
def test_undescribable_parameters_are_refused_on_first_use(define: str, needle: str) -> None:
    # the schema is built lazily (docs/tools.md): the tool is made, its first use raises, every time
    ns: dict[str, Any] = {"threading": threading}
    exec(define, ns)
    f = tool(ns["f"])
    for use in (lambda: f.info.parameters, lambda: f.info.description, lambda: run(f.invoke("{}"))):
        with pytest.raises(TypeError, match="tool 'f'") as info:
            use()
        assert needle in str(info.value) and "first use" in str(info.value)


def test_unusable_names_are_refused() -> None:
    with pytest.raises(ValueError, match=r"tool name '<lambda>' is not usable.*name="):
        tool(lambda x: x)
    assert tool(name="ident")(lambda x: x).info.name == "ident"


# --- argument validation ----------------------------------------------------------------


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            '{"a": 1, "b": "x"}',
            "tool 'add': argument 'b': Input should be a valid integer, unable to parse string as an integer, got 'x'",
        ),
        ('{"a": 1}', "tool 'add': argument 'b': required, but missing"),
        ("", "tool 'add': argument 'a': required, but missing; argument 'b': required, but missing"),
        ('{"a": [1], "b": 2}', "tool 'add': argument 'a': Input should be a valid integer, got [1]"),
        ('{"a": 1, ', "tool 'add': arguments are not valid JSON (Expecting property name enclosed in double quotes"),
        ("[1, 2]", "tool 'add': arguments must be a JSON object of named arguments, got list [1, 2]"),
        ('"12"', "tool 'add': arguments must be a JSON object of named arguments, got str '12'"),
    ],
)
def test_invalid_arguments_raise_tool_arguments_error(arguments: str, message: str) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        run(add.invoke(arguments))
    assert str(info.value).startswith(message)
    assert info.value.tool_name == "add"
    assert isinstance(info.value, ValueError) and isinstance(info.value, rillet.RilletError)


def test_nested_errors_name_the_path_and_the_function_is_not_called() -> None:
    calls = []

    @tool
    def place(point: Point, tags: list[int]) -> str:
        calls.append(1)
        return ""

    with pytest.raises(ToolArgumentsError) as info:
        run(place.invoke('{"point": {"y": 1}, "tags": [1, "x"]}'))
    assert info.value.problems == [
        "argument 'point.x': required, but missing",
        "argument 'tags[1]': Input should be a valid integer, unable to parse string as an integer, got 'x'",
    ]
    assert calls == []
    with pytest.raises(ToolArgumentsError):
        run(collect(place.stream("nope")))


def test_empty_arguments_mean_no_arguments_and_unknown_ones_are_refused() -> None:
    @tool
    def now(fmt: str = "iso") -> str:
        return fmt

    assert run(now.invoke("")) == "iso"
    assert run(now.invoke("  ")) == "iso"
    with pytest.raises(ToolArgumentsError) as e:
        run(now.invoke('{"fmt": "unix", "extra": 1}'))
    assert e.value.problems == ["argument 'extra': unknown; the tool takes: fmt"]
    assert run(add.invoke('{"a": "2", "b": 3}')) == "5"  # lax: a numeric string is an integer


# --- where functions run ----------------------------------------------------------------


def test_sync_tools_run_in_a_worker_thread_with_the_run_context() -> None:
    @tool
    def peek(key: str) -> str:
        context.add_session_value("written", threading.current_thread().name)
        context.send_tool_gen_action(new_break_loop_action("me"))
        return str(context.get_session_value(key))

    session = Session(values={"user": "ada"})
    scope = ToolCallScope("peek", "call_1")

    async def main() -> str:
        run_scope.RUN.set(RunContext(session))
        run_scope.TOOL_CALL.set(scope)
        return await peek.invoke('{"key": "user"}')

    assert asyncio.run(main()) == "ada"
    assert session.values["written"].startswith("rillet-worker")
    assert scope.action is not None and scope.action.break_loop is not None


def test_two_slow_sync_calls_run_at_once() -> None:
    barrier = threading.Barrier(2, timeout=10)

    @tool
    def meet(i: int) -> int:
        barrier.wait()  # raises BrokenBarrierError after 10 s if the calls ran one at a time
        return i

    async def main() -> list[str]:
        return list(await asyncio.gather(meet.invoke('{"i": 1}'), meet.invoke('{"i": 2}')))

    assert asyncio.run(main()) == ["1", "2"]


def test_async_tools_run_on_the_loop_with_the_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var")

    @tool
    async def where() -> list[Any]:
        await asyncio.sleep(0)
        return [threading.current_thread() is threading.main_thread(), var.get()]

    async def main() -> str:
        var.set("set by the caller")
        return await where.invoke("{}")

    assert asyncio.run(main()) == '[true, "set by the caller"]'


def test_exceptions_propagate_unchanged() -> None:
    boom = KeyError("boom")

    @tool
    def sync_fail() -> str:
        raise boom

    @tool
    async def async_fail() -> str:
        raise boom

    @tool
    def stop() -> str:
        raise StopIteration

    for t in (sync_fail, async_fail):
        with pytest.raises(KeyError) as info:
            run(t.invoke(""))
        assert info.value is boom
    with pytest.raises(RuntimeError, match="tool function .*stop raised StopIteration"):  # not a hang: PEP 479's rule
        run(stop.invoke(""))


def test_a_cancelled_call_leaves_the_pool_usable() -> None:
    started, release = threading.Event(), threading.Event()

    @tool
    def slow() -> str:
        started.set()
        release.wait(10)
        return "late"

    async def main() -> str:
        task = asyncio.ensure_future(slow.invoke(""))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        return await add.invoke('{"a": 1, "b": 1}')

    assert asyncio.run(main()) == "2"


def test_pool_grows_on_demand_up_to_its_bound() -> None:
    pool = WorkerPool(max_workers=2, name="test-pool")
    gate = threading.Barrier(2, timeout=10)

    async def main() -> list[int]:
        # two blocking jobs need two threads; the third waits for one of them, then runs
        return list(await asyncio.gather(pool.run(gate.wait), pool.run(gate.wait), pool.run(lambda: 7)))

    assert sorted(asyncio.run(main()))[-1] == 7
    assert pool.threads == 2
    with pytest.raises(ValueError, match="max_workers must be at least 1"):
        WorkerPool(max_workers=0)


# --- streaming tools --------------------------------------------------------------------


def test_sync_generator_tools_stream_chunks_from_worker_threads() -> None:
    threads = set()

    @tool
    def count(n: int) -> Iterator[Any]:
        for i in range(n):
            threads.add(threading.current_thread().name)
            yield "a" if i == 0 else {"i": i}

    assert count.is_streaming
    assert run(collect(count.stream('{"n": 3}'))) == ["a", '{"i": 1}', '{"i": 2}']
    assert run(count.invoke('{"n": 3}')) == 'a{"i": 1}{"i": 2}'
    assert threads and all(t.startswith("rillet-worker") for t in threads)


def test_async_generator_tools_stream() -> None:
    @tool
    async def words(text: str):  # type: ignore[no-untyped-def]  (detected as an async generator)
        for w in text.split():
            await asyncio.sleep(0)
            yield w + " "

    assert words.is_streaming
    assert run(collect(words.stream('{"text": "a b c"}'))) == ["a ", "b ", "c "]
    assert run(words.invoke('{"text": "a b c"}')) == "a b c "


def test_iterator_return_annotations_make_streaming_tools() -> None:
    def sync_iter(n: int) -> Iterator[int]:
        return iter(range(n))

    async def async_iter(n: int) -> AsyncIterator[str]:
        async def gen() -> AsyncIterator[str]:
            for i in range(n):
                yield str(i)

        return gen()

    a, b = tool(sync_iter), tool(async_iter)
    assert a.is_streaming and b.is_streaming
    assert run(collect(a.stream('{"n": 3}'))) == ["0", "1", "2"]
    assert run(collect(b.stream('{"n": 2}'))) == ["0", "1"]
    assert not add.is_streaming
    assert run(collect(add.stream('{"a": 1, "b": 2}'))) == ["3"]  # one chunk for a plain tool


def test_stopping_a_stream_early_closes_the_generator() -> None:
    closed = threading.Event()

    @tool
    def forever() -> Iterator[str]:
        try:
            while True:
                yield "x"
        finally:
            closed.set()

    async def main() -> str:
        gen = forever.stream("")
        first = await gen.__anext__()
        await gen.aclose()  # type: ignore[attr-defined]
        return first

    assert run(main()) == "x"
    assert closed.wait(10)


def test_cancelling_a_stream_mid_step_still_closes_the_generator() -> None:
    started, release, closed = threading.Event(), threading.Event(), threading.Event()

    @tool
    def slow() -> Iterator[str]:
        try:
            yield "a"
            started.set()
            release.wait(10)
            yield "b"
        finally:
            closed.set()

    async def main() -> None:
        task = asyncio.ensure_future(collect(slow.stream("")))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not closed.is_set()  # the step still runs; the close waits for it
        release.set()

    asyncio.run(main())
    assert closed.wait(10)


# --- results ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain text", "plain text"),
        (None, "null"),
        (42, "42"),
        ({"città": "Zürich", "n": [1, 2.5, True]}, '{"città": "Zürich", "n": [1, 2.5, true]}'),
        (Point(x=1), '{"x": 1, "y": 0, "title": "p"}'),
        (Size(1.0, 2.0), '{"w": 1.0, "h": 2.0}'),
        ([datetime.date(2024, 1, 2), Color.BLUE], '["2024-01-02", "blue"]'),
    ],
)
def test_results_are_text_or_json(value: Any, text: str) -> None:
    @tool
    def give() -> Any:
        return value

    assert run(give.invoke("")) == text


def test_unencodable_results_raise_a_clear_error() -> None:
    @tool
    def lock() -> Any:
        return threading.Lock()

    with pytest.raises(TypeError, match="tool 'lock' returned a lock that cannot be encoded as JSON"):
        run(lock.invoke(""))


# --- ExitTool, BaseTool, as_tool --------------------------------------------------------


def test_exit_tool_returns_the_final_result_and_sends_an_exit_action() -> None:
    assert isinstance(exit_tool, ExitTool) and exit_tool.info.name == "exit"
    assert exit_tool.info.parameters["required"] == ["final_result"]
    assert exit_tool.info.parameters["properties"]["final_result"]["type"] == "string"
    scope = ToolCallScope("exit", "call_1")

    async def main(arguments: str) -> str:
        run_scope.TOOL_CALL.set(scope)
        return await ExitTool().invoke(arguments)

    assert asyncio.run(main('{"final_result": "all done"}')) == "all done"
    assert scope.action is not None and scope.action.exit
    with pytest.raises(ToolArgumentsError, match="tool 'exit': argument 'final_result': required, but missing"):
        asyncio.run(main("{}"))
    with pytest.raises(ToolArgumentsError, match="argument 'final_result': Input should be a valid string, got 3"):
        asyncio.run(main('{"final_result": 3}'))
    with pytest.raises(RuntimeError, match="outside a tool call"):
        run(exit_tool.invoke('{"final_result": "x"}'))


def test_a_base_tool_subclass_streams_its_invoke_result_by_default() -> None:
    class Fixed(BaseTool):
        info = ToolInfo("fixed", "Always the same.", {"type": "object", "properties": {}, "required": []})

        async def invoke(self, arguments: str) -> str:
            return "same"

    t = Fixed()
    assert run(collect(t.stream(""))) == ["same"]
    assert repr(t) == "<Fixed fixed>"
    with pytest.raises(TypeError, match="abstract"):
        BaseTool()  # type: ignore[abstract]


def test_as_tool() -> None:
    assert as_tool(add) is add
    made = as_tool(google)
    assert isinstance(made, FunctionTool) and made.info.name == "google"
    with pytest.raises(TypeError, match=r"as_tool\(\) got int 3: it accepts a BaseTool instance or a function"):
        as_tool(3)
    with pytest.raises(TypeError, match=r"got the class ExitTool \(instantiate it\)"):
        as_tool(ExitTool)


def test_import_rillet_does_not_import_pydantic() -> None:
    code = "import rillet, sys; assert 'pydantic' not in sys.modules, 'pydantic imported'; print(rillet.tool)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


# --- a model's unknown arguments, a tool without a description, streaming tools acting first ---


def scripted_agent(name: str, script: list[Any], tools: list[Any] | None = None) -> ChatModelAgent:
    return ChatModelAgent(name, description=f"the {name} agent", model=ScriptedModel(script), tools=tools or [])


def call_msg(name: str, args: str, id: str = "c1") -> Message:
    return Message.assistant(tool_calls=[ToolCall(index=0, id=id, function=FunctionCall(name, args))])


def test_unknown_tool_arguments_go_back_to_the_model_as_an_error() -> None:
    from rillet import tool

    calls: list[int] = []

    def add(a: int, b: int) -> int:
        """Adds two integers."""
        calls.append(a + b)
        return a + b

    a = scripted_agent("a", [call_msg("add", '{"a": 1, "b": 2, "c": 3}'), "fixed"], [tool(add)])
    events = list(Runner(a).query("1+2"))
    result = events[1].message_output.get_message()
    assert result.role == "tool"
    assert result.content == "Error: tool 'add': argument 'c': unknown; the tool takes: a, b"
    assert calls == []


def test_a_tool_without_a_description_warns_when_made() -> None:
    from rillet import tool

    def nameless(x: int) -> int:
        return x

    with pytest.warns(UserWarning, match=r"tool 'nameless' has no description .* add a docstring .* description=") as w:
        t = tool(nameless)
    assert w[0].filename == __file__  # points at the caller's line
    assert t.info.description == ""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tool(description="Returns x.")(nameless)  # an explicit description: no warning


def test_streaming_tools_can_interrupt_and_send_actions_before_their_first_chunk() -> None:
    @tool
    def slow_stream() -> Iterator[str]:
        """Streams; exits the run."""
        send_tool_gen_action(new_exit_action())
        yield "a"
        yield "b"

    @tool
    def ask_stream() -> Iterator[str]:
        """Interrupts before streaming."""
        was, _, _ = get_interrupt_state()
        if not was:
            raise interrupt("approve the stream?")
        yield "streamed after approval"

    model = ScriptedModel([asks(tool_call("slow_stream", {})), "never"])
    events = list(
        Runner(ChatModelAgent("a", model=model, tools=[slow_stream], return_directly={"slow_stream"})).query("x")
    )
    assert events[-1].action is not None and events[-1].action.exit
    assert events[-1].message_output.get_message().content == "ab"

    model = ScriptedModel([asks(tool_call("ask_stream", {})), "done"])
    runner = Runner(ChatModelAgent("b", model=model, tools=[ask_stream]), checkpoint_store=InMemoryCheckpointStore())
    events = list(runner.query("x", checkpoint_id="s"))
    intr = events[-1].action.interrupted
    assert intr is not None and intr.interrupt_contexts[0].info == "approve the stream?"
    resumed = list(runner.resume("s", targets={intr.interrupt_contexts[0].id: True}))
    assert [e.message_output.get_message().content for e in resumed] == ["streamed after approval", "done"]
