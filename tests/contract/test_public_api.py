"""The public surface a user reads: rillet.__all__ pinned, every public name importable and
documented, module __all__ lists free of internals, and the API points of the public-surface
review (named tuples, the peek_message name, the private interrupt tree)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import re
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import rillet
from rillet import (
    AgentAction,
    InterruptState,
    Message,
    ResumeContext,
    event_from_message,
    get_interrupt_state,
    get_resume_context,
    peek_message,
    stream_from_list,
)

PUBLIC = {
    # messages and streams
    "NO_VALUE", "ConcatError", "ContentPart", "FunctionCall", "Message", "MessageAccumulator",
    "AgenticMessage", "AnyMessage", "ContentBlock", "MessageConversionError", "MessageT",
    "ResponseMeta", "SourceEOF", "StreamEOF", "StreamReader", "StreamWriter", "ToolCall", "Usage",
    "aconcat_message_stream", "concat_message_stream", "concat_messages", "convert_stream",
    "merge_named_streams", "merge_streams", "pipe", "stream_from_list",
    # channels and event iterators
    "EMPTY", "Channel", "ChannelClosed", "EndOfStream", "EventGenerator", "EventIterator", "new_event_pair",
    # events
    "AgentAction", "AgentEvent", "AgentOutput", "BreakLoopAction", "MessageVariant", "RunPath", "RunStep",
    "TransferToAgentAction", "apeek_message", "event_from_message", "new_break_loop_action",
    "new_exit_action", "new_transfer_to_agent_action", "peek_message",
    # agents
    "Agent", "AgentCallback", "AgentInput", "BaseAgent", "CallbackContext", "RunIterator", "StateDelta",
    "ChatModelAgent", "ExceedMaxIterationsError", "ModelContext", "OutputValidationError", "ToolCallContext",
    "ToolCallError",
    # guardrails
    "GuardrailContext", "GuardrailError", "GuardrailRejectedError", "GuardrailRejection", "GuardrailRetry",
    "InputGuardrail", "InputRejectedError", "OutputGuardrail", "OutputRejectedError",
    # middlewares
    "ChatModelAgentContext", "ChatModelAgentMiddleware", "ChatModelAgentState", "MiddlewareError",
    "delete_run_local_value",
    "get_run_local_value", "send_event", "set_run_local_value",
    "AgentTool", "AgentToolError", "FlowAgent", "HistoryEntry", "LoopAgent", "ParallelAgent",
    "SequentialAgent", "TransferError", "set_sub_agents", "with_deterministic_transfer_to",
    "with_disallow_transfer_to_parent", "with_history_rewriter",
    # tools
    "ApprovalDecision", "BaseTool", "ExitTool", "FunctionTool", "ToolArgumentsError", "ToolInfo", "approve",
    "as_tool", "edit", "reject", "requires_approval", "send_tool_gen_action", "tool", "Toolset",
    # runs
    "ModelInfo", "RunInfo", "RunObserver", "Runner", "RunConfig", "RunLimitExceededError", "LiveRequestQueue", "add_session_value", "add_session_values", "get_session_value", "get_session_values",
    # plugins and ending an invocation
    "InvocationEnded", "LoggingPlugin", "Plugin", "end_invocation",
    # interrupts
    "InterruptCtx", "InterruptInfo", "InterruptState", "Interrupted", "ResumeContext", "composite_interrupt",
    "composite_interrupt_event", "get_interrupt_state", "get_resume_context", "interrupt", "interrupt_event",
    "stateful_interrupt", "stateful_interrupt_event",
    # checkpoints
    "CheckpointAgentMismatchError", "CheckpointClaimedError", "CheckpointCorruptError", "CheckpointError",
    "CheckpointNotFoundError", "CheckpointStore", "DecodeError", "EncodeError", "InMemoryCheckpointStore",
    "SqliteCheckpointStore", "codec",
    # sessions
    "InMemorySessionStore", "LastTurns", "SessionBusyError", "SessionError", "SessionStore", "SqliteSessionStore",
    "SummarizeOldest", "TokenBudget",
    # models
    "AnthropicChatModel", "ChatModel", "FallbackModel", "ModelCall", "OpenAIChatModel", "OpenAIResponsesModel",
    "ScriptExhaustedError", "ScriptedModel",
    # base error, version, deprecated aliases
    "RilletError", "__version__", "aget_message", "get_message",
}  # fmt: skip

# Internals that once leaked through a module's __all__.
INTERNALS = {
    "advance_in", "current_run", "dump", "flow_of", "gen_transfer_messages", "InterruptSignal", "ResumePoint",
    "ResumeScope", "rewrite_message", "run_events", "RunContext", "seal", "Session", "agent_binding",
    "agent_tree", "check_binding",
}  # fmt: skip


def private_module(name: str | None) -> bool:
    """A rillet module whose name has a private segment; the Rust core (rillet._native) is
    where the message and stream types live, so it counts as public."""
    if not name or not name.startswith("rillet.") or name == "rillet._native":
        return False
    return any(part.startswith("_") for part in name.split(".")[1:])


def peer_script(name: str) -> bool:
    """A peer's bench script: run with that framework's own Python, it imports what rillet's does not have."""
    return name.startswith("rillet.benchmarks.peers.bench_") and name != "rillet.benchmarks.peers.bench_rillet"


