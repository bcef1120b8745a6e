"""``rillet inspect``: a saved run decoded and shown without running it, or the list of the
checkpoints in a SQLite file with their sizes and ages."""

from __future__ import annotations

import contextlib
import datetime
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from rillet.cli.common import DB_HELP, checkpoint_store, db_or_fail, fail, info_text, output_options
from rillet.cli.jsonout import dumps, event_json, message_json

if TYPE_CHECKING:
    from rich.console import Console

    from rillet.checkpoint import SqliteCheckpointStore
    from rillet.checkpoint.payload import Loaded


@click.command(short_help="show a saved run or session without running it, or list those of a file")
@click.argument("checkpoint_id", metavar="[CHECKPOINT]", required=False)
@click.option("--db", metavar="FILE", help=DB_HELP)
@click.option("--sessions", "list_sessions", is_flag=True, help="list the sessions (conversations) in --db")
@click.option("--session", "session_id", metavar="ID", help="show the session ID: its turns, messages and values")
@output_options
def inspect(
    checkpoint_id: str | None,
    db: str | None,
    list_sessions: bool,
    session_id: str | None,
    as_json: bool,
    no_color: bool,
) -> int:
    """Decodes CHECKPOINT and shows it: the agent that saved it, its input, session values and
    events, and its interrupts as a tree with their addresses, state and info. Without
    CHECKPOINT, lists the checkpoints in --db, newest first, with their size and age.
    --sessions lists the sessions (rillet run --session) in --db instead, and --session ID shows
    one: its turns and their messages, its summary and its values."""
    from rillet.examples.demo import make_console

    given = [
        what
        for what, there in (("CHECKPOINT", checkpoint_id), ("--sessions", list_sessions), ("--session", session_id))
        if there
    ]
    if len(given) > 1:
        fail("inspect", f"{' and '.join(given)} given together: give one (a checkpoint, --sessions, or --session ID)")
    path = db_or_fail("inspect", db)
    store = checkpoint_store("inspect", path, create=False)
    console = make_console(False if no_color else None)
    if list_sessions or session_id is not None:
        if not _has_sessions(path):  # read only: opening a store would write its tables into the file
            return _no_sessions(path, session_id, console, as_json)
        sessions = _session_store(path)
        if session_id is not None:
            return _show_session(sessions, session_id, console, as_json)
        return _list_sessions(sessions, console, as_json)
    if checkpoint_id is None:
        return _list(store, console, as_json)
    return _show(store, checkpoint_id, console, as_json)


def _has_sessions(path: str) -> bool:
    """Whether the file has rillet's session tables, read without changing it."""
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(Path(path).absolute().as_uri() + "?mode=ro", uri=True)) as conn:
            return (
                conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'").fetchone()
                is not None
            )
    except sqlite3.Error:
        return True  # not readable so: the store's own error says why


def _no_sessions(path: str, session_id: str | None, console: Console, as_json: bool) -> int:
    if session_id is not None:
        fail(
            "inspect",
            f"no session {session_id!r} in {path}: it holds no sessions (rillet run --session ID --db {shlex.quote(path)} starts one)",
            1,
        )
    if not as_json:
        console.print(
            f"no sessions in {escape(path)} (rillet run --session ID --db {escape(shlex.quote(path))} starts one)"
        )
    return 0


def _session_store(path: str) -> Any:
    import sqlite3

    from rillet.errors import SessionError
    from rillet.sessions import SqliteSessionStore

    try:
        return SqliteSessionStore(path)
    except (SessionError, sqlite3.Error, OSError) as e:
        fail("inspect", str(e))


def _list_sessions(sessions: Any, console: Console, as_json: bool) -> int:
    now = time.time()
    entries = sessions.list()
    if as_json:
        for e in entries:
            print(
                dumps(
                    {
                        "id": e.session_id,
                        "turns": e.turns,
                        "created_at": _when(e.created_at),
                        "updated_at": _when(e.updated_at),
                        "age_seconds": round(now - e.updated_at, 3),
                    }
                )
            )
        return 0
    path = escape(str(sessions.path))
    if not entries:
        console.print(
            f"no sessions in {path} (rillet run --session ID --db {escape(shlex.quote(str(sessions.path)))} starts one)"
        )
        return 0
    width = max(len("session"), *(len(e.session_id) for e in entries))
    console.print(f"[bold]{'session':<{width}}  {'turns':>5}  last turn[/]")
    for e in entries:
        console.print(f"{escape(e.session_id):<{width}}  {e.turns:>5}  {_age(now - e.updated_at)} ago", highlight=False)
    return 0


