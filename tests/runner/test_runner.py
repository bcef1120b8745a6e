"""The Runner's front door: what run() accepts as input (text is refused for query(), one message,
OpenAI-style dicts), and mistakes refused when the Runner is made or a run is asked for."""

from __future__ import annotations

from typing import Any

import pytest
from rillet import ChatModelAgent, InMemoryCheckpointStore, Message, Runner, ScriptedModel
from support.calls import texts


def agent(name: str, script: list[Any], tools: list[Any] | None = None) -> ChatModelAgent:
    return ChatModelAgent(name, description=f"the {name} agent", model=ScriptedModel(script), tools=tools or [])


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
    with pytest.raises(
        TypeError, match=r"item 1 is int, expected rillet.Message or AgenticMessage \(or an OpenAI-style dict"
    ):
        runner.run([Message.user("x"), 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="expected a list of rillet.Message, got int"):
        runner.run(3)  # type: ignore[arg-type]


def test_run_refuses_messages_of_both_types() -> None:
    """A Message among AgenticMessages (or the reverse) was taken: the model got one
    conversation of two types."""
    from rillet import AgenticMessage

    runner = Runner(agent("a", ["hi"]))
    with pytest.raises(
        TypeError, match=r"item 1 \(AgenticMessage\) and item 0 \(Message\) differ; a run takes one message type"
    ):
        runner.run([Message.user("x"), AgenticMessage.user("y")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"item 1 \(Message\) and item 0 \(AgenticMessage\) differ"):
        runner.run([AgenticMessage.user("y"), {"role": "user", "content": "x"}])  # type: ignore[list-item]


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


def test_misspelled_run_options_are_refused() -> None:
    runner = Runner(ChatModelAgent("a", model=ScriptedModel(["x"])), checkpoint_store=InMemoryCheckpointStore())
    with pytest.raises(TypeError, match="chekpoint_id"):
        runner.query("x", chekpoint_id="k")  # type: ignore[call-arg]
