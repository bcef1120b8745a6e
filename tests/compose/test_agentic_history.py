"""AgenticMessage runs through workflows: who a tool result is by, and how the next agent
(or the same agent on a LoopAgent's next round) sees the block-list history."""

from __future__ import annotations

from rillet import (
    AgenticMessage,
    ChatModelAgent,
    ContentBlock,
    LoopAgent,
    Runner,
    ScriptedModel,
    SequentialAgent,
    tool,
)


@tool
def price(item: str) -> str:
    """An item's price.

    Args:
        item: the item.
    """
    return "3 EUR"


def _asks() -> AgenticMessage:
    return AgenticMessage.assistant([ContentBlock.tool_call("c1", "price", '{"item": "tea"}')])


def test_a_tool_result_event_is_the_agents_and_the_next_agent_sees_it_as_block_list_context() -> None:
    first = ScriptedModel([_asks(), AgenticMessage.assistant("Tea is 3 EUR.")])
    second = ScriptedModel([AgenticMessage.assistant("Noted.")])
    seq = SequentialAgent(
        "seq",
        sub_agents=[
            ChatModelAgent("a", description="prices", model=first, tools=[price]),
            ChatModelAgent("b", description="notes", model=second),
        ],
    )
    events = list(Runner(seq).run([AgenticMessage.user("tea?")]))
    assert [e.agent_name for e in events] == ["a", "a", "a", "b"]  # the tool result was authored "user"
    seen = second.calls[0].messages
    assert [type(m).__name__ for m in seen] == ["AgenticMessage"] * 4  # no Message among block lists
    assert [m.content for m in seen[1:]] == [
        'For context: [a] called tool: `price` with arguments: {"item": "tea"}.',
        "For context: [a] `price` tool returned result: 3 EUR.",  # was an empty "For context:"
        "For context: [a] said: Tea is 3 EUR..",
    ]


def test_a_looped_agent_sees_its_own_tool_call_and_result_as_they_were() -> None:
    model = ScriptedModel([_asks(), AgenticMessage.assistant("Tea is 3 EUR."), AgenticMessage.assistant("again")])
    loop = LoopAgent("loop", sub_agents=[ChatModelAgent("a", model=model, tools=[price])], max_iterations=2)
    list(Runner(loop).run([AgenticMessage.user("tea?")]))
    seen = model.calls[-1].messages
    # its tool call kept, its result rewritten as an empty context line: a call without a result
    assert [(m.role, [b.kind for b in m.blocks]) for m in seen] == [
        ("user", ["text"]),
        ("assistant", ["tool_call"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
    ]