def public_modules() -> list[ModuleType]:
    names = [
        m.name
        for m in pkgutil.walk_packages(rillet.__path__, "rillet.")
        if not private_module(m.name) and not peer_script(m.name)
    ]
    return [rillet, *(importlib.import_module(n) for n in names)]


def test_the_top_level_surface_is_pinned() -> None:
    assert len(rillet.__all__) == len(set(rillet.__all__)), "a name is listed twice"
    assert set(rillet.__all__) == PUBLIC


def test_star_import_gives_every_public_name() -> None:
    namespace: dict[str, Any] = {}
    exec("from rillet import *", namespace)
    assert PUBLIC <= set(namespace)


def the_table() -> dict[str, str]:
    """{name: the module defining it} from rillet's one table of public names (``_PUBLIC``)."""
    public: dict[str, tuple[str, ...]] = vars(rillet)["_PUBLIC"]
    names = [name for names in public.values() for name in names]
    assert len(names) == len(set(names)), "a name is in the table twice"
    return {name: module for module, names in public.items() for name in names}


def test_all_and_dir_come_from_the_table_and_every_name_in_it_loads() -> None:
    table = the_table()
    assert rillet.__all__ == list(table)
    assert set(table) <= set(dir(rillet))
    for name, module in table.items():
        expected = (
            importlib.import_module(f"rillet.{name}")
            if module == "rillet"
            else getattr(importlib.import_module(module), name)
        )
        assert getattr(rillet, name) is expected, name


