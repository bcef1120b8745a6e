"""ScriptedModel: scripted replies in order, the exact chunking of streams, exhaustion, callable
scripts, recorded calls, paced streams; and the ChatModel protocol it implements."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Coroutine
from typing import Any

import pytest
import rillet
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet import (
    ChatModel,
    ContentPart,
    FunctionCall,
    Message,
    ModelCall,
    ResponseMeta,
    RilletError,
    ScriptedModel,
    ScriptExhaustedError,
    StreamReader,
    ToolCall,
    Usage,
    concat_messages,
)
from rillet.models.scripted import split_message

T = 10.0  # seconds: only reached if something is broken


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, T)

    return asyncio.run(bounded())


async def read_all(reader: StreamReader) -> list[Message]:
    return [chunk async for chunk in reader]


USER = [Message.user("hi")]


def run_stream(model: ScriptedModel) -> Any:
    """The reader of one stream call, made inside a short-lived loop (delay 0 needs none)."""
    return run(model.stream(USER))


def add_call(id: str = "call_1", arguments: str = '{"a": 2, "b": 3}') -> ToolCall:
    return ToolCall(id=id, function=FunctionCall("add", arguments))


# --- replies in order ----------------------------------------------------------------------


def test_generate_returns_the_replies_in_order_as_assistant_messages() -> None:
    model = ScriptedModel(["one", Message(content="two"), Message.assistant("three")])

    async def main() -> list[Message]:
        return [await model.generate(USER) for _ in range(3)]

    replies = run(main())
    assert [(m.role, m.content) for m in replies] == [("assistant", c) for c in ("one", "two", "three")]


def test_generate_and_stream_share_one_script() -> None:
    model = ScriptedModel(["first reply", "second", "third"], chunk_size=3)

    async def main() -> list[str]:
        a = await model.generate(USER)
        b = concat_messages(await read_all(await model.stream(USER)))
        c = await model.generate(USER)
        return [a.content, b.content, c.content]

    assert run(main()) == ["first reply", "second", "third"]


def test_every_reply_is_a_fresh_copy() -> None:
    scripted = Message.assistant("hello")
    model = ScriptedModel([scripted, scripted])
    scripted.content = "changed after scripting"

    async def main() -> tuple[Message, Message]:
        return await model.generate(USER), await model.generate(USER)

    a, b = run(main())
    assert a is not b and a is not scripted
    a.content = "mutated by the caller"
    assert b.content == "hello"
    assert model.replies[0].content == "hello"


def test_tool_calls_are_numbered_by_position_and_kept_otherwise() -> None:
    echo = ToolCall(1, "c1", function=FunctionCall("echo", "{}"))
    model = ScriptedModel([Message.assistant(tool_calls=[add_call("c0"), echo])])
    reply = run(model.generate(USER))
    assert [(tc.index, tc.id, tc.type, tc.function.name) for tc in reply.tool_calls] == [
        (0, "c0", "function", "add"),
        (1, "c1", "function", "echo"),
    ]
    assert reply.tool_calls[0].function.arguments == '{"a": 2, "b": 3}'


def test_a_tool_call_index_other_than_its_position_is_refused() -> None:
    with pytest.raises(ValueError, match=r"reply 0: tool call 0 has index 3; .*set it to 0"):
        ScriptedModel([Message.assistant(tool_calls=[ToolCall(3, "c", function=FunctionCall("f"))])])


def test_finish_reason_and_usage_are_never_invented() -> None:
    model = ScriptedModel(["hi", Message.assistant("there")])

    async def main() -> tuple[Message, list[Message]]:
        return await model.generate(USER), await read_all(await model.stream(USER))

    whole, chunks = run(main())
    assert whole.response_meta is None
    assert all(c.response_meta is None for c in chunks)


# --- chunking --------------------------------------------------------------------------------


def test_stream_chunks_exactly() -> None:
    reply = Message(
        role="assistant",
        content="Hello, world",
        reasoning_content="hmm...",
        tool_calls=[add_call(), ToolCall(id="call_2", function=FunctionCall("now", ""))],
        response_meta=ResponseMeta("tool_calls", Usage(10, 5, 15)),
        extra={"trace": "t1"},
    )
    model = ScriptedModel([reply], chunk_size=4)
    chunks = run(read_all(run_stream(model)))
    expected = [
        Message(role="assistant", reasoning_content="hmm.", extra={"trace": "t1"}),
        Message(reasoning_content=".."),
        Message(content="Hell"),
        Message(content="o, w"),
        Message(content="orld"),
        Message(tool_calls=[ToolCall(0, "call_1", "function", FunctionCall("add", '{"a"'))]),
        Message(tool_calls=[ToolCall(0, "", "", FunctionCall("", ": 2,"))]),
        Message(tool_calls=[ToolCall(0, "", "", FunctionCall("", ' "b"'))]),
        Message(tool_calls=[ToolCall(0, "", "", FunctionCall("", ": 3}"))]),
        Message(
            tool_calls=[ToolCall(1, "call_2", "function", FunctionCall("now", ""))],
            response_meta=ResponseMeta("tool_calls", Usage(10, 5, 15)),
        ),
    ]
    assert [c.to_dict() for c in chunks] == [e.to_dict() for e in expected]
    assert chunks == expected
    assert concat_messages(chunks) == model.replies[0]


def test_an_empty_reply_is_one_chunk_with_role_and_meta() -> None:
    meta = ResponseMeta("stop", Usage(1, 0, 1))
    model = ScriptedModel([Message(response_meta=meta), ""])
    assert run(read_all(run_stream(model))) == [Message(role="assistant", response_meta=meta)]
    assert run(read_all(run_stream(model))) == [Message(role="assistant")]


def test_identity_fields_ride_on_the_first_chunk() -> None:
    reply = Message(role="tool", content="result text", name="n", tool_call_id="call_9", tool_name="add")
    chunks = split_message(reply, 5)
    assert [c.content for c in chunks] == ["resul", "t tex", "t"]
    ids = [(c.role, c.name, c.tool_call_id, c.tool_name) for c in chunks]
    assert ids == [("tool", "n", "call_9", "add"), ("", "", "", ""), ("", "", "", "")]
    assert concat_messages(chunks) == reply


def test_chunk_size_counts_characters_not_bytes() -> None:
    chunks = split_message(Message.assistant("héllo wörld 🦀🦀"), 3)
    assert [c.content for c in chunks] == ["hél", "lo ", "wör", "ld ", "🦀🦀"]


def test_chunk_size_one_splits_every_character() -> None:
    assert [c.content for c in split_message(Message.assistant("abc"), 1)] == ["a", "b", "c"]


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
short = st.text(alphabet="abcdefgh_é🦀", max_size=6)
json_leaf = st.none() | st.booleans() | st.integers(-(2**31), 2**31) | short
extra_values = json_leaf | st.dictionaries(short, json_leaf, max_size=2)
extras = st.none() | st.dictionaries(short, extra_values, max_size=3)
tool_calls = st.lists(
    st.builds(
        lambda id, type, name, args, extra: ToolCall(None, id, type, FunctionCall(name, args), extra),
        short,
        st.sampled_from(["function", ""]),
        short,
        texts,
        st.none() | st.dictionaries(short, short, max_size=2),
    ),
    max_size=3,
)
usages = st.none() | st.builds(Usage, *[st.integers(0, 10**6)] * 5)
reasons = st.sampled_from(["", "stop", "tool_calls", "length"])
metas = st.none() | st.builds(ResponseMeta, reasons, usages)
# Parts with no two text parts side by side (concatenation merges neighbouring text parts).
parts = st.lists(
    st.one_of(
        st.builds(ContentPart, short),
        st.builds(lambda u: ContentPart(image_url="https://x/" + u), short),
    ),
    max_size=3,
).filter(lambda ps: not any(a.type == b.type == "text" for a, b in zip(ps, ps[1:])))
messages = st.builds(
    lambda role, content, reasoning, name, calls, meta, extra, parts: Message(
        role,
        content,
        name,
        reasoning,
        calls,
        response_meta=meta,
        extra=extra,
        user_input_multi_content=parts or None,
    ),
    st.sampled_from(["", "assistant", "tool"]),
    texts,
    texts,
    short,
    tool_calls,
    metas,
    extras,
    parts,
)


@settings(max_examples=300, deadline=None)
@given(reply=messages, chunk_size=st.integers(1, 12))
def test_chunks_concatenate_back_to_the_reply(reply: Message, chunk_size: int) -> None:
    model = ScriptedModel([reply, reply], chunk_size=chunk_size)

    async def main() -> tuple[Message, list[Message]]:
        return await model.generate(USER), await read_all(await model.stream(USER))

    whole, chunks = run(main())
    assert concat_messages(chunks) == whole == model.replies[0]
    assert all(len(c.content) <= chunk_size and len(c.reasoning_content) <= chunk_size for c in chunks)
    assert chunks[0].role == (reply.role or "assistant")
    assert all(c.response_meta is None for c in chunks[:-1])
    assert all(c.extra is None for c in chunks[1:])
    # Each tool call: the first delta names it, the rest only carry the index and arguments.
    seen: set[int] = set()
    for c in chunks:
        for tc in c.tool_calls:
            assert tc.index is not None and len(tc.function.arguments) <= chunk_size
            if tc.index in seen:
                assert (tc.id, tc.type, tc.function.name) == ("", "", "")
            seen.add(tc.index)


# --- exhaustion ------------------------------------------------------------------------------


def test_running_past_the_script_says_how_many_replies_and_which_call() -> None:
    model = ScriptedModel(["a", "b", "c"])

    async def main() -> None:
        for _ in range(3):
            await model.generate(USER)
        await model.generate(USER)

    with pytest.raises(ScriptExhaustedError) as info:
        run(main())
    assert str(info.value).startswith("ScriptedModel 'scripted' has 3 scripted replies; call 4 asked for another")
    assert isinstance(info.value, RilletError)
    assert model.call_count == 4 and len(model.calls) == 4


def test_stream_past_the_script_raises_before_any_chunk() -> None:
    model = ScriptedModel(["only"], name="planner")
    run(model.stream(USER))
    with pytest.raises(ScriptExhaustedError, match="'planner' has 1 scripted reply; call 2 asked"):
        run(model.stream(USER))


def test_an_empty_script_fails_on_the_first_call() -> None:
    with pytest.raises(ScriptExhaustedError, match="has 0 scripted replies; call 1 asked"):
        run(ScriptedModel([]).generate(USER))


def test_reset_rewinds_the_script_and_forgets_the_calls() -> None:
    model = ScriptedModel(["a", "b"])

    async def two() -> list[str]:
        return [(await model.generate(USER)).content for _ in range(2)]

    assert run(two()) == ["a", "b"]
    model.reset()
    assert model.call_count == 0 and model.calls == []
    assert run(two()) == ["a", "b"]


# --- callable scripts ------------------------------------------------------------------------


def test_a_sync_callable_answers_every_call() -> None:
    seen: list[tuple[list[str], tuple[Any, ...]]] = []
    tool = object()

    def reply(messages: list[Message], tools: tuple[Any, ...]) -> Message | str:
        seen.append(([m.content for m in messages], tools))
        if len(messages) == 1:
            return Message.assistant(tool_calls=[add_call()])
        return f"seen {len(messages)} messages"

    model = ScriptedModel(reply)

    async def main() -> tuple[Message, Message]:
        first = await model.generate(USER, tools=[tool])
        history = [*USER, first, Message.tool_message("5", "call_1")]
        second = concat_messages(await read_all(await model.stream(history)))
        return first, second

    first, second = run(main())
    assert first.role == "assistant" and first.tool_calls[0].index == 0
    assert second.content == "seen 3 messages" and second.role == "assistant"
    assert seen == [(["hi"], (tool,)), (["hi", "", "5"], ())]
    assert model.call_count == 2


def test_an_async_callable_is_awaited() -> None:
    async def reply(messages: list[Message], tools: tuple[Any, ...]) -> str:
        await asyncio.sleep(0)
        return "from a coroutine"

    model = ScriptedModel(reply)

    async def main() -> tuple[str, str]:
        whole = await model.generate(USER)
        streamed = concat_messages(await read_all(await model.stream(USER)))
        return whole.content, streamed.content

    assert run(main()) == ("from a coroutine", "from a coroutine")


def test_a_callable_reply_is_copied() -> None:
    fixed = Message.assistant("same object")
    model = ScriptedModel(lambda messages, tools: fixed)

    async def main() -> Message:
        return await model.generate(USER)

    out = run(main())
    assert out == fixed and out is not fixed


def test_a_callable_returning_something_else_is_named_clearly() -> None:
    model = ScriptedModel(lambda messages, tools: 42)
    with pytest.raises(TypeError, match=r"answer to call 1 has type int; a reply must be a Message"):
        run(model.generate(USER))


def test_errors_from_a_callable_propagate_from_generate_and_stream() -> None:
    def reply(messages: list[Message], tools: tuple[Any, ...]) -> str:
        raise ConnectionError("model offline")

    model = ScriptedModel(reply)
    with pytest.raises(ConnectionError):
        run(model.generate(USER))
    with pytest.raises(ConnectionError):
        run(model.stream(USER))


# --- recorded calls --------------------------------------------------------------------------


def test_calls_record_copies_of_what_the_model_was_sent() -> None:
    model = ScriptedModel(["a", "b"])
    tool = object()
    history = [Message.system("be brief"), Message.user("hi")]

    async def main() -> None:
        await model.generate(history, tools=[tool], temperature=0.2)
        history[1].content = "edited later"
        history.append(Message.user("again"))
        await read_all(await model.stream(history))

    run(main())
    first, second = model.calls
    assert first == ModelCall((Message.system("be brief"), Message.user("hi")), (tool,), {"temperature": 0.2}, False)
    assert [m.content for m in second.messages] == ["be brief", "edited later", "again"]
    assert second.tools == () and second.options == {} and second.streaming is True
    assert model.call_count == 2
    with pytest.raises(AttributeError):
        first.streaming = True  # type: ignore[misc]


def test_record_false_counts_calls_without_keeping_them() -> None:
    model = ScriptedModel(["a"], record=False)
    run(model.generate(USER))
    assert model.call_count == 1 and model.calls == []


def test_concurrent_calls_from_threads_each_take_one_reply() -> None:
    n = 64
    model = ScriptedModel([str(i) for i in range(n)])
    got: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(n // 8):
            content = asyncio.run(model.generate(USER)).content
            with lock:
                got.append(content)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(T)
    assert sorted(got, key=int) == [str(i) for i in range(n)]
    assert model.call_count == n == len(model.calls)


# --- paced streams ---------------------------------------------------------------------------


def test_a_delayed_stream_sends_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk after the first waits for one sleep of `delay`: gate the sleeps by hand."""
    real_sleep = asyncio.sleep
    gates: list[asyncio.Event] = []
    slept: list[float] = []

    async def gated_sleep(delay: float, result: Any = None) -> Any:
        if delay != 0.25:
            return await real_sleep(delay, result)
        slept.append(delay)
        gate = asyncio.Event()
        gates.append(gate)
        await gate.wait()
        return result

    monkeypatch.setattr(asyncio, "sleep", gated_sleep)
    model = ScriptedModel(["abcdefghij"], chunk_size=4, delay=0.25)

    async def main() -> list[str]:
        reader = await model.stream(USER)
        order: list[str] = [(await reader.arecv()).content]
        for _ in range(2):
            while not gates:  # the producer is parked in its sleep: nothing more is queued
                await real_sleep(0)
            assert reader._poll() is rillet.EMPTY
            order.append("tick")
            gates.pop().set()
            order.append((await reader.arecv()).content)
        assert [c async for c in reader] == []
        return order

    assert run(main()) == ["abcd", "tick", "efgh", "tick", "ij"]
    assert slept == [0.25, 0.25]
    assert not model._tasks


