"""rillet.a2a with both ends real, on loopback: a rillet agent served by A2AServer and called by
the a2a-sdk client (the raw A2A stream asserted event by event) and by RemoteA2AAgent, and a
RemoteA2AAgent calling an A2A server written here with a2a-sdk alone."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from support.optional import need

need("a2a")

from a2a.client import ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.types import (
    Message as A2AMessage,
)
from google.protobuf.json_format import MessageToDict
from rillet import (
    AgentTool,
    ChatModelAgent,
    FunctionCall,
    InMemoryCheckpointStore,
    InMemorySessionStore,
    Message,
    Runner,
    ScriptedModel,
    ToolCall,
    tool,
)
from rillet.a2a import (
    A2ACardError,
    A2AError,
    A2AServer,
    A2ATimeoutError,
    RemoteA2AAgent,
    RilletExecutor,
    agent_card,
    serve_a2a,
)
from rillet.tools.approval import approve, requires_approval
from support.waiting import until

pytestmark = [pytest.mark.timeout(60), pytest.mark.anyio]

REPLY = "The forecast for Porto is sunny and warm."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> Message:
    return Message.assistant(tool_calls=[ToolCall(index=0, id=call_id, function=FunctionCall(name, json.dumps(args)))])


def weather_agent(*replies: Any) -> ChatModelAgent:
    @tool
    def forecast(city: str) -> str:
        """Tomorrow's forecast."""
        return f"sunny in {city}"

    model = ScriptedModel(list(replies) or [call("forecast", {"city": "Porto"}), REPLY], chunk_size=7)
    return ChatModelAgent("weather", description="knows the weather", model=model, tools=[forecast])


def user(text: str = "", *, task_id: str = "", context_id: str = "", data: Any = None) -> SendMessageRequest:
    parts = [new_text_part(text)] if text else [new_data_part(data)]
    msg = A2AMessage(
        message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=parts, task_id=task_id, context_id=context_id
    )
    return SendMessageRequest(message=msg)


async def raw(url: str, request: SendMessageRequest, *, streaming: bool = True) -> list[StreamResponse]:
    """What the a2a-sdk client receives, unchanged."""
    client = await ClientFactory(ClientConfig(streaming=streaming)).create_from_url(url)
    try:
        return [r async for r in client.send_message(request)]
    finally:
        await client.close()


def state(s: Any) -> str:
    return TaskState.Name(s).removeprefix("TASK_STATE_")


def shape(responses: list[StreamResponse]) -> list[tuple[Any, ...]]:
    """Each response as a short tuple: ("task", state), ("status", state, kinds or text),
    ("artifact", text, append, last_chunk)."""
    out: list[tuple[Any, ...]] = []
    for r in responses:
        if r.HasField("task"):
            out.append(("task", state(r.task.status.state)))
        elif r.HasField("status_update"):
            s = r.status_update.status
            parts = list(s.message.parts) if s.HasField("message") else []
            what = [MessageToDict(p.data)["kind"] if p.HasField("data") else p.text for p in parts]
            out.append(("status", state(s.state), *what))
        elif r.HasField("artifact_update"):
            u = r.artifact_update
            out.append(("artifact", "".join(p.text for p in u.artifact.parts), u.append, u.last_chunk))
    return out


def all_text(responses: list[StreamResponse]) -> str:
    """Every text the stream carries, artifacts and status messages alike, in order."""
    texts = []
    for r in responses:
        msg = MessageToDict(r)
        texts += [p["text"] for p in _walk(msg) if "text" in p and isinstance(p["text"], str)]
    return "".join(texts)


def _walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [node, *(x for v in node.values() for x in _walk(v))]
    if isinstance(node, list):
        return [x for v in node for x in _walk(v)]
    return []


# --- serve_a2a seen by the a2a-sdk client --------------------------------------------------


