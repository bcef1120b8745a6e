"""McpToolset against an MCP server written for the tests (tests/support/mcp_servers.py), over stdio
(a subprocess the toolset starts) and streamable HTTP (a subprocess on a loopback port)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import rillet
from rillet import ChatModelAgent, FunctionCall, Message, Runner, ScriptedModel, SqliteCheckpointStore, ToolCall
from rillet.mcp import HttpServer, McpConnectionError, McpError, McpToolError, McpToolset, StdioServer, ToolFilter
from rillet.tools.approval import approve
from support.optional import need
from support.waiting import until, wait_until

pytestmark = [pytest.mark.timeout(60), pytest.mark.anyio]  # anyio's pytest plugin runs the async tests


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


SERVER = str(Path(__file__).resolve().parents[1] / "support" / "mcp_servers.py")
# where the rillet under test lives (the source tree, or an installed wheel's site-packages),
# for the second process of a resume
RILLET_HOME = Path(rillet.__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _mcp_installed() -> None:
    need("mcp")


def bookings(log: Path) -> str:
    """What ``book`` wrote, in order ('' before the first booking)."""
    return log.read_text() if log.exists() else ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpProcess:
    """The test server on a loopback port; ``restart()`` kills it and starts it again there."""

    def __init__(self, env: dict[str, str]) -> None:
        self.port = free_port()
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, "http", str(self.port)],
            env={**os.environ, **self.env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        proc = self.proc

        def listening() -> bool:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return True
            if proc.poll() is not None:
                raise RuntimeError(f"the MCP test server exited with {proc.returncode}")
            return False

        wait_until(listening, "the MCP test server to listen", 20)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def restart(self) -> None:
        self.kill()
        self.start()


@pytest.fixture
def booking_log(tmp_path: Path) -> Path:
    return tmp_path / "bookings.log"


@pytest.fixture(scope="module")
def shared_http() -> Iterator[HttpProcess]:
    """One HTTP server for the tests that do not kill theirs (a server takes seconds to start)."""
    proc = HttpProcess({})
    try:
        yield proc
    finally:
        proc.kill()


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest, shared_http: HttpProcess) -> StdioServer | HttpServer:
    if request.param == "stdio":
        return StdioServer(sys.executable, [SERVER, "stdio"])
    return HttpServer(shared_http.url)


@pytest.fixture(params=["stdio", "http"])
def own_server(request: pytest.FixtureRequest) -> Iterator[tuple[StdioServer | HttpServer, HttpProcess | None]]:
    """A server of the test's own, with its HTTP process (to kill) when it has one."""
    if request.param == "stdio":
        yield StdioServer(sys.executable, [SERVER, "stdio"]), None
        return
    proc = HttpProcess({})
    try:
        yield HttpServer(proc.url), proc
    finally:
        proc.kill()


@pytest.fixture
async def toolset(server: StdioServer | HttpServer) -> AsyncIterator[McpToolset]:
    async with McpToolset(server, timeout=20) as ts:
        yield ts


def call(name: str, arguments: dict[str, Any], call_id: str = "c1") -> Message:
    return Message.assistant(
        tool_calls=[ToolCall(index=0, id=call_id, function=FunctionCall(name, json.dumps(arguments)))]
    )


def shown(ev: Any) -> tuple[str, ...]:
    """An event as (role, tool name or '', content), or ('interrupt', info) for an interrupt."""
    if ev.action and ev.action.interrupted:
        return ("interrupt", json.dumps([c.info for c in ev.action.interrupted.interrupt_contexts]))
    if ev.error is not None:
        return ("error", str(ev.error))
    msg = ev.message_output.get_message()
    if msg.tool_calls:
        return (msg.role, msg.tool_calls[0].function.name, msg.tool_calls[0].function.arguments)
    return (msg.role, ev.message_output.tool_name, msg.content)


async def run(agent: ChatModelAgent, text: str, **kwargs: Any) -> list[tuple[str, ...]]:
    return [shown(ev) async for ev in Runner(agent, **kwargs).query(text)]


# --- list, call, error --------------------------------------------------------------------


TOOLS = ["add", "echo", "fail", "picture", "book", "pid", "grow", "big", "crash"]  # the test server's


async def test_lists_the_servers_tools_with_their_schemas_as_given(toolset: McpToolset) -> None:
    tools = await toolset.tools()
    assert [t.info.name for t in tools] == TOOLS
    add = tools[0].info
    assert add.description == "Adds two integers."
    assert add.parameters["properties"] == {
        "a": {"title": "A", "type": "integer"},
        "b": {"title": "B", "type": "integer"},
    }
    assert add.parameters["required"] == ["a", "b"]


