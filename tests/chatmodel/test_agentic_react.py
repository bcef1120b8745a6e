"""A ChatModelAgent runs its ReAct loop on AgenticMessage end to end: the model's tool-call
blocks are executed, the results join the conversation as tool_result blocks, the events
carry AgenticMessages (streamed chunks concatenated in Rust), and an interrupted run's
checkpoint saves and resumes the block-list conversation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgenticMessage,
    ChatModelAgent,
    ContentBlock,
    InMemoryCheckpointStore,
    Message,
    Runner,
    ScriptedModel,
    approve,
    concat_messages,
    requires_approval,
    tool,
)
from rillet.models.scripted import split_agentic_message

CALLS: list[str] = []


@tool
def get_weather(city: str) -> str:
    """Tomorrow's forecast.

    Args:
        city: the city.
    """
    CALLS.append(city)
    return f"sunny in {city}"


def _ask(call_id: str, city: str) -> AgenticMessage:
    return AgenticMessage.assistant(
        [
            ContentBlock.reasoning("the user wants weather", signature="sig-" + call_id),
            ContentBlock.tool_call(call_id, "get_weather", f'{{"city": "{city}"}}'),
        ]
    )


class Recorder(ScriptedModel):
    """A ScriptedModel that keeps the conversations it was called with."""

    seen: list[list[Any]]

    def __init__(self, replies: list[Any]) -> None:
        super().__init__(replies)
        self.seen = []

    async def generate(self, messages: list[Any], **kw: Any) -> Any:
        self.seen.append(list(messages))
        return await super().generate(messages, **kw)

    def stream(self, messages: list[Any], **kw: Any) -> Any:
        self.seen.append(list(messages))
        return super().stream(messages, **kw)


def _messages(events: list[AgentEvent[AgenticMessage]]) -> list[AgenticMessage]:
    out = []
    for ev in events:
        assert ev.error is None, ev.error
        mv = ev.message_output
        if mv is not None:
            out.append(mv.get_message())
    return out


@pytest.mark.parametrize("streaming", [False, True])
def test_a_react_run_on_agentic_messages(streaming: bool) -> None:
    CALLS.clear()
    model = Recorder([_ask("c1", "Paris"), AgenticMessage.assistant("Sunny in Paris tomorrow.")])
    agent = ChatModelAgent("weather", description="weather", instruction="Be brief.", model=model, tools=[get_weather])
    runner = Runner(agent, streaming=streaming)
    events: list[AgentEvent[AgenticMessage]] = list(runner.run([AgenticMessage.user("Weather in Paris?")]))
    reply, result, answer = _messages(events)
    assert all(type(m) is AgenticMessage for m in (reply, result, answer))
    # the reply keeps what a Message would lose: the reasoning signature
    assert reply.blocks[0].signature == "sig-c1"
    assert CALLS == ["Paris"]
    (block,) = result.blocks
    assert (result.role, block.kind, block.call_id, block.name, block.text) == (
        "user",
        "tool_result",
        "c1",
        "get_weather",
        "sunny in Paris",
    )
    assert answer.content == "Sunny in Paris tomorrow."
    # the model saw a block-list conversation throughout, the instruction included
    second = model.seen[1]
    assert [type(m) for m in second] == [AgenticMessage] * 4
    assert second[0] == AgenticMessage.system("Be brief.")
    assert second[3] == result


def test_several_calls_in_one_round_become_tool_result_blocks_in_call_order() -> None:
    CALLS.clear()
    both = AgenticMessage.assistant(
        [
            ContentBlock.tool_call("a", "get_weather", '{"city": "Oslo"}'),
            ContentBlock.tool_call("b", "get_weather", '{"city": "Rome"}'),
        ]
    )
    model = Recorder([both, "done"])
    agent = ChatModelAgent("w", description="w", model=model, tools=[get_weather])
    list(Runner(agent).run([AgenticMessage.user("two cities")]))
    results = model.seen[1][2:]
    assert [(m.blocks[0].call_id, m.blocks[0].text) for m in results] == [
        ("a", "sunny in Oslo"),
        ("b", "sunny in Rome"),
    ]
    assert all(type(m) is AgenticMessage for m in results)


@pytest.mark.parametrize("streaming", [False, True])
def test_an_interrupted_agentic_run_is_checkpointed_and_resumed(streaming: bool) -> None:
    CALLS.clear()
    model = Recorder([_ask("c9", "Lima"), AgenticMessage.assistant("Lima: sunny.")])
    agent = ChatModelAgent("w", description="w", model=model, tools=[requires_approval(get_weather)])
    store = InMemoryCheckpointStore()
    runner = Runner(agent, checkpoint_store=store, streaming=streaming)
    first = list(runner.run([AgenticMessage.user("Lima?")], checkpoint_id="ck"))
    (interrupt,) = [ev for ev in first if ev.action is not None and ev.action.interrupted is not None]
    assert CALLS == []
    assert interrupt.action is not None and interrupt.action.interrupted is not None
    ctx = interrupt.action.interrupted.interrupt_contexts[0]
    # resumed by a fresh runner over the stored bytes, as another process would
    model2 = Recorder([AgenticMessage.assistant("Lima: sunny.")])
    agent2 = ChatModelAgent("w", description="w", model=model2, tools=[requires_approval(get_weather)])
    resumed = list(
        Runner(agent2, checkpoint_store=store, streaming=streaming).resume("ck", targets={ctx.id: approve()})
    )
    result, answer = _messages(resumed)
    assert CALLS == ["Lima"]
    assert result.blocks == (ContentBlock.tool_result("sunny in Lima", "c9", "get_weather"),)
    assert answer.content == "Lima: sunny."
    conversation = model2.seen[0]
    assert [type(m) for m in conversation] == [AgenticMessage] * 3
    assert conversation[1].blocks[0].signature == "sig-c9"  # the saved reply kept its signature


def test_message_runs_are_unchanged() -> None:
    model = ScriptedModel(["hello"])
    agent = ChatModelAgent("m", description="m", model=model)
    (ev,) = list(Runner(agent).run([Message.user("hi")]))
    assert ev.message_output is not None
    assert type(ev.message_output.get_message()) is Message


@tool
async def spell(word: str) -> AsyncIterator[str]:
    """Spells a word, a letter at a time.

    Args:
        word: the word.
    """
    for letter in word:
        yield letter


@pytest.mark.parametrize("streaming", [False, True])
def test_a_streaming_tool_result_becomes_one_tool_result_block(streaming: bool) -> None:
    ask = AgenticMessage.assistant([ContentBlock.tool_call("s1", "spell", '{"word": "abc"}')])
    model = Recorder([ask, AgenticMessage.assistant("done")])
    agent = ChatModelAgent("s", description="s", model=model, tools=[spell])
    events: list[AgentEvent[AgenticMessage]] = list(
        Runner(agent, streaming=streaming).run([AgenticMessage.user("spell abc")])
    )
    _, result, _ = _messages(events)
    assert result.blocks == (ContentBlock.tool_result("abc", "s1", "spell"),)
    assert model.seen[1][-1] == result


def test_scripted_agentic_replies_split_and_join_back() -> None:
    reply = AgenticMessage.assistant(
        [
            ContentBlock.reasoning("think hard", signature="sig"),
            ContentBlock.from_text("some text here"),
            ContentBlock.tool_call("c", "f", '{"x": 12345}'),
            ContentBlock.image("https://x/y.png"),
        ],
        name="bot",
    )
    reply.response_meta = {"finish_reason": "tool_calls", "usage": None}
    chunks = split_agentic_message(reply, 3)
    assert len(chunks) > 4 and all(b.index is not None for c in chunks for b in c.blocks)
    assert concat_messages(chunks) == reply


def test_the_event_types_are_generic_to_type_checkers_only() -> None:
    from types import GenericAlias

    from rillet import AgentInput, AgentOutput, MessageVariant

    for cls in (AgentEvent, AgentOutput, MessageVariant, AgentInput):
        assert cls.__mro__ == (cls, object)  # no Generic base: nothing added per instance
        assert isinstance(cls[AgenticMessage], GenericAlias)


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(
    ("given", "reply"),
    [
        (AgenticMessage.user("Weather in Paris?"), Message.assistant("Sunny.")),
        (Message.user("Weather in Paris?"), AgenticMessage.assistant("Sunny.")),
    ],
    ids=["agentic-run-message-reply", "message-run-agentic-reply"],
)
def test_a_reply_in_the_other_message_type_ends_the_run_with_an_error_naming_both(
    streaming: bool, given: Any, reply: Any
) -> None:
    # A run keeps one message type: a model answering in the other one must not leave a
    # conversation of both types behind (the next call would send it as it is).
    agent = ChatModelAgent("weather", description="weather", model=ScriptedModel([reply]), tools=[get_weather])
    events = list(Runner(agent, streaming=streaming).run([given]))
    error = events[-1].error
    assert isinstance(error, TypeError)
    theirs, ours = type(reply).__name__, type(given).__name__
    assert f"replied with an {theirs}" in str(error) or f"replied with a {theirs}" in str(error)
    assert f"conversation of {ours}" in str(error)
    assert ("AgenticMessage.from_message(m)" if theirs == "AgenticMessage" else "am.to_messages()") in str(error)
