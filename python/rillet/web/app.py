"""The dev UI's Starlette application: the page, a JSON API and server-sent events.

GET  /                          the page (static/index.html; static/app.js and app.css beside it)
GET  /api/agent                 the agent tree: names, kinds, sub-agents, tools
GET  /api/runs                  the current chat's runs, in order (what a reloaded page replays)
POST /api/runs {"text"}         starts a chat turn -> {"run", "checkpoint_id"}
GET  /api/runs/{run}/events     the run's records as server-sent events, from the first; the
                                run is cancelled when the last page reading them goes
POST /api/resume {"checkpoint_id", "targets"}  resumes a checkpoint -> {"run", ...}
POST /api/reset                 New chat: a new session
GET  /api/sessions              the session store's sessions: id, turns, times, which is current
GET  /api/sessions/{id}         one session: its turns' messages and its values
POST /api/sessions/open {"id"}  makes a session the chat (its next turn continues it)
GET  /api/runs/{run}/steps       the run's step records (durability "step"), summarised
POST /api/fork {"run", "steps"} a new run from the first steps of a run's record (all: a replay)
GET  /api/checkpoints           the store's checkpoints: id, size, age
GET  /api/checkpoints/{id}      one checkpoint, decoded

A POST body over ``max_body`` bytes is refused with 413, read no further than that.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from rillet.checkpoint.stores import CheckpointStore
from rillet.compose.agent_tool import AgentTool
from rillet.errors import RilletError
from rillet.flow import flow_of
from rillet.run.agent import declared_sub_agents
from rillet.sessions import SessionStore
from rillet.web import is_loopback
from rillet.web.bodies import json_body
from rillet.web.checkpoints import decoded, listing
from rillet.web.evals import eval_routes
from rillet.web.runs import Hub, Run
from rillet.web.wire import jsonable

__all__ = ["build_app"]

_STATIC = {"index.html": "text/html", "app.js": "text/javascript", "app.css": "text/css"}


def _static(name: str) -> bytes:
    return (resources.files("rillet.web") / "static" / name).read_bytes()


def agent_tree(agent: Any) -> dict[str, Any]:
    """The agent's structure: name, kind (its class, e.g. ParallelAgent), sub-agents, and
    tools (an agent tool with the tree of its agent)."""
    flow = flow_of(agent)
    inner = flow.agent
    tools = []
    for t in getattr(inner, "tools", None) or []:
        info = getattr(t, "info", None)
        entry: dict[str, Any] = {"name": getattr(info, "name", type(t).__name__), "kind": type(t).__name__}
        if isinstance(t, AgentTool):
            entry["agent"] = agent_tree(t.agent)
        tools.append(entry)
    subs = declared_sub_agents(inner) or declared_sub_agents(flow)  # a workflow's children, or transfer targets
    return {
        "name": getattr(agent, "name", ""),
        "kind": type(inner).__name__,
        "description": getattr(agent, "description", ""),
        "sub_agents": [agent_tree(s) for s in subs],
        "tools": tools,
    }


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _hostname(host: str) -> str:
    """``host`` of a Host header without its port (``[::1]:8000`` -> ``::1``)."""
    return host[1:].partition("]")[0] if host.startswith("[") else host.rpartition(":")[0] or host


class _SameSiteOnly:
    """Refuses what a web page of another site can make a browser send to this server, which
    runs the agent's tools: a Host that is not loopback (a DNS name rebound to 127.0.0.1;
    unless serving remotely), a POST with another Origin, or one that is not JSON (a form,
    or a fetch without a CORS preflight)."""

    def __init__(self, app: ASGIApp, *, allow_remote: bool) -> None:
        self.app = app
        self.allow_remote = allow_remote

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._refusal(scope) if scope["type"] == "http" else None
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await refusal(scope, receive, send)

    def _refusal(self, scope: Scope) -> JSONResponse | None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if not self.allow_remote and not is_loopback(_hostname(host)):
            return _error(403, f"rillet web: refusing Host {host!r}: the dev UI answers only at 127.0.0.1 or localhost")
        if scope["method"] in ("GET", "HEAD"):
            return None
        origin = headers.get("origin")
        if origin is not None and origin.partition("://")[2] != host:
            return _error(403, f"rillet web: refusing a request from the page of another site (Origin {origin})")
        if headers.get("content-type", "").partition(";")[0].strip().lower() != "application/json":
            return _error(415, "rillet web: the API takes JSON bodies, sent with Content-Type: application/json")
        return None


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)


class _Watching(StreamingResponse):
    """A page's stream of a run's records: the run counts the page as watching it until the
    stream ends or the page goes (and is cancelled when the last one goes while it runs).
    Starlette notices a page that went by listening for ``http.disconnect`` only under
    servers of ASGI spec below 2.4, otherwise at its next write, which a run busy in a long
    tool call does not make: this one always listens."""

    def __init__(self, run: Run, records: AsyncIterator[str]) -> None:
        super().__init__(records, media_type="text/event-stream", headers={"Cache-Control": "no-store"})
        self.run = run

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        listening = {**scope, "asgi": {**scope.get("asgi", {}), "spec_version": "2.3"}}
        self.run.watch()
        try:
            await super().__call__(listening, receive, send)
        finally:
            self.run.leave()


def _started(run: Run) -> JSONResponse:
    return JSONResponse({"run": run.id, "checkpoint_id": run.checkpoint_id, "events": f"/api/runs/{run.id}/events"})


def build_app(
    agent: Any,
    store: CheckpointStore,
    sessions: SessionStore,
    *,
    allow_remote: bool = False,
    max_body: int,
    durability: str = "interrupt",
    evals: str | None = None,
) -> Starlette:
    hub = Hub(agent, store, sessions, durability)
    tree = agent_tree(agent)

    async def page(request: Request) -> Response:
        name = request.path_params.get("name", "index.html")
        if name not in _STATIC:
            return _error(404, f"no static file {name!r}")
        return Response(_static(name), media_type=_STATIC[name], headers={"Cache-Control": "no-store"})

    async def agent_info(request: Request) -> Response:
        return JSONResponse({**tree, "durability": hub.durability})

    async def start(request: Request) -> Response:
        if request.method == "GET":
            return JSONResponse(hub.listing())
        body = await json_body(request, max_body)
        text = body.get("text") if body is not None else None
        if not isinstance(text, str) or not text.strip():
            return _error(400, 'POST /api/runs takes JSON {"text": "your message"} with a non-empty text')
        return _started(await run_in_threadpool(hub.start, text))

    async def resume(request: Request) -> Response:
        body = await json_body(request, max_body)
        if body is None or not isinstance(body.get("checkpoint_id"), str) or not isinstance(body.get("targets"), dict):
            return _error(
                400,
                'POST /api/resume takes JSON {"checkpoint_id": "...", "targets": {"<interrupt id>": <data>}}, '
                'for example {"decision": "approve"} as the data of a requires_approval interrupt',
            )
        try:
            run = await run_in_threadpool(hub.resume, body["checkpoint_id"], body["targets"])
        except (RilletError, ValueError, TypeError) as e:
            return _error(409, f"{type(e).__name__}: {e}")
        return _started(run)

    async def reset(request: Request) -> Response:
        hub.reset()
        return JSONResponse({"history": 0, "session": hub.session_id})

    def session_list() -> list[dict[str, Any]]:
        current = hub.session_id
        rows = sorted(sessions.list(), key=lambda i: -i.updated_at)
        out = [{"id": i.session_id, "turns": i.turns, "created": i.created_at, "updated": i.updated_at} for i in rows]
        if not any(r["id"] == current for r in out):
            out.insert(0, {"id": current, "turns": 0, "created": None, "updated": None})
        going = {r.records[0].get("session") for r in list(hub.runs.values()) if r.status == "running"}
        for r in out:
            r["current"] = r["id"] == current
            r["running"] = r["id"] in going  # a run of it is going now
        return out

    def session_view(session_id: str) -> dict[str, Any] | None:
        data = sessions.get(session_id)
        if data is None and session_id != hub.session_id:
            return None
        running = [
            r.id
            for r in list(hub.runs.values())  # a copy: another request's thread may add a run meanwhile
            if r.records[0].get("session") == session_id and r.status == "running"
        ]
        return {
            "id": session_id,
            "current": session_id == hub.session_id,
            "running": running,
            "turns": [
                {"index": t.index, "messages": [m.to_dict() for m in t.messages]} for t in (data.turns if data else [])
            ],
            "summary": [m.to_dict() for m in data.summary] if data else [],
            "values": jsonable(data.values) if data else {},
        }

    async def session_listing(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(session_list))

    async def session(request: Request) -> Response:
        sid = request.path_params["id"]
        view = await run_in_threadpool(session_view, sid)
        return _error(404, f"no session {sid!r} in the session store") if view is None else JSONResponse(view)

    async def open_session(request: Request) -> Response:
        body = await json_body(request, max_body)
        sid = body.get("id") if body is not None else None
        if body is None or not (sid is None or (isinstance(sid, str) and sid)):
            return _error(400, 'POST /api/sessions/open takes JSON {"id": "<session id>"} ({"id": null}: a new one)')
        if sid is not None and await run_in_threadpool(sessions.get, sid) is None:
            return _error(404, f"no session {sid!r} in the session store")
        view = await run_in_threadpool(session_view, hub.open(sid))
        return JSONResponse(view)

    async def events(request: Request) -> Response:
        run = hub.runs.get(request.path_params["run"])
        if run is None:
            return _error(404, f"no run {request.path_params['run']!r} in this server")

        async def stream() -> AsyncIterator[str]:
            sent = 0
            while True:
                records = await run.since(sent)
                if not records:
                    return
                sent += len(records)
                for r in records:
                    yield f"event: {r['type']}\ndata: {json.dumps(r, ensure_ascii=False)}\n\n"

        return _Watching(run, stream())

    async def steps(request: Request) -> Response:
        rid = request.path_params["run"]
        try:
            listed = await run_in_threadpool(hub.steps, rid)
        except Exception as e:  # noqa: BLE001  (a damaged record is shown with its error)
            return _error(422, f"{type(e).__name__}: {e}")
        if listed is None:
            return _error(404, f"no run {rid!r} in this server")
        return JSONResponse({"run": rid, "durability": hub.durability, "steps": listed})

    async def fork(request: Request) -> Response:
        body = await json_body(request, max_body)
        count = body.get("steps") if body is not None else None
        if (
            body is None
            or not isinstance(body.get("run"), str)
            or isinstance(count, bool)
            or not isinstance(count, int)
        ):
            return _error(
                400, 'POST /api/fork takes JSON {"run": "<run id>", "steps": <how many of its step records to keep>}'
            )
        try:
            run = await run_in_threadpool(hub.fork, body["run"], count)
        except (RilletError, LookupError, ValueError, TypeError) as e:
            return _error(409, f"{type(e).__name__}: {e}")
        return _started(run)

    async def checkpoints(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(listing, store))

    async def checkpoint(request: Request) -> Response:
        cid = request.path_params["id"]
        try:
            view = await run_in_threadpool(decoded, store, cid)
        except Exception as e:  # noqa: BLE001  (a damaged checkpoint is shown with its error, not a 500)
            return _error(422, f"{type(e).__name__}: {e}")
        return _error(404, f"no checkpoint {cid!r} in the store") if view is None else JSONResponse(view)

    routes = [
        Route("/", page),
        Route("/static/{name}", page),
        Route("/api/agent", agent_info),
        Route("/api/runs", start, methods=["GET", "POST"]),
        Route("/api/runs/{run}/events", events),
        Route("/api/runs/{run}/steps", steps),
        Route("/api/fork", fork, methods=["POST"]),
        Route("/api/resume", resume, methods=["POST"]),
        Route("/api/reset", reset, methods=["POST"]),
        Route("/api/sessions", session_listing),
        Route("/api/sessions/open", open_session, methods=["POST"]),
        Route("/api/sessions/{id:path}", session),
        Route("/api/checkpoints", checkpoints),
        Route("/api/checkpoints/{id:path}", checkpoint),
    ]
    routes += eval_routes(hub, evals, max_body=max_body)  # the Evals view (rillet.web.evals)
    app = Starlette(
        routes=routes,
        middleware=[Middleware(_SameSiteOnly, allow_remote=allow_remote)],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.stop_runs = hub.stop  # serve() calls it at Ctrl-C: open event streams end
    app.state.hub = hub  # the runs and the chat, for tests and tools that embed the app
    return app
