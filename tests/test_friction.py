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
    return ChatModelAgent(name, f"the {name} agent", "", ScriptedModel(script), tools or [])


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
    seq = SequentialAgent("seq", "one step", [router])
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