async def test_a_streamed_reply_is_one_artifact_in_chunks_and_never_repeated() -> None:
    async with A2AServer(weather_agent()) as server:
        got = await raw(server.url, user("Weather in Porto?"))
    assert shape(got) == [
        ("task", "SUBMITTED"),
        ("status", "WORKING"),
        ("status", "WORKING", "tool_call"),
        ("status", "WORKING", "tool_result"),
        ("artifact", "The for", False, False),
        ("artifact", "ecast f", True, False),
        ("artifact", "or Port", True, False),
        ("artifact", "o is su", True, False),
        ("artifact", "nny and", True, False),
        ("artifact", " warm.", True, True),
        ("status", "COMPLETED"),
    ]
    artifact_ids = {r.artifact_update.artifact.artifact_id for r in got if r.HasField("artifact_update")}
    assert len(artifact_ids) == 1  # one stable id for the message
    # the history's user text, then the reply exactly once: not again in the final status
    assert all_text(got) == "Weather in Porto?" + REPLY
    task_id, context_id = got[0].task.id, got[0].task.context_id
    assert {r.status_update.task_id for r in got if r.HasField("status_update")} == {task_id}
    assert {r.status_update.context_id for r in got if r.HasField("status_update")} == {context_id}
    call_part = MessageToDict(got[2].status_update.status.message.parts[0].data)
    assert call_part == {
        "kind": "tool_call",
        "author": "weather",
        "id": "c1",
        "name": "forecast",
        "arguments": '{"city": "Porto"}',
    }
    result_part = MessageToDict(got[3].status_update.status.message.parts[0].data)
    assert result_part == {
        "kind": "tool_result",
        "author": "weather",
        "tool_call_id": "c1",
        "name": "forecast",
        "content": "sunny in Porto",
    }


async def test_not_streaming_a_whole_message_is_one_artifact_update() -> None:
    replies = [call("forecast", {"city": "Porto"}), REPLY] * 2
    async with A2AServer(weather_agent(*replies), streaming=False) as server:
        got = await raw(server.url, user("Weather?"))
        assert shape(got)[-2:] == [("artifact", REPLY, False, True), ("status", "COMPLETED")]
        assert all_text(got) == "Weather?" + REPLY
        # SendMessage (no stream): one Task, the reply once, in its artifact
        (whole,) = await raw(server.url, user("Weather?"), streaming=False)
    assert state(whole.task.status.state) == "COMPLETED"
    assert [a.parts[0].text for a in whole.task.artifacts] == [REPLY]
    assert all_text([whole]).count(REPLY) == 1


async def test_the_context_id_is_the_session_a_second_task_continues() -> None:
    model = ScriptedModel(["first answer", "second answer"])
    agent = ChatModelAgent("chat", description="chats", model=model)
    async with A2AServer(agent) as server:
        first = await raw(server.url, user("one"))
        context_id = first[0].task.context_id
        second = await raw(server.url, user("two", context_id=context_id))
    assert second[0].task.context_id == context_id and second[0].task.id != first[0].task.id
    assert [m.content for m in model.calls[1].messages] == ["one", "first answer", "two"]


async def test_the_text_parts_of_a_message_are_read_one_a_line() -> None:
    model = ScriptedModel(["ok"])
    async with A2AServer(ChatModelAgent("chat", description="chats", model=model)) as server:
        request = user("first part")
        request.message.parts.append(new_text_part("second part"))
        await raw(server.url, request)
    # before, they were glued: "first partsecond part" (a RemoteA2AAgent sends one part per message)
    assert [m.content for m in model.calls[0].messages] == ["first part\nsecond part"]


async def test_a_remote_agent_continues_the_remote_conversation_of_its_session() -> None:
    model = ScriptedModel(["Hello Ann.", "You are Ann."])
    agent = ChatModelAgent("chat", description="chats", model=model)
    async with A2AServer(agent) as server:
        remote = RemoteA2AAgent("chat", server.url)
        runner = Runner(remote, session_store=InMemorySessionStore())
        first = [ev async for ev in runner.query("I am Ann.", session_id="s1")]
        second = [ev async for ev in runner.query("Who am I?", session_id="s1")]
    assert [ev.error for ev in first + second if ev.error] == []
    # the second remote task is in the first one's context: the remote session has both turns
    # (before, each run opened a new context and the remote agent forgot the first turn)
    assert [m.content for m in model.calls[1].messages] == ["I am Ann.", "Hello Ann.", "Who am I?"]


async def test_an_error_is_failed_with_the_error() -> None:
    agent = ChatModelAgent("broken", description="fails", model=ScriptedModel([]))
    async with A2AServer(agent) as server:
        got = await raw(server.url, user("hi"))
    last = shape(got)[-1]
    assert last[:3] == ("status", "FAILED", last[2]) and "ScriptedModel" in last[2] and last[3] == "error"
    assert [s[1] for s in shape(got) if s[0] == "status"] == ["WORKING", "FAILED"]


# --- interrupts over the wire ---------------------------------------------------------------


class Bank:
    """A remote tool behind approval, counting the transfers it really makes."""

    def __init__(self) -> None:
        self.transfers = 0

        @tool
        def transfer_money(amount: int) -> str:
            """Moves money."""
            self.transfers += 1
            return f"moved {amount}"

        model = ScriptedModel([call("transfer_money", {"amount": 5}, "t1"), "Done: moved 5."], chunk_size=7)
        self.agent = ChatModelAgent(
            "bank", description="moves money", model=model, tools=[requires_approval(transfer_money)]
        )


