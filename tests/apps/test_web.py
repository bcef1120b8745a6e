"""The dev UI's server without a browser: the server-sent records of a run, the resume
endpoint, the checkpoint browser's API, the shipped page, and the loopback-only rule."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import threading
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from rillet import (
    ChatModelAgent,
    FunctionCall,
    Message,
    ScriptedModel,
    SqliteCheckpointStore,
    StreamWriter,
    ToolCall,
    pipe,
    requires_approval,
    tool,
)
from rillet.web import create_app, is_loopback, serve
from support.optional import need
from support.waiting import wait_until
from support.web_agent import GREETING, build

if TYPE_CHECKING:
    from starlette.testclient import TestClient

TESTS = Path(__file__).resolve().parents[1]  # holds support/


def records(client: TestClient, url: str, calls: bool = False) -> list[dict[str, Any]]:
    """The run's records, read from its server-sent events to the end of the run; its
    ``call`` records (the call inspector's) only if ``calls``."""
    out, kind = [], None
    with client.stream("GET", url) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                record = json.loads(line[6:])
                assert record["type"] == kind
                if calls or kind != "call":
                    out.append(record)
    return out


def shape(recs: list[dict[str, Any]]) -> list[str]:
    """The records' types, runs of deltas as one ``delta*``, events with what they carry."""
    out: list[str] = []
    for r in recs:
        t = r["type"]
        if t == "delta":
            if out[-1] != "delta*":
                out.append("delta*")
            continue
        if t == "event":
            t += f" {'/'.join(r['path'])} {r.get('role') or r['action']['kind']}" + (" open" if r.get("open") else "")
        if t == "run_end":
            t += " " + r["status"]
        out.append(t)
    return out


def make_client(app: Any) -> TestClient:
    """A client of ``app``; the test skips where Starlette is missing (fails under CI)."""
    return need("starlette.testclient").TestClient(app, base_url="http://127.0.0.1:8000")  # type: ignore[no-any-return]


@pytest.fixture
def client() -> Any:
    with make_client(create_app(build())) as c:
        yield c


def start(client: TestClient, text: str = "Book Lisbon") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    response = client.post("/api/runs", json={"text": text})
    assert response.status_code == 200, response.text
    run = response.json()
    return run, records(client, run["events"])


def test_a_run_streams_as_records_with_deltas_and_ends_at_its_interrupt(client: TestClient) -> None:
    run, recs = start(client)
    assert shape(recs) == [
        "run_start",
        "event front_desk assistant open",
        "delta*",
        "event_end",
        "event front_desk tool",
        "event front_desk/booker assistant open",
        "event_end",
        "event front_desk/booker interrupt",
        "run_end interrupted",
    ]
    assert "".join(r["text"] for r in recs if r["type"] == "delta") == GREETING
    assert len([r for r in recs if r["type"] == "delta"]) > 1
    ends = [r for r in recs if r["type"] == "event_end"]
    events = [r for r in recs if r["type"] == "event"]
    end = ends[0]
    assert end["content"] == GREETING and end["tool_calls"] == [
        {"id": "call_transfer", "name": "transfer_to_agent", "arguments": '{"agent_name": "booker"}'}
    ]
    assert events[1]["action"] == {"kind": "transfer", "to": "booker"} and events[1]["tool_name"] == "transfer_to_agent"
    [ask] = recs[-2]["action"]["interrupts"]
    assert ask["address"] == ["agent:front_desk", "agent:booker", "tool:book_hotel:call_book"]
    assert ask["info"] == {"tool": "book_hotel", "arguments": {"city": "Lisbon", "nights": 2}}
    assert recs[-1] == {
        "type": "run_end",
        "run": run["run"],
        "status": "interrupted",
        "checkpoint_id": run["checkpoint_id"],
    }
    # a page that connects late gets the whole run again, from its first record
    assert records(client, run["events"]) == recs


def _interrupt_id(recs: list[dict[str, Any]]) -> str:
    return str(recs[-2]["action"]["interrupts"][0]["id"])


@pytest.mark.parametrize(
    ("decision", "tool_result"),
    [
        ({"decision": "approve"}, "booked 2 nights in Lisbon, confirmation H-311"),
        (
            {"decision": "edit", "arguments": {"city": "Porto", "nights": 3}},
            "booked 3 nights in Porto, confirmation H-311",
        ),
        ({"decision": "reject", "reason": "too dear"}, "The user rejected this call of book_hotel (too dear)."),
    ],
)
def test_the_resume_endpoint_answers_the_interrupt_and_the_run_goes_on(
    client: TestClient, decision: dict[str, Any], tool_result: str
) -> None:
    run, recs = start(client)
    response = client.post(
        "/api/resume", json={"checkpoint_id": run["checkpoint_id"], "targets": {_interrupt_id(recs): decision}}
    )
    assert response.status_code == 200, response.text
    resumed = records(client, response.json()["events"])
    assert shape(resumed) == [
        "run_start",
        "event front_desk/booker tool",
        "event front_desk/booker assistant open",
        "delta*",
        "event_end",
        "run_end done",
    ]
    assert resumed[0]["kind"] == "resume"
    assert resumed[0]["decisions"] == [
        {
            "interrupt": _interrupt_id(recs),
            "address": ["agent:front_desk", "agent:booker", "tool:book_hotel:call_book"],
            "answer": decision,
        }
    ]
    assert resumed[1]["tool_name"] == "book_hotel" and resumed[1]["content"].startswith(tool_result)
    assert resumed[-2]["content"].startswith("All set: " + tool_result)
    assert client.get("/api/checkpoints").json() == []  # a finished resume deletes its checkpoint


def test_a_session_runs_checkpoint_is_answered_from_the_page_and_its_turn_kept(tmp_path: Path) -> None:
    """A run of a session (`rillet run --session ID --db FILE`, or a program's
    Runner(session_store=...)) saved at an approval: the page offered to answer it, and the
    resume was refused (409, "the Runner has no session_store; pass Runner(...)")."""
    from rillet import Runner
    from rillet.sessions import SqliteSessionStore

    db = tmp_path / "runs.db"
    store, sessions = SqliteCheckpointStore(db), SqliteSessionStore(db)
    saved = list(Runner(build(), checkpoint_store=store, session_store=sessions).query(
        "Book Lisbon", checkpoint_id="theirs", session_id="ada"
    ))  # fmt: skip
    (asked,) = [e for e in saved if e.action is not None and e.action.interrupted is not None]
    iid = asked.action.interrupted.interrupt_contexts[0].id
    with make_client(create_app(build(), store=store, sessions=sessions)) as c:
        answered = c.post("/api/resume", json={"checkpoint_id": "theirs", "targets": {iid: {"decision": "approve"}}})
        assert answered.status_code == 200, answered.text
        assert records(c, answered.json()["events"])[-1]["status"] == "done"
        turns = c.get("/api/sessions/ada").json()["turns"]
    assert len(turns) == 1 and turns[0]["messages"][0]["content"] == "Book Lisbon"
    assert turns[0]["messages"][-1]["content"].startswith("All set: booked 2 nights in Lisbon")


def test_a_resume_that_cannot_run_is_refused_with_the_reason(client: TestClient) -> None:
    run, recs = start(client)
    bad_body = client.post("/api/resume", json={"checkpoint_id": run["checkpoint_id"]})
    assert bad_body.status_code == 400 and '"targets"' in bad_body.json()["error"]
    missing = client.post("/api/resume", json={"checkpoint_id": "nope", "targets": {}})
    assert missing.status_code == 409
    assert missing.json()["error"] == "CheckpointNotFoundError: checkpoint[nope] not exist"
    unknown = client.post("/api/resume", json={"checkpoint_id": run["checkpoint_id"], "targets": {"x": "approve"}})
    assert unknown.status_code == 409
    assert "resume targets ['x'] are not interrupts of" in unknown.json()["error"]
    assert _interrupt_id(recs) in unknown.json()["error"]
    assert [c["id"] for c in client.get("/api/checkpoints").json()] == [run["checkpoint_id"]]  # kept


def test_a_message_must_be_non_empty_text(client: TestClient) -> None:
    for body in ({}, {"text": ""}, {"text": 3}, [1]):
        response = client.post("/api/runs", json=body)
        assert response.status_code == 400
        assert response.json() == {"error": 'POST /api/runs takes JSON {"text": "your message"} with a non-empty text'}
    assert client.get("/api/runs/nope/events").status_code == 404


def test_a_body_with_text_that_is_not_unicode_is_a_400_not_a_500(client: TestClient) -> None:
    """JSON may spell a lone surrogate (\\ud800), which no UTF-8 text holds: the run's message
    could not be made of it, and the server answered 500 with a traceback in its log."""
    for path, body in (
        ("/api/runs", '{"text": "hi \\ud800"}'),
        ("/api/resume", '{"checkpoint_id": "c", "targets": {"\\udfff": {"decision": "approve"}}}'),
        ("/api/sessions/open", '{"id": "\\ud800"}'),
    ):
        response = client.post(path, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 400, (path, response.text)
        assert "lone surrogate" in response.json()["error"]
    assert client.get("/api/runs").json() == []  # nothing was started


def test_a_body_nested_too_deeply_for_the_json_parser_is_a_400_not_a_500(client: TestClient) -> None:
    """100,000 brackets fit in the 1 MiB a body may hold, and json.loads raised RecursionError,
    which the server answered with 500 and a traceback in its log."""
    deep = "[" * 100_000 + "]" * 100_000
    response = client.post("/api/runs", content='{"text": ' + deep + "}", headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert "nested too deeply" in response.json()["error"]
    assert client.get("/api/runs").json() == []


def test_a_session_is_shown_while_another_request_starts_a_run() -> None:
    """GET /api/sessions/{id} walked the server's runs while a POST /api/runs (another thread)
    could add one: "dictionary changed size during iteration", a 500."""
    from rillet.web.runs import Run

    app = create_app(build())
    hub = app.state.hub

    class Started(dict):  # type: ignore[type-arg]
        def get(self, key: str, default: Any = None) -> Any:
            late = Run("c2", "run", "a run another request starts meanwhile")
            hub.runs.setdefault(late.id, late)
            return super().get(key, default)

    early = Run("c1", "run", "hi")
    early.records[0] = Started(early.records[0], session=hub.session_id)
    hub.runs[early.id] = early
    with make_client(app) as c:
        shown = c.get(f"/api/sessions/{hub.session_id}")
        assert shown.status_code == 200, shown.text
        assert shown.json()["running"] == [early.id]


def test_the_checkpoint_browser_says_how_to_continue_a_step_record(tmp_path: Path) -> None:
    """A step run that failed (or whose server died) is a step record the browser does not
    decode: its 422 said to "continue it with Runner.resume(id)", which a page cannot do."""
    from rillet import Runner

    def down(messages: list[Message], tools: Any) -> Message:
        raise ConnectionError("the model endpoint is down")

    agent = ChatModelAgent("flaky", description="its model is down", model=ScriptedModel(down))
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    events = list(Runner(agent, checkpoint_store=store, durability="step").query("hi", checkpoint_id="s1"))
    assert events[-1].error is not None
    with make_client(create_app(agent, store=store)) as c:
        shown = c.get("/api/checkpoints/s1")
    assert shown.status_code == 422
    error = shown.json()["error"]
    assert "the step record of a run that did not finish" in error
    assert f"rillet resume s1 --db {tmp_path / 'runs.db'} MODULE:ATTRIBUTE" in error
    assert "Runner.resume(id)" not in error


def test_the_checkpoint_browser_lists_and_decodes_a_sqlite_store(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    with make_client(create_app(build(), store=store)) as client:
        run, recs = start(client, "Book me Lisbon")
        [listed] = client.get("/api/checkpoints").json()
        assert listed["id"] == run["checkpoint_id"] and listed["size"] == len(store.get(run["checkpoint_id"]) or b"")
        assert 0 <= listed["age"] < 60
        view = client.get(f"/api/checkpoints/{run['checkpoint_id']}").json()
        assert view["agent"]["name"] == "front_desk"
        assert view["input"] == [{"role": "user", "content": "Book me Lisbon"}]
        assert [(e["path"], e.get("role")) for e in view["events"]] == [
            (["front_desk"], "assistant"),
            (["front_desk"], "tool"),
            (["front_desk", "booker"], "assistant"),
        ]
        assert view["events"][0]["content"] == GREETING
        roots = [i for i in view["interrupts"] if i["root_cause"]]
        assert [(i["id"], i["state"]) for i in roots] == [
            (_interrupt_id(recs), {"arguments": '{"city": "Lisbon", "nights": 2}'})
        ]
        missing = client.get("/api/checkpoints/nope")
        assert missing.status_code == 404 and missing.json() == {"error": "no checkpoint 'nope' in the store"}
        store.set("broken", b"RCK\x01\x00\x00\x00\x00junk")
        broken = client.get("/api/checkpoints/broken")
        assert broken.status_code == 422 and broken.json()["error"].startswith(
            "CheckpointCorruptError: checkpoint[broken] fails its checksum"
        )


def test_a_finished_turn_is_history_for_the_next(client: TestClient) -> None:
    model = ScriptedModel(lambda messages, tools: f"you said {len(messages)} things")
    agent = ChatModelAgent("echo", description="echoes", model=model)
    with make_client(create_app(agent)) as c:
        start(c, "one")
        _, recs = start(c, "two")
        assert recs[-2]["content"] == "you said 3 things"  # one, its answer, two
        assert [(m.role, m.content) for m in model.calls[1].messages] == [
            ("user", "one"),
            ("assistant", "you said 1 things"),
            ("user", "two"),
        ]
        assert c.post("/api/reset", json={}).status_code == 200
        _, recs = start(c, "three")
        assert recs[-2]["content"] == "you said 1 things"


def test_the_page_and_its_assets_ship_in_the_package_and_fetch_nothing_from_elsewhere(client: TestClient) -> None:
    static = resources.files("rillet.web") / "static"
    for name, kind in (("index.html", "text/html"), ("app.js", "text/javascript"), ("app.css", "text/css")):
        text = (static / name).read_text()
        assert "http://" not in text and "https://" not in text, name
        response = client.get("/" if name == "index.html" else f"/static/{name}")
        assert response.status_code == 200 and response.headers["content-type"].startswith(kind)
        assert response.text == text
    assert client.get("/static/../app.py").status_code == 404
    tree = client.get("/api/agent").json()
    assert [(tree["name"], tree["kind"]), [s["name"] for s in tree["sub_agents"]]] == [
        ("front_desk", "ChatModelAgent"),
        ["booker"],
    ]


def test_only_loopback_hosts_unless_allowed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.4", "::", "example.com"))
    need("uvicorn")
    from support.web_server import free_port

    ran: list[dict[str, Any]] = []
    monkeypatch.setattr(
        "uvicorn.Server.run",
        lambda self, sockets: ran.append({"host": self.config.host, "port": sockets[0].getsockname()[1]}),
    )
    with pytest.raises(ValueError, match=r"refusing to listen on '0.0.0.0'.*--allow-remote"):
        serve(build(), db=None, host="0.0.0.0")
    assert ran == []
    port = free_port()
    serve(build(), db=None, host="0.0.0.0", port=port, allow_remote=True)
    assert ran == [{"host": "0.0.0.0", "port": port}]
    assert f"WARNING: listening on 0.0.0.0:{port}, reachable from other machines" in capsys.readouterr().err
    serve(build(), db=None, port=0)  # a free port, bound before its URL is printed
    assert ran[-1]["host"] == "127.0.0.1" and ran[-1]["port"] > 0
    assert f"rillet web: http://127.0.0.1:{ran[-1]['port']}/" in capsys.readouterr().err


def _main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rillet.cli", "web", *args], cwd=TESTS, capture_output=True, text=True, timeout=60
    )


def test_rillet_web_says_what_is_wrong_in_one_line() -> None:
    remote = _main("support.web_agent:build", "--host", "0.0.0.0")
    assert remote.returncode == 2 and remote.stderr.startswith("rillet web: --host 0.0.0.0 is not a loopback address")
    missing = _main("support.web_agent:nothing")
    assert missing.returncode == 2
    assert missing.stderr == "rillet web: 'support.web_agent:nothing': support.web_agent has no attribute 'nothing'\n"


def test_rillet_web_refuses_a_file_that_is_not_a_checkpoint_store(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    result = _main("support.web_agent:build", "--db", str(text))
    assert result.returncode == 2
    assert result.stderr.startswith(f"rillet web: SqliteCheckpointStore: {str(text)!r} is not a SQLite database")
    assert result.stderr.count("\n") == 1


def test_a_page_of_another_site_cannot_run_the_agent(client: TestClient) -> None:
    """The server runs tools for whoever asks: a page on another origin (a form or a
    no-preflight fetch with a text/plain body) and a name rebound to 127.0.0.1 are refused."""
    body = '{"text": "Book Lisbon"}'
    cross = client.post(
        "/api/runs", content=body, headers={"Origin": "https://evil.example", "Content-Type": "text/plain"}
    )
    assert (cross.status_code, cross.json()["error"]) == (
        403,
        "rillet web: refusing a request from the page of another site (Origin https://evil.example)",
    )
    plain = client.post("/api/runs", content=body, headers={"Content-Type": "text/plain"})
    assert plain.status_code == 415 and "Content-Type: application/json" in plain.json()["error"]
    rebound = client.get("/api/checkpoints", headers={"Host": "evil.example:8000"})
    assert rebound.status_code == 403
    assert rebound.json()["error"].startswith("rillet web: refusing Host 'evil.example:8000'")
    same = client.post("/api/runs", json={"text": "Book Lisbon"}, headers={"Origin": "http://127.0.0.1:8000"})
    assert same.status_code == 200, same.text
    records(client, same.json()["events"])


STUCK = '''
import time

from rillet import ChatModelAgent, FunctionCall, Message, ScriptedModel, ToolCall, tool


@tool
def wait() -> str:
    """Waits a long time."""
    time.sleep(120)
    return "waited"


def reply(messages, tools=None):
    return Message.assistant("", [ToolCall(index=0, id="w1", function=FunctionCall("wait", "{}"))])


agent = ChatModelAgent("stuck", description="waits", model=ScriptedModel(reply), tools=[wait])
'''


@pytest.mark.slow
def test_ctrl_c_stops_the_server_while_a_page_watches_a_run_in_progress(tmp_path: Path) -> None:
    import signal
    import socket
    import urllib.request

    need("uvicorn")
    (tmp_path / "stuck.py").write_text(STUCK)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "rillet.cli", "web", "stuck:agent", "--port", str(port)],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )

    def answers() -> bool:
        try:
            urllib.request.urlopen(base + "/api/agent", timeout=5).close()
            return True
        except OSError:
            return False

    try:
        wait_until(answers, "rillet web to answer")
        post = urllib.request.Request(base + "/api/runs", data=b'{"text": "go"}', method="POST")
        post.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(post, timeout=5) as response:
            events = json.load(response)["events"]
        watching = urllib.request.urlopen(base + events, timeout=30)  # the page's stream, open
        read: list[bytes] = []
        reader = threading.Thread(target=lambda: read.append(watching.read()), daemon=True)
        reader.start()
        server.send_signal(signal.SIGINT)  # the page's stream is open: its headers came
        assert server.wait(timeout=20) == 0
        reader.join(20)
        watching.close()
        last = json.loads([line for line in read[0].decode().splitlines() if line.startswith("data: ")][-1][6:])
        # the page says the run was cut: Ctrl-C ended its stream (the shutdown's grace would end it silently)
        assert (last["type"], last["status"]) == ("run_end", "stopped")
        assert server.stderr is not None and "Traceback" not in server.stderr.read()
    finally:
        server.kill()
        server.wait()
        assert server.stderr is not None
        server.stderr.close()


LIMIT = 1 << 20  # the documented default of max_body


HANGS_AFTER_APPROVAL = '''
import asyncio

from rillet import ChatModelAgent, FunctionCall, Message, ScriptedModel, ToolCall, requires_approval, tool


@tool
def book() -> str:
    """Books."""
    return "booked"


@tool
async def hang() -> str:
    """Never returns."""
    await asyncio.Event().wait()
    return "never"


def reply(messages, tools=None):
    name = "book" if messages[-1].role == "user" else "hang"
    return Message.assistant("", [ToolCall(index=0, id="c_" + name, function=FunctionCall(name, "{}"))])


agent = ChatModelAgent("clerk", description="books", model=ScriptedModel(reply), tools=[requires_approval(book), hang])
'''


@pytest.mark.slow
def test_ctrl_c_during_a_resume_leaves_its_checkpoint_resumable_at_once(tmp_path: Path) -> None:
    """The server stopped with a resume in flight kept the resume's claim on the checkpoint:
    answered again after a restart, it was refused ("already being resumed") for ten minutes."""
    import signal
    import socket
    import urllib.request

    need("uvicorn")
    (tmp_path / "hangs.py").write_text(HANGS_AFTER_APPROVAL)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "rillet.cli", "web", "hangs:agent", "--port", str(port), "--db", "runs.db"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )

    def answers() -> bool:
        try:
            urllib.request.urlopen(base + "/api/agent", timeout=5).close()
            return True
        except OSError:
            return False

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)  # type: ignore[no-any-return]

    try:
        wait_until(answers, "rillet web to answer")
        run = post("/api/runs", {"text": "book"})
        with urllib.request.urlopen(base + run["events"], timeout=30) as stream:
            recs = [json.loads(line[6:]) for line in stream.read().decode().splitlines() if line.startswith("data: ")]
        (asked,) = [r for r in recs if r["type"] == "event" and (r.get("action") or {}).get("kind") == "interrupt"]
        targets = {asked["action"]["interrupts"][0]["id"]: {"decision": "approve"}}
        # the claim is taken before the answer comes; no page watches (one that did would cancel
        # the run as its stream ends, releasing the claim): a script's resume, or a page not yet there
        post("/api/resume", {"checkpoint_id": run["checkpoint_id"], "targets": targets})
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=20) == 0
        store = SqliteCheckpointStore(tmp_path / "runs.db")
        try:
            assert store.claim(run["checkpoint_id"], "the resume after a restart") is not None
        finally:
            store.close()
    finally:
        server.kill()
        server.wait()
        assert server.stderr is not None
        server.stderr.close()