def _show_session(sessions: Any, session_id: str, console: Console, as_json: bool) -> int:
    import sqlite3

    from rillet.data import codec
    from rillet.errors import SessionError

    path = str(sessions.path)
    try:
        data = sessions.get(session_id)
    except (SessionError, codec.DecodeError, sqlite3.Error) as e:
        fail("inspect", str(e), 1)
    if data is None:
        fail("inspect", f"no session {session_id!r} in {path} (rillet inspect --sessions --db {path} lists them)", 1)
    info = next((e for e in sessions.list() if e.session_id == session_id), None)
    if as_json:
        print(
            dumps(
                {
                    "id": session_id,
                    "updated_at": _when(info.updated_at) if info else None,
                    "values": dict(data.values),
                    "summary": [message_json(m) for m in data.summary],
                    "summary_through": data.summary_through,
                    "turns": [
                        {"index": t.index, "messages": [message_json(m) for m in t.messages]} for t in data.turns
                    ],
                }
            )
        )
        return 0
    age = f" · last turn {_age(time.time() - info.updated_at)} ago" if info else ""
    console.print(f"[bold]session {escape(session_id)}[/] · {len(data.turns)} turns{age}")
    values = dict(data.values)
    console.print(f"values: {escape(repr(values)) if values else 'none'}", highlight=False)
    if data.summary:
        console.print(f"\n[bold]summary[/] (of turns 1-{data.summary_through})")
        for m in data.summary:
            _message(console, m)
    for t in data.turns:
        console.print(f"\n[bold]turn {t.index}[/]")
        for m in t.messages:
            _message(console, m)
    return 0


def _message(console: Console, m: Any) -> None:
    """A stored message: its role (a tool's name for a tool result), its text, its tool calls."""
    from rillet.examples.demo import Wrapped

    head = f"← {m.tool_name}" if m.role == "tool" and m.tool_name else m.role
    console.print(f"  [bold]{escape(head)}[/]", highlight=False)
    if m.content:
        out = Wrapped(console, "    ", "")
        out.write(m.content)
        out.end()
    for call in m.tool_calls or ():
        args = _short(call.function.arguments, console.width - 16 - len(call.function.name))
        console.print(f"    [yellow]→ calls[/] [bold]{escape(call.function.name)}[/]({escape(args)})", highlight=False)


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{max(seconds, 0):.0f} s"


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"


def _when(unix: float) -> str:
    return datetime.datetime.fromtimestamp(unix, datetime.UTC).isoformat(timespec="seconds")


def _list(store: SqliteCheckpointStore, console: Console, as_json: bool) -> int:
    now = time.time()
    entries = store.entries()
    if as_json:
        for cid, size, at in entries:
            print(dumps({"id": cid, "size": size, "updated_at": _when(at), "age_seconds": round(now - at, 3)}))
        return 0
    path = escape(str(store.path))
    if not entries:
        console.print(f"no checkpoints in {path}")
    else:
        width = max(len("checkpoint"), *(len(cid) for cid, _, _ in entries))
        console.print(f"[bold]{'checkpoint':<{width}}  {'size':>9}  age[/]")
        for cid, size, at in entries:
            console.print(f"{escape(cid):<{width}}  {_size(size):>9}  {_age(now - at)} ago", highlight=False)
    count = _session_count(store.path)
    if count:
        console.print(f"sessions: {count} (rillet inspect --sessions --db {path} lists them)")
    return 0


def _session_count(path: Any) -> int:
    """How many sessions the file holds (read only: a file without sessions is left as it is)."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
        finally:
            conn.close()
    except (sqlite3.Error, OSError, ValueError):
        return 0


def _show(store: SqliteCheckpointStore, checkpoint_id: str, console: Console, as_json: bool) -> int:
    import sqlite3

    from rillet.checkpoint import CheckpointError
    from rillet.checkpoint.journal import read_step_head
    from rillet.checkpoint.payload import load
    from rillet.cli.prompt import resume_command
    from rillet.data import codec

    path = str(store.path)
    try:
        data = store.get(checkpoint_id)
        if data is None:
            fail("inspect", f"no checkpoint {checkpoint_id!r} in {path} (rillet inspect --db {path} lists them)", 1)
        if read_step_head(bytes(data), checkpoint_id) is not None:
            fail(
                "inspect",
                f"checkpoint[{checkpoint_id}] is the step record of a run that did not finish "
                '(Runner(durability="step")), which this command does not decode; continue it with: '
                f"{resume_command(checkpoint_id, path, 'MODULE:ATTRIBUTE')}",
                1,
            )
        loaded = load(data, checkpoint_id)
    except (CheckpointError, codec.DecodeError, sqlite3.Error) as e:
        fail("inspect", str(e), 1)
    at = next((a for cid, _, a in store.entries() if cid == checkpoint_id), time.time())
    if as_json:
        print(dumps(_as_json(checkpoint_id, len(data), at, loaded)))
    else:
        _print(console, checkpoint_id, len(data), at, loaded)
    return 0


def _parents(loaded: Loaded) -> dict[str, str | None]:
    """Each interrupt's parent: the one whose address is the longest proper prefix of its own."""
    out: dict[str, str | None] = {}
    for iid, address in loaded.addresses.items():
        above = [
            (len(a), other) for other, a in loaded.addresses.items() if len(a) < len(address) and address[: len(a)] == a
        ]
        out[iid] = max(above)[1] if above else None
    return out