async def test_an_interrupt_is_input_required_and_the_answer_on_the_task_resumes_it() -> None:
    bank = Bank()
    async with A2AServer(bank.agent) as server:
        got = await raw(server.url, user("pay 5"))
        assert shape(got)[-2:] == [("status", "WORKING", "tool_call"), ("status", "INPUT_REQUIRED", "interrupt")]
        assert all_text(got) == "pay 5"  # the task's history; the question is data, not text
        task = got[0].task
        asked = MessageToDict(got[-1].status_update.status.message.parts[0].data)
        assert asked["kind"] == "interrupt" and asked["author"] == "bank"
        assert asked["info"] == {"tool": "transfer_money", "arguments": {"amount": 5}}
        assert asked["address"] == ["agent:bank", "tool:transfer_money:t1"]
        # an answer naming no open interrupt: asked again, nothing runs
        wrong = await raw(server.url, user(task_id=task.id, context_id=task.context_id, data={"nope": "approve"}))
        assert shape(wrong)[-1][:2] == ("status", "INPUT_REQUIRED") and "not open interrupts" in shape(wrong)[-1][2]
        assert bank.transfers == 0
        answer = {asked["id"]: approve()}
        done = await raw(server.url, user(task_id=task.id, context_id=task.context_id, data=answer))
    assert shape(done) == [
        ("status", "WORKING"),
        ("status", "WORKING", "tool_result"),
        ("artifact", "Done: m", False, False),
        ("artifact", "oved 5.", True, True),
        ("status", "COMPLETED"),
    ]
    assert [s for s in shape(done) if s[0] == "status"][-1] == ("status", "COMPLETED")
    assert all_text(done) == "Done: moved 5."  # the reply once: in its chunks, not in COMPLETED
    assert bank.transfers == 1


@pytest.mark.parametrize("streaming", [True, False])
async def test_a_remote_interrupt_is_approved_at_the_top_through_an_agent_tool_exactly_once(streaming: bool) -> None:
    bank = Bank()
    async with A2AServer(bank.agent) as server:
        remote = RemoteA2AAgent("bank", server.url, description="moves money")
        boss_model = ScriptedModel([call("bank", {"request": "pay 5"}, "b1"), "The bank says it is done."])
        boss = ChatModelAgent("boss", description="top", model=boss_model, tools=[AgentTool(remote)])
        runner = Runner(boss, checkpoint_store=InMemoryCheckpointStore(), streaming=streaming)
        asks = [
            ev.action.interrupted
            async for ev in runner.query("pay the bank 5", checkpoint_id="top")
            if ev.action is not None and ev.action.interrupted is not None
        ]
        assert len(asks) == 1 and bank.transfers == 0
        (ctx,) = asks[0].interrupt_contexts
        assert ctx.info["remote_agent"] == "bank"
        assert ctx.info["interrupts"][0]["info"] == {"tool": "transfer_money", "arguments": {"amount": 5}}
        events = [ev async for ev in await runner.aresume("top", targets={ctx.id: approve()})]
    assert [ev.error for ev in events if ev.error is not None] == []
    tool_results = [
        ev.message_output.message.content for ev in events if ev.message_output and ev.message_output.role == "tool"
    ]
    assert tool_results == ["Done: moved 5."]
    assert bank.transfers == 1


@pytest.mark.parametrize("streaming", [True, False])
async def test_a_resumed_remote_task_reports_only_what_came_after_the_answer(streaming: bool) -> None:
    bank = Bank()
    pay = call("transfer_money", {"amount": 5}, "t1")
    bank.agent.model = ScriptedModel([Message.assistant("Paying.", pay.tool_calls), "Done: moved 5."])
    async with A2AServer(bank.agent) as server:
        remote = RemoteA2AAgent("bank", server.url)
        runner = Runner(remote, checkpoint_store=InMemoryCheckpointStore(), streaming=streaming)
        first = [ev async for ev in runner.query("pay 5", checkpoint_id="c")]
        (ctx,) = first[-1].action.interrupted.interrupt_contexts  # type: ignore[union-attr]
        second = [ev async for ev in await runner.aresume("c", targets={ctx.id: approve()})]
    messages = [await ev.message_output.aget_message() for ev in first + second if ev.message_output]
    # the text and the tool call once (with SendMessage the resumed task's history and
    # artifacts repeated them before; its Task gives the history before the artifacts)
    said, calling = ("assistant", "Paying.", []), ("assistant", "", ["t1"])
    assert [(m.role, m.content, [c.id for c in m.tool_calls]) for m in messages] == [
        *((said, calling) if streaming else (calling, said)),
        ("tool", "moved 5", []),
        ("assistant", "Done: moved 5.", []),
    ]
    assert bank.transfers == 1


