"""rillet.errors holds every exception class of rillet, and the native core raises those."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import re
import types
from pathlib import Path

import pytest
import rillet
import rillet.errors as E
from rillet import _native, codec

# Each class and its exact bases: the isinstance relations users rely on.
HIERARCHY: dict[str, tuple[type[BaseException], ...]] = {
    "RilletError": (Exception,),
    "EndOfStream": (E.RilletError,),
    "ChannelClosed": (E.EndOfStream,),
    "StreamEOF": (E.EndOfStream,),
    "ConcatError": (E.RilletError, ValueError),
    "MessageConversionError": (E.RilletError, ValueError),
    "DecodeError": (E.RilletError, ValueError),
    "EncodeError": (E.RilletError, TypeError),
    "CheckpointError": (E.RilletError,),
    "CheckpointNotFoundError": (E.CheckpointError, LookupError),
    "CheckpointClaimedError": (E.CheckpointError,),
    "CheckpointCorruptError": (E.CheckpointError, E.DecodeError),
    "CheckpointAgentMismatchError": (E.CheckpointError,),
    "SessionError": (E.RilletError,),
    "SessionBusyError": (E.SessionError,),
    "RecordedError": (E.RilletError,),
    "Interrupted": (BaseException,),
    "TransferError": (E.RilletError,),
    "RunLimitExceededError": (E.RilletError,),
    "ToolArgumentsError": (E.RilletError, ValueError),
    "ToolCallError": (E.RilletError,),
    "ExceedMaxIterationsError": (E.RilletError,),
    "OutputValidationError": (E.RilletError, ValueError),
    "AgentToolError": (E.RilletError,),
    "ModelError": (E.RilletError,),
    "AuthenticationError": (E.ModelError,),
    "ModelNotFoundError": (E.ModelError, LookupError),
    "InvalidRequestError": (E.ModelError, ValueError),
    "ContextLengthError": (E.InvalidRequestError,),
    "RateLimitError": (E.ModelError,),
    "ServerError": (E.ModelError,),
    "OverloadedError": (E.ServerError,),
    "ModelTimeoutError": (E.ModelError, TimeoutError),
    "ModelConnectionError": (E.ModelError, ConnectionError),
    "IncompleteStreamError": (E.ModelConnectionError,),
    "MalformedChunkError": (E.ModelError, ValueError),
    "ModelStreamError": (E.ModelError,),
    "StreamLimitError": (E.ModelError, ValueError),
    "UnsupportedContentError": (E.ModelError, ValueError),
    "ScriptExhaustedError": (E.RilletError,),
    "MiddlewareError": (E.RilletError,),
    "GuardrailError": (E.RilletError,),
    "GuardrailRejectedError": (E.GuardrailError,),
    "InputRejectedError": (E.GuardrailRejectedError,),
    "OutputRejectedError": (E.GuardrailRejectedError,),
    "McpError": (E.RilletError,),
    "A2AError": (E.RilletError,),
    "A2ACardError": (E.A2AError,),
    "A2ATimeoutError": (E.A2AError, TimeoutError),
    "McpToolError": (E.McpError,),
    "McpConnectionError": (E.McpError, ConnectionError),
    "LiveError": (E.RilletError,),
    "LiveNotSupportedError": (E.LiveError, TypeError),
    "LiveQueueClosedError": (E.LiveError,),
    "ArtifactError": (E.RilletError, ValueError),
    "EventStreamError": (E.RilletError,),
    "EventStreamConnectionError": (E.EventStreamError, ConnectionError),
    "EventStreamTimeoutError": (E.EventStreamError, TimeoutError),
    "EventStreamGapError": (E.EventStreamError,),
    "EvalSetError": (E.RilletError, ValueError),
    "CassetteError": (E.RilletError,),
    "PortUnavailableError": (E.RilletError, OSError),
    "Fatal": (BaseException,),  # internal: not in __all__
}

# Where each class was importable before rillet.errors existed: it still is, as the same class.
OLD_HOMES = {
    "rillet": [
        "AgentToolError",
        "ChannelClosed",
        "DecodeError",
        "EncodeError",
        "EndOfStream",
        "ExceedMaxIterationsError",
        "Interrupted",
        "RilletError",
        "ScriptExhaustedError",
        "ToolArgumentsError",
        "ToolCallError",
        "TransferError",
    ],
    "rillet.codec": ["DecodeError", "EncodeError"],
    "rillet.data.schema": ["ConcatError", "StreamEOF"],
    "rillet.checkpoint": [
        "CheckpointAgentMismatchError",
        "CheckpointClaimedError",
        "CheckpointCorruptError",
        "CheckpointError",
        "CheckpointNotFoundError",
    ],
    "rillet.checkpoint.payload": [
        "CheckpointClaimedError",
        "CheckpointCorruptError",
        "CheckpointError",
        "CheckpointNotFoundError",
        "RecordedError",
    ],
    "rillet.checkpoint.binding": ["CheckpointAgentMismatchError"],
    "rillet.models": ["ScriptExhaustedError"],
    "rillet.models.errors": [
        n
        for n in HIERARCHY
        if n.startswith(
            ("Model", "Auth", "Invalid", "Context", "RateLimit", "Server", "Incomplete", "Malformed", "StreamLimit")
        )
    ],
    "rillet.models.scripted": ["ScriptExhaustedError"],
    "rillet.flow": ["TransferError"],
    "rillet.run.interrupts": ["Interrupted"],
    "rillet.tools": ["ToolArgumentsError"],
    "rillet.chatmodel": ["ExceedMaxIterationsError", "ToolCallError"],
    "rillet.compose.agent_tool": ["AgentToolError"],
    "rillet._core.loop": ["Fatal"],
}


def _runs_in_a_peer_venv(name: str) -> bool:
    """The peers' bench scripts (and the LangChain/LangGraph pair's shared helper) import their
    framework and ``_common`` from their folder: they run with the framework's own Python."""
    leaf = name.removeprefix("rillet.benchmarks.peers.")
    return leaf != name and ((leaf.startswith("bench_") and leaf != "bench_rillet") or leaf == "_lc_common")


