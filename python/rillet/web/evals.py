"""The dev UI's Evals view: the eval reports of a folder (``rillet web --evals DIR``; the JSON
that ``rillet eval ... -o DIR/NAME.json`` writes), each case with its pass rate and, for a
failing one, its steps with the failing step marked; two reports compared; and a finished chat
turn saved as an eval case into ``DIR/saved.evalset.json`` (docs/evaluation.md).

GET  /evals/static/{name}        evals.js, evals.css (the view; index.html loads them)
GET  /api/evals                  {"folder", "reports": [{"file", "eval_set", "passed", ...}]}, oldest first
GET  /api/evals/reports/{file}   one report, as written
GET  /api/evals/compare?before=F&after=F   how each case went from F to F
GET  /api/evals/runs             the chat's finished turns: {"run", "text", "answer"}
POST /api/evals/cases {"run", "case_id"?, "file"?}  writes the turn of run as a case
"""

from __future__ import annotations

import ast
import re
import uuid
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rillet.eval.compare import compare_reports, load_report
from rillet.eval.saved import add_case, expected_arguments
from rillet.eval.sets import Answer, EvalCase, EvalSetError, ExpectedCall, ExpectedInterrupt, Trajectory, Turn
from rillet.web.bodies import json_body
from rillet.web.runs import Hub, Run

__all__ = ["case_from_run", "eval_routes"]

_STATIC = {"evals.js": "text/javascript", "evals.css": "text/css"}
SAVED = "saved.evalset.json"
_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._+-]*\.json")  # a plain name in the folder: no path, not hidden


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _messages(run: Run) -> list[dict[str, Any]]:
    """The run's event records, a streamed message's end merged into its head."""
    heads: dict[int, dict[str, Any]] = {}
    for r in run.records:
        if r["type"] == "event":
            heads[r["seq"]] = dict(r)
        elif r["type"] == "event_end" and r["seq"] in heads:
            heads[r["seq"]].update({k: v for k, v in r.items() if k not in ("type", "seq")})
    return list(heads.values())


def _tool(interrupt: dict[str, Any]) -> str | None:
    info = interrupt.get("info")
    if isinstance(info, dict) and isinstance(info.get("tool"), str):
        return str(info["tool"])
    for segment in reversed(interrupt.get("address") or []):
        if str(segment).startswith("tool:"):
            return str(segment).split(":")[1]
    return None


def _answers(text: str, ids: list[str]) -> dict[str, Any]:
    """The resume data a resume run's text gives each interrupt id (``id: value, id: value``,
    as :meth:`Hub.resume` writes it): a Python literal where it is one, else the text."""
    found = sorted((text.find(f"{i}: "), i) for i in ids if f"{i}: " in text)
    answers = {}
    for n, (at, iid) in enumerate(found):
        end = found[n + 1][0] - 2 if n + 1 < len(found) else len(text)
        raw = text[at + len(iid) + 2 : end]
        try:
            answers[iid] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            answers[iid] = raw
    return answers


def _turns(hub: Hub) -> list[list[Run]]:
    """The chat's turns: a run and the resumes of its checkpoint, in order."""
    chains: dict[str, list[Run]] = {}
    for run in list(hub.runs.values()):
        if run.records[0].get("kind") == "run":
            chains[run.checkpoint_id] = [run]
        elif run.checkpoint_id in chains:
            chains[run.checkpoint_id].append(run)
    return list(chains.values())


def case_from_run(chain: list[Run], case_id: str) -> EvalCase:
    """The chat turn ``chain`` (its run, then the resumes of its checkpoint) as a case of one
    turn: the question, the tool calls made (exact), the interrupts with the answers given in
    the page, and the final answer (exact)."""
    first, last = chain[0], chain[-1]
    calls: list[ExpectedCall] = []
    interrupts: list[ExpectedInterrupt] = []
    for n, run in enumerate(chain):
        for r in _messages(run):
            if r.get("role") == "assistant":
                calls += [
                    ExpectedCall(name=c["name"], arguments=expected_arguments(c["arguments"])) for c in r["tool_calls"]
                ]
            action = r.get("action") or {}
            if action.get("kind") == "interrupt":
                asked = action.get("interrupts") or []
                given = (
                    _answers(chain[n + 1].records[0]["text"], [i["id"] for i in asked]) if n + 1 < len(chain) else {}
                )
                interrupts += [ExpectedInterrupt(tool=_tool(i), resume=given.get(i["id"])) for i in asked]
    turn = Turn(
        input=first.records[0]["text"],
        trajectory=Trajectory(calls=tuple(calls)),
        answer=Answer(exact=last.answer) if last.answer else None,
        interrupts=tuple(interrupts),
    )
    return EvalCase(id=case_id, turns=(turn,))