# --- cancel ---------------------------------------------------------------------------------


def slow_agent() -> tuple[ChatModelAgent, asyncio.Event, asyncio.Event]:
    """An agent whose tool runs until cancelled, and events set when it starts and ends."""
    started, closed = asyncio.Event(), asyncio.Event()

    @tool
    async def slow() -> str:
        """Takes forever."""
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            closed.set()
        return "late"

    agent = ChatModelAgent("slow", description="slow", model=ScriptedModel([call("slow", {}), "never"]), tools=[slow])
    return agent, started, closed


async def test_cancel_from_the_client_cancels_the_task_and_closes_the_run() -> None:
    agent, started, closed = slow_agent()
    async with A2AServer(agent) as server:
        client = await ClientFactory(ClientConfig(streaming=True)).create_from_url(server.url)
        seen: list[StreamResponse] = []

        async def read() -> None:
            async for r in client.send_message(user("go")):
                seen.append(r)

        reader = asyncio.create_task(read())
        try:
            await asyncio.wait_for(started.wait(), 10)
            await until(lambda: len(seen) >= 3, "the task, WORKING, the tool call")
            canceled = await client.cancel_task(CancelTaskRequest(id=seen[0].task.id))
            assert state(canceled.status.state) == "CANCELED"
            await asyncio.wait_for(closed.wait(), 10)  # the rillet run was closed, its tool cancelled
            await asyncio.wait_for(reader, 10)
        finally:
            reader.cancel()
            await client.close()
    assert shape(seen)[-1] == ("status", "CANCELED")
    assert "late" not in all_text(seen)


async def test_a_message_on_a_task_that_is_not_asking_is_refused_and_runs_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from a2a.server.agent_execution.active_task import ActiveTask

    started, release, queued, runs = asyncio.Event(), asyncio.Event(), asyncio.Event(), []
    enqueue, requests = ActiveTask.enqueue_request, []

    async def spied(self: ActiveTask, request_context: RequestContext) -> Any:
        requests.append(await enqueue(self, request_context))
        if len(requests) == 2:
            queued.set()  # the second message, queued behind the first one's run
        return requests[-1]

    monkeypatch.setattr(ActiveTask, "enqueue_request", spied)

    @tool
    async def slow() -> str:
        """Waits to be released."""
        runs.append(1)
        started.set()
        await release.wait()
        return "released"

    model = ScriptedModel([call("slow", {}), "done", call("slow", {}), "again"])
    async with A2AServer(ChatModelAgent("slow", description="slow", model=model, tools=[slow])) as server:
        first = asyncio.create_task(raw(server.url, user("go")))
        await asyncio.wait_for(started.wait(), 10)
        task = (await asyncio.wait_for(get_task_when_working(server.url), 10)).id
        # a2a-sdk queues a message on a working task behind its run; before, it then ran the
        # agent again on the finished task (COMPLETED, then WORKING again)
        second = asyncio.create_task(raw(server.url, user("more", task_id=task)))
        await asyncio.wait_for(queued.wait(), 10)  # a2a-sdk holds it until the first run ends
        release.set()
        got = await asyncio.wait_for(first, 10)
        with pytest.raises(Exception, match="is not waiting for input"):
            await asyncio.wait_for(second, 10)
    assert shape(got)[-1] == ("status", "COMPLETED") and len(runs) == 1


async def get_task_when_working(url: str) -> Task:
    """The one task the server has, once it is WORKING."""
    from a2a.types import ListTasksRequest

    client = await ClientFactory(ClientConfig(streaming=True)).create_from_url(url)

    async def working() -> Task | None:
        tasks = (await client.list_tasks(ListTasksRequest())).tasks
        return tasks[0] if tasks and state(tasks[0].status.state) == "WORKING" else None

    try:
        task: Task = await until(working, "the task to be WORKING")
        return task
    finally:
        await client.close()


async def test_closing_a_remote_agents_run_cancels_the_remote_task() -> None:
    agent, started, closed = slow_agent()
    async with A2AServer(agent) as server:
        run = Runner(RemoteA2AAgent("slow", server.url), streaming=True).query("go")
        async for ev in run:
            if ev.message_output is not None:  # the remote tool call: the remote task is running
                break
        await asyncio.wait_for(started.wait(), 10)
        run.close()
        await asyncio.wait_for(closed.wait(), 10)  # the remote run was stopped