async def test_call_returns_text_json_and_content_parts(toolset: McpToolset) -> None:
    by = {t.info.name: t for t in await toolset.tools()}
    assert await by["add"].invoke('{"a": 2, "b": 3}') == "5"
    assert await by["echo"].invoke('{"text": "héllo"}') == "héllo"
    assert json.loads(await by["picture"].invoke("")) == [
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    ]


async def test_an_error_result_is_a_tool_error_the_model_sees(toolset: McpToolset) -> None:
    by = {t.info.name: t for t in await toolset.tools()}
    with pytest.raises(McpToolError, match=r"tool 'fail' failed: Error executing tool fail: cannot do it: no reason"):
        await by["fail"].invoke('{"reason": "no reason"}')
    model = ScriptedModel([call("fail", {"reason": "why"}), call("add", {"a": 1, "b": 2}, "c2"), "Three."])
    agent = ChatModelAgent("a", description="d", model=model, tools=list(by.values()))
    events = await run(agent, "go")
    assert events[0] == ("assistant", "fail", '{"reason": "why"}')
    assert events[1][:2] == ("tool", "fail") and events[1][2].startswith("Error: MCP server ")
    assert events[1][2].endswith("tool 'fail' failed: Error executing tool fail: cannot do it: why")
    assert events[2:] == [("assistant", "add", '{"a": 1, "b": 2}'), ("tool", "add", "3"), ("assistant", "", "Three.")]


async def test_bad_arguments_are_the_servers_error_and_bad_json_is_rillets(toolset: McpToolset) -> None:
    add = (await toolset.tools())[0]
    with pytest.raises(McpToolError, match="tool 'add' failed"):
        await add.invoke('{"a": "x"}')
    with pytest.raises(ValueError, match="arguments are not valid JSON"):
        await add.invoke("{oops")


# --- limits -------------------------------------------------------------------------------


def paged(pages: str) -> StdioServer:
    return StdioServer(sys.executable, [SERVER, "stdio"], env={"RILLET_MCP_PAGES": pages})


async def test_a_tool_list_in_pages_is_read_to_its_end() -> None:
    async with McpToolset(paged("3"), timeout=20, max_list_pages=3) as toolset:
        assert [t.info.name for t in await toolset.tools()] == TOOLS


@pytest.mark.parametrize("limit", [None, 5])
async def test_a_tool_list_whose_pages_never_end_fails_naming_the_limit(limit: int | None) -> None:
    # before: 100 pages of tools, and no error
    options = {} if limit is None else {"max_list_pages": limit}
    async with McpToolset(paged("endless"), timeout=20, **options) as toolset:
        pages = limit or 100
        with pytest.raises(McpError) as failed:
            await toolset.tools()
    assert str(failed.value) == (
        f"MCP server {toolset.server.label()}: its tool list did not end after {pages} pages ({pages} tools; the "
        "server keeps sending a next cursor); if it has more, raise McpToolset(max_list_pages=...)"
    )


@pytest.mark.parametrize("protocol", ["current", "legacy"])  # over HTTP: a JSON body, or an event stream
async def test_a_result_over_max_result_bytes_is_a_tool_error_and_the_connection_goes_on(
    server: StdioServer | HttpServer, protocol: str, request: pytest.FixtureRequest
) -> None:
    # before: no limit of rillet's own. Over stdio a 16 MB result took seconds (the mcp
    # package's reader joins a long line's chunks over and over), 100 MB minutes; over HTTP
    # an event stream over the mcp package's 1 MiB was "the connection was lost ... the
    # server process may have died"
    if protocol == "legacy":
        request.getfixturevalue("legacy_client")
    async with McpToolset(server, timeout=20, max_result_bytes=1_000_000) as toolset:
        big = {t.info.name: t for t in await toolset.tools()}["big"]
        assert len(await big.invoke('{"megabytes": 0.2}')) == 200_000  # sent twice: as text and structured
        server_pid = await toolset.call("pid", {})
        with pytest.raises(McpToolError, match=r"tool 'big' answered with more than 1,000,000 bytes.*max_result_bytes"):
            await big.invoke('{"megabytes": 20}')
        assert await toolset.call("pid", {}) == server_pid  # the same server: nothing was restarted
        assert len(await big.invoke('{"megabytes": 0.45}')) == 450_000


