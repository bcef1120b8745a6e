"""AgenticMessage: the block-list message, its streaming concatenation in Rust (blocks merged
by stream index and kind, as Eino does) and its lossless conversion to and from Message."""

from __future__ import annotations

import asyncio
import copy
import pickle
from typing import Any, Literal

import pytest
import rillet
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet import (
    AgenticMessage,
    ConcatError,
    ContentBlock,
    Message,
    MessageAccumulator,
    MessageConversionError,
    ToolCall,
    concat_messages,
)

# --- the data type ----------------------------------------------------------------------


def test_constructors_build_the_blocks_a_user_expects() -> None:
    assert AgenticMessage.user("hi").blocks == (ContentBlock.from_text("hi"),)
    assert AgenticMessage.system("be brief").role == "system"
    reply = AgenticMessage.assistant(
        [ContentBlock.reasoning("why", signature="sig"), "the answer", ContentBlock.tool_call("c1", "f", "{}")]
    )
    assert [b.kind for b in reply.blocks] == ["reasoning", "text", "tool_call"]
    assert reply.content == "the answer"
    # the tool_call blocks read as ToolCall values, the form tools and the ReAct loop take
    assert reply.tool_calls == (ToolCall(id="c1", function={"name": "f", "arguments": "{}"}),)
    result = AgenticMessage.tool_result("42", "c1", "f", is_error=True)
    assert result.role == "user"
    (block,) = result.blocks
    assert (block.kind, block.text, block.call_id, block.name, block.is_error) == ("tool_result", "42", "c1", "f", True)


def test_a_field_the_kind_does_not_use_is_refused_with_the_fields_it_does() -> None:
    with pytest.raises(ValueError, match=r"'text' block has no field \"call_id\"; its fields are: text"):
        ContentBlock("text", call_id="x")
    with pytest.raises(ValueError, match='unknown content block kind "txt"'):
        ContentBlock("txt")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AgenticMessage.blocks\[0\]"):
        AgenticMessage("user", [1])  # type: ignore[list-item]


def test_messages_are_mutable_by_assignment_and_their_views_are_read_only() -> None:
    m = AgenticMessage.user("a")
    m.blocks = [*m.blocks, ContentBlock.image("https://x/y.png")]
    m.extra = {"k": 1}
    m.response_meta = {"finish_reason": "stop", "usage": {"total_tokens": 3}}
    assert len(m.blocks) == 2 and m.extra == {"k": 1}
    assert m.response_meta is not None and m.response_meta.usage is not None
    assert m.response_meta.usage.total_tokens == 3
    with pytest.raises(TypeError):
        m.extra["k"] = 2  # type: ignore[index,unused-ignore]
    c = m.copy()
    c.role = "assistant"
    assert m.role == "user"


def test_dict_pickle_copy_and_repr() -> None:
    m = AgenticMessage(
        "assistant",
        [ContentBlock("mcp_tool_call", server_label="srv", call_id="m1", name="search", arguments="{}", index=2)],
        name="bot",
        extra={"trace": {"id": "t"}},
    )
    assert AgenticMessage.from_dict(m.to_dict()) == m
    assert pickle.loads(pickle.dumps(m)) == m
    assert copy.deepcopy(m) == m and copy.copy(m) == m
    assert repr(m) == (
        "AgenticMessage(role='assistant', blocks=[ContentBlock('mcp_tool_call', server_label='srv', "
        "call_id='m1', name='search', arguments='{}', index=2)], name='bot', extra={'trace': {'id': 't'}})"
    )
    assert m != AgenticMessage.user("x") and m != Message.user("x")


# --- concatenation -------------------------------------------------------------------------


def _chunk(*blocks: ContentBlock, **kw: Any) -> AgenticMessage:
    return AgenticMessage(blocks=list(blocks), **kw)


def test_streamed_blocks_merge_by_index_in_index_order() -> None:
    chunks = [
        _chunk(ContentBlock.reasoning("Let me ", index=0), role="assistant"),
        _chunk(ContentBlock.reasoning("think", signature="sig-1", index=0)),
        _chunk(ContentBlock.tool_call("c1", "get_weather", '{"city"', index=2)),
        _chunk(ContentBlock.from_text("Checking", index=1)),
        _chunk(ContentBlock.tool_call("", "", ': "Paris"}', index=2), ContentBlock.from_text("...", index=1)),
        _chunk(ContentBlock.reasoning("", signature="sig-2", index=0)),
        _chunk(response_meta={"finish_reason": "tool_calls", "usage": {"total_tokens": 9}}),
    ]
    out = concat_messages(chunks)
    assert isinstance(out, AgenticMessage)
    assert out.role == "assistant"
    r, t, c = out.blocks
    assert (r.kind, r.text, r.signature) == ("reasoning", "Let me think", "sig-2")  # last non-empty signature
    assert (t.kind, t.text) == ("text", "Checking...")
    assert (c.call_id, c.name, c.arguments) == ("c1", "get_weather", '{"city": "Paris"}')
    assert out.response_meta is not None and out.response_meta.finish_reason == "tool_calls"