def test_a_delayed_stream_concatenates_to_the_reply() -> None:
    reply = Message.assistant("paced text", tool_calls=[add_call()])
    model = ScriptedModel([reply], chunk_size=3, delay=0.001)

    async def main() -> list[Message]:
        return await read_all(await model.stream(USER))

    chunks = run(main())
    assert len(chunks) == 10 and concat_messages(chunks) == model.replies[0]


def test_closing_a_delayed_stream_stops_its_producer(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the reader closes, the producer pauses no more: count its pauses (which take no
    time here) while it winds down. One ignoring the reader would pause for each of the
    remaining 9,999 chunks."""
    real_sleep = asyncio.sleep
    pauses = 0

    async def counting_sleep(delay: float, result: Any = None) -> Any:
        nonlocal pauses
        if delay != 0.5:
            return await real_sleep(delay, result)
        pauses += 1
        return await real_sleep(0, result)

    monkeypatch.setattr(asyncio, "sleep", counting_sleep)
    model = ScriptedModel(["x" * 10_000], chunk_size=1, delay=0.5)

    async def main() -> int:
        reader = await model.stream(USER)
        assert (await reader.arecv()).content == "x"
        reader.close()
        at_close = pauses
        while model._tasks:
            await real_sleep(0)
        return pauses - at_close

    assert run(main()) <= 1


def test_a_delayed_stream_cut_short_by_its_loop_ending_says_so() -> None:
    """A stream whose producer is cancelled must not look complete to its reader."""
    model = ScriptedModel(["abcdefgh"], chunk_size=2, delay=60.0)

    async def main() -> StreamReader:
        reader = await model.stream(USER)
        await asyncio.sleep(0)  # the producer sends its first chunk, then sleeps
        return reader

    reader = asyncio.run(main())  # ending the loop cancels the producer
    assert reader.recv(timeout=T).content == "ab"
    with pytest.raises(RilletError, match="'scripted': stream cancelled after 1 of 4 chunks"):
        reader.recv(timeout=T)
    with pytest.raises(rillet.StreamEOF):
        reader.recv(timeout=T)


# --- construction and the protocol -----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_size": 0}, "chunk_size must be an int >= 1"),
        ({"chunk_size": 2.5}, "chunk_size must be an int >= 1"),
        ({"delay": -1}, "delay must be a finite number of seconds >= 0"),
        ({"delay": float("nan")}, "delay must be a finite number"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ScriptedModel(["a"], **kwargs)


@pytest.mark.parametrize(
    ("replies", "message"),
    [
        ("hello", r"got one str \(wrap it in a list: ScriptedModel\(\[reply\]\)\)"),
        (Message.assistant("x"), "got one Message"),
        (42, "got int"),
        (["ok", 3], "'scripted': reply 1 has type int; a reply must be a Message, an AgenticMessage or a str"),
    ],
)
def test_bad_scripts_are_refused(replies: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        ScriptedModel(replies)


def test_scripted_model_is_a_chat_model() -> None:
    class OnlyGenerate:
        async def generate(self, messages: list[Message], **options: Any) -> Message:
            return Message.assistant("")

    assert isinstance(ScriptedModel([]), ChatModel)
    assert not isinstance(OnlyGenerate(), ChatModel)
    assert rillet.models.ScriptedModel is ScriptedModel


def test_import_rillet_stays_light() -> None:
    code = "import sys, rillet; print([m for m in ('pydantic', 'httpx') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