def _rillet_modules() -> list[types.ModuleType]:
    walked = [m.name for m in pkgutil.walk_packages(rillet.__path__, "rillet.")]
    names = ["rillet"] + [n for n in walked if not _runs_in_a_peer_venv(n)]
    return [importlib.import_module(n) for n in names]


def test_every_exception_class_of_rillet_is_defined_in_rillet_errors() -> None:
    strays = []
    for mod in _rillet_modules():
        for attr, obj in vars(mod).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__.startswith("rillet"):
                if obj.__module__ != "rillet.errors" or getattr(E, obj.__name__, None) is not obj:
                    strays.append(f"{mod.__name__}.{attr} ({obj.__module__}.{obj.__qualname__})")
    assert strays == [], "exception classes defined outside rillet/errors.py: " + ", ".join(strays)


def test_errors_lists_every_public_class_and_nothing_else() -> None:
    defined = {n for n, o in vars(E).items() if inspect.isclass(o) and o.__module__ == "rillet.errors"}
    assert defined == set(HIERARCHY)
    assert set(E.__all__) == set(HIERARCHY) - {"Fatal"}


@pytest.mark.parametrize("name", list(HIERARCHY))
def test_hierarchy_is_unchanged(name: str) -> None:
    assert getattr(E, name).__bases__ == HIERARCHY[name]


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in OLD_HOMES.items() for n in names])
def test_old_import_paths_give_the_same_class(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is getattr(E, name)


def test_messages_and_attributes_are_unchanged() -> None:
    e = E.StreamLimitError("too long", limit="max_sse_line_bytes", line=3)
    assert (str(e), e.limit, e.line, e.status_code) == ("too long", "max_sse_line_bytes", 3, None)
    assert str(E.RecordedError("ValueError", "bad")) == "ValueError: bad"
    t = E.ToolArgumentsError("add", ["x is missing", "y is not an int"])
    assert (str(t), t.tool_name) == ("tool 'add': x is missing; y is not an int", "add")


# --- the native core raises rillet.errors' classes ---------------------------------------------


def test_native_decode_and_encode_errors() -> None:
    with pytest.raises(E.DecodeError) as info:
        codec.decode(b"not a checkpoint")
    assert type(info.value) is E.DecodeError and isinstance(info.value, ValueError)
    with pytest.raises(E.EncodeError) as enc:
        codec.encode(object())
    assert type(enc.value) is E.EncodeError and isinstance(enc.value, TypeError)


def test_native_concat_error() -> None:
    with pytest.raises(E.ConcatError) as info:
        rillet.concat_messages([rillet.Message.assistant("a"), None])  # type: ignore[list-item]
    assert type(info.value) is E.ConcatError and isinstance(info.value.field, str)


def test_native_sse_errors() -> None:
    parser = _native.ChatStreamParser(max_sse_line_bytes=16)
    with pytest.raises(E.StreamLimitError) as limit:
        parser.feed(b"data: " + b"x" * 64)
    assert type(limit.value) is E.StreamLimitError and limit.value.limit == "max_sse_line_bytes"
    with pytest.raises(E.MalformedChunkError):
        _native.ChatStreamParser().feed(b"data: {not json\n\n")
    with pytest.raises(E.ModelStreamError):
        _native.ChatStreamParser().feed(b'data: {"error": {"message": "boom", "code": "x"}}\n\n')
    with pytest.raises(E.IncompleteStreamError):
        _native.ChatStreamParser().finish()


def test_native_end_of_stream_errors() -> None:
    ch: rillet.Channel[int] = rillet.Channel()
    ch.close()
    with pytest.raises(E.ChannelClosed) as closed:
        ch.recv()
    assert type(closed.value) is E.ChannelClosed and isinstance(closed.value, E.EndOfStream)
    assert list(ch) == []  # iteration ends on the class it now raises
    with pytest.raises(E.StreamEOF):
        _native.stream_from_list([]).recv()
    assert list(_native.stream_from_list([1, 2])) == [1, 2]
    reader, writer = _native.pipe()
    writer.close()
    with pytest.raises(E.ChannelClosed):
        writer.send(1)
    reader.close()


def test_a_missing_class_is_an_import_error_naming_it() -> None:
    fake = types.ModuleType("fake_errors")
    for name in HIERARCHY:
        setattr(fake, name, getattr(E, name))
    _native._init_errors(fake)  # complete: accepted
    del fake.StreamEOF
    with pytest.raises(ImportError, match="StreamEOF"):
        _native._init_errors(fake)
    fake.StreamEOF = int  # type: ignore[attr-defined]
    with pytest.raises(ImportError, match="StreamEOF"):
        _native._init_errors(fake)
    with pytest.raises(E.StreamEOF):  # the table filled at import stays
        _native.stream_from_list([]).recv()


# --- errors cross processes and match their documentation ------------------------------------


def _instance(name: str) -> BaseException:
    """One instance of each class, built as rillet builds it (extra arguments and attributes)."""
    special: dict[str, BaseException] = {
        "RecordedError": E.RecordedError("ValueError", "bad"),
        "Interrupted": rillet.interrupt({"question": "ok?"}),
        "ToolArgumentsError": E.ToolArgumentsError("add", ["x is missing"]),
        "OutputValidationError": E.OutputValidationError("geo", "City", 2, "population: Field required"),
        "RunLimitExceededError": E.RunLimitExceededError("max_transfers", 100, 101, "a -> b -> a", "; loop"),
        "StreamLimitError": E.StreamLimitError("too long", limit="max_sse_event_bytes", line=7),
        "GuardrailRejectedError": E.GuardrailRejectedError("a", "no_pii", "a card number", {"at": 3}),
        "InputRejectedError": E.InputRejectedError("a", "no_secrets", "asks for a password"),
        "OutputRejectedError": E.OutputRejectedError("a", "polite", "rude", None),
    }
    if name in special:
        return special[name]
    cls = getattr(E, name)
    return cls("boom", status_code=429, line=2) if issubclass(cls, E.ModelError) else cls("boom")


@pytest.mark.parametrize("name", [n for n in HIERARCHY if n != "Fatal"])  # Fatal: never leaves a run
def test_every_error_survives_pickling_with_its_attributes(name: str) -> None:
    """As a process pool or a task queue hands an exception back: same class, message and
    attributes (the classes now live in rillet.errors, and some take other arguments than
    their message)."""
    e = _instance(name)
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is type(e) and back.args == e.args and str(back) == str(e)
    assert {k: v for k, v in vars(back).items() if k != "signal"} == {k: v for k, v in vars(e).items() if k != "signal"}


def test_errors_raised_by_the_native_core_survive_pickling() -> None:
    with pytest.raises(E.StreamLimitError) as limit:
        _native.ChatStreamParser(max_sse_line_bytes=16).feed(b"data: " + b"x" * 64)
    with pytest.raises(E.DecodeError) as decode:
        codec.decode(b"not a checkpoint")
    for e in (limit.value, decode.value):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e) and vars(back) == vars(e)


def _documented_tree() -> dict[str, tuple[str, ...]]:
    """Each class of docs/errors.md's tree and its bases as drawn: the parent line, then the
    classes in parentheses."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "errors.md").read_text()
    block = text.split("## The tree", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    parents: list[tuple[int, str]] = []
    out: dict[str, tuple[str, ...]] = {}
    for line in block.splitlines():
        m = re.match(r"^([│ ]*[├└]── )?(\w+)(?: \(([\w, ]+)\))?", line)
        if m is None or not m.group(2)[0].isupper():
            continue
        depth = len(m.group(1) or "")
        while parents and parents[-1][0] >= depth:
            parents.pop()
        extra = tuple(b.strip() for b in m.group(3).split(",")) if m.group(3) else ()
        if parents:
            out[m.group(2)] = (parents[-1][1], *extra)
        parents.append((depth, m.group(2)))
    return out


def test_the_tree_in_errors_md_is_the_real_hierarchy() -> None:
    drawn = _documented_tree()
    real = {n: tuple(b.__name__ for b in bases) for n, bases in HIERARCHY.items()}
    assert drawn == real