def test_an_answer_over_the_limit_is_refused_for_its_request_wherever_its_id_is() -> None:
    """Over stdio, in whatever chunks it comes: the id before the result (Python servers), or
    after it (JavaScript's key order); a message whose request cannot be told ends the
    connection (None) rather than leave a request waiting."""
    from rillet.mcp.transports import Lines

    big = "x" * 5000
    small = b'{"jsonrpc": "2.0", "id": 3, "result": {}}\n'
    stream = (
        f'{{"jsonrpc":"2.0","id":7,"result":{{"text":"{big}"}}}}\n'.encode()
        + small
        + f'{{"result":{{"text":"{big}"}},"jsonrpc":"2.0","id":"r-8"}}\n'.encode()
        + f'{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{big}"}}}}\n'.encode()
    )
    lines, out = Lines(1024), []
    for i in range(0, len(stream), 700):
        out += lines.feed(stream[i : i + 700])
    answers = [None if m is None else m.message for m in out]
    assert [(a.id, a.error.message) for a in answers if a is not None and hasattr(a, "error")] == [
        (7, "the server's answer is over the toolset's max_result_bytes of 1,024 bytes"),
        ("r-8", "the server's answer is over the toolset's max_result_bytes of 1,024 bytes"),
    ]
    assert answers[1].id == 3 and answers[1].result == {} and answers[3] is None and len(answers) == 4


def test_an_answer_over_the_limit_with_jsonrpc_before_its_result_is_refused_for_its_request() -> None:
    """The key order {jsonrpc, result, id} (some serializers write it): before, the id at the
    end was not looked for, and the connection ended as if the server had died."""
    from rillet.mcp.transports import Lines

    line = f'{{"jsonrpc": "2.0", "result": {{"text": "{"x" * 5000}"}}, "id": 12}}\n'.encode()
    (answer,) = Lines(1024).feed(line)
    assert answer is not None and (answer.message.id, answer.message.error.message) == (
        12,
        "the server's answer is over the toolset's max_result_bytes of 1,024 bytes",
    )


LOUD = textwrap.dedent(
    """
    import json, sys

    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    for line in sys.stdin:
        request = json.loads(line)
        method, rid = request.get("method"), request.get("id")
        if method == "initialize":
            version = request["params"]["protocolVersion"]
            info = {"name": "loud", "version": "1"}
            send({"jsonrpc": "2.0", "id": rid,
                  "result": {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}})
        elif method == "tools/list":
            tool = {"name": "shout", "description": "Logs a lot, then answers.", "inputSchema": {"type": "object"}}
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool]}})
        elif method == "tools/call":  # a log notification (no id) over the limit, then the answer
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x" * 50000}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "done"}]}})
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
    """
)


async def test_a_message_over_the_limit_that_answers_no_request_fails_the_call_naming_the_limit(
    tmp_path: Path,
) -> None:
    """Its request cannot be told, so the calls waiting fail with the limit's error (before:
    'the connection was lost ... the server process may have died'), and the next call works."""
    script = tmp_path / "loud.py"
    script.write_text(LOUD)
    async with McpToolset(StdioServer(sys.executable, [str(script)]), timeout=20, max_result_bytes=10_000) as toolset:
        (shout,) = await toolset.tools()
        for _ in range(2):  # the second on the same connection, after the late answer to the first
            with pytest.raises(
                McpToolError, match=r"tool 'shout' answered with more than 10,000 bytes.*max_result_bytes"
            ):
                await shout.invoke("{}")


# --- filter -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_filter", "names"),
    [
        (ToolFilter(allow={"add", "echo"}), ["add", "echo"]),
        (ToolFilter(block={"crash", "grow", "pid", "picture", "big"}), ["add", "echo", "fail", "book"]),
        (ToolFilter(allow={"add", "echo"}, block={"echo"}), ["add"]),
        (lambda t: t.name.startswith("p"), ["picture", "pid"]),
    ],
)
async def test_tool_filter(shared_http: HttpProcess, tool_filter: Any, names: list[str]) -> None:
    async with McpToolset(shared_http.url, tool_filter=tool_filter, prefix="s_") as ts:
        assert [t.info.name for t in await ts.tools()] == ["s_" + n for n in names]


