"""OpenAIRealtimeModel against a Realtime-protocol server on loopback (websockets): the event
mapping both ways, a barge-in that cancels the response, tool results, refused auth."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

import pytest
from rillet import ChatModelAgent, LiveRequestQueue, Runner, ScriptedModel, tool
from rillet.errors import AuthenticationError, ModelConnectionError, ModelError
from rillet.live import Blob, OpenAIRealtimeModel
from support.live_rows import row
from support.optional import need


@tool
def clock() -> str:
    """The time now."""
    return "12:00"


class FakeRealtime:
    """Answers each response.create with the next script step: ("text", deltas), ("stall",
    deltas: then waits for response.cancel), ("call", name, args). Records what it got."""

    def __init__(self, script: list[tuple[Any, ...]]) -> None:
        self.script = list(script)
        self.got: list[dict[str, Any]] = []
        self.headers: dict[str, str] = {}
        self.path = ""
        self.closed = asyncio.Event()  # the client closed the connection

    async def handler(self, ws: Any) -> None:
        try:
            await self._answer(ws)
        finally:
            self.closed.set()

    async def _answer(self, ws: Any) -> None:
        self.headers = dict(ws.request.headers)
        self.path = ws.request.path
        stalled = False
        async for raw in ws:
            event = json.loads(raw)
            self.got.append(event)
            if event["type"] == "response.cancel" and stalled:
                stalled = False
                await ws.send(json.dumps({"type": "response.done", "response": {"status": "cancelled"}}))
            elif event["type"] == "response.create":
                step = self.script.pop(0)
                if step[0] == "call":
                    item = {"type": "function_call", "call_id": "call_1", "name": step[1], "arguments": step[2]}
                    await ws.send(json.dumps({"type": "response.output_item.done", "item": item}))
                    await ws.send(json.dumps({"type": "response.done", "response": {"status": "completed"}}))
                    continue
                for d in step[1]:
                    await ws.send(json.dumps({"type": "response.output_text.delta", "delta": d}))
                if step[0] == "stall":
                    stalled = True
                else:
                    await ws.send(json.dumps({"type": "response.done", "response": {"status": "completed"}}))


@asynccontextmanager
async def serving(fake: FakeRealtime, key: str = "sk-test") -> AsyncIterator[str]:
    server_mod = need("websockets.asyncio.server")

    def check(conn: Any, request: Any) -> Any:
        if request.headers.get("Authorization") != f"Bearer {key}":
            return conn.respond(HTTPStatus.UNAUTHORIZED, "bad key\n")
        return None

    async with server_mod.serve(fake.handler, "127.0.0.1", 0, process_request=check) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/v1/realtime"


def test_a_session_over_the_realtime_protocol() -> None:
    fake = FakeRealtime(
        [("text", ["Hi", " there"]), ("stall", ["Once", " upon"]), ("call", "clock", "{}"), ("text", ["Noon."])]
    )

    async def main() -> list[tuple[Any, ...]]:
        async with serving(fake) as url:
            model = OpenAIRealtimeModel("gpt-test", api_key="sk-test", base_url=url)
            agent = ChatModelAgent(
                "voice", instruction="Be brief.", model=ScriptedModel([]), live_model=model, tools=[clock]
            )
            q = LiveRequestQueue()
            q.send_content("Hel", partial=True)
            q.send_content("lo")
            rows = []
            async for ev in Runner(agent).run_live(queue=q):
                r = row(ev)
                rows.append(r)
                if r == ("voice", "voice", "turn_complete") and len(rows) == 4:
                    q.send_content("Tell me a story")
                elif r == ("voice", "voice", "partial", " upon"):
                    q.send_activity_start()
                    q.send_realtime(Blob(b"\x01\x02", "audio/pcm"))
                    q.send_content("What time is it?", partial=True)
                    q.send_activity_end()
                elif r == ("voice", "voice", "message", "Noon."):
                    q.close()
            return rows

    rows = asyncio.run(asyncio.wait_for(main(), 20))
    assert rows == [
        ("voice", "voice", "partial", "Hi"),
        ("voice", "voice", "partial", " there"),
        ("voice", "voice", "message", "Hi there"),
        ("voice", "voice", "turn_complete"),
        ("voice", "voice", "partial", "Once"),
        ("voice", "voice", "partial", " upon"),
        ("voice", "voice", "interrupted", "Once upon"),
        ("voice", "voice", "calls", ["clock"]),
        ("voice", "voice", "tool", "clock", "12:00"),
        ("voice", "voice", "partial", "Noon."),
        ("voice", "voice", "message", "Noon."),
        ("voice", "voice", "turn_complete"),
    ]
    assert fake.path == "/v1/realtime?model=gpt-test"
    kinds = [e["type"] for e in fake.got]
    assert kinds == [
        "session.update",
        "conversation.item.create",
        "conversation.item.create",
        "response.create",
        "conversation.item.create",
        "response.create",
        "response.cancel",  # the barge-in, once
        "input_audio_buffer.append",
        "conversation.item.create",
        "input_audio_buffer.commit",
        "response.create",
        "conversation.item.create",  # the tool's result
        "response.create",
    ]
    session = fake.got[0]["session"]
    assert session["instructions"] == "Be brief." and session["audio"]["input"]["turn_detection"] is None
    assert [t["name"] for t in session["tools"]] == ["clock"]
    assert fake.got[1]["item"] == {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Hel"}],
    }
    assert fake.got[7]["audio"] == "AQI="
    assert fake.got[11]["item"] == {"type": "function_call_output", "call_id": "call_1", "output": "12:00"}


def test_close_during_a_tool_call_ends_the_run_cleanly() -> None:
    # the session closes while a tool runs: its result is not sent to the closed socket
    fake = FakeRealtime([("call", "slow", "{}")])
    q = LiveRequestQueue()

    @tool
    async def slow() -> str:
        """Slow."""
        q.close()
        await fake.closed.wait()  # ends after the session
        return "done"

    async def main() -> list[tuple[Any, ...]]:
        async with serving(fake) as url:
            model = OpenAIRealtimeModel("m", api_key="sk-test", base_url=url)
            agent = ChatModelAgent("voice", model=ScriptedModel([]), live_model=model, tools=[slow])
            q.send_content("go")
            return [row(ev) async for ev in Runner(agent).run_live(queue=q)]

    assert asyncio.run(asyncio.wait_for(main(), 20)) == [
        ("voice", "voice", "calls", ["slow"]),
        ("voice", "voice", "tool", "slow", "done"),
    ]
    assert "function_call_output" not in [e.get("item", {}).get("type") for e in fake.got]


def test_a_frame_that_is_not_json_is_a_model_error() -> None:
    class Garbage(FakeRealtime):
        async def handler(self, ws: Any) -> None:
            async for raw in ws:
                if json.loads(raw)["type"] == "response.create":
                    await ws.send("<html>502 Bad Gateway</html>")

    q = LiveRequestQueue()
    q.send_content("hi")

    async def main() -> list[Any]:
        async with serving(Garbage([])) as url:
            model = OpenAIRealtimeModel("m", api_key="sk-test", base_url=url)
            agent = ChatModelAgent("voice", model=ScriptedModel([]), live_model=model)
            return [ev async for ev in Runner(agent).run_live(queue=q)]

    (ev,) = asyncio.run(asyncio.wait_for(main(), 20))
    assert isinstance(ev.error, ModelError) and "not a JSON event: '<html>502" in str(ev.error)


def test_history_goes_first_as_conversation_items() -> None:
    from rillet import FunctionCall, Message, ToolCall

    fake = FakeRealtime([("text", ["ok"])])
    history = [
        Message.user("earlier"),
        Message.assistant("sure", tool_calls=[ToolCall(id="c0", function=FunctionCall("clock", "{}"))]),
        Message.tool_message("11:00", "c0", "clock"),
    ]

    async def main() -> None:
        async with serving(fake) as url:
            conn = await OpenAIRealtimeModel(api_key="sk-test", base_url=url).connect(history)
            await conn.send_content(Message.user("now?"))
            got = [r async for r in _until_turn_complete(conn)]
            await conn.close()
            assert [(r.message.content if r.message else None, r.partial, r.turn_complete) for r in got] == [
                ("ok", True, False),
                ("ok", False, False),
                (None, False, True),
            ]

    asyncio.run(asyncio.wait_for(main(), 20))
    items = [e["item"]["type"] for e in fake.got[1:5]]
    assert items == ["message", "message", "function_call", "function_call_output"]
    assert fake.got[2]["item"] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "sure"}],
    }
    assert fake.got[3]["item"]["call_id"] == fake.got[4]["item"]["call_id"] == "c0"


async def _until_turn_complete(conn: Any) -> AsyncIterator[Any]:
    async for r in conn.receive():
        yield r
        if r.turn_complete:
            return


def test_a_refused_key_and_an_unreachable_server_are_model_errors() -> None:
    async def main() -> None:
        async with serving(FakeRealtime([])) as url:
            with pytest.raises(AuthenticationError, match="HTTP 401") as e:
                await OpenAIRealtimeModel(api_key="wrong", base_url=url).connect([])
            assert e.value.status_code == 401
            port = int(url.split(":")[2].split("/")[0])
        with pytest.raises(ModelConnectionError, match="cannot reach"):
            await OpenAIRealtimeModel(
                api_key="k", base_url=f"ws://127.0.0.1:{port}/v1/realtime", open_timeout=2
            ).connect([])

    asyncio.run(asyncio.wait_for(main(), 20))
    with pytest.raises(ValueError, match="ws:// or wss://"):
        OpenAIRealtimeModel(base_url="https://api.openai.com/v1/realtime")
