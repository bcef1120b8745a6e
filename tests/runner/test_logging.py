"""What rillet logs (logger `rillet`, a NullHandler only): a tool error sent to the model, a
model's retries, checkpoint saves and loads."""

from __future__ import annotations

from typing import Any

import pytest
from rillet import ChatModelAgent, FunctionCall, Message, Runner, ScriptedModel, ToolCall


def agent(name: str, script: list[Any], tools: list[Any] | None = None) -> ChatModelAgent:
    return ChatModelAgent(name, description=f"the {name} agent", model=ScriptedModel(script), tools=tools or [])


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
    from rillet.tools.approval import approve

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
