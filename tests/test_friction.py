"""Friction a new user meets: running the agent given to set_sub_agents, run()'s input forms,
logging, unknown tool arguments, undescribed tools, approval helpers, strict response formats
and the demo's prompt and key check."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rillet import (
    AgentTool,
    ChatModelAgent,
    FunctionCall,
    Message,
    Runner,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    set_sub_agents,
    with_deterministic_transfer_to,
)


def transfer(to: str, id: str = "t1") -> Message:
    call = FunctionCall("transfer_to_agent", json.dumps({"agent_name": to}))
    return Message.assistant(tool_calls=[ToolCall(index=0, id=id, function=call)])


def agent(name: str, script: list[Any], tools: list[Any] | None = None) -> ChatModelAgent:
    return ChatModelAgent(name, description=f"the {name} agent", model=ScriptedModel(script), tools=tools or [])


def texts(events: list[Any]) -> list[tuple[str, str]]:
    out = []
    for ev in events:
        assert ev.error is None, ev.error
        m = ev.message_output.get_message()
        out.append((ev.agent_name, m.content or m.tool_calls[0].function.name))
    return out


# --- set_sub_agents: the original agent is runnable -------------------------------------


def test_running_the_agent_given_to_set_sub_agents_keeps_its_sub_agents() -> None:
    router = agent("router", [transfer("billing")])
    billing = agent("billing", ["your bill is 12 EUR"])
    set_sub_agents(router, [billing])  # the returned wrapper is not kept
    events = list(Runner(router).query("my bill?"))
    assert texts(events)[-1] == ("billing", "your bill is 12 EUR")


def test_an_agent_tool_and_a_workflow_of_the_original_agent_keep_its_sub_agents() -> None:
    router = agent("router", [transfer("billing")])
    set_sub_agents(router, [agent("billing", ["12 EUR"])])
    seq = SequentialAgent("seq", description="one step", sub_agents=[router])
    assert texts(list(Runner(seq).query("bill?")))[-1] == ("billing", "12 EUR")

    router2 = agent("router2", [transfer("billing2")])
    set_sub_agents(router2, [agent("billing2", ["13 EUR"])])
    call = ToolCall(index=0, id="a1", function=FunctionCall("router2", '{"request": "bill?"}'))
    outer = agent("outer", [Message.assistant(tool_calls=[call]), "done"], [AgentTool(router2)])
    events = list(Runner(outer).query("bill?"))
    assert ("outer", "13 EUR") in texts(events)


def test_a_transfer_from_an_agent_without_sub_agents_says_how_to_wire_them() -> None:
    router = with_deterministic_transfer_to(agent("router", ["over to billing"]), ["billing"])
    events = list(Runner(router).query("x"))
    msg = str(events[-1].error)
    assert "agent 'billing' not found" in msg
    assert "set_sub_agents(router, [...]) and run the agent it returns" in msg


# --- Runner.run's input ------------------------------------------------------------------


def test_run_with_a_text_says_to_use_query() -> None:
    with pytest.raises(TypeError, match=r"use runner.query\(text\)"):
        Runner(agent("a", ["hi"])).run("hello")  # type: ignore[arg-type]


def test_run_with_one_message_runs_it() -> None:
    a = agent("a", ["hi"])
    assert texts(list(Runner(a).run(Message.user("hello")))) == [("a", "hi")]
    assert [m.content for m in a.model.calls[0].messages] == ["hello"]


def test_run_reads_openai_style_dicts() -> None:
    a = agent("a", ["hi"])
    history = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hey"},
        Message.user("how are you?"),
    ]
    assert texts(list(Runner(a).run(history))) == [("a", "hi")]
    assert [(m.role, m.content) for m in a.model.calls[0].messages] == [
        ("user", "hello"),
        ("assistant", "hey"),
        ("user", "how are you?"),
    ]


def test_run_refuses_a_dict_without_a_known_role_and_other_items() -> None:
    runner = Runner(agent("a", ["hi"]))
    with pytest.raises(ValueError, match=r"item 0 is a dict with role None; a message dict needs a role"):
        runner.run([{"content": "hello"}])
    with pytest.raises(TypeError, match=r"item 1 is int, expected rillet.Message \(or an OpenAI-style dict"):
        runner.run([Message.user("x"), 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="expected a list of rillet.Message, got int"):
        runner.run(3)  # type: ignore[arg-type]


# --- logging ----------------------------------------------------------------------------


def call_msg(name: str, args: str, id: str = "c1") -> Message:
    return Message.assistant(tool_calls=[ToolCall(index=0, id=id, function=FunctionCall(name, args))])


def test_the_library_installs_no_handler_but_a_null_one() -> None:
    import logging

    handlers = logging.getLogger("rillet").handlers
    assert [type(h) for h in handlers] == [logging.NullHandler]


@pytest.mark.parametrize("streaming_tool", [False, True])
def test_a_tool_error_sent_to_the_model_is_logged(caplog: pytest.LogCaptureFixture, streaming_tool: bool) -> None:
    import logging

    from rillet import tool

    if streaming_tool:

        def lookup(key: str):  # type: ignore[no-untyped-def]
            """Looks a key up."""
            yield "x"
            raise KeyError(key)
    else:

        def lookup(key: str) -> str:  # type: ignore[misc]
            """Looks a key up."""
            raise KeyError(key)

    a = agent("a", [call_msg("lookup", '{"key": "k"}'), "sorry"], [tool(lookup)])
    with caplog.at_level(logging.DEBUG, logger="rillet"):
        events = list(Runner(a).query("x"))
    assert events[-1].message_output.get_message().content == "sorry"
    recs = [r for r in caplog.records if r.name == "rillet.chatmodel"]
    assert [r.levelname for r in recs] == ["WARNING", "DEBUG"]
    assert recs[0].getMessage() == "agent 'a': tool 'lookup' (call c1) failed, sent to the model: KeyError: 'k'"
    assert recs[0].exc_info is None
    assert recs[1].exc_info is not None and recs[1].exc_info[0] is KeyError


def test_model_retries_are_logged_with_status_and_wait(caplog: pytest.LogCaptureFixture) -> None:
    import asyncio
    import logging

    from rillet.models.openai import OpenAIChatModel
    from support.openai_server import FakeOpenAIServer, Reply

    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
    srv = FakeOpenAIServer()
    try:
        srv.script(
            Reply.json({"error": {"message": "busy"}}, 503, headers={"retry-after-ms": "20"}), Reply.json(completion)
        )
        model = OpenAIChatModel("m", base_url=srv.url, api_key="k", max_retries=2)
        with caplog.at_level(logging.INFO, logger="rillet"):
            reply = asyncio.run(asyncio.wait_for(model.generate([Message.user("hi")]), 20))
    finally:
        srv.close()
    assert reply.content == "ok"
    (rec,) = [r for r in caplog.records if r.name == "rillet.models.openai"]
    assert rec.levelname == "INFO"
    assert rec.getMessage() == f"{srv.url}/chat/completions: HTTP 503, retry 1 of 2 in 0.02 s"


def test_checkpoint_saves_and_loads_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from rillet import InMemoryCheckpointStore, requires_approval, tool
    from rillet.approval import approve

    def pay(amount: int) -> str:
        """Pays an amount."""
        return f"paid {amount}"

    a = agent("a", [call_msg("pay", '{"amount": 5}'), "done"], [requires_approval(tool(pay))])
    store = InMemoryCheckpointStore()
    runner = Runner(a, checkpoint_store=store)
    with caplog.at_level(logging.DEBUG, logger="rillet"):
        events = list(runner.query("pay 5", checkpoint_id="ck1"))
        ask = events[-1].action.interrupted.interrupt_contexts[0]
        size = len(store.get("ck1"))
        list(runner.resume("ck1", targets={ask.id: approve()}))
    lines = [r.getMessage() for r in caplog.records if r.name == "rillet.runner"]
    assert lines == [f"saved checkpoint ck1 ({size} bytes)", f"loaded checkpoint ck1 ({size} bytes)"]


# --- unknown arguments, undescribed tools, --delay ----------------------------------------


def test_unknown_tool_arguments_go_back_to_the_model_as_an_error() -> None:
    from rillet import tool

    calls: list[int] = []

    def add(a: int, b: int) -> int:
        """Adds two integers."""
        calls.append(a + b)
        return a + b

    a = agent("a", [call_msg("add", '{"a": 1, "b": 2, "c": 3}'), "fixed"], [tool(add)])
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


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_demo_refuses_a_negative_delay(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    from rillet.cli import main

    with pytest.raises(SystemExit) as e:
        main(["demo", "--delay", value])
    assert e.value.code == 2
    assert f"Invalid value for '--delay': must be a number of seconds >= 0, got {value}" in capsys.readouterr().err


# --- approval helpers ---------------------------------------------------------------------


def test_approval_helpers_are_exported_next_to_requires_approval() -> None:
    import rillet
    import rillet.approval

    for name in ("approve", "reject", "edit", "requires_approval", "ApprovalDecision"):
        assert name in rillet.__all__ and getattr(rillet, name) is getattr(rillet.approval, name)
    assert rillet.approve() == {"decision": "approve"}
    assert rillet.reject("too dear") == {"decision": "reject", "reason": "too dear"}
    assert rillet.edit({"amount": 3}) == {"decision": "edit", "arguments": {"amount": 3}}
    with pytest.raises(TypeError, match="edit.arguments.: arguments must be a dict"):
        rillet.edit('{"amount": 3}')  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reason must be a str"):
        rillet.reject(3)  # type: ignore[arg-type]


def test_edit_runs_the_tool_with_the_persons_arguments() -> None:
    from rillet import InMemoryCheckpointStore, edit, requires_approval, tool

    def pay(amount: int) -> str:
        """Pays an amount."""
        return f"paid {amount}"

    a = agent("a", [call_msg("pay", '{"amount": 500}'), "done"], [requires_approval(tool(pay))])
    runner = Runner(a, checkpoint_store=InMemoryCheckpointStore())
    ask = list(runner.query("pay", checkpoint_id="e"))[-1].action.interrupted.interrupt_contexts[0]
    events = list(runner.resume("e", targets={ask.id: edit({"amount": 5})}))
    assert events[0].message_output.get_message().content == "paid 5"


# --- strict response formats --------------------------------------------------------------


def _strict_models() -> list[Any]:
    import enum
    from typing import Annotated, Literal, Optional, Union

    from pydantic import BaseModel, Field

    class Color(enum.Enum):
        RED = "red"
        BLUE = "blue"

    class Point(BaseModel):
        x: float
        y: float = 0.0

    class Tag(BaseModel):
        """A label."""

        name: str = Field(description="the label's text")
        weight: int = 1

    class Shape(BaseModel):
        kind: Literal["circle", "square"]
        color: Color = Color.RED
        center: Point = Field(description="where it is")  # a $ref with a sibling: inlined
        corners: list[Point] = []
        tags: Optional[list[Tag]] = None
        label: str | None = None
        nested: dict[str, int] = {}

    class Node(BaseModel):  # recursive: the $ref stays
        value: int
        children: list[Node] = []

    class Cat(BaseModel):
        pet: Literal["cat"]
        meows: int

    class Dog(BaseModel):
        pet: Literal["dog"]
        barks: float

    class Owner(BaseModel):
        pet: Union[Cat, Dog] = Field(discriminator="pet")
        other: Annotated[Union[Cat, Dog, None], Field(description="a second pet")] = None
        best: Optional[Point] = Field(default=None, description="a favourite spot")
        scores: list[list[int]]
        mood: Color

    return [Point, Tag, Shape, Node, Owner]


@pytest.mark.parametrize("index", range(5))
def test_strict_schemas_match_the_openai_sdk(index: int) -> None:
    pytest.importorskip("openai")
    from openai.lib._pydantic import to_strict_json_schema
    from rillet.models.strict_schema import strict_json_schema

    model = _strict_models()[index]
    raw = model.model_json_schema()
    before = json.dumps(raw)
    assert strict_json_schema(raw) == to_strict_json_schema(model)
    assert json.dumps(raw) == before  # the input is not changed


def test_response_format_from_a_pydantic_class_is_strict() -> None:
    from rillet.models.openai import OpenAIChatModel

    owner = _strict_models()[4]
    body = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1").request_body(
        [Message.user("hi")], None, {"response_format": owner}, stream=False
    )
    fmt = body["response_format"]["json_schema"]
    assert fmt["strict"] is True and fmt["name"] == "Owner"
    schema = fmt["schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["pet", "other", "best", "scores", "mood"]
    best = schema["properties"]["best"]
    assert "default" not in best and best["description"] == "a favourite spot"
    assert all(d["additionalProperties"] is False for d in schema["$defs"].values() if d.get("type") == "object")


def test_strict_schema_refuses_what_it_cannot_read() -> None:
    from rillet.models.strict_schema import strict_json_schema

    with pytest.raises(ValueError, match="only local references"):
        strict_json_schema({"type": "object", "properties": {"a": {"$ref": "http://x/y", "description": "d"}}})
    with pytest.raises(ValueError, match="reference '#/\\$defs/Missing' points at nothing"):
        strict_json_schema({"properties": {"a": {"$ref": "#/$defs/Missing", "description": "d"}}})
    with pytest.raises(TypeError, match="the schema at #/properties/a is a list"):
        strict_json_schema({"properties": {"a": []}})


# --- the demo -----------------------------------------------------------------------------


def test_the_approval_prompt_shows_its_y_n_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from rich.console import Console
    from rillet.demo import _decide

    out = io.StringIO()
    console = Console(file=out, width=80, no_color=True)
    stdin = io.StringIO("n\n")
    stdin.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stdin", stdin)
    assert _decide(console, None, None) == {"decision": "reject", "reason": "the traveller declined"}
    assert out.getvalue() == "  Approve this call? [y/n] "


def test_demo_on_openai_without_a_key_stops_before_sending(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    from rillet.cli import main
    from rillet.models.openai import OpenAIChatModel

    async def no_request(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a request was sent")

    monkeypatch.setattr(OpenAIChatModel, "_post", no_request)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["demo", "--model", "openai", "--no-color", "--db", str(tmp_path / "d.db")]) == 2
    out = capsys.readouterr().out
    assert "--model openai: no OPENAI_API_KEY is set for https://api.openai.com/v1" in out
    assert "OPENAI_BASE_URL" in out and "Ollama" in out
    assert len(out.strip().splitlines()) == 1, out  # one line, not wrapped at the console's width


def test_a_keyless_local_endpoint_is_fine(monkeypatch: pytest.MonkeyPatch) -> None:
    from rillet.demo import make_chat_model, make_console, missing_key

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    assert missing_key(make_console(False), make_chat_model("openai")) is False


# --- found by a new-user pass: mistakes refused when the Runner is made, and no approval for nobody


def test_a_session_store_class_or_a_non_store_is_refused_when_the_runner_is_made() -> None:
    from rillet import InMemorySessionStore

    agent = ChatModelAgent("a", model=ScriptedModel(["hi"]))
    with pytest.raises(TypeError, match=r"got the class InMemorySessionStore \(pass an instance"):
        Runner(agent, session_store=InMemorySessionStore)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"session_store: str has no acquire, .*InMemorySessionStore\(\)"):
        Runner(agent, session_store="chat.db")  # type: ignore[arg-type]


def test_an_observer_class_or_a_bare_observer_is_refused_when_the_runner_is_made() -> None:
    from rillet import RunObserver

    class Printer(RunObserver):
        pass

    agent = ChatModelAgent("a", model=ScriptedModel(["hi"]))
    with pytest.raises(TypeError, match=r"got the class Printer \(pass an instance: Printer\(\)\)"):
        Runner(agent, observers=[Printer])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"expected a list of observers, got Printer \(pass \[observer\]\)"):
        Runner(agent, observers=Printer())  # type: ignore[arg-type]
    assert Runner(agent, observers=[Printer()]).observers  # an instance in a list is fine