def test_type_checkers_see_the_table() -> None:
    """The imports under ``if TYPE_CHECKING:`` in rillet/__init__.py, what type checkers and
    editors see, are the table's: one ``from <module> import <name> as <name>`` (a re-export)
    each, and nothing else. scripts/public-api writes them from the table."""
    tree = ast.parse(Path(rillet.__file__).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    seen: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module, ast.unparse(node)
        for alias in node.names:
            assert alias.asname == alias.name, (
                f"{ast.unparse(node)}: not re-exported (write `{alias.name} as {alias.name}`)"
            )
            assert alias.name not in seen, f"{alias.name} imported twice"
            seen[alias.name] = node.module
    assert seen == the_table(), "run scripts/public-api"
    assert [ast.unparse(n) for n in block.orelse] == ["__all__ = list(_HOME)"]


def test_no_module_is_named_like_a_public_name() -> None:
    """Importing a submodule binds it on the package under its name: a module named like a
    public function or class (as rillet/interrupt.py was) would replace it there."""
    clashes = [
        n
        for n, m in the_table().items()
        if m != "rillet" and importlib.util.find_spec(f"rillet.{n}") and not inspect.ismodule(getattr(rillet, n))
    ]
    assert clashes == []


def test_import_rillet_loads_only_the_native_core_and_the_surface_no_extra() -> None:
    """`import rillet` loads the native module and nothing of the agent layer; the whole public
    surface loads none of the optional extras' libraries (nor httpx, pydantic: first use)."""
    code = (
        "import sys, rillet; first = sorted(m for m in sys.modules if m.startswith('rillet')); "
        "from rillet import *; "
        "extras = [m for m in ('httpx', 'pydantic', 'sqlite3', 'starlette', 'uvicorn', 'mcp', 'opentelemetry', "
        "'rich', 'click') if m in sys.modules]; print(first, extras)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    loaded = "'rillet', 'rillet._core', 'rillet._core.interpreter', 'rillet._core.moved', 'rillet._native'"
    assert out.strip() == f"[{loaded}] []"


def test_import_rillet_loads_no_standard_library_it_does_not_use() -> None:
    """`import rillet` stays cheap: the old-path finder does not pull in importlib.abc (which
    loads pathlib, tempfile, shutil and 30 more modules; the review of #32 measured 50 % more
    import time with it)."""
    code = (
        "import sys, rillet; print([m for m in ('importlib.abc', 'pathlib', 'tempfile', 'shutil') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_unknown_names_and_submodules() -> None:
    with pytest.raises(AttributeError, match="module 'rillet' has no attribute 'Nope'"):
        rillet.Nope  # noqa: B018
    assert rillet.models is importlib.import_module("rillet.models")  # any submodule, as before
    assert "ChatModelAgent" in dir(rillet)


def test_the_interrupt_function_has_no_module_of_its_name() -> None:
    """rillet.interrupt is the function; its module is rillet.run.interrupts (a module of the same
    name would be bound over the function when imported)."""
    code = "import rillet.run.interrupts, rillet; print(rillet.interrupt is rillet.run.interrupts.interrupt)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.strip() == "True"
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rillet.interrupt")


@pytest.mark.parametrize("name", sorted(PUBLIC - {"__version__"}))
def test_every_public_name_is_documented_and_from_a_public_module(name: str) -> None:
    obj = getattr(rillet, name)
    if inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj):
        assert inspect.getdoc(obj), f"rillet.{name} has no docstring"
    assert not private_module(getattr(obj, "__module__", None)), f"rillet.{name} is defined in a private module"


@pytest.mark.parametrize("module", public_modules(), ids=lambda m: m.__name__)
def test_module_all_lists_hold_only_public_names(module: ModuleType) -> None:
    names = getattr(module, "__all__", [])
    for name in names:
        obj = getattr(module, name)  # every listed name exists
        assert not name.startswith("_") or name == "__version__", f"{module.__name__}.__all__ lists {name}"
        assert name not in INTERNALS, f"{module.__name__}.__all__ exports the internal {name}"
        assert not private_module(getattr(obj, "__module__", None)), f"{module.__name__}.{name} is private"


def test_the_interrupt_tree_of_an_action_is_not_a_public_field() -> None:
    fields = AgentAction.__dataclass_fields__
    assert "signal" not in fields
    assert [f for f in fields if not f.startswith("_")] == [
        "exit", "interrupted", "transfer_to_agent", "break_loop", "customized_action", "state_delta",
    ]  # fmt: skip


def test_interrupt_state_and_resume_context_are_named_and_still_unpack() -> None:
    state = get_interrupt_state()  # outside a resumed run
    assert isinstance(state, InterruptState)
    assert (state.was_interrupted, state.has_state, state.state) == (False, False, None)
    was, has, value = state
    assert (was, has, value) == (False, False, None)
    ctx = get_resume_context()
    assert isinstance(ctx, ResumeContext)
    assert ctx._fields == ("is_target", "has_data", "data")
    assert tuple(ctx) == (False, False, None)


def test_peek_message_reads_without_draining_and_get_message_is_its_deprecated_alias() -> None:
    event = event_from_message(None, stream_from_list([Message.assistant("Hel"), Message.assistant("lo")]))
    assert peek_message(event).content == "Hello"
    with pytest.warns(DeprecationWarning, match="peek_message"):
        assert rillet.get_message(event).content == "Hello"
    assert event.message_output.get_message().content == "Hello"  # the event still had its stream


def test_apeek_message_and_its_deprecated_alias() -> None:
    import asyncio

    async def main() -> tuple[str, str]:
        event = event_from_message(None, stream_from_list([Message.assistant("a"), Message.assistant("b")]))
        first = (await rillet.apeek_message(event)).content
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            second = (await rillet.aget_message(event)).content
        assert [w.category for w in seen] == [DeprecationWarning]
        return first, second

    assert asyncio.run(main()) == ("ab", "ab")


def _documented_calls() -> list[tuple[str, list[str]]]:
    """``Name(args)`` of a rillet class in docs/eino-mapping.md, with the arguments it shows."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "eino-mapping.md").read_text()
    calls = []
    for name, args in re.findall(r"`(?<![.\w])([A-Z]\w*)\(([^`)]*)\)", text):
        if inspect.isclass(getattr(rillet, name, None)):
            calls.append((name, [a.strip() for a in args.split(",") if a.strip()]))
    return calls


@pytest.mark.parametrize(("name", "args"), _documented_calls(), ids=lambda x: str(x))
def test_eino_mapping_shows_by_position_only_what_may_be_passed_by_position(name: str, args: list[str]) -> None:
    """A Go user copying a row must not get a TypeError: an argument shown before ``*`` (and
    without ``=``) must be positional in the signature."""
    params = inspect.signature(getattr(rillet, name)).parameters
    positional = [p for p, v in params.items() if v.kind in (v.POSITIONAL_ONLY, v.POSITIONAL_OR_KEYWORD)]
    shown = []
    for a in args:
        if a == "*" or "=" in a or a == "...":
            break
        shown.append(a)
    assert len(shown) <= len(positional), f"{name}({', '.join(args)}) but only {positional} are positional"