def test_a_body_over_the_limit_is_refused_with_413_saying_the_limit(client: TestClient) -> None:
    big = json.dumps({"text": "x" * LIMIT})
    for path in ("/api/runs", "/api/resume"):
        response = client.post(path, content=big, headers={"Content-Type": "application/json"})
        assert response.status_code == 413, response.text
        assert response.json()["error"].startswith(f"rillet web: a request body may be at most {LIMIT} bytes")
    assert client.get("/api/checkpoints").json() == []  # nothing ran
    small = create_app(build(), max_body=64)
    with make_client(small) as c:
        assert c.post("/api/runs", json={"text": "x" * 64}).status_code == 413
        run = c.post("/api/runs", json={"text": "Book"})  # 16 bytes
        assert run.status_code == 200, run.text
        records(c, run.json()["events"])
    with pytest.raises(ValueError, match=r"max_body=0.*in bytes"):
        create_app(build(), max_body=0)


def test_a_chunked_body_without_a_length_is_refused_at_the_limit_unread() -> None:
    """A client that sends chunks with no Content-Length and never stops: the server stops
    reading once the limit is passed, and answers 413 (here straight through ASGI, counting
    what it asked for; the next test goes through uvicorn)."""
    chunk, offered, read = b"x" * 65536, 64 * LIMIT, [0]

    async def receive() -> dict[str, Any]:
        read[0] += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": read[0] < offered}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/runs",
        "raw_path": b"/api/runs",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    asyncio.run(create_app(build())(scope, receive, send))
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["error"].startswith(f"rillet web: a request body may be at most {LIMIT}")
    assert read[0] <= LIMIT + len(chunk), f"read {read[0]} bytes of a body refused at {LIMIT}"