async def test_canceling_a_task_that_waits_for_input_leaves_nothing_behind() -> None:
    executor = RilletExecutor(Bank().agent)
    async with plain_server(executor) as url:
        asked = await raw(url, user("pay 5"))
        assert shape(asked)[-1] == ("status", "INPUT_REQUIRED", "interrupt")
        client = await ClientFactory(ClientConfig(streaming=True)).create_from_url(url)
        try:
            canceled = await client.cancel_task(CancelTaskRequest(id=asked[0].task.id))
        finally:
            await client.close()
    assert state(canceled.status.state) == "CANCELED"
    assert executor._canceled == set()  # no run was going: the id was kept forever before


# --- RemoteA2AAgent against serve_a2a ---------------------------------------------------------


@pytest.mark.parametrize("streaming", [True, False])
async def test_remote_agent_turns_the_stream_back_into_rillet_events(streaming: bool) -> None:
    async with A2AServer(weather_agent()) as server:
        remote = RemoteA2AAgent("weather", server.url)
        events = [ev async for ev in Runner(remote, streaming=streaming).query("Weather in Porto?")]
        rows = []
        for ev in events:
            assert ev.error is None, ev.error
            mv = ev.message_output
            if mv is None:
                continue
            streamed = mv.message_stream is not None
            msg = await mv.aget_message()
            what = msg.content or msg.tool_calls[0].function.name
            rows.append((mv.role, what, streamed))
    assert rows == [
        ("assistant", "forecast", False),
        ("tool", "sunny in Porto", False),
        ("assistant", REPLY, streaming),  # chunks are a streamed message; SendMessage gives it whole
    ]


async def test_a_card_on_a_foreign_origin_is_refused_unless_allowed() -> None:
    async with A2AServer(weather_agent()) as real:
        card = AgentCard(
            name="weather",
            description="knows the weather",
            version="1",
            supported_interfaces=[
                AgentInterface(url=real.url + "/", protocol_binding="JSONRPC", protocol_version="1.0")
            ],
            capabilities=AgentCapabilities(streaming=True),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[AgentSkill(id="weather", name="weather", description="weather", tags=["test"])],
        )
        async with plain_server(EchoExecutor(), card=card) as decoy:  # its card points at the other server
            refused = RemoteA2AAgent("weather", decoy)
            events = [ev async for ev in Runner(refused).query("Weather?")]
            assert len(events) == 1 and isinstance(events[0].error, A2ACardError)
            assert "another origin" in str(events[0].error) and "allowed_origins" in str(events[0].error)
            allowed = RemoteA2AAgent("weather", decoy, allowed_origins=[real.url])
            events = [ev async for ev in Runner(allowed).query("Weather in Porto?")]
    assert [ev.error for ev in events if ev.error] == []
    assert (await events[-1].message_output.aget_message()).content == REPLY


# --- RemoteA2AAgent against an A2A server written with a2a-sdk alone -------------------------