def test_tool_result_chunks_append_instead_of_overwriting() -> None:
    chunks = [
        _chunk(ContentBlock("mcp_tool_result", call_id="m", text="first half, ", index=0)),
        _chunk(ContentBlock("mcp_tool_result", text="second half", index=0)),
        _chunk(ContentBlock("mcp_tool_result", text="", index=0)),
    ]
    (block,) = concat_messages(chunks).blocks
    assert block.text == "first half, second half"


def test_different_kinds_at_one_index_are_a_concat_error_naming_index_and_kinds() -> None:
    acc: MessageAccumulator[AgenticMessage] = MessageAccumulator()
    acc.push(_chunk(ContentBlock.from_text("a", index=4)))
    with pytest.raises(ConcatError, match=r"stream index 4: a 'text' block and a 'tool_call' block") as e:
        acc.push(_chunk(ContentBlock.tool_call("c", "f", index=4)))
    assert e.value.field == "blocks[index=4].kind"
    acc.push(_chunk(ContentBlock.from_text("b", index=4)))  # the rejected chunk was not applied
    assert acc.finish().blocks == (ContentBlock.from_text("ab"),)  # whole now: no stream index


def test_one_stream_holds_one_message_type() -> None:
    with pytest.raises(TypeError, match="one stream holds one message type"):
        concat_messages([AgenticMessage.assistant("a"), Message.assistant("b")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="one stream holds one message type"):
        concat_messages([Message.assistant("a"), AgenticMessage.assistant("b")])  # type: ignore[list-item]
    with pytest.raises(ConcatError, match="unexpected None chunk"):
        concat_messages([AgenticMessage.assistant("a"), None])  # type: ignore[list-item]


def test_stream_readers_concatenate_agentic_chunks_in_rust() -> None:
    chunks = [_chunk(ContentBlock.from_text(t, index=0), role="assistant") for t in ("a", "b", "c")]
    out = rillet.concat_message_stream(rillet.stream_from_list(chunks))
    assert out.blocks == (ContentBlock.from_text("abc"),)


def test_async_stream_concatenation_gives_an_agentic_message() -> None:
    async def main() -> AgenticMessage:
        reader, writer = rillet.pipe()
        for t in ("x", "y"):
            writer.send(_chunk(ContentBlock.from_text(t, index=0)))
        writer.close()
        out: AgenticMessage = await rillet.aconcat_message_stream(reader)
        return out

    out = asyncio.run(main())
    assert isinstance(out, AgenticMessage) and out.content == "xy"


# --- hypothesis: split / concat round trips --------------------------------------------------

_text = st.text(max_size=12)
_ident = st.text(alphabet="abcdef0123456789", min_size=1, max_size=6)


@st.composite
def _blocks(draw: st.DrawFn) -> list[ContentBlock]:
    kinds = draw(
        st.lists(st.sampled_from(["text", "reasoning", "tool_call", "tool_result", "mcp_tool_result"]), max_size=5)
    )
    out = []
    for kind in kinds:
        if kind == "text":
            out.append(ContentBlock.from_text(draw(_text)))
        elif kind == "reasoning":
            out.append(ContentBlock.reasoning(draw(_text), signature=draw(_text)))
        elif kind == "tool_call":
            out.append(ContentBlock.tool_call(draw(_ident), draw(_ident), draw(_text)))
        else:
            result_kind: Literal["tool_result", "mcp_tool_result"] = kind  # type: ignore[assignment]
            out.append(ContentBlock(result_kind, call_id=draw(_ident), text=draw(_text), is_error=draw(st.booleans())))
    return out


def _split_text(data: st.DataObject, s: str) -> list[str]:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(s)), max_size=3)))
    bounds = [0, *cuts, len(s)]
    return [s[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _split_block(data: st.DataObject, b: ContentBlock, index: int) -> list[ContentBlock]:
    """Chunks of `b` at stream index `index`: the growing field cut into pieces, the
    identity on the first piece, the signature on one piece."""
    grow = "arguments" if b.kind == "tool_call" else "text"
    pieces = _split_text(data, getattr(b, grow))
    sig_at = data.draw(st.integers(0, len(pieces) - 1))
    out = []
    for i, piece in enumerate(pieces):
        fields: dict[str, Any] = {grow: piece, "index": index}
        if i == 0:
            fields.update({f: getattr(b, f) for f in ("call_id", "name") if getattr(b, f)})
        if b.kind == "reasoning" and i == sig_at:
            fields["signature"] = b.signature
        if b.is_error and i == len(pieces) - 1:
            fields["is_error"] = True
        out.append(ContentBlock(b.kind, **fields))
    return out


@settings(max_examples=150, deadline=None)
@given(_blocks(), st.data())
def test_any_split_of_a_message_concatenates_back_to_it(blocks: list[ContentBlock], data: st.DataObject) -> None:
    message = AgenticMessage("assistant", blocks)
    per_block = [_split_block(data, b, i) for i, b in enumerate(blocks)]
    # Interleave the blocks' chunks in any order that keeps each block's own order.
    chunks: list[AgenticMessage] = [AgenticMessage(role="assistant")]
    queues = [list(q) for q in per_block]
    while any(queues):
        live = [q for q in queues if q]
        q = data.draw(st.sampled_from(live))
        chunks.append(AgenticMessage(blocks=[q.pop(0)]))
    assert concat_messages(chunks) == message
    acc: MessageAccumulator[AgenticMessage] = MessageAccumulator()
    acc.push_many(chunks)
    assert acc.snapshot() == message and acc.finish() == message


# --- conversion to and from Message ---------------------------------------------------------


def test_messages_convert_to_blocks_and_back_without_loss() -> None:
    originals = [
        Message.system("be brief"),
        Message.user("hello", name="ann"),
        Message.user([rillet.ContentPart("look"), rillet.ContentPart(image_url="https://x/a.png", detail="low")]),
        Message.assistant(
            "sure",
            [ToolCall(index=0, id="c1", function={"name": "f", "arguments": "{}"})],
            reasoning_content="because",
        ),
        Message(role="assistant", refusal="no", response_meta={"finish_reason": "stop"}, extra={"k": "v"}),
        Message.tool_message("42", "c1", "f"),
    ]
    for m in originals:
        am = AgenticMessage.from_message(m)
        assert am.to_message() == m, (m, am)
    assert AgenticMessage.from_message(Message.tool_message("42", "c1", "f")).blocks == (
        ContentBlock.tool_result("42", "c1", "f"),
    )


def test_what_a_message_cannot_hold_is_a_named_error_saying_which_block() -> None:
    cases = [
        (AgenticMessage.assistant([ContentBlock.reasoning("r", signature="sig")]), 0, "signature"),
        (AgenticMessage.assistant(["a", ContentBlock("server_tool_call", name="web_search")]), 1, "server_tool_call"),
        (AgenticMessage.user([ContentBlock("audio", url="https://x/a.wav")]), 0, "'audio' block"),
        (AgenticMessage.assistant([ContentBlock.tool_call("c", "f"), "late text"]), 1, "order"),
    ]
    for am, block, words in cases:
        with pytest.raises(MessageConversionError, match=words) as e:
            am.to_message()
        assert e.value.block == block
    two = AgenticMessage("user", [ContentBlock.tool_result("1", "a"), ContentBlock.tool_result("2", "b")])
    with pytest.raises(MessageConversionError, match="use to_messages"):
        two.to_message()
    assert two.to_messages() == [Message.tool_message("1", "a"), Message.tool_message("2", "b")]


@settings(max_examples=150, deadline=None)
@given(
    st.text(max_size=8),
    st.text(max_size=8),
    st.text(max_size=8),
    st.lists(st.tuples(_ident, _ident, st.text(max_size=8)), max_size=3),
)
def test_assistant_messages_round_trip_through_blocks(
    content: str, reasoning: str, refusal: str, calls: list[tuple[str, str, str]]
) -> None:
    m = Message(
        role="assistant",
        content=content,
        reasoning_content=reasoning,
        refusal=refusal,
        tool_calls=[ToolCall(index=i, id=c, function={"name": n, "arguments": a}) for i, (c, n, a) in enumerate(calls)],
    )
    am = AgenticMessage.from_message(m)
    assert am.to_message() == m
    assert AgenticMessage.from_message(am.to_message()) == am