@pytest.mark.anyio
async def test_uvicorn_answers_413_to_a_chunked_body_over_the_limit_and_closes() -> None:
    """Through the server `rillet web` runs: a chunked body with no length, one chunk past the
    limit and not ended, gets its 413 at once, and the server closes the connection instead of
    reading on (the client stops sending at the limit: a server that closes with bytes
    unread resets the connection, which can drop the answer before the client reads it)."""
    need("uvicorn")
    from support.web_server import serving

    async with serving(create_app(build())) as url:
        reader, writer = await asyncio.open_connection("127.0.0.1", int(url.rpartition(":")[2]))
        writer.write(
            b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        for _ in range(LIMIT // 65536 + 1):
            writer.write(b"10000\r\n" + b"x" * 65536 + b"\r\n")
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        assert head.startswith(b"HTTP/1.1 413 "), head
        [length] = [int(h.split(b":")[1]) for h in head.lower().split(b"\r\n") if h.startswith(b"content-length:")]
        body = json.loads(await asyncio.wait_for(reader.readexactly(length), 30))
        assert body["error"].startswith(f"rillet web: a request body may be at most {LIMIT} bytes")
        assert await asyncio.wait_for(reader.read(), 30) == b""  # closed, not waiting for the rest
        writer.close()


class Hold:
    """What a tool or model call does in a run that waits for ever: it says it started, and
    whether it saw CancelledError (threading events: it runs on rillet's loop, not the test's).
    A model that streams then stalls says, once ``release``d, whether its reader was closed."""

    def __init__(self) -> None:
        self.started, self.cancelled, self.release = threading.Event(), threading.Event(), threading.Event()

    async def __call__(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise

    async def stall(self, writer: StreamWriter[Message]) -> None:
        await writer.asend(Message.assistant("Thinking"))
        self.started.set()
        await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 30)
        if not await writer.asend(Message.assistant(" more")):  # nobody reads it any more
            self.cancelled.set()
        writer.close()


class HeldModel:
    """A model whose call on the message "hold" waits (a slow model), or streams a word and
    stalls (``stream``); others answer at once."""

    def __init__(self, hold: Hold, stream: bool) -> None:
        self.hold, self.stalls = hold, stream
        self.answer = ScriptedModel(lambda messages, tools: f"hello after {len(messages)}")
        self.tasks: set[asyncio.Task[None]] = set()

    async def generate(self, messages: list[Message], *, tools: Any = None, **options: Any) -> Message:
        raise AssertionError("the dev UI streams")

    async def stream(self, messages: list[Message], *, tools: Any = None, **options: Any) -> Any:
        if messages[-1].content == "hold" and self.stalls:
            reader, writer = pipe()
            self.tasks.add(asyncio.ensure_future(self.hold.stall(writer)))
            return reader
        if messages[-1].content == "hold":
            await self.hold()
        return await self.answer.stream(messages, tools=tools, **options)


def held_agent(where: str, hold: Hold) -> ChatModelAgent:
    """An agent whose run on "hold" waits in a tool call, in the model call, or in the model's
    stream (``where``)."""

    @tool
    async def wait() -> str:
        """Waits for ever."""
        await hold()
        return "never"

    if where != "tool":
        return ChatModelAgent("held", description="waits", model=HeldModel(hold, stream=where == "stream"))

    def reply(messages: list[Message], tools: Any) -> Message | str:
        if messages[-1].content == "hold":
            return Message.assistant("", [ToolCall(index=0, id="w1", function=FunctionCall("wait", "{}"))])
        return f"hello after {len(messages)}"

    return ChatModelAgent("held", description="waits", model=ScriptedModel(reply), tools=[wait])


async def sse_records(http: Any, url: str) -> list[dict[str, Any]]:
    """The run's records, read to its end (a run that never ends fails the test in 30 s)."""

    async def read() -> list[dict[str, Any]]:
        async with http.stream("GET", url) as page:
            recs = [json.loads(line[6:]) async for line in page.aiter_lines() if line.startswith("data: ")]
            return [r for r in recs if r["type"] != "call"]

    return await asyncio.wait_for(read(), 30)


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["tool", "model", "stream"])
async def test_a_run_whose_page_leaves_is_cancelled_quietly_and_the_next_run_works(
    where: str, caplog: pytest.LogCaptureFixture
) -> None:
    need("uvicorn")
    import gc

    import httpx
    from support.web_server import serving

    caplog.set_level(logging.WARNING)
    hold = Hold()
    async with serving(create_app(held_agent(where, hold))) as url, httpx.AsyncClient(base_url=url) as http:
        run = (await http.post("/api/runs", json={"text": "hold"})).json()
        async with http.stream("GET", run["events"]):  # the page, open while the run waits ...
            assert await asyncio.to_thread(hold.started.wait, 30)
        # ... and closed (a tab closed, a reload): the run ends, its call in flight is cancelled
        left = await sse_records(http, run["events"])  # a page that comes back sees how it ended
        hold.release.set()
        assert await asyncio.to_thread(hold.cancelled.wait, 30), f"the {where} call went on after its page left"
        assert left[-1] == {
            "type": "run_end",
            "run": run["run"],
            "status": "cancelled",
            "checkpoint_id": run["checkpoint_id"],
        }
        assert not any("error" in r for r in left), left
        nxt = (await http.post("/api/runs", json={"text": "hi"})).json()
        recs = await sse_records(http, nxt["events"])
        assert (recs[-2]["content"], recs[-1]["status"]) == ("hello after 1", "done")  # not part of the history
        assert (await http.get("/api/checkpoints")).json() == []
    for thread in threading.enumerate():
        if thread.name.startswith("rillet-web-"):
            thread.join(30)  # the runs' consumers have ended
            assert not thread.is_alive(), thread.name
    gc.collect()  # a task destroyed while pending would say so now
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["tool", "model", "stream"])
async def test_a_cancelled_runs_calls_in_flight_end_as_cancelled_in_the_call_inspector(where: str) -> None:
    """A model call cut short by the run's cancellation never sent its end: a reloaded page's
    call inspector showed it "running" for ever, in a run that had ended."""
    need("uvicorn")
    import httpx
    from support.web_server import serving

    hold = Hold()
    async with serving(create_app(held_agent(where, hold))) as url, httpx.AsyncClient(base_url=url) as http:
        run = (await http.post("/api/runs", json={"text": "hold"})).json()
        async with http.stream("GET", run["events"]):
            assert await asyncio.to_thread(hold.started.wait, 30)
        await sse_records(http, run["events"])  # to its end: the run is cancelled
        hold.release.set()

        async def calls() -> list[dict[str, Any]]:
            async with http.stream("GET", run["events"]) as page:
                recs = [json.loads(line[6:]) async for line in page.aiter_lines() if line.startswith("data: ")]
            return [r for r in recs if r["type"] == "call"]

        last: dict[str, str] = {}
        for call in await asyncio.wait_for(calls(), 30):
            last[call["id"]] = call["status"]
    assert last and "running" not in last.values(), last
    assert list(last.values())[-1] == "cancelled"