class EchoExecutor(AgentExecutor):
    """Streams back the user's text in two chunks, with a transfer part and the request's
    metadata; or fails when asked to."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        up = TaskUpdater(event_queue, task_id, context_id)
        await event_queue.enqueue_event(
            Task(id=task_id, context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
        )
        text = context.get_user_input()
        if text == "fail":
            await up.failed(up.new_agent_message([new_text_part("no can do")]))
            return
        tag = context.metadata.get("tag", "")
        await up.update_status(
            TaskState.TASK_STATE_WORKING,
            up.new_agent_message([new_data_part({"kind": "transfer", "author": "echo", "to": "elsewhere"})]),
        )
        half = len(text) // 2
        await up.add_artifact([new_text_part(tag + text[:half])], "a1", append=False, last_chunk=False)
        await up.add_artifact([new_text_part(text[half:])], "a1", append=True, last_chunk=True)
        await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


@asynccontextmanager
async def plain_server(executor: AgentExecutor, card: AgentCard | None = None) -> AsyncIterator[str]:
    """``executor`` served with a2a-sdk's own routes and uvicorn on a free loopback port."""

    import uvicorn
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from starlette.applications import Starlette

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # clients connect at once; uvicorn accepts them once it runs: nothing to wait for
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = card or AgentCard(
        name="echo",
        description="echoes",
        version="1",
        supported_interfaces=[AgentInterface(url=url + "/", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes", tags=["test"])],
    )
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield url
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 5)


@pytest.mark.parametrize(("allow_transfer", "streaming"), [(False, True), (True, True), (False, False), (True, False)])
async def test_remote_agent_calls_a_plain_a2a_sdk_server(allow_transfer: bool, streaming: bool) -> None:
    def tag(request: SendMessageRequest) -> None:
        request.metadata.update({"tag": ">"})  # edited in place

    async with plain_server(EchoExecutor()) as url:
        remote = RemoteA2AAgent("echo", url, before_request_callbacks=[tag], allow_transfer=allow_transfer)
        events = [ev async for ev in Runner(remote, streaming=streaming).query("hello world")]
    transfers = [
        ev.action.transfer_to_agent.dest_agent_name for ev in events if ev.action and ev.action.transfer_to_agent
    ]
    assert transfers == (["elsewhere"] if allow_transfer else [])  # dropped unless enabled
    (reply,) = [ev for ev in events if ev.message_output is not None]
    if not streaming:  # SendMessage: the finished task's artifact, whole
        assert reply.message_output.message.content == ">hello world"
        return
    assert reply.message_output.message_stream is not None
    chunks = [c.content async for c in reply.message_output.message_stream]
    assert chunks == [">hello", " world"]


async def test_a_remote_failure_is_an_error_event() -> None:
    async with plain_server(EchoExecutor()) as url:
        events = [ev async for ev in Runner(RemoteA2AAgent("echo", url)).query("fail")]
    assert len(events) == 1 and isinstance(events[0].error, A2AError)
    assert "failed: no can do" in str(events[0].error)


class Endless(AgentExecutor):
    """Reports WORKING forever, a status update every few milliseconds (so no read waits long
    enough for a per-read timeout), until a client cancels the task (``cancelled``) or the
    test stops it."""

    def __init__(self) -> None:
        self.cancelled, self.stop, self.updates = asyncio.Event(), asyncio.Event(), 0

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        up = TaskUpdater(event_queue, task_id, context_id)
        await event_queue.enqueue_event(
            Task(id=task_id, context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
        )
        while not (self.cancelled.is_set() or self.stop.is_set()):
            self.updates += 1
            await up.update_status(TaskState.TASK_STATE_WORKING, up.new_agent_message([new_text_part("still at it")]))
            await asyncio.sleep(0.01)  # the server's pace, not a wait for the test
        if self.stop.is_set():
            await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.cancelled.set()
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


@pytest.mark.parametrize("streaming", [True, False])
async def test_a_remote_task_that_never_finishes_ends_at_the_deadline(streaming: bool) -> None:
    # before: RemoteA2AAgent(timeout=2.0) was still reading WORKING updates after 15 s, as the
    # timeout bounds each HTTP read and every read was quick
    server = Endless()
    async with plain_server(server) as url:
        remote = RemoteA2AAgent("busy", url, timeout=2.0, deadline=0.5)
        events = await asyncio.wait_for(_collect(Runner(remote, streaming=streaming).query("go")), 10)
        if streaming:
            await asyncio.wait_for(server.cancelled.wait(), 10)  # tasks/cancel reached the server
        else:
            server.stop.set()  # SendMessage names the task only in its answer: nothing to cancel
    assert len(events) == 1 and isinstance(events[0].error, A2ATimeoutError)
    message = str(events[0].error)
    assert message.startswith(f"remote agent 'busy' at {url}/: no final answer within the deadline of 0.5 s")
    assert "RemoteA2AAgent(deadline=...) gives it longer" in message
    if streaming:
        assert "was still running; cancelled it on the remote" in message
    else:
        assert "the remote had not named its task yet, so it could not be cancelled" in message
    assert server.updates > 1


async def test_a_send_message_task_that_outlasts_timeout_is_waited_for_within_the_deadline() -> None:
    # before: SendMessage's answer, silent until the task ends, tripped httpx's read timeout: the
    # run failed after `timeout` (0.2 s here; 60 s by default, against a 600 s deadline) with
    # "A2AError ... A2AClientTimeoutError: Client Request timed out"
    server = Endless()
    async with plain_server(server) as url:
        remote = RemoteA2AAgent("busy", url, timeout=0.2, deadline=30.0)
        loop = asyncio.get_running_loop()
        start = loop.time()
        running = asyncio.ensure_future(_collect(Runner(remote, streaming=False).query("go")))
        await until(lambda: running.done() or loop.time() - start > 1.0, "five timeouts' worth of the task's work")
        ended_early = running.done()
        server.stop.set()  # the task completes
        events = await asyncio.wait_for(running, 10)
    assert not ended_early, [str(ev.error) for ev in events]
    assert [ev.error for ev in events if ev.error is not None] == []
    assert server.updates > 1


async def _collect(events: AsyncIterator[Any]) -> list[Any]:
    return [ev async for ev in events]


SERVE = """
import sys
from rillet import ChatModelAgent, ScriptedModel
from rillet.a2a import serve_a2a

model = ScriptedModel(["Hello from the served agent."], chunk_size=6)
serve_a2a(ChatModelAgent("greeter", description="greets", model=model), port=int(sys.argv[1]))
"""


@pytest.mark.slow
async def test_serve_a2a_serves_until_interrupted_and_a_remote_agent_calls_it() -> None:
    import os
    import signal
    import sys

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", SERVE, str(port), env=dict(os.environ))
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as http:

            async def card() -> bool:  # the card answers once the server is up
                with contextlib.suppress(httpx.TransportError):
                    return (await http.get(url + "/.well-known/agent-card.json")).status_code == 200
                return False

            await until(card, "the served agent's card")
        events = [ev async for ev in Runner(RemoteA2AAgent("greeter", url), streaming=True).query("hi")]
        assert [ev.error for ev in events if ev.error] == []
        assert (await events[-1].message_output.aget_message()).content == "Hello from the served agent."  # type: ignore[union-attr]
        proc.send_signal(signal.SIGINT)  # Ctrl-C ends it cleanly
        assert await asyncio.wait_for(proc.wait(), 10) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_serving_on_every_interface_needs_the_public_url_for_the_card() -> None:
    # the card would name http://0.0.0.0:port/, which clients cannot reach and RemoteA2AAgent
    # refuses as another origin than the one it fetched the card from
    with pytest.raises(ValueError, match="public_url='http://<the name clients use>:8000/'"):
        serve_a2a(weather_agent(), host="0.0.0.0", port=8000)


async def test_an_unreachable_remote_is_an_a2a_error_naming_the_agent_and_its_url() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/"
    card = agent_card(weather_agent(), dead)
    for streaming in (True, False):
        events = [ev async for ev in Runner(RemoteA2AAgent("weather", card), streaming=streaming).query("hi")]
        # before: a2a-sdk's A2AClientError, naming neither the agent nor where it was
        assert len(events) == 1 and isinstance(events[0].error, A2AError)
        assert str(events[0].error).startswith(f"remote agent 'weather' at {dead}: A2AClientError")


def test_bad_arguments_are_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="not an http"):
        RemoteA2AAgent("x", "localhost:9999")
    with pytest.raises(TypeError, match="expected an AgentCard or the agent's URL"):
        RemoteA2AAgent("x", 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"deadline=0\): give a positive number of seconds"):
        RemoteA2AAgent("x", "http://localhost:9999", deadline=0)


async def test_answers_resume_exactly_the_interrupts_they_name_and_the_rest_are_asked_again() -> None:
    done: list[str] = []

    @tool
    def pay(who: str) -> str:
        """Pays someone."""
        done.append(who)
        return f"paid {who}"

    both = Message.assistant(
        tool_calls=[
            ToolCall(index=0, id="p1", function=FunctionCall("pay", '{"who": "ann"}')),
            ToolCall(index=1, id="p2", function=FunctionCall("pay", '{"who": "bob"}')),
        ]
    )
    model = ScriptedModel([both, "Both paid."])
    agent = ChatModelAgent("payer", description="pays", model=model, tools=[requires_approval(pay)])
    async with A2AServer(agent) as server:
        first = await raw(server.url, user("pay ann and bob"))
        task = first[0].task
        assert shape(first)[-1] == ("status", "INPUT_REQUIRED", "interrupt", "interrupt")
        asked = {
            MessageToDict(p.data)["info"]["arguments"]["who"]: MessageToDict(p.data)["id"]
            for p in first[-1].status_update.status.message.parts
        }
        # only ann's call is answered: it runs, bob's is asked again
        second = await raw(
            server.url, user(task_id=task.id, context_id=task.context_id, data={asked["ann"]: approve()})
        )
        assert shape(second) == [
            ("status", "WORKING"),
            ("status", "WORKING", "tool_result"),  # ann's call ran
            ("status", "INPUT_REQUIRED", "interrupt"),
        ]
        again = MessageToDict(second[-1].status_update.status.message.parts[0].data)
        assert again["info"]["arguments"] == {"who": "bob"} and done == ["ann"]
        third = await raw(server.url, user(task_id=task.id, context_id=task.context_id, data={again["id"]: approve()}))
    assert shape(third)[-1] == ("status", "COMPLETED")
    assert done == ["ann", "bob"]


# --- RemoteA2AAgent against servers that shape replies otherwise ------------------------------


class Scripted(AgentExecutor):
    """Plays ``turns[i]`` for the i-th request: each a list of (kind, *args) steps written with
    a2a-sdk's TaskUpdater, as servers other than rillet's write their replies."""

    def __init__(self, *turns: list[tuple[Any, ...]]) -> None:
        self.turns = list(turns)
        self.heard: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        up = TaskUpdater(event_queue, task_id, context_id)
        self.heard.append(context.get_user_input())
        if context.current_task is None:
            submitted = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
            await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, status=submitted))
        for kind, *args in self.turns.pop(0):
            if kind == "chunk":
                text, append, last = args
                await up.add_artifact([new_text_part(text)], "a1", append=append, last_chunk=last)
            else:  # a status with a text message, or none
                message = up.new_agent_message([new_text_part(args[0])]) if args else None
                await up.update_status(kind, message)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