def test_bad_arguments_are_refused_when_made() -> None:
    with pytest.raises(TypeError, match="StdioServer"):
        McpToolset("server.py")
    with pytest.raises(TypeError, match="require_approval"):
        McpToolset("http://127.0.0.1:1/mcp", require_approval="sometimes")
    with pytest.raises(TypeError, match="tool_filter"):
        McpToolset("http://127.0.0.1:1/mcp", tool_filter=["add"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"max_result_bytes\): a whole number of bytes of at least 1024"):
        McpToolset("http://127.0.0.1:1/mcp", max_result_bytes=10)
    with pytest.raises(ValueError, match=r"max_list_pages\): a whole number of at least 1"):
        McpToolset("http://127.0.0.1:1/mcp", max_list_pages=0)


async def test_a_server_that_cannot_start_is_a_connection_error() -> None:
    with pytest.raises(McpConnectionError, match="cannot connect to the MCP server"):
        async with McpToolset(StdioServer(sys.executable, ["-c", "import sys; sys.exit(1)"]), timeout=10):
            pass
    with pytest.raises(McpConnectionError, match="cannot connect"):
        async with McpToolset(f"http://127.0.0.1:{free_port()}/mcp", timeout=10):
            pass


# --- approval -----------------------------------------------------------------------------

RESUME = textwrap.dedent(
    """
    import asyncio, json, sys
    from rillet import ChatModelAgent, Runner, ScriptedModel, SqliteCheckpointStore
    from rillet.tools.approval import approve
    from rillet.mcp import McpToolset, StdioServer

    async def main():
        db, checkpoint, interrupt_id, server, log = sys.argv[1:6]
        async with McpToolset(StdioServer(sys.executable, [server, "stdio"], env={"RILLET_MCP_LOG": log}),
                              require_approval={"book"}) as toolset:
            agent = ChatModelAgent("booker", description="books", model=ScriptedModel(["Booked."]),
                                   tools=await toolset.tools())
            runner = Runner(agent, checkpoint_store=SqliteCheckpointStore(db))
            async for ev in runner.resume(checkpoint, targets={interrupt_id: approve()}):
                msg = ev.message_output.get_message()
                print(json.dumps([msg.role, msg.content]))

    asyncio.run(main())
    """
)


@pytest.mark.slow
async def test_approval_interrupts_and_a_second_process_resumes_from_sqlite(tmp_path: Path, booking_log: Path) -> None:
    server = StdioServer(sys.executable, [SERVER, "stdio"], env={"RILLET_MCP_LOG": str(booking_log)})
    db = str(tmp_path / "runs.db")
    async with McpToolset(server, require_approval={"book"}) as toolset:
        model = ScriptedModel([call("book", {"hotel": "Ritz"})])
        agent = ChatModelAgent("booker", description="books", model=model, tools=await toolset.tools())
        runner = Runner(agent, checkpoint_store=SqliteCheckpointStore(db))
        events = [ev async for ev in runner.query("book the Ritz", checkpoint_id="trip")]
    assert [shown(ev) for ev in events] == [
        ("assistant", "book", '{"hotel": "Ritz"}'),
        ("interrupt", '[{"tool": "book", "arguments": {"hotel": "Ritz"}}]'),
    ]
    assert bookings(booking_log) == ""  # nothing ran before the person's decision
    interrupt_id = events[-1].action.interrupted.interrupt_contexts[0].id
    out = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", RESUME, db, "trip", interrupt_id, SERVER, str(booking_log)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": f"{RILLET_HOME}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )
    assert out.returncode == 0, out.stderr
    assert [json.loads(line) for line in out.stdout.splitlines()] == [["tool", "booked Ritz"], ["assistant", "Booked."]]
    assert bookings(booking_log) == "Ritz\n"


async def test_approval_policies(shared_http: HttpProcess) -> None:
    async def interrupts(policy: Any, arguments: dict[str, Any]) -> bool:
        """Whether the call of book asks first; if not, it must have run."""
        async with McpToolset(shared_http.url, require_approval=policy) as ts:
            model = ScriptedModel([call("book", arguments), "Done."])
            agent = ChatModelAgent("a", description="d", model=model, tools=await ts.tools())
            events = await run(agent, "go")
            if events[1][0] == "interrupt":
                return True
            assert events[1] == ("tool", "book", f"booked {arguments['hotel']}")
            return False

    assert await interrupts("always", {"hotel": "A"})
    assert not await interrupts("never", {"hotel": "B"})
    assert not await interrupts({"add"}, {"hotel": "C"})
    pricey = lambda name, args: name == "book" and args["hotel"] == "Ritz"  # noqa: E731
    assert await interrupts(pricey, {"hotel": "Ritz"})
    assert not await interrupts(pricey, {"hotel": "Inn"})


async def test_approved_in_the_same_process(tmp_path: Path, server: StdioServer | HttpServer) -> None:
    async with McpToolset(server, require_approval="always") as gated:
        tools = await gated.tools()
        model = ScriptedModel([call("book", {"hotel": "Ritz"}), "Booked."])
        agent = ChatModelAgent("a", description="d", model=model, tools=tools)
        runner = Runner(agent, checkpoint_store=SqliteCheckpointStore(str(tmp_path / "r.db")))
        events = [ev async for ev in runner.query("go", checkpoint_id="x")]
        target = events[-1].action.interrupted.interrupt_contexts[0].id
        resumed = [shown(ev) async for ev in runner.resume("x", targets={target: approve()})]
    assert resumed == [("tool", "book", "booked Ritz"), ("assistant", "", "Booked.")]


# --- list_changed -------------------------------------------------------------------------


async def test_list_changed_refreshes_the_cached_list(
    own_server: tuple[StdioServer | HttpServer, HttpProcess | None],
) -> None:
    async with McpToolset(own_server[0], timeout=20) as toolset:  # grow changes the server for good
        await grows(toolset)


async def grows(toolset: McpToolset) -> None:
    by = {t.info.name: t for t in await toolset.tools()}
    assert "extra" not in by
    assert await by["grow"].invoke("") == "grown"

    async def refreshed() -> bool:
        return "extra" in [t.info.name for t in await toolset.tools()]

    await until(refreshed, "the tools/list_changed notification to refresh the list")
    extra = [t for t in await toolset.tools() if t.info.name == "extra"][0]
    assert await extra.invoke("") == "extra"


async def test_the_list_is_cached_until_refresh(toolset: McpToolset) -> None:
    first = await toolset.tools()
    listed = toolset._listed
    await toolset.tools()
    assert toolset._listed is listed  # no second listing
    again = await toolset.refresh()
    assert toolset._listed is not listed
    assert [t.info.name for t in again] == [t.info.name for t in first]


# --- the server dies ----------------------------------------------------------------------


async def test_server_killed_mid_run_is_a_tool_error_then_the_next_call_reconnects(
    own_server: tuple[StdioServer | HttpServer, HttpProcess | None],
) -> None:
    """``crash`` kills the server during its call; the local tool ``restart`` starts the HTTP
    server again (a stdio server is restarted by the toolset itself); ``pid`` reconnects."""
    server, http = own_server
    async with McpToolset(server, timeout=20) as toolset:
        await killed_and_restarted(toolset, http)


async def killed_and_restarted(toolset: McpToolset, http: HttpProcess | None) -> None:
    by = {t.info.name: t for t in await toolset.tools()}
    first_pid = await by["pid"].invoke("")

    def restart() -> str:
        """Starts the server again."""
        if http is not None:
            http.restart()
        return "restarted"

    model = ScriptedModel([call("crash", {}), call("restart", {}, "c2"), call("pid", {}, "c3"), "Back."])
    agent = ChatModelAgent("a", description="d", model=model, tools=[*by.values(), restart])
    events = await asyncio.wait_for(run(agent, "go"), 40)
    assert events[0] == ("assistant", "crash", "{}")
    assert events[1][:2] == ("tool", "crash")
    assert "connection was lost during the call of tool 'crash'" in events[1][2]
    assert events[2:4] == [("assistant", "restart", "{}"), ("tool", "restart", "restarted")]
    assert events[4] == ("assistant", "pid", "{}")
    assert events[5][:2] == ("tool", "pid") and events[5][2] != first_pid and events[5][2].isdigit()
    assert events[6] == ("assistant", "", "Back.")


async def test_a_sync_run_on_another_thread_calls_through_the_toolsets_loop(shared_http: HttpProcess) -> None:
    """A sync ``for`` over a run runs the tools on rillet's background loop; the calls go to
    the loop that opened the toolset, which owns the connection."""
    async with McpToolset(shared_http.url) as toolset:
        model = ScriptedModel([call("add", {"a": 20, "b": 22}), "42."])
        agent = ChatModelAgent("a", description="d", model=model, tools=await toolset.tools())
        events = await asyncio.to_thread(lambda: [shown(ev) for ev in Runner(agent).query("go")])
    assert events == [("assistant", "add", '{"a": 20, "b": 22}'), ("tool", "add", "42"), ("assistant", "", "42.")]


async def test_a_closed_toolset_says_so(shared_http: HttpProcess) -> None:
    async with McpToolset(shared_http.url) as toolset:
        add = (await toolset.tools())[0]
    with pytest.raises(RuntimeError, match="is not open: use it inside `async with McpToolset"):
        await add.invoke('{"a": 1, "b": 2}')


# --- servers of the handshake era (protocol versions before 2026-07-28) -------------------


@pytest.fixture
def legacy_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toolset's client speaks the initialize handshake, as to a server of the older
    protocol versions: HTTP sessions, and list_changed as a notification."""
    import functools

    import mcp

    monkeypatch.setattr(mcp, "Client", functools.partial(mcp.Client, mode="legacy"))


@pytest.mark.usefixtures("legacy_client")
async def test_older_protocol_list_changed_notification_refreshes_the_list(
    own_server: tuple[StdioServer | HttpServer, HttpProcess | None],
) -> None:
    async with McpToolset(own_server[0], timeout=20) as toolset:
        await grows(toolset)


@pytest.mark.usefixtures("legacy_client")
async def test_older_protocol_http_server_restarted_between_calls_gets_a_new_session() -> None:
    """The restarted server does not know the old session and refuses the call unseen: the
    toolset opens a new session and sends it again; the model sees only the result."""
    proc = HttpProcess({})
    try:
        async with McpToolset(proc.url, timeout=20) as toolset:
            pid = {t.info.name: t for t in await toolset.tools()}["pid"]
            first = await pid.invoke("")
            await asyncio.to_thread(proc.restart)
            second = await pid.invoke("")
            assert second != first and second == str(proc.proc.pid if proc.proc else "")
            assert await pid.invoke("") == second
    finally:
        proc.kill()


async def test_stdio_server_killed_between_calls_is_restarted_by_the_next_call() -> None:
    """Not in flight: the call was never sent, so the toolset starts the server again and the
    model sees only the result."""
    async with McpToolset(StdioServer(sys.executable, [SERVER, "stdio"]), timeout=20) as toolset:
        pid = {t.info.name: t for t in await toolset.tools()}["pid"]
        first = await pid.invoke("")
        os.kill(int(first), signal.SIGKILL)
        conn = toolset._conn
        await until(lambda: conn is None or conn.closed, "the end of the server's stdout to reach the client")
        second = await pid.invoke("")
        assert second.isdigit() and second != first


async def test_http_server_with_headers(shared_http: HttpProcess) -> None:
    async with McpToolset(HttpServer(shared_http.url, headers={"Authorization": "Bearer t"})) as toolset:
        add = (await toolset.tools())[0]
        assert await add.invoke('{"a": 1, "b": 1}') == "2"
    with pytest.raises(ValueError, match="HttpServer"):
        HttpServer("ftp://example.com/mcp")


# --- hostile servers ----------------------------------------------------------------------

CLASHING = textwrap.dedent(
    """
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("clashing", log_level="ERROR")
    app.add_tool(lambda: "dot", name="a.b", description="dot")
    app.add_tool(lambda: "underscore", name="a_b", description="underscore")
    app.run("stdio")
    """
)


async def test_two_server_names_that_become_one_tool_name_are_refused_with_the_fix(tmp_path: Path) -> None:
    """'a.b' and 'a_b' are both offered to the model as 'a_b': one would shadow the other."""
    script = tmp_path / "clashing.py"
    script.write_text(CLASHING)
    async with McpToolset(StdioServer(sys.executable, [str(script)]), timeout=20) as toolset:
        with pytest.raises(McpError, match=r"'a\.b' and 'a_b' are both offered as 'a_b'.*tool_filter"):
            await toolset.tools()
        toolset.tool_filter = ToolFilter(block=["a.b"])
        assert [t.info.name for t in await toolset.tools()] == ["a_b"]


async def test_a_server_that_never_answers_the_handshake_times_out_and_is_ended() -> None:
    silent = StdioServer(sys.executable, ["-c", "import os, time; print(os.getpid(), flush=True); time.sleep(60)"])
    with pytest.raises(McpConnectionError, match="did not answer within 2s"):
        async with McpToolset(silent, timeout=2):
            pass


def test_a_toolset_closed_with_its_event_loop_says_it_is_not_open(shared_http: HttpProcess) -> None:
    """Its loop is closed: the call must not be sent there (an 'Event loop is closed' error)."""

    async def opened() -> list[Any]:
        async with McpToolset(shared_http.url) as toolset:
            return await toolset.tools()

    add = asyncio.run(opened())[0]
    with pytest.raises(RuntimeError, match="is not open: use it inside `async with McpToolset"):
        asyncio.run(add.invoke('{"a": 1, "b": 2}'))


SLOW = textwrap.dedent(
    """
    import asyncio, pathlib, sys
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("slow", log_level="ERROR")

    @app.tool()
    async def wait() -> str:
        pathlib.Path(sys.argv[1]).touch()  # the test learns the call is in flight
        await asyncio.sleep(60)
        return "done"

    app.run("stdio")
    """
)


async def test_closing_the_toolset_during_a_call_says_so(tmp_path: Path) -> None:
    """Not 'the server process may have died; the next call reconnects': there is no next call."""
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    called = tmp_path / "called"
    async with McpToolset(StdioServer(sys.executable, [str(script), str(called)]), timeout=20) as toolset:
        wait = (await toolset.tools())[0]
        pending = asyncio.create_task(wait.invoke("{}"))
        await until(called.exists, "the server to run the call")
        await toolset.aclose()
        with pytest.raises(McpConnectionError, match="the toolset was closed during the call of tool 'wait'$"):
            await asyncio.wait_for(pending, 10)


# --- a toolset passed directly: ChatModelAgent(tools=[McpToolset(...)]) ----------------------


async def test_a_toolset_passed_directly_connects_on_first_use_and_keeps_its_filter(
    server: StdioServer | HttpServer,
) -> None:
    toolset = McpToolset(server, tool_filter=ToolFilter(allow={"add", "pid"}), timeout=20)
    try:
        model = ScriptedModel([call("add", {"a": 2, "b": 3}), "5.", call("pid", {}), "pid."])
        agent = ChatModelAgent("a", description="d", model=model, tools=[toolset])
        assert await run(agent, "add") == [
            ("assistant", "add", '{"a": 2, "b": 3}'),
            ("tool", "add", "5"),
            ("assistant", "", "5."),
        ]
        second = await run(agent, "pid")
        assert [t.name for t in model.calls[0].tools] == ["add", "pid"]  # the filter holds
        assert second[1][:2] == ("tool", "pid")
        first_pid = second[1][2]
        third = await run(
            ChatModelAgent("b", description="d", model=ScriptedModel([call("pid", {}), "x"]), tools=[toolset]), "pid"
        )
        assert third[1][2] == first_pid or isinstance(server, HttpServer)  # one connection across runs
    finally:
        await toolset.aclose()


def test_a_toolset_passed_directly_reconnects_on_a_new_event_loop_and_its_server_ends_with_the_loop(
    tmp_path: Path,
) -> None:
    """No `async with`: each asyncio.run connects anew (its own loop), and the end of that loop
    ends the stdio server the toolset started."""
    toolset = McpToolset(StdioServer(sys.executable, [SERVER, "stdio"]), timeout=20)

    async def pid() -> int:
        model = ScriptedModel([call("pid", {}), "ok"])
        agent = ChatModelAgent("a", description="d", model=model, tools=[toolset])
        events = await run(agent, "pid")
        return int(events[1][2])

    first = asyncio.run(pid())
    wait_until(lambda: not _alive(first), "the first server to end with its loop", 20)
    second = asyncio.run(pid())
    assert second != first
    wait_until(lambda: not _alive(second), "the second server to end with its loop", 20)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent counts as ended
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


async def test_a_toolset_passed_directly_is_closed_by_aclose_and_connects_again_when_used(
    shared_http: HttpProcess,
) -> None:
    toolset = McpToolset(shared_http.url, timeout=20)
    agent = ChatModelAgent(
        "a", description="d", model=ScriptedModel([call("add", {"a": 1, "b": 1}), "2."]), tools=[toolset]
    )
    assert (await run(agent, "go"))[1] == ("tool", "add", "2")
    await toolset.aclose()
    agent.model = ScriptedModel([call("add", {"a": 2, "b": 2}), "4."])
    assert (await run(agent, "go"))[1] == ("tool", "add", "4")
    await toolset.aclose()


async def test_a_toolset_passed_directly_keeps_its_approval_across_an_interrupt_and_resume(
    tmp_path: Path, booking_log: Path
) -> None:
    server = StdioServer(sys.executable, [SERVER, "stdio"], env={"RILLET_MCP_LOG": str(booking_log)})
    toolset = McpToolset(server, require_approval={"book"}, timeout=20)
    try:
        model = ScriptedModel([call("book", {"hotel": "Ritz"}), "Booked."])
        agent = ChatModelAgent("booker", description="books", model=model, tools=[toolset])
        runner = Runner(agent, checkpoint_store=SqliteCheckpointStore(str(tmp_path / "r.db")))
        events = [ev async for ev in runner.query("book", checkpoint_id="trip")]
        assert shown(events[-1])[0] == "interrupt"
        assert bookings(booking_log) == ""
        target = events[-1].action.interrupted.interrupt_contexts[0].id
        resumed = [shown(ev) async for ev in runner.resume("trip", targets={target: approve()})]
        assert resumed == [("tool", "book", "booked Ritz"), ("assistant", "", "Booked.")]
        assert bookings(booking_log) == "Ritz\n"
    finally:
        await toolset.aclose()


async def test_a_toolset_tool_named_like_another_tool_is_refused_naming_both(shared_http: HttpProcess) -> None:
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    toolset = McpToolset(shared_http.url, timeout=20)
    try:
        agent = ChatModelAgent("a", description="d", model=ScriptedModel(["x"]), tools=[add, toolset])
        events = await run(agent, "go")
        assert events[-1][0] == "error"
        assert "offers a tool named 'add', and so does one of its own tools" in events[-1][1]
        assert "McpToolset http://127.0.0.1" in events[-1][1]
        twin = McpToolset(shared_http.url, timeout=20)
        agent = ChatModelAgent("a", description="d", model=ScriptedModel(["x"]), tools=[toolset, twin])
        events = await run(agent, "go")
        assert "and so does the toolset <McpToolset" in events[-1][1]
        await twin.aclose()
    finally:
        await toolset.aclose()


async def test_a_toolset_first_used_by_a_sync_run_serves_async_runs_through_that_loop(shared_http: HttpProcess) -> None:
    """The sync run opens it on rillet's background loop, which keeps running: a run on the
    test's loop calls through it, and aclose() from here closes it there."""
    toolset = McpToolset(shared_http.url, timeout=20)
    agent = ChatModelAgent(
        "a", description="d", model=ScriptedModel([call("add", {"a": 1, "b": 2}), "3."]), tools=[toolset]
    )
    events = await asyncio.to_thread(lambda: [shown(ev) for ev in Runner(agent).query("go")])
    assert events[1] == ("tool", "add", "3")
    agent.model = ScriptedModel([call("add", {"a": 3, "b": 4}), "7."])
    assert (await run(agent, "go"))[1] == ("tool", "add", "7")
    await toolset.aclose()
    agent.model = ScriptedModel([call("add", {"a": 5, "b": 6}), "11."])
    assert (await run(agent, "go"))[1] == ("tool", "add", "11")  # connects again
    await toolset.aclose()


AT_EXIT = textwrap.dedent(
    """
    import json, sys
    from rillet import ChatModelAgent, FunctionCall, Message, Runner, ScriptedModel, ToolCall
    from rillet.mcp import McpToolset, StdioServer

    ask = Message.assistant(tool_calls=[ToolCall(index=0, id="c1", function=FunctionCall("pid", "{}"))])
    toolset = McpToolset(StdioServer(sys.executable, [sys.argv[1], "stdio"]), timeout=20)
    agent = ChatModelAgent("a", description="d", model=ScriptedModel([ask, "ok"]), tools=[toolset])
    for ev in Runner(agent).query("pid"):  # a sync run: the connection lives on rillet's background loop
        msg = ev.message_output.get_message()
        if msg.role == "tool":
            print(msg.content, flush=True)
    # no aclose(): the interpreter exits with the connection open
    """
)


def test_a_connection_left_open_on_rillets_loop_is_closed_at_interpreter_exit(tmp_path: Path) -> None:
    script = tmp_path / "at_exit.py"
    script.write_text(AT_EXIT)
    out = subprocess.run(
        [sys.executable, str(script), SERVER],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": f"{RILLET_HOME}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )
    assert out.returncode == 0, out.stderr
    server_pid = int(out.stdout.split()[0])
    wait_until(lambda: not _alive(server_pid), "the MCP server to end with the interpreter", 20)
    assert "Traceback" not in out.stderr, out.stderr