class SlowFirst:
    """A model whose answer to "slow" waits until ``release`` (a long reply still streaming);
    every answer says how many messages it was sent."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        self.answer = ScriptedModel(lambda messages, tools: f"hello after {len(messages)}")

    async def generate(self, messages: list[Message], *, tools: Any = None, **options: Any) -> Message:
        raise AssertionError("the dev UI streams")

    async def stream(self, messages: list[Message], *, tools: Any = None, **options: Any) -> Any:
        if messages[-1].content == "slow":
            self.started.set()
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 30)
        return await self.answer.stream(messages, tools=tools, **options)


def test_a_message_sent_while_the_last_one_runs_waits_for_it_and_sees_its_turn(client: TestClient) -> None:
    """Two messages of one chat, the second sent before the first's answer ended, ran at once:
    the second was answered without the first in its history, and the session kept the turns in
    the order they ended."""
    model = SlowFirst()
    with make_client(create_app(ChatModelAgent("chat", description="chats", model=model))) as c:
        first = c.post("/api/runs", json={"text": "slow"}).json()
        assert model.started.wait(30)
        second = c.post("/api/runs", json={"text": "quick"}).json()  # answered at once: it waits, queued
        assert [r["status"] for r in c.get("/api/runs").json()] == ["running", "running"]
        model.release.set()
        assert records(c, first["events"])[-2]["content"] == "hello after 1"
        assert records(c, second["events"])[-2]["content"] == "hello after 3"  # the first turn, then its own
        session = c.get("/api/sessions").json()[0]["id"]
        turns = c.get(f"/api/sessions/{session}").json()["turns"]
    assert [t["messages"][0]["content"] for t in turns] == ["slow", "quick"]


@pytest.mark.anyio
async def test_a_queued_message_whose_page_leaves_never_runs() -> None:
    need("uvicorn")
    import httpx
    from support.web_server import serving

    model = SlowFirst()
    app = create_app(ChatModelAgent("chat", description="chats", model=model))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        first = (await http.post("/api/runs", json={"text": "slow"})).json()
        assert await asyncio.to_thread(model.started.wait, 30)
        queued = (await http.post("/api/runs", json={"text": "quick"})).json()
        async with http.stream("GET", queued["events"]) as page:  # the page watches it, then goes
            async for line in page.aiter_lines():
                if line.startswith("data: "):
                    break  # its run_start: it waits
        left = await sse_records(http, queued["events"])
        assert [r["type"] for r in left] == ["run_start", "run_end"] and left[-1]["status"] == "cancelled"
        model.release.set()
        assert (await sse_records(http, first["events"]))[-1]["status"] == "done"
        listed = (await http.get("/api/runs")).json()
    assert [r["status"] for r in listed] == ["done", "cancelled"]
    assert app.state.hub.runs[queued["run"]].calls._count == 0  # it never called the model


@pytest.mark.anyio
async def test_a_run_paused_at_an_interrupt_keeps_its_checkpoint_when_its_page_leaves() -> None:
    need("uvicorn")
    import httpx
    from support.web_server import serving

    async with serving(create_app(build())) as url, httpx.AsyncClient(base_url=url) as http:
        run = (await http.post("/api/runs", json={"text": "Book Lisbon"})).json()
        async with http.stream("GET", run["events"]) as page:
            async for line in page.aiter_lines():
                if line.startswith("data: ") and '"kind": "interrupt"' in line:
                    interrupt = json.loads(line[6:])["action"]["interrupts"][0]["id"]
                    break  # the page goes as soon as it sees the question
        recs = await sse_records(http, run["events"])
        assert recs[-1]["status"] == "interrupted"
        assert [c["id"] for c in (await http.get("/api/checkpoints")).json()] == [run["checkpoint_id"]]
        answer = {"checkpoint_id": run["checkpoint_id"], "targets": {interrupt: {"decision": "approve"}}}
        resumed = (await http.post("/api/resume", json=answer)).json()
        assert (await sse_records(http, resumed["events"]))[-1]["status"] == "done"


@pytest.mark.anyio
async def test_a_resume_whose_page_leaves_is_cancelled_and_its_checkpoint_can_be_answered_again() -> None:
    need("uvicorn")
    import httpx
    from support.web_server import serving

    hold = Hold()

    async def book(city: str) -> str:
        """Books a room.

        Args:
            city: where.
        """
        if not hold.cancelled.is_set():  # the first approved call waits, until its page goes
            await hold()
        return f"booked {city}"

    def reply(messages: list[Message], tools: Any) -> Message | str:
        if messages[-1].role == "user":
            return Message.assistant(
                "", [ToolCall(index=0, id="b1", function=FunctionCall("book", '{"city": "Oslo"}'))]
            )
        return f"done: {messages[-1].content}"

    agent = ChatModelAgent("desk", description="books", model=ScriptedModel(reply), tools=[requires_approval(book)])
    async with serving(create_app(agent)) as url, httpx.AsyncClient(base_url=url) as http:
        run = (await http.post("/api/runs", json={"text": "Oslo"})).json()
        recs = await sse_records(http, run["events"])
        answer = {"checkpoint_id": run["checkpoint_id"], "targets": {_interrupt_id(recs): {"decision": "approve"}}}
        resumed = (await http.post("/api/resume", json=answer)).json()
        async with http.stream("GET", resumed["events"]):
            assert await asyncio.to_thread(hold.started.wait, 30)
        assert (await sse_records(http, resumed["events"]))[-1]["status"] == "cancelled"
        assert await asyncio.to_thread(hold.cancelled.wait, 30)
        assert [c["id"] for c in (await http.get("/api/checkpoints")).json()] == [run["checkpoint_id"]]
        again = await http.post("/api/resume", json=answer)  # its claim was released: resumable
        assert again.status_code == 200, again.text
        last = await sse_records(http, again.json()["events"])
        assert (last[-2]["content"], last[-1]["status"]) == ("done: booked Oslo", "done")


def test_a_run_no_page_has_opened_yet_runs_on() -> None:
    """A script may start a run and read its events later: only a page that goes cancels it."""
    started, go = threading.Event(), threading.Event()

    @tool
    async def wait() -> str:
        """Waits to be let go."""
        started.set()
        await asyncio.to_thread(go.wait, 30)
        return "went on"

    def reply(messages: list[Message], tools: Any) -> Message | str:
        if messages[-1].role == "user":
            return Message.assistant("", [ToolCall(index=0, id="w1", function=FunctionCall("wait", "{}"))])
        return f"done: {messages[-1].content}"

    agent = ChatModelAgent("waits", description="waits", model=ScriptedModel(reply), tools=[wait])
    with make_client(create_app(agent)) as c:
        run = c.post("/api/runs", json={"text": "go"}).json()
        assert started.wait(30)  # the run is in its tool, and nobody reads its events
        assert [(s["current"], s["running"]) for s in c.get("/api/sessions").json()] == [(True, True)]
        go.set()
        recs = records(c, run["events"])
    assert (recs[-2]["content"], recs[-1]["status"]) == ("done: went on", "done")


def test_failures_say_where_they_happened_and_every_call_is_a_record() -> None:
    from support.web_agent import build_troubled

    with make_client(create_app(build_troubled())) as c:
        run = c.post("/api/runs", json={"text": "tool"}).json()
        recs = records(c, run["events"], calls=True)
        calls: dict[str, dict[str, Any]] = {}
        for r in recs:
            if r["type"] == "call":
                calls.setdefault(r["id"], {}).update(r)
        model, tool_call, answer = calls.values()
        assert model["kind"] == "model" and model["status"] == "ok" and model["latency_ms"] >= 0
        assert [(m["role"], m["content"]) for m in model["messages"]] == [
            ("system", "Answer briefly."),
            ("user", "tool"),
        ]
        assert [t["name"] for t in model["tools"]] == ["check_availability"]
        assert model["usage"] is None and answer["usage"]["total_tokens"] == 49
        assert answer["started"] <= answer["ended"]
        assert (tool_call["tool"], tool_call["status"], tool_call["arguments"]) == (
            "check_availability",
            "error",
            '{"city": "Lisbon"}',
        )
        assert tool_call["error"] == {"type": "RuntimeError", "message": "the availability service for Lisbon is down"}
        [result] = [r for r in recs if r["type"] == "event" and r.get("role") == "tool"]
        assert result["failed"] is True and result["call"] == tool_call["id"]
        kinds = {}
        for text in ("crash", "loop", "forbidden"):
            run = c.post("/api/runs", json={"text": text}).json()
            [error] = [r["error"] for r in records(c, run["events"]) if r.get("error")]
            kinds[text] = error["kind"]
        assert kinds == {"crash": "model", "loop": "limit", "forbidden": "guardrail"}


def test_the_runs_of_the_chat_are_listed_for_a_reloaded_page(client: TestClient) -> None:
    assert client.get("/api/runs").json() == []
    run, recs = start(client)
    answer = {"checkpoint_id": run["checkpoint_id"], "targets": {_interrupt_id(recs): {"decision": "approve"}}}
    resumed = client.post("/api/resume", json=answer).json()
    records(client, resumed["events"])
    listed = client.get("/api/runs").json()
    assert [(r["run"], r["kind"], r["status"], r["events"]) for r in listed] == [
        (run["run"], "run", "interrupted", run["events"]),
        (resumed["run"], "resume", "done", resumed["events"]),
    ]
    assert listed[0]["text"] == "Book Lisbon"
    client.post("/api/reset", json={})
    assert client.get("/api/runs").json() == []  # New chat: a reload shows the new chat only


def test_sessions_are_listed_opened_and_continued_from_the_session_store(tmp_path: Path) -> None:
    from rillet import SqliteSessionStore
    from rillet.sessions.protocol import encode_messages

    sessions = SqliteSessionStore(tmp_path / "runs.db")  # a session a program saved earlier
    sessions.append("saved", encode_messages([Message.user("one"), Message.assistant("first")]), {})
    model = ScriptedModel(lambda messages, tools: f"you said {len(messages)} things")
    agent = ChatModelAgent("echo", description="echoes", model=model)
    with make_client(create_app(agent, sessions=sessions)) as c:
        listed = c.get("/api/sessions").json()
        current = listed[0]
        assert current["current"] and current["turns"] == 0
        assert [(s["id"], s["turns"], s["current"]) for s in listed[1:]] == [("saved", 1, False)]
        assert c.get("/api/sessions/nope").status_code == 404
        assert c.post("/api/sessions/open", json={"id": "nope"}).status_code == 404
        assert c.post("/api/sessions/open", json={"id": 3}).status_code == 400
        view = c.post("/api/sessions/open", json={"id": "saved"}).json()
        assert view["current"] and [m["content"] for m in view["turns"][0]["messages"]] == ["one", "first"]
        _, recs = start(c, "two")
        assert recs[-2]["content"] == "you said 3 things"  # one, first, two
        assert c.get("/api/sessions/saved").json()["turns"][1]["messages"] == [
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "you said 3 things"},
        ]
        assert [s["running"] for s in c.get("/api/sessions").json()] == [False]
        fresh = c.post("/api/reset", json={}).json()["session"]
        assert c.get("/api/sessions").json()[0] == {
            "id": fresh,
            "turns": 0,
            "created": None,
            "updated": None,
            "current": True,
            "running": False,
        }


def test_a_step_recorded_run_is_forked_from_a_step_without_calling_the_model_again() -> None:
    from support.web_agent import build_troubled

    agent = build_troubled()
    with make_client(create_app(agent, durability="step")) as c:
        assert c.get("/api/agent").json()["durability"] == "step"
        run, _ = start(c, "tool")
        listed = c.get(f"/api/runs/{run['run']}/steps").json()["steps"]
        assert [(s["index"], s["kind"]) for s in listed] == [(0, "start"), (1, "model"), (2, "tools"), (3, "model")]
        model = agent.model
        calls = model.call_count
        forked = c.post("/api/fork", json={"run": run["run"], "steps": 3}).json()  # start, model, tools
        recs = records(c, forked["events"])
        assert recs[0]["kind"] == "fork" and recs[0]["step"] == 2 and forked["checkpoint_id"].startswith("fork-")
        assert (recs[-2]["content"], recs[-1]["status"]) == (
            "Sorry: Error: the availability service for Lisbon is down",
            "done",
        )
        assert model.call_count == calls + 1  # only the answer: the first call was replayed
        for body in ({"run": run["run"], "steps": 0}, {"run": run["run"], "steps": 5}, {"run": "nope", "steps": 1}):
            assert c.post("/api/fork", json=body).status_code == 409
        assert c.post("/api/fork", json={"run": run["run"]}).status_code == 400
    with make_client(create_app(build())) as c:  # durability "interrupt": nothing recorded to fork
        run, _ = start(c)
        refused = c.post("/api/fork", json={"run": run["run"], "steps": 1})
        assert refused.status_code == 409 and "--durability step" in refused.json()["error"]


def test_a_finished_runs_turn_is_in_its_session_before_the_page_hears_it_ended() -> None:
    """A page reloads the session list when it sees run_end: the turn must be stored by then
    (the browser test of sessions waited for a count that a reload one moment early missed)."""
    from rillet.web.runs import Run

    run = Run("c1", "query", "hi")
    seen_at_end: list[list[str]] = []
    ended = threading.Event()

    def on_end(r: Run) -> None:
        seen_at_end.append([rec["type"] for rec in r.records])
        ended.set()

    run.launch(iter([]), on_end)  # type: ignore[arg-type]  # a run of no events
    assert ended.wait(30)
    wait_until(lambda: run.records[-1]["type"] == "run_end", "the run_end record")
    assert "run_end" not in seen_at_end[0]