def _as_json(checkpoint_id: str, size: int, at: float, loaded: Loaded) -> dict[str, Any]:
    parents = _parents(loaded)
    agent = loaded.agent or {}
    return {
        "id": checkpoint_id,
        "size": size,
        "updated_at": _when(at),
        "agent": {"name": agent.get("name"), "fingerprint": agent.get("fingerprint")} if agent else None,
        "session": loaded.session_ref,
        "input": [message_json(m) for m in loaded.root_input.messages],
        "streaming": loaded.root_input.enable_streaming,
        "session_values": dict(loaded.session.values),
        "events": [event_json(ev) for ev in loaded.session.snapshot()],
        "interrupts": [
            {
                "id": iid,
                "address": list(address),
                "parent": parents[iid],
                "root_cause": iid not in parents.values(),
                "info": loaded.infos.get(iid),
                "state": loaded.states.get(iid),
            }
            for iid, address in loaded.addresses.items()
        ],
        "info": loaded.info,
    }


def _print(console: Console, checkpoint_id: str, size: int, at: float, loaded: Loaded) -> None:
    from rillet.examples.demo import Renderer, print_user

    agent = loaded.agent
    console.print(f"[bold]checkpoint {escape(checkpoint_id)}[/] · {_size(size)} · saved {_age(time.time() - at)} ago")
    name = agent.get("name") if agent else None
    console.print(f"agent: [bold]{escape(str(name))}[/]" if name else "agent: (not recorded: saved by an older rillet)")
    if loaded.session_ref is not None:
        console.print(f"session: {escape(str(loaded.session_ref.get('id', loaded.session_ref)))}")
    console.print("\n[bold]input[/]")
    for m in loaded.root_input.messages:
        if m.role == "user":
            print_user(console, m.content)
        else:
            console.print(f"[bold]{escape(m.role)}[/]: {escape(m.content)}", highlight=False)
    values = dict(loaded.session.values)
    console.print(f"\n[bold]session values[/]: {escape(repr(values)) if values else 'none'}", highlight=False)
    events = loaded.session.snapshot()
    console.print(f"\n[bold]events[/] ({len(events)})")
    renderer = Renderer(console, run_paths=True, tree=True)
    for ev in events:
        renderer.event(ev)
    console.print(f"\n[bold]interrupts[/] ({len(loaded.addresses)})")
    _tree(console, loaded, _parents(loaded), None, 0)
    if loaded.info is not None:
        console.print(f"\n[bold]info[/]: {escape(repr(loaded.info))}", highlight=False)


def _tree(console: Console, loaded: Loaded, parents: dict[str, str | None], parent: str | None, depth: int) -> None:
    children = [iid for iid, p in parents.items() if p == parent]
    for iid in children:
        pad = "  " * (depth + 1)
        address = loaded.addresses[iid]
        segment = address[-1] if address else "(root)"
        waiting = " [magenta]waiting[/]" if iid not in parents.values() else ""
        console.print(f"{pad}[bold]{escape(segment)}[/]{waiting}", highlight=False)
        console.print(f"{pad}  [dim]id[/] {iid}", highlight=False)
        console.print(f"{pad}  [dim]address[/] {escape(' / '.join(address))}", highlight=False)
        info = loaded.infos.get(iid)
        if info is not None:  # what the interrupt asks: shown whole, it is what the person resuming needs
            console.print(f"{pad}  [dim]info[/] {escape(info_text(info))}", highlight=False)
        state = loaded.states.get(iid)
        if state is not None:
            room = console.width - len(pad) - 8  # one line: the whole state is in --json
            console.print(f"{pad}  [dim]state[/] {escape(_short(repr(state), room))}", highlight=False)
        _tree(console, loaded, parents, iid, depth + 1)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