async def replies(events: list[Any]) -> list[tuple[str, list[str]]]:
    """Each message event as (how it came, its texts): ("stream", chunks) or ("whole", [text])."""
    out = []
    for ev in events:
        assert ev.error is None, ev.error
        mv = ev.message_output
        if mv is not None and mv.message_stream is not None:
            out.append(("stream", [c.content async for c in mv.message_stream]))
        elif mv is not None:
            out.append(("whole", [mv.message.content]))
    return out


@pytest.mark.parametrize("streaming", [True, False])
async def test_a_reply_in_the_final_status_is_kept_and_progress_notes_are_not_replies(streaming: bool) -> None:
    # many a2a-sdk servers answer with complete(message): the reply was lost before
    working, completed = TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED
    server = Scripted([(working, "thinking..."), (completed, "the answer is 42")])
    async with plain_server(server) as url:
        events = [ev async for ev in Runner(RemoteA2AAgent("s", url), streaming=streaming).query("q")]
    assert await replies(events) == [("whole", ["the answer is 42"])]


async def test_a_final_status_repeating_the_artifacts_is_not_a_second_reply() -> None:
    completed = TaskState.TASK_STATE_COMPLETED
    server = Scripted([("chunk", "Hel", False, False), ("chunk", "lo", True, True), (completed, "Hello")])
    async with plain_server(server) as url:
        events = [ev async for ev in Runner(RemoteA2AAgent("s", url), streaming=True).query("q")]
    assert await replies(events) == [("stream", ["Hel", "lo"])]


