"""Live (bidirectional) runs: Runner.run_live over ScriptedLiveModel, with exact event sequences."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rillet import (
    AgentEvent,
    AgentInput,
    BaseAgent,
    ChatModelAgent,
    FunctionCall,
    Message,
    Runner,
    ScriptedModel,
    SequentialAgent,
    ToolCall,
    set_sub_agents,
    tool,
)
from rillet.errors import LiveNotSupportedError, LiveQueueClosedError, ScriptExhaustedError
from rillet.live import Blob, LiveContext, LiveReply, LiveRequestQueue, ScriptedLiveModel
from rillet.tools import BaseTool, ToolInfo
from support.live_rows import row
from support.waiting import until, wait_until


@tool
def clock() -> str:
    """The time now."""
    return "12:00"


def call(name: str, call_id: str = "c1", args: str = "{}") -> Message:
    return Message.assistant(tool_calls=[ToolCall(id=call_id, function=FunctionCall(name, args))])


def voice(model: ScriptedLiveModel, name: str = "voice", **kw: Any) -> ChatModelAgent:
    return ChatModelAgent(name, instruction=f"You are {name}.", model=ScriptedModel([]), live_model=model, **kw)


def test_three_user_turns_with_partial_input_and_a_barge_in() -> None:
    model = ScriptedLiveModel(
        [
            "Hi! How can I help?",
            LiveReply("Once upon a time there was a fox", stall_after=2),  # still talking when cut
            call("clock"),
            "It is noon.",
        ]
    )
    q = LiveRequestQueue()
    q.send_content("Hel", partial=True)  # turn 1 in two pieces
    q.send_content("lo")

    async def main() -> list[tuple[Any, ...]]:
        rows = []
        async for ev in Runner(voice(model, tools=[clock])).run_live(queue=q):
            r = row(ev)
            rows.append(r)
            if r == ("voice", "voice", "turn_complete") and len(model.connections[0].received) == 2:
                q.send_content("Tell me a story")  # turn 2
            elif r == ("voice", "voice", "partial", "Once"):  # turn 3: the user talks over the story
                q.send_activity_start()
                q.send_content("What", partial=True)
                q.send_realtime(Blob(b"\x00\x01", "audio/pcm"))
                q.send_content(" time is it?", partial=True)
                q.send_activity_end()
            elif r == ("voice", "voice", "message", "It is noon."):
                q.close()
        return rows

    rows = asyncio.run(asyncio.wait_for(main(), 10))
    assert rows == [
        ("voice", "voice", "partial", "Hi! "),
        ("voice", "voice", "partial", "How "),
        ("voice", "voice", "partial", "can "),
        ("voice", "voice", "partial", "I he"),
        ("voice", "voice", "partial", "lp?"),
        ("voice", "voice", "message", "Hi! How can I help?"),
        ("voice", "voice", "turn_complete"),
        ("voice", "voice", "partial", "Once"),
        ("voice", "voice", "partial", " upo"),
        ("voice", "voice", "interrupted", "Once upo"),  # cut: the rest of the story is never said
        ("voice", "voice", "calls", ["clock"]),
        ("voice", "voice", "tool", "clock", "12:00"),
        ("voice", "voice", "partial", "It i"),
        ("voice", "voice", "partial", "s no"),
        ("voice", "voice", "partial", "on."),
        ("voice", "voice", "message", "It is noon."),
        ("voice", "voice", "turn_complete"),
    ]
    (conn,) = model.connections
    assert [(m.role, m.content) for m in conn.history] == [("system", "You are voice.")]
    assert [t.name for t in conn.tools] == ["clock"]
    got = [(k, *(a.content if isinstance(a, Message) else a for a in rest)) for k, *rest in conn.received]
    assert got == [
        ("content", "Hel", True),
        ("content", "lo", False),
        ("content", "Tell me a story", False),
        ("activity_start",),
        ("content", "What", True),
        ("blob", Blob(b"\x00\x01", "audio/pcm")),
        ("content", " time is it?", True),
        ("activity_end",),
        ("content", "12:00", False),  # the tool's result went back to the model
        ("close",),
    ]


def test_sequential_live_handoff_through_task_completed() -> None:
    order = ScriptedLiveModel(["Noted: pizza.", call("task_completed")], chunk_size=100)
    pay = ScriptedLiveModel(["Paid by card."], chunk_size=100)
    seq = SequentialAgent("shop", sub_agents=[voice(order, "order"), voice(pay, "pay")])
    q = LiveRequestQueue()
    q.send_content("I want a pizza")

    def run() -> list[tuple[Any, ...]]:  # sync: the run is on rillet's loop thread, sends come from here
        rows = []
        for ev in Runner(seq).run_live(queue=q):
            r = row(ev)
            rows.append(r)
            if r == ("order", "shop/order", "turn_complete"):
                q.send_content("that's all")
            elif r[2] == "tool":
                q.send_content("I pay by card")  # taken by the next agent
            elif r == ("pay", "shop/order/pay", "turn_complete"):
                q.close()
        return rows

    assert run() == [
        ("order", "shop/order", "partial", "Noted: pizza."),
        ("order", "shop/order", "message", "Noted: pizza."),
        ("order", "shop/order", "turn_complete"),
        ("order", "shop/order", "calls", ["task_completed"]),
        ("order", "shop/order", "tool", "task_completed", "Task completed."),
        ("pay", "shop/order/pay", "partial", "Paid by card."),
        ("pay", "shop/order/pay", "message", "Paid by card."),
        ("pay", "shop/order/pay", "turn_complete"),
    ]
    # the second agent starts from the session so far; each was offered task_completed
    assert [(m.role, m.content or m.tool_calls[0].function.name) for m in pay.connections[0].history] == [
        ("system", "You are pay."),
        ("user", "I want a pizza"),
        ("assistant", "Noted: pizza."),
        ("user", "that's all"),
        ("assistant", "task_completed"),
        ("tool", "Task completed."),
    ]
    assert [t.name for t in order.connections[0].tools] == ["task_completed"]
    assert order.connections[0].closed and pay.connections[0].closed
    assert [r[0] for r in order.connections[0].received] == ["content", "content", "close"]  # no result sent on
    assert pay.connections[0].received[-1] == ("close",)


def test_a_live_agent_with_sub_agents_does_not_claim_a_transfer() -> None:
    # transfer_to_agent is not offered live; a call to it anyway is answered, with no transfer action
    model = ScriptedLiveModel([call("transfer_to_agent", args='{"agent_name": "b"}'), "I stay."], chunk_size=100)
    root = set_sub_agents(voice(model, "a"), [ChatModelAgent("b", model=ScriptedModel(["b here"]))])
    q = LiveRequestQueue()
    q.send_content("go")
    events = []
    for ev in Runner(root).run_live(queue=q):
        events.append(ev)
        if row(ev)[2] == "turn_complete":
            q.close()
    assert [row(e) for e in events] == [
        ("a", "a", "calls", ["transfer_to_agent"]),
        (
            "a",
            "a",
            "tool",
            "transfer_to_agent",
            "transfer_to_agent is not available in a live session; go on answering the user yourself",
        ),
        ("a", "a", "partial", "I stay."),
        ("a", "a", "message", "I stay."),
        ("a", "a", "turn_complete"),
    ]
    assert all(e.action is None or e.action.transfer_to_agent is None for e in events)
    assert model.connections[0].tools == ()
    assert [m.content for m in model.connections[0].history] == ["You are a."]  # nor told of the transfer


def test_what_the_user_sends_while_an_ending_tool_runs_is_left_for_the_next_agent() -> None:
    class SlowHandoff(BaseTool):  # a parent's tool that ends its child, and takes a while
        ends_live_agent = True
        info = ToolInfo("hand_off", "Ends your turn.", {"type": "object", "properties": {}})

        async def invoke(self, arguments: str) -> str:
            q.send_content("are you there?")  # the user talks while the handoff runs
            await asyncio.sleep(0.05)
            return "handed off"

    class Parent(BaseAgent):  # a LiveAgent that runs one child, then looks at what is left
        async def _run(self, input: AgentInput, **options: Any) -> Any:
            yield AgentEvent()

        async def _live(self, input: AgentInput, live: LiveContext) -> AsyncIterator[AgentEvent]:
            child = LiveContext(live.requests, live.history, (), (SlowHandoff(),))
            async for ev in kid.run_live(input, child):
                yield ev
            left.append(await live.requests.get())

        def run_live(self, input: AgentInput, live: LiveContext, **options: Any) -> AsyncIterator[AgentEvent]:
            return self._live(input, live)

    model = ScriptedLiveModel([call("hand_off")])
    kid = voice(model, "kid")
    left: list[Any] = []
    q = LiveRequestQueue()
    q.send_content("hi")

    async def main() -> list[tuple[Any, ...]]:
        return [row(e) async for e in Runner(Parent("parent")).run_live(queue=q)]

    rows = asyncio.run(asyncio.wait_for(main(), 5))  # (before: the request went to the ending agent, none was left)
    assert rows[-1] == ("kid", "kid", "tool", "hand_off", "handed off")
    assert [r[0] for r in model.connections[0].received] == ["content", "close"]  # not sent to the ending agent
    assert left[0].content.content == "are you there?"


def test_queue_closed_mid_answer_ends_the_run() -> None:
    model = ScriptedLiveModel([LiveReply("A long answer that goes on", stall_after=1)])
    q = LiveRequestQueue()
    q.send_content("talk")

    async def main() -> list[tuple[Any, ...]]:
        rows = []
        async for ev in Runner(voice(model)).run_live(queue=q):
            rows.append(row(ev))
            q.close()
            q.close()  # idempotent
        return rows

    assert asyncio.run(asyncio.wait_for(main(), 10)) == [("voice", "voice", "partial", "A lo")]
    assert model.connections[0].closed
    with pytest.raises(LiveQueueClosedError, match="new LiveRequestQueue"):
        q.send_content("more")


def test_consumer_cancel_leaves_no_task_behind() -> None:
    model = ScriptedLiveModel([LiveReply("A long answer", stall_after=1)])
    q = LiveRequestQueue()
    q.send_content("talk")

    async def main() -> set[asyncio.Task[Any]]:
        before = asyncio.all_tasks()
        it = Runner(voice(model)).run_live(queue=q)
        first = await it.__anext__()
        assert row(first) == ("voice", "voice", "partial", "A lo")
        assert len(asyncio.all_tasks() - before) == 2  # the run and its sender to the model
        it.close()  # the consumer walks away mid-answer, the queue still open
        await until(
            lambda: model.connections[0].closed and not asyncio.all_tasks() - before, "the run to close and end"
        )
        return asyncio.all_tasks() - before

    assert asyncio.run(asyncio.wait_for(main(), 10)) == set()
    assert model.connections[0].closed
    assert not q.closed


def test_consumer_cancel_from_sync_code_closes_the_connection() -> None:
    model = ScriptedLiveModel([LiveReply("A long answer", stall_after=1)])
    q = LiveRequestQueue()
    q.send_content("talk")
    with Runner(voice(model)).run_live(queue=q) as it:
        assert row(next(it)) == ("voice", "voice", "partial", "A lo")
    wait_until(lambda: model.connections and model.connections[0].closed, "the connection to close")
    assert model.connections[0].closed


def test_an_exhausted_script_ends_the_run_with_an_error_event() -> None:
    q = LiveRequestQueue()
    q.send_content("hi")
    rows = [row(ev) for ev in Runner(voice(ScriptedLiveModel([]))).run_live(queue=q)]
    assert rows == [("voice", "error", ScriptExhaustedError.__name__)]


def test_agents_that_cannot_run_live_are_refused_with_the_fix() -> None:
    q = LiveRequestQueue()
    plain = ChatModelAgent("plain", model=ScriptedModel([]))
    with pytest.raises(LiveNotSupportedError, match=r"'plain' cannot run live.*live_model="):
        Runner(plain).run_live(queue=q)

    class Custom(BaseAgent):
        async def _run(self, input: AgentInput, **options: Any) -> Any:
            yield AgentEvent()

    with pytest.raises(LiveNotSupportedError, match=r"'custom' \(Custom\) cannot run live.*rillet.live.LiveAgent"):
        Runner(Custom("custom")).run_live(queue=q)
    seq = SequentialAgent("seq", sub_agents=[voice(ScriptedLiveModel([]), "a"), Custom("b")])
    with pytest.raises(LiveNotSupportedError, match=r"sub-agent 'b' \(Custom\) cannot run live"):
        Runner(seq).run_live(queue=q)
    seq2 = SequentialAgent("seq2", sub_agents=[voice(ScriptedLiveModel([]), "a"), plain])
    with pytest.raises(LiveNotSupportedError, match="'plain' cannot run live"):
        Runner(seq2).run_live(queue=q)
    with pytest.raises(TypeError, match=r"expected a rillet.LiveRequestQueue\(\)"):
        Runner(voice(ScriptedLiveModel([]))).run_live(queue=[])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="live_model must be a rillet.live.LiveModel"):
        ChatModelAgent("x", model=ScriptedModel([]), live_model=ScriptedModel([]))  # type: ignore[arg-type]


def test_queue_refuses_what_is_not_a_request() -> None:
    q = LiveRequestQueue()
    with pytest.raises(TypeError, match="send_content"):
        q.send_content(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Blob"):
        q.send_realtime(b"raw")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="MIME type"):
        Blob(b"", "pcm")


def test_queue_wakes_every_waiting_get() -> None:
    # two tasks waiting on one queue (two runs fed by it): each request reaches one of them, none hangs
    async def main() -> list[str]:
        q = LiveRequestQueue()
        takers = [asyncio.create_task(q.get()) for _ in range(2)]
        await until(lambda: len(q._waiters) == 2, "both takers to wait")
        q.send_content("a")
        q.send_content("b")
        done = await asyncio.gather(*takers)
        return sorted(r.content.content for r in done if r.content is not None)

    assert asyncio.run(asyncio.wait_for(main(), 5)) == ["a", "b"]


def test_the_messages_before_the_session_reach_the_model() -> None:
    model = ScriptedLiveModel(["Sure."], chunk_size=100)
    q = LiveRequestQueue()
    q.send_content("go on")
    q.close()
    rows = [row(ev) for ev in Runner(voice(model)).run_live([Message.user("earlier")], queue=q)]
    assert rows == [
        ("voice", "voice", "partial", "Sure."),
        ("voice", "voice", "message", "Sure."),
        ("voice", "voice", "turn_complete"),
    ]
    assert [m.content for m in model.connections[0].history] == ["You are voice.", "earlier"]


def test_a_model_that_ends_the_session_itself_is_an_error_not_a_handoff() -> None:
    class Hangup(ScriptedLiveModel):  # its server closes the session after its first answer
        async def connect(self, history: list[Message], **kw: Any) -> Any:
            conn = await super().connect(history, **kw)
            receive = conn.receive

            async def once() -> Any:
                async for r in receive():
                    yield r
                    if r.turn_complete:
                        return

            conn.receive = once  # type: ignore[method-assign]
            return conn

    after = ScriptedLiveModel(["I am next."])
    seq = SequentialAgent("seq", sub_agents=[voice(Hangup(["Bye."], chunk_size=100), "first"), voice(after, "next")])
    q = LiveRequestQueue()
    q.send_content("hi")

    async def main() -> list[AgentEvent]:
        return [e async for e in Runner(seq).run_live(queue=q)]

    events = asyncio.run(asyncio.wait_for(main(), 5))  # (before: the next agent waited for the user)
    assert [row(e) for e in events] == [
        ("first", "seq/first", "partial", "Bye."),
        ("first", "seq/first", "message", "Bye."),
        ("first", "seq/first", "turn_complete"),
        ("seq", "error", "LiveError"),
    ]
    assert "the live model ended the session before the user closed it" in str(events[-1].error)
    assert after.connections == []  # no task_completed: the session is not handed on


def test_a_failing_send_to_the_model_ends_the_run_with_an_error_event() -> None:
    class Broken(ScriptedLiveModel):
        async def connect(self, history: list[Message], **kw: Any) -> Any:
            conn = await super().connect(history, **kw)

            async def fail(message: Message, *, partial: bool = False) -> None:
                raise ConnectionError("socket reset")

            conn.send_content = fail  # type: ignore[method-assign]
            return conn

    model = Broken(["never"])
    q = LiveRequestQueue()
    q.send_content("hi")
    events = list(Runner(voice(model)).run_live(queue=q))
    assert [row(e) for e in events] == [("voice", "error", "LiveError")]
    assert "sending to the model failed: socket reset" in str(events[0].error)
    assert model.connections[0].closed


def test_a_tool_wrapper_added_after_construction_wraps_the_live_runs_calls() -> None:
    """A live run takes the agent's hooks as a run does: one appended to ``wrap_tool_call``
    after the agent was made counts, with no plain run in between."""
    seen: list[str] = []

    async def audit(ctx: Any, call_next: Any) -> str:
        seen.append(ctx.tool_name)
        return f"[{await call_next(ctx.arguments)}]"

    model = ScriptedLiveModel([call("clock"), "It is noon."], chunk_size=100)
    agent = voice(model, tools=[clock])
    agent.wrap_tool_call.append(audit)
    q = LiveRequestQueue()
    q.send_content("time?")

    async def main() -> list[tuple[Any, ...]]:
        rows = []
        async for ev in Runner(agent).run_live(queue=q):
            rows.append(row(ev))
            if rows[-1] == ("voice", "voice", "message", "It is noon."):
                q.close()
        return rows

    rows = asyncio.run(asyncio.wait_for(main(), 10))
    assert seen == ["clock"]
    assert ("voice", "voice", "tool", "clock", "[12:00]") in rows, rows


def test_a_live_agent_offers_its_toolsets_tools_to_the_live_model() -> None:
    class Clocks:
        async def tools(self) -> list[BaseTool]:
            return [clock]

    model = ScriptedLiveModel([call("clock"), "It is noon."])
    q = LiveRequestQueue()
    q.send_content("Time?")

    async def main() -> list[tuple[Any, ...]]:
        rows = []
        async for ev in Runner(voice(model, tools=[Clocks()])).run_live(queue=q):
            rows.append(row(ev))
            if rows[-1] == ("voice", "voice", "message", "It is noon."):
                q.close()
        return rows

    rows = asyncio.run(asyncio.wait_for(main(), 10))
    assert [r for r in rows if r[2] in ("calls", "tool")] == [
        ("voice", "voice", "calls", ["clock"]),
        ("voice", "voice", "tool", "clock", "12:00"),
    ]
    assert [t.name for t in model.connections[0].tools] == ["clock"]
