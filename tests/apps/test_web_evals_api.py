"""The Evals view's JSON API (rillet.web.evals) without a browser: what it answers with no
evals folder, and what it refuses (file names outside the folder, unknown reports and turns,
a turn that has not finished); the browser test drives the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rillet.web import create_app
from support.web_agent import build
from test_web import make_client, records


def test_without_a_folder_the_view_says_how_to_give_one() -> None:
    client = make_client(create_app(build()))
    assert client.get("/api/evals").json() == {"folder": None, "reports": []}
    assert client.get("/api/evals/runs").json() == []
    refused = client.post("/api/evals/cases", json={"run": "x"})
    assert refused.status_code == 409 and "rillet web --evals DIR" in refused.json()["error"]
    assert client.get("/evals/static/evals.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/evals/static/app.py").status_code == 404


def test_reports_are_read_only_from_the_folder_and_unknown_things_are_404(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(json.dumps({"eval_set": "s", "passed": True, "cases": 0, "results": []}))
    (tmp_path / "notes.json").write_text("[1, 2]")  # not a report: left out
    client: Any = make_client(create_app(build(), evals=str(tmp_path)))
    listed = client.get("/api/evals").json()
    assert [r["file"] for r in listed["reports"]] == ["r.json"] and listed["folder"] == str(tmp_path)
    assert client.get("/api/evals/reports/r.json").json()["eval_set"] == "s"
    assert client.get("/api/evals/reports/..%2Fsecret.json").status_code == 404
    assert client.get("/api/evals/reports/nope.json").status_code == 404
    assert client.get("/api/evals/compare?before=r.json&after=nope.json").status_code == 404
    assert client.get("/api/evals/compare?before=r.json&after=r.json").json()["changes"] == []
    assert client.post("/api/evals/cases", json={"run": "nope"}).status_code == 404

    # a turn stopped at its interrupt has not finished: not listed, not saved
    started = client.post("/api/runs", json={"text": "Book me two nights in Lisbon"}).json()
    assert records(client, started["events"])[-1]["status"] == "interrupted"
    assert client.get("/api/evals/runs").json() == []
    assert client.post("/api/evals/cases", json={"run": started["run"]}).status_code == 404
    assert client.post("/api/evals/cases", json={"run": started["run"], "file": "../x.json"}).status_code == 404

    # approved, it finished: listed, and saved only under a .json name in the folder
    asked = next(r for r in records(client, started["events"]) if r.get("action", {}).get("kind") == "interrupt")
    iid = asked["action"]["interrupts"][0]["id"]
    resumed = client.post(
        "/api/resume", json={"checkpoint_id": started["checkpoint_id"], "targets": {iid: {"decision": "approve"}}}
    ).json()
    assert records(client, resumed["events"])[-1]["status"] == "done"
    assert [r["run"] for r in client.get("/api/evals/runs").json()] == [started["run"]]
    for bad in ("../x.json", "x.txt", ".hidden.json"):
        refused = client.post("/api/evals/cases", json={"run": started["run"], "file": bad})
        assert refused.status_code == 400, bad
    saved = client.post("/api/evals/cases", json={"run": started["run"], "case_id": "c", "file": "mine.json"}).json()
    assert saved["file"] == "mine.json" and saved["cases"] == 1
    assert saved["case"]["turns"][0]["interrupts"] == [{"tool": "book_hotel", "resume": {"decision": "approve"}}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json", "notes.json", "r.json"]


def test_every_report_listed_can_be_opened(tmp_path: Path) -> None:
    """A report named with a space was listed, then 404 when opened; a hidden one was listed too."""
    report = json.dumps(
        {"eval_set": "s", "passed": True, "cases": 1, "results": [{"id": "a", "pass_rate": 1.0, "passed": True}]}
    )
    for name in ("before run.json", "v1+fix.json", ".hidden.json", "_private.json"):
        (tmp_path / name).write_text(report)
    client: Any = make_client(create_app(build(), evals=str(tmp_path)))
    listed = sorted(r["file"] for r in client.get("/api/evals").json()["reports"])
    assert listed == ["before run.json", "v1+fix.json"]
    for name in listed:
        assert client.get(f"/api/evals/reports/{name}").status_code == 200, name
    assert client.get("/api/evals/reports/.hidden.json").status_code == 404
