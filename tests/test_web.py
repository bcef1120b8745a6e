"""The dev UI's server without a browser: the server-sent records of a run, the resume
endpoint, the checkpoint browser's API, the shipped page, and the loopback-only rule."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from optional import need
from rillet import ChatModelAgent, ScriptedModel, SqliteCheckpointStore
from rillet.web import create_app, is_loopback, serve
from web_agent import GREETING, build

if TYPE_CHECKING:
    from starlette.testclient import TestClient

TESTS = Path(__file__).resolve().parent


def records(client: TestClient, url: str) -> list[dict[str, Any]]:
    """The run's records, read from its server-sent events to the end of the run."""
    out, kind = [], None
    with client.stream("GET", url) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                record = json.loads(line[6:])
                assert record["type"] == kind
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
    assert resumed[1]["tool_name"] == "book_hotel" and resumed[1]["content"].startswith(tool_result)
    assert resumed[-2]["content"].startswith("All set: " + tool_result)
    assert client.get("/api/checkpoints").json() == []  # a finished resume deletes its checkpoint


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
    ran: list[dict[str, Any]] = []
    monkeypatch.setattr(
        "uvicorn.Server.run", lambda self: ran.append({"host": self.config.host, "port": self.config.port})
    )
    with pytest.raises(ValueError, match=r"refusing to listen on '0.0.0.0'.*--allow-remote"):
        serve(build(), db=None, host="0.0.0.0")
    assert ran == []
    serve(build(), db=None, host="0.0.0.0", port=8123, allow_remote=True)
    assert ran == [{"host": "0.0.0.0", "port": 8123}]
    assert "WARNING: listening on 0.0.0.0:8123, reachable from other machines" in capsys.readouterr().err
    serve(build(), db=None, port=8124)
    assert ran[-1]["host"] == "127.0.0.1"


def _main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rillet.cli", "web", *args], cwd=TESTS, capture_output=True, text=True, timeout=60
    )


def test_rillet_web_says_what_is_wrong_in_one_line() -> None:
    remote = _main("web_agent:build", "--host", "0.0.0.0")
    assert remote.returncode == 2 and remote.stderr.startswith("rillet web: --host 0.0.0.0 is not a loopback address")
    missing = _main("web_agent:nothing")
    assert missing.returncode == 2
    assert missing.stderr == "rillet web: 'web_agent:nothing': web_agent has no attribute 'nothing'\n"


def test_rillet_web_refuses_a_file_that_is_not_a_checkpoint_store(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    result = _main("web_agent:build", "--db", str(text))
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
    import threading
    import time
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
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(base + "/api/agent", timeout=5).close()
                break
            except OSError:
                time.sleep(0.05)
        post = urllib.request.Request(base + "/api/runs", data=b'{"text": "go"}', method="POST")
        post.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(post, timeout=5) as response:
            events = json.load(response)["events"]
        watching = urllib.request.urlopen(base + events, timeout=30)  # the page's stream, open
        read: list[bytes] = []
        reader = threading.Thread(target=lambda: read.append(watching.read()), daemon=True)
        reader.start()
        time.sleep(0.5)
        server.send_signal(signal.SIGINT)
        started = time.monotonic()
        assert server.wait(timeout=20) == 0
        assert time.monotonic() - started < 2, "Ctrl-C waited for the run to end"
        reader.join(5)
        watching.close()
        last = json.loads([line for line in read[0].decode().splitlines() if line.startswith("data: ")][-1][6:])
        assert (last["type"], last["status"]) == ("run_end", "stopped")  # the page says the run was cut
        assert server.stderr is not None and "Traceback" not in server.stderr.read()
    finally:
        server.kill()
        server.wait()
        assert server.stderr is not None
        server.stderr.close()
