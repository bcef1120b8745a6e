"""Images and files as content parts: built from bytes or URLs or provider file ids, in
OpenAI's content-part dict shapes, through the codec and concatenation, recorded by
ScriptedModel, and returned by tools (the tool message carries them to the model)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rillet import ContentPart, Message, codec, concat_messages
from rillet.chatmodel import ChatModelAgent
from rillet.models import ScriptedModel
from rillet.run.context import send_tool_parts
from rillet.runner import Runner
from rillet.tools import tool

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF"
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- building parts ------------------------------------------------------------------------


def test_an_image_from_bytes_is_a_base64_data_url_of_its_sniffed_type() -> None:
    part = ContentPart.image(PNG)
    assert part.type == "image_url"
    assert part.url == f"data:image/png;base64,{b64(PNG)}"
    assert part.mime_type == "image/png"
    assert part.to_dict() == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}}
    assert ContentPart.image(bytearray(JPEG), detail="low").to_dict() == {
        "type": "image_url",
        "image_url": {"url": f"data:image/jpeg;base64,{b64(JPEG)}", "detail": "low"},
    }
    # A given type wins over the sniffed one (the caller knows best).
    assert ContentPart.image(b"raw", mime_type="image/webp").url == f"data:image/webp;base64,{b64(b'raw')}"


def test_an_image_from_a_url_keeps_it() -> None:
    assert ContentPart.image("https://example.invalid/cat.png", detail="high") == ContentPart(
        image_url="https://example.invalid/cat.png", detail="high"
    )
    assert ContentPart.image("https://example.invalid/cat.png").mime_type is None
    assert ContentPart.image("data:image/gif;base64,R0lG").mime_type == "image/gif"


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: ContentPart.image(b""), ValueError, "empty bytes"),
        (lambda: ContentPart.image(b"hello"), ValueError, r"cannot tell the image type .* pass mime_type="),
        (lambda: ContentPart.image(PNG, mime_type="image/bmp"), ValueError, 'unsupported image MIME type "image/bmp"'),
        (lambda: ContentPart.image("ftp://x/y.png"), ValueError, "must be an http"),
        (lambda: ContentPart.image("data:text/plain;base64,aGk="), ValueError, 'MIME type "text/plain"'),
        (lambda: ContentPart.image("data:image/png,raw"), ValueError, "not base64"),
        (lambda: ContentPart.image("https://x/a.png", mime_type="image/png"), ValueError, "takes no mime_type"),
        (lambda: ContentPart.image(3), TypeError, "bytes or a URL str"),
        (lambda: ContentPart.file(b""), ValueError, "empty bytes"),
        (lambda: ContentPart.file(PDF), ValueError, "needs filename="),
        (lambda: ContentPart.file(b"x", filename="a.bin"), ValueError, 'cannot tell the MIME type of "a.bin"'),
        (lambda: ContentPart.file(b"x", filename="a", mime_type="pdf"), ValueError, 'unknown MIME type "pdf"'),
        (lambda: ContentPart.file(), ValueError, "exactly one of data"),
        (lambda: ContentPart.file(PDF, filename="a.pdf", file_id="f"), ValueError, "exactly one of data"),
        (lambda: ContentPart.file(file_id=""), ValueError, "empty file id"),
        (lambda: ContentPart.file("text", filename="a.txt"), TypeError, "bytes"),
    ],
)
def test_bad_input_is_refused_with_the_fix(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_a_file_from_bytes_has_its_name_and_a_data_url() -> None:
    part = ContentPart.file(PDF, filename="report.pdf")
    assert (part.type, part.filename, part.mime_type, part.file_id) == ("file", "report.pdf", "application/pdf", None)
    assert part.to_dict() == {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
    }
    assert ContentPart.file(b"a,b\n", filename="t.CSV").mime_type == "text/csv"  # from the extension
    given_type = ContentPart.file(b"{}", filename="x", mime_type="application/vnd.api+json")
    assert given_type.file_data == f"data:application/vnd.api+json;base64,{b64(b'{}')}"
    assert repr(part).startswith("ContentPart.file(filename='report.pdf', file_data='data:application/pdf;base64,")


def test_a_file_by_id_is_the_providers_file() -> None:
    part = ContentPart.file(file_id="file-abc123")
    assert part.to_dict() == {"type": "file", "file": {"file_id": "file-abc123"}}
    assert (part.file_id, part.file_data, part.filename, part.mime_type) == ("file-abc123", None, "", None)
    assert repr(part) == "ContentPart.file(file_id='file-abc123')"


@pytest.mark.parametrize(
    "d",
    [
        {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERg=="}},
        {"type": "file", "file": {"file_id": "file-1"}},
        {"type": "file", "file": {"filename": "a.pdf", "file_id": "file-1"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA==", "detail": "auto"}},
    ],
)
def test_the_dict_shapes_round_trip(d: dict[str, Any]) -> None:
    assert ContentPart.from_dict(d).to_dict() == d
    assert Message.from_dict({"role": "user", "content": [d]}).to_dict() == {"role": "user", "content": [d]}


@pytest.mark.parametrize(
    ("d", "match"),
    [
        ({"type": "file"}, "needs a 'file' dict"),
        ({"type": "file", "file": {"filename": "a.pdf"}}, "exactly one of 'file_data'"),
        ({"type": "file", "file": {"file_data": "data:,", "file_id": "f"}}, "exactly one of 'file_data'"),
        ({"type": "video"}, "expected 'text', 'image_url' or 'file'"),
    ],
)
def test_bad_dicts_are_refused(d: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ContentPart.from_dict(d)


# --- messages, concatenation, checkpoints ----------------------------------------------------


def test_a_user_message_with_image_and_file_parts() -> None:
    msg = Message.user(["What is in these?", ContentPart.image(PNG), ContentPart.file(PDF, filename="r.pdf")])
    assert [p.type for p in msg.user_input_multi_content] == ["text", "image_url", "file"]
    assert msg.to_dict()["content"][2] == {
        "type": "file",
        "file": {"filename": "r.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
    }
    assert codec.decode(codec.encode(msg)) == msg
    assert Message.from_dict(msg.to_dict()) == msg


def test_concatenation_merges_text_parts_and_keeps_images_and_files() -> None:
    image, file = ContentPart.image(PNG), ContentPart.file(file_id="f-1")
    chunks = [
        Message(role="user", user_input_multi_content=["a"]),
        Message(user_input_multi_content=["b", image]),
        Message(user_input_multi_content=[file, "c", "d"]),
    ]
    assert concat_messages(chunks).user_input_multi_content == (ContentPart("ab"), image, file, ContentPart("cd"))


parts = st.one_of(
    st.builds(ContentPart, st.text(max_size=8)),
    st.builds(
        lambda data, mime, detail: ContentPart.image(data, mime_type=mime, detail=detail),
        st.binary(min_size=1, max_size=64),
        st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"]),
        st.sampled_from(["", "low", "high", "auto"]),
    ),
    st.builds(
        lambda data, name, mime: ContentPart.file(data, filename=name, mime_type=mime),
        st.binary(min_size=1, max_size=64),
        st.text(min_size=1, max_size=12),
        st.sampled_from(
            ["application/pdf", "text/plain", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"]
        ),
    ),
    st.builds(lambda fid: ContentPart.file(file_id=fid), st.text(min_size=1, max_size=12)),
)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=300))
def test_a_data_url_carries_exactly_the_bytes(data: bytes) -> None:
    for part, payload in [
        (ContentPart.image(data, mime_type="image/png"), lambda p: p.url),
        (ContentPart.file(data, filename="f", mime_type="application/pdf"), lambda p: p.file_data),
    ]:
        head, _, tail = payload(part).partition(",")
        assert head.endswith(";base64")
        assert base64.b64decode(tail, validate=True) == data


@settings(max_examples=200, deadline=None)
@given(st.lists(parts, min_size=1, max_size=5), st.text(max_size=5))
def test_parts_round_trip_through_dicts_the_codec_and_copies(ps: list[ContentPart], text: str) -> None:
    for p in ps:
        assert ContentPart.from_dict(p.to_dict()) == p
    msg = Message(role="user", content=text, user_input_multi_content=ps)
    assert Message.from_dict(msg.to_dict()) == msg
    for kw in [{"format_version": 1}, {"format_version": 2}, {"compress": True}]:
        assert codec.decode(codec.encode(msg, **kw)) == msg
    assert msg.copy() == msg


# --- ScriptedModel and tools ----------------------------------------------------------------


def test_scripted_model_records_the_parts_it_was_sent() -> None:
    model = ScriptedModel(["a cat"])
    question = Message.user(["What is this?", ContentPart.image(PNG)])
    events = list(Runner(ChatModelAgent("eyes", model=model)).run([question]))
    assert events[-1].message_output is not None
    [call] = model.calls
    assert call.messages[-1].user_input_multi_content == (ContentPart("What is this?"), ContentPart.image(PNG))


def _calls_tool(name: str) -> Message:
    return Message.assistant(
        tool_calls=[{"id": "call_1", "type": "function", "function": {"name": name, "arguments": "{}"}}]
    )


def test_a_tool_returning_an_image_reaches_the_model_in_its_tool_message() -> None:
    @tool
    def screenshot() -> list[str | ContentPart]:
        """Takes a screenshot."""
        return ["the screen:", ContentPart.image(PNG)]

    model = ScriptedModel([_calls_tool("screenshot"), "I see a login form"])
    events = list(Runner(ChatModelAgent("eyes", model=model, tools=[screenshot])).query("look"))
    expected = Message(
        role="tool",
        content="the screen:",
        tool_call_id="call_1",
        tool_name="screenshot",
        user_input_multi_content=[ContentPart.image(PNG)],
    )
    tool_event = events[1].message_output
    assert tool_event is not None and tool_event.message == expected
    assert model.calls[1].messages[-1] == expected


def test_a_tool_returning_a_single_part_and_send_tool_parts_from_a_base_tool_flavour() -> None:
    @tool
    def photo() -> ContentPart:
        """A photo."""
        return ContentPart.image("https://example.invalid/p.jpg")

    @tool
    async def scan() -> str:
        """Scans a page."""
        send_tool_parts(ContentPart.file(PDF, filename="page.pdf"))
        return "scanned"

    model = ScriptedModel([_calls_tool("photo"), _calls_tool("scan"), "done"])
    list(Runner(ChatModelAgent("eyes", model=model, tools=[photo, scan])).query("go"))
    sent = model.calls[1].messages[-1]
    assert (sent.content, sent.user_input_multi_content) == ("", (ContentPart.image("https://example.invalid/p.jpg"),))
    sent = model.calls[2].messages[-1]
    assert (sent.content, sent.user_input_multi_content) == ("scanned", (ContentPart.file(PDF, filename="page.pdf"),))


def test_parts_outside_a_tool_call() -> None:
    @tool
    def photo() -> list[Any]:
        """A photo."""
        return ["x", ContentPart.image("https://example.invalid/p.jpg")]

    import asyncio

    # Called directly, nothing carries the parts: the result is their dicts as JSON.
    assert json.loads(asyncio.run(photo.invoke("{}"))) == [
        "x",
        {"type": "image_url", "image_url": {"url": "https://example.invalid/p.jpg"}},
    ]
    with pytest.raises(RuntimeError, match="outside a tool call"):
        send_tool_parts(ContentPart.image(PNG))


def test_a_list_mixing_parts_and_other_values_is_refused() -> None:
    @tool
    def bad() -> list[Any]:
        """Bad."""
        return [ContentPart.image(PNG), 3]

    model = ScriptedModel([_calls_tool("bad"), "ok"])
    list(Runner(ChatModelAgent("a", model=model, tools=[bad])).query("go"))
    assert "holds str and ContentPart items only" in model.calls[1].messages[-1].content