async def test_a_closing_snapshot_replaces_the_chunks_without_repeating_them() -> None:
    # ADK-Go's servers close partial chunks with the whole text (append false, last_chunk true):
    # before, the stream was cut off with an error and the text came a second time
    completed = TaskState.TASK_STATE_COMPLETED
    server = Scripted(
        [("chunk", "Hel", False, False), ("chunk", "lo", True, False), ("chunk", "Hello!", False, True), (completed,)]
    )
    async with plain_server(server) as url:
        events = [ev async for ev in Runner(RemoteA2AAgent("s", url), streaming=True).query("q")]
    assert await replies(events) == [("stream", ["Hel", "lo", "!"])]


async def test_chunks_never_marked_last_end_with_the_task() -> None:
    completed = TaskState.TASK_STATE_COMPLETED
    server = Scripted([("chunk", "Hel", False, False), ("chunk", "lo", True, False), (completed,)])
    async with plain_server(server) as url:
        events = [ev async for ev in Runner(RemoteA2AAgent("s", url), streaming=True).query("q")]
    assert await replies(events) == [("stream", ["Hel", "lo"])]  # no "cut off" error


@pytest.mark.parametrize("streaming", [True, False])
async def test_a_question_asked_in_words_reaches_the_top_and_the_answer_goes_back_as_text(streaming: bool) -> None:
    asking, completed = TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_COMPLETED
    server = Scripted([(asking, "Which city?")], [("chunk", "sunny there", False, True), (completed,)])
    async with plain_server(server) as url:
        runner = Runner(RemoteA2AAgent("s", url), checkpoint_store=InMemoryCheckpointStore(), streaming=streaming)
        first = [ev async for ev in runner.query("weather?", checkpoint_id="w")]
        (ctx,) = first[-1].action.interrupted.interrupt_contexts
        assert ctx.info == {"remote_agent": "s", "interrupts": [], "question": "Which city?"}
        resumed = [ev async for ev in await runner.aresume("w", targets={ctx.id: "Porto"})]
    assert await replies(resumed) == [("whole", ["sunny there"])]
    assert server.heard == ["weather?", "Porto"]