def eval_routes(hub: Hub, folder: str | Path | None, *, max_body: int) -> list[Route]:
    """The Evals view's routes, over the reports of ``folder`` (None: the view says to give one)."""
    where = Path(folder) if folder is not None else None

    def path_of(name: str) -> Path | None:
        if where is None or not _FILE.fullmatch(name):
            return None
        return where / name

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return _error(404, f"no static file {name!r}")
        data = (resources.files("rillet.web") / "static" / name).read_bytes()
        return Response(data, media_type=_STATIC[name], headers={"Cache-Control": "no-store"})

    def reports() -> list[dict[str, Any]]:
        found = []
        files = list(where.glob("*.json")) if where is not None and where.is_dir() else []
        for p in sorted(files, key=lambda f: (f.stat().st_mtime, f.name)):  # oldest first: before, then after
            if path_of(p.name) is None:
                continue  # a name the view could not open (it listed them, then answered 404)
            try:
                data = load_report(p)
            except (OSError, ValueError):
                continue  # an eval set, or another JSON file
            keys = ("eval_set", "passed", "cases_passed", "cases", "duration_s")
            found.append({"file": p.name, "mtime": p.stat().st_mtime, **{k: data.get(k) for k in keys}})
        return found

    async def listing(request: Request) -> Response:
        return JSONResponse({"folder": str(where) if where else None, "reports": await run_in_threadpool(reports)})

    def read(name: str) -> dict[str, Any]:
        path = path_of(name)
        if path is None or not path.is_file():
            raise FileNotFoundError(name)
        return load_report(path)

    async def report(request: Request) -> Response:
        try:
            return JSONResponse(await run_in_threadpool(read, request.path_params["file"]))
        except FileNotFoundError:
            return _error(404, f"no report {request.path_params['file']!r} in the evals folder")
        except (OSError, ValueError) as e:
            return _error(422, str(e))

    async def compare(request: Request) -> Response:
        before, after = request.query_params.get("before", ""), request.query_params.get("after", "")
        try:
            old, new = await run_in_threadpool(read, before), await run_in_threadpool(read, after)
        except FileNotFoundError as e:
            return _error(404, f"no report {e.args[0]!r} in the evals folder")
        except (OSError, ValueError) as e:
            return _error(422, str(e))
        return JSONResponse({"before": before, "after": after, "changes": compare_reports(old, new).to_json()})

    async def runs(request: Request) -> Response:
        done = [c for c in _turns(hub) if c[-1].status == "done"]
        return JSONResponse([{"run": c[0].id, "text": c[0].records[0]["text"], "answer": c[-1].answer} for c in done])

    async def save(request: Request) -> Response:
        body = await json_body(request, max_body) or {}
        if where is None:
            return _error(409, "no evals folder: start the server with rillet web --evals DIR")
        chain = next((c for c in _turns(hub) if c[0].id == body.get("run")), None)
        if chain is None or chain[-1].status != "done":
            return _error(404, f"no finished chat turn {body.get('run')!r} in this server")
        name = body.get("file") or SAVED
        path = path_of(name) if isinstance(name, str) else None
        if path is None:
            return _error(400, f"file {name!r}: give a .json file name in the evals folder")
        case_id = body.get("case_id") or f"web-{uuid.uuid4().hex[:8]}"
        if not isinstance(case_id, str):
            return _error(400, "case_id must be a string")
        case = case_from_run(chain, case_id)
        try:
            where.mkdir(parents=True, exist_ok=True)
            evals = await run_in_threadpool(add_case, path, case)
        except (EvalSetError, OSError) as e:
            return _error(409, str(e))
        return JSONResponse(
            {"file": path.name, "case": case.model_dump(mode="json", exclude_defaults=True), "cases": len(evals.cases)}
        )

    return [
        Route("/evals/static/{name}", static),
        Route("/api/evals", listing),
        Route("/api/evals/reports/{file}", report),
        Route("/api/evals/compare", compare),
        Route("/api/evals/runs", runs),
        Route("/api/evals/cases", save, methods=["POST"]),
    ]
