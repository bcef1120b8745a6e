"""Sessions: conversations kept by id across runs and processes, the trimming and
summarising policies, busy sessions, interrupts inside a session, growth and bounded loads."""

from __future__ import annotations

import contextlib
import gc
import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from rillet import (
    ChatModelAgent,
    FunctionCall,
    InMemorySessionStore,
    LastTurns,
    Message,
    Runner,
    ScriptedModel,
    SessionBusyError,
    SessionError,
    SqliteSessionStore,
    SummarizeOldest,
    TokenBudget,
    ToolCall,
    add_session_value,
    tool,
)
from rillet.checkpoint import InMemoryCheckpointStore, SqliteCheckpointStore
from rillet.run.interrupts import get_interrupt_state, get_resume_context, interrupt
from rillet.sessions import SessionStore
from support.optional import skip_or_fail
from support.waiting import tasks_on_rillets_loop, until, wait_until


def seen(model: ScriptedModel, call: int = -1) -> list[tuple[str, str]]:
    """(role, content) of what the model got on one call, system message left out."""
    return [(m.role, m.content or "") for m in model.calls[call].messages if m.role != "system"]


def chat(store: SessionStore, replies: list[Any], policy: Any = None) -> tuple[Runner, ScriptedModel]:
    model = ScriptedModel(replies)
    agent = ChatModelAgent("pal", description="chats", instruction="Be brief.", model=model)
    return Runner(agent, session_store=store, session_policy=policy), model


def turns(runner: Runner, texts: list[str], session_id: str = "s") -> None:
    for text in texts:
        for ev in runner.query(text, session_id=session_id):
            assert ev.error is None, ev.error


# --- multi-turn across process restarts -----------------------------------------------------

_TURN = textwrap.dedent(
    """
    import json, sys
    from rillet import ChatModelAgent, FunctionCall, Message, Runner, ScriptedModel, SqliteSessionStore, ToolCall
    from rillet import add_session_value, tool

    @tool
    def remember(name: str) -> str:
        \"\"\"Keeps the user's name.\"\"\"
        add_session_value("name", name)
        return "kept"

    ask = Message.assistant("", [ToolCall(index=0, id="c1", function=FunctionCall("remember", '{"name": "Ada"}'))])
    script = {"1": [ask, "Noted, Ada."], "2": ["Hello again."], "3": ["You are Ada."]}[sys.argv[2]]
    model = ScriptedModel(script)
    agent = ChatModelAgent("pal", description="chats", instruction="Be brief.", model=model, tools=[remember])
    runner = Runner(agent, session_store=SqliteSessionStore(sys.argv[1]))
    for ev in runner.query(sys.argv[3], session_id="ada"):
        assert ev.error is None, ev.error
    print(json.dumps([[m.role, m.content, [c.function.name for c in m.tool_calls or []]] for m in model.calls[0].messages]))
    """
)


def test_turn_three_sees_the_whole_conversation_after_the_process_restarted(tmp_path: Path) -> None:
    script = tmp_path / "turn.py"
    script.write_text(_TURN)
    db = str(tmp_path / "app.db")
    out = []
    for n, text in (("1", "I am Ada."), ("2", "Hi!"), ("3", "Who am I?")):
        done = subprocess.run([sys.executable, str(script), db, n, text], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        out.append(json.loads(done.stdout))
    assert out[2] == [
        ["system", "Be brief.", []],
        ["user", "I am Ada.", []],
        ["assistant", "", ["remember"]],
        ["tool", "kept", []],
        ["assistant", "Noted, Ada.", []],
        ["user", "Hi!", []],
        ["assistant", "Hello again.", []],
        ["user", "Who am I?", []],
    ]
    data = SqliteSessionStore(db).get("ada")
    assert data is not None and [t.index for t in data.turns] == [1, 2, 3]
    assert data.values == {"name": "Ada"}


def test_session_values_come_back_and_only_changes_are_written() -> None:
    store = InMemorySessionStore()

    @tool
    def count() -> str:
        """Counts visits."""
        from rillet import get_session_value

        n = get_session_value("visits", 0) + 1
        add_session_value("visits", n)
        return str(n)

    calls = [Message.assistant("", [ToolCall(index=0, id="c", function=FunctionCall("count", "{}"))]), "ok"]
    agent = ChatModelAgent("pal", description="d", model=ScriptedModel(calls * 2), tools=[count])
    runner = Runner(agent, session_store=store)
    writes: list[dict[str, bytes]] = []
    append = store.append
    store.append = lambda sid, data, values: writes.append(dict(values)) or append(sid, data, values)  # type: ignore[method-assign]
    turns(runner, ["visit", "visit"])
    data = store.get("s")
    assert data is not None and data.values == {"visits": 2}
    # the seed the caller passes is a change too; an unchanged value is not rewritten
    for ev in Runner(ChatModelAgent("q", model=ScriptedModel(["hi"])), session_store=store).query(
        "x", session_id="s", session_values={"lang": "pt"}
    ):
        assert ev.error is None
    assert [sorted(w) for w in writes] == [["visits"], ["visits"], ["lang"]]


@pytest.mark.parametrize("read", [True, False])
def test_a_streamed_turn_is_stored_whole_whether_or_not_the_consumer_read_it(read: bool) -> None:
    look = Message.assistant("", [ToolCall(index=0, id="c1", function=FunctionCall("lookup", '{"city": "Lisbon"}'))])

    @tool
    def lookup(city: str) -> str:
        """Looks a city up."""
        return f"{city}: sunny"

    model = ScriptedModel([look, "Sunny in Lisbon.", "You asked about Lisbon."])
    agent = ChatModelAgent("pal", model=model, tools=[lookup])
    runner = Runner(agent, session_store=InMemorySessionStore(), streaming=True)
    for text in ("Weather in Lisbon?", "Which city?"):
        for ev in runner.query(text, session_id="s"):
            assert ev.error is None, ev.error
            if read and ev.message_output is not None:
                ev.message_output.get_message()
    assert seen(model) == [
        ("user", "Weather in Lisbon?"),
        ("assistant", ""),
        ("tool", "Lisbon: sunny"),
        ("assistant", "Sunny in Lisbon."),
        ("user", "Which city?"),
    ]
    assert model.calls[-1].messages[1].tool_calls[0].function.arguments == '{"city": "Lisbon"}'


# --- policies ---------------------------------------------------------------------------------


def test_last_turns_loads_only_the_newest_turns() -> None:
    runner, model = chat(InMemorySessionStore(), [f"a{i}" for i in range(1, 6)], LastTurns(2))
    turns(runner, ["q1", "q2", "q3", "q4", "q5"])
    assert seen(model) == [("user", "q3"), ("assistant", "a3"), ("user", "q4"), ("assistant", "a4"), ("user", "q5")]


def test_token_budget_keeps_the_newest_whole_turns_that_fit_by_the_given_counter() -> None:
    counted: list[str] = []

    def counter(m: Message) -> int:
        counted.append(m.content or "")
        return 10

    runner, model = chat(InMemorySessionStore(), [f"a{i}" for i in range(1, 6)], TokenBudget(45, counter, batch=2))
    turns(runner, ["q1", "q2", "q3", "q4", "q5"])
    # two turns of two messages are 40 tokens; the third would pass 45
    assert seen(model) == [("user", "q3"), ("assistant", "a3"), ("user", "q4"), ("assistant", "a4"), ("user", "q5")]
    assert "q1" not in counted[-6:]  # reading stopped at the first turn that did not fit


def test_summarize_oldest_writes_a_snapshot_and_loads_only_what_follows_it() -> None:
    got: list[list[str]] = []

    def summarize(messages: list[Message]) -> str:
        got.append([m.content or "" for m in messages])
        return f"summary {len(got)}"

    store = InMemorySessionStore()
    runner, model = chat(store, [f"a{i}" for i in range(1, 7)], SummarizeOldest(summarize, keep_turns=1, every=2))
    turns(runner, ["q1", "q2", "q3", "q4"])
    assert got == [["q1", "a1", "q2", "a2"]]  # after turn 3: turns 1-2 folded, turn 3 kept
    # the instruction is the first system message; the summary follows it
    assert [(m.role, m.content) for m in model.calls[-1].messages][:2] == [
        ("system", "Be brief."),
        ("system", "Summary of the earlier conversation:\nsummary 1"),
    ]
    turns(runner, ["q5", "q6"])
    assert got[1] == ["Summary of the earlier conversation:\nsummary 1", "q3", "a3", "q4", "a4"]
    assert [(m.role, m.content) for m in model.calls[-1].messages][1:] == [
        ("system", "Summary of the earlier conversation:\nsummary 2"),
        ("user", "q5"),
        ("assistant", "a5"),
        ("user", "q6"),
    ]
    data = store.get("s")
    assert data is not None and data.summary_through == 4 and len(data.turns) == 6  # turns are never rewritten


def test_an_agent_can_be_the_summarizer() -> None:
    summarizer = ChatModelAgent("scribe", description="summarises", model=ScriptedModel(["they said hi", "and more"]))
    store = InMemorySessionStore()
    runner, model = chat(store, ["a1", "a2", "a3"], SummarizeOldest(summarizer, keep_turns=1, every=1))
    turns(runner, ["q1", "q2", "q3"])
    assert summarizer.model.calls[0].messages[-1].content == "user: q1\nassistant: a1"  # type: ignore[attr-defined]
    assert [(m.role, m.content) for m in model.calls[-1].messages][1] == (
        "system",
        "Summary of the earlier conversation:\nthey said hi",
    )
    assert store.get("s").summary[0].content.endswith("and more")  # type: ignore[union-attr]


def test_a_failing_summarizer_keeps_the_turn_and_says_so() -> None:
    def broken(messages: list[Message]) -> str:
        raise RuntimeError("summariser down")

    store = InMemorySessionStore()
    runner, _ = chat(store, ["a1", "a2"], SummarizeOldest(broken, keep_turns=0, every=2))
    turns(runner, ["q1"])
    errors = [ev.error for ev in runner.query("q2", session_id="s") if ev.error is not None]
    assert [str(e) for e in errors] == [
        "session[s]: the turn was saved, but summarising the oldest turns failed: RuntimeError: summariser down"
    ]
    assert isinstance(errors[0], SessionError) and len(store.get("s").turns) == 2  # type: ignore[union-attr]


def test_bad_policies_and_arguments_are_refused_clearly() -> None:
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        LastTurns(0)
    with pytest.raises(ValueError, match="max_tokens"):
        TokenBudget(0)
    with pytest.raises(TypeError, match="expected a function"):
        SummarizeOldest(42)
    runner = Runner(ChatModelAgent("a", model=ScriptedModel(["x"])))
    with pytest.raises(ValueError, match="no session_store"):
        runner.query("hi", session_id="s")
    runner.session_store = InMemorySessionStore()
    with pytest.raises(TypeError, match="non-empty str"):
        runner.query("hi", session_id="")


# --- concurrency ------------------------------------------------------------------------------


def _held_session(store: SessionStore) -> tuple[Runner, threading.Event, threading.Event]:
    started, go = threading.Event(), threading.Event()

    @tool
    def slow() -> str:
        """Waits for the test."""
        started.set()
        go.wait(10)
        return "done"

    call = Message.assistant("", [ToolCall(index=0, id="c", function=FunctionCall("slow", "{}"))])
    agent = ChatModelAgent("pal", model=ScriptedModel([call, "first", "second"]), tools=[slow])
    return Runner(agent, session_store=store), started, go


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_second_run_on_a_busy_session_is_refused_and_the_first_is_unharmed(kind: str, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store: SessionStore = InMemorySessionStore() if kind == "memory" else SqliteSessionStore(db)
    runner, started, go = _held_session(store)
    first = runner.query("one", session_id="s")
    assert started.wait(10)
    other = store if kind == "memory" else SqliteSessionStore(db)  # another connection, as another process
    with pytest.raises(SessionBusyError, match=r"session\[s\] is in use by another run"):
        Runner(runner.agent, session_store=other).query("two", session_id="s")
    list(chat(store, ["hi"])[0].query("elsewhere", session_id="t"))  # another session is free
    go.set()
    assert [e.message_output.get_message().content for e in first if e.message_output][-1] == "first"
    turns(runner, ["two"])  # released at the end
    data = store.get("s")
    assert data is not None and [t.messages[0].content for t in data.turns] == ["one", "two"]


def test_a_run_dropped_before_it_started_frees_the_session() -> None:
    store = InMemorySessionStore()
    runner, model = chat(store, ["x", "x"])
    runner.query("dropped at once", session_id="s").close()  # its task may not have started yet
    gc.collect()
    turns(runner, ["two"])  # not SessionBusyError
    data = store.get("s")
    assert data is not None and [(m.role, m.content) for m in data.turns[-1].messages] == [
        ("user", "two"),
        ("assistant", "x"),
    ]


def test_a_consumer_that_stops_early_can_start_the_next_turn_at_once() -> None:
    """Closing (or leaving the ``with`` of) a session run's iterator mid-run frees the session
    before close() returns, not later when the cancelled task gets to its ``finally``."""
    store = InMemorySessionStore()
    model = ScriptedModel(["a slow streamed answer", "next"], delay=0.05, chunk_size=2)
    runner = Runner(ChatModelAgent("chat", model=model), session_store=store, streaming=True)
    before = tasks_on_rillets_loop()
    with runner.query("one", session_id="s") as events:
        next(iter(events))  # the run is in flight: its model still streams
    turns(runner, ["two"])  # not SessionBusyError
    wait_until(lambda: tasks_on_rillets_loop() <= before, "the abandoned run to end")  # it appended nothing either
    data = store.get("s")
    assert data is not None and [t.messages[0].content for t in data.turns] == ["two"]


def test_a_bad_argument_fails_before_the_session_is_taken() -> None:
    store = InMemorySessionStore()
    runner, _ = chat(store, ["x"])
    with pytest.raises((TypeError, ValueError)):
        runner.query("hi", session_id="s", session_values=42)  # type: ignore[arg-type]
    turns(runner, ["hi"])


# --- interrupts -------------------------------------------------------------------------------


@tool
def approve(what: str) -> str:
    """Asks a person."""
    was, _, _ = get_interrupt_state()
    if not was:
        raise interrupt({"approve": what})
    _, _, data = get_resume_context()
    return f"{what}: {data}"


def _ops(replies: list[Any], db: Path) -> tuple[Runner, ScriptedModel]:
    model = ScriptedModel(replies)
    agent = ChatModelAgent("ops", model=model, tools=[approve])
    # one file for both stores: each keeps its own tables
    return Runner(agent, checkpoint_store=SqliteCheckpointStore(db), session_store=SqliteSessionStore(db)), model


def test_an_interrupt_inside_a_session_resumes_into_the_same_session(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    ask = Message.assistant("", [ToolCall(index=0, id="c1", function=FunctionCall("approve", '{"what": "deploy"}'))])
    runner, _ = _ops(["hello"], db)
    turns(runner, ["hi"], "ops")
    runner, _ = _ops([ask], db)
    (intr,) = [e for e in runner.query("deploy?", session_id="ops", checkpoint_id="job") if e.action]
    data = SqliteSessionStore(db).get("ops")
    assert data is not None and len(data.turns) == 1  # nothing appended while interrupted
    turns(_ops(["meanwhile"], db)[0], ["status?"], "ops")  # the session is free meanwhile

    runner, model = _ops(["deployed"], db)  # a fresh Runner and stores, as after a restart
    interrupt_id = intr.action.interrupted.interrupt_contexts[0].id
    for ev in runner.resume("job", targets={interrupt_id: "yes"}):
        assert ev.error is None, ev.error
    assert seen(model) == [
        ("user", "hi"),
        ("assistant", "hello"),
        ("user", "deploy?"),
        ("assistant", ""),
        ("tool", "deploy: yes"),
    ]
    data = SqliteSessionStore(db).get("ops")
    assert data is not None
    assert [[(m.role, m.content) for m in t.messages] for t in data.turns] == [
        [("user", "hi"), ("assistant", "hello")],
        [("user", "status?"), ("assistant", "meanwhile")],
        [("user", "deploy?"), ("assistant", ""), ("tool", "deploy: yes"), ("assistant", "deployed")],
    ]
    assert SqliteCheckpointStore(db).get("job") is None  # the finished resume deleted its checkpoint


def test_a_resume_into_a_busy_session_is_refused_and_keeps_the_checkpoint() -> None:
    ask = Message.assistant("", [ToolCall(index=0, id="c1", function=FunctionCall("approve", '{"what": "x"}'))])
    sessions, checkpoints = InMemorySessionStore(), InMemoryCheckpointStore()
    agent = ChatModelAgent("ops", model=ScriptedModel([ask, "ok"]), tools=[approve])
    runner = Runner(agent, checkpoint_store=checkpoints, session_store=sessions)
    list(runner.query("x?", session_id="s", checkpoint_id="job"))
    sessions.acquire("s", "someone else", 60)
    with pytest.raises(SessionBusyError):
        runner.resume("job")
    sessions.release("s", "someone else")
    with pytest.raises(ValueError, match=r"checkpoint\[job\] belongs to a session: the Runner has no session_store"):
        Runner(agent, checkpoint_store=checkpoints).resume("job")
    assert checkpoints.claim("job", "me") is not None  # the refused resumes released their claim


# --- store management and files ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_list_get_delete_and_prune_by_age(kind: str, tmp_path: Path) -> None:
    store: Any = InMemorySessionStore() if kind == "memory" else SqliteSessionStore(tmp_path / "s.db")
    runner, _ = chat(store, ["a", "b", "c"])
    turns(runner, ["x"], "one")
    turns(runner, ["y", "z"], "two")
    assert [(i.session_id, i.turns) for i in store.list()] == [("two", 2), ("one", 1)]
    assert store.get("nope") is None
    assert store.delete("one") and not store.delete("one")
    assert store.prune(older_than=3600) == 0
    assert store.prune(older_than=0) == 1 and store.list() == []


def test_a_corrupted_session_row_is_refused_with_session_error_and_frees_the_session(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    runner, _ = chat(SqliteSessionStore(db), ["x", "x"])
    turns(runner, ["one"])
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE session_turns SET data = x'00ff00'")
    conn.close()
    with pytest.raises(SessionError, match=r"session\[s\] in SqliteSessionStore\(.*\) holds a row rillet cannot read"):
        runner.query("two", session_id="s")
    assert SqliteSessionStore(db).delete("s")
    turns(runner, ["three"])  # the failed load released the session


def test_the_checkpoint_store_and_the_session_store_share_a_file_in_either_order(tmp_path: Path) -> None:
    for first, second in ((SqliteSessionStore, SqliteCheckpointStore), (SqliteCheckpointStore, SqliteSessionStore)):
        db = tmp_path / f"{first.__name__}.db"
        first(db)
        second(db)
        SqliteSessionStore(db), SqliteCheckpointStore(db)  # and again, in the other order
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(SessionError, match="another application"):
        SqliteSessionStore(other)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(SessionError, match="not a SQLite database"):
        SqliteSessionStore(junk)


# --- growth and bounded loads ------------------------------------------------------------------


def _measured(store: SqliteSessionStore) -> list[int]:
    """Wraps ``store.append`` to record each turn's own size: its blob and its changed values."""
    sizes: list[int] = []
    append = store.append

    def measured(session_id: str, data: bytes, values: Any) -> int:
        sizes.append(len(data) + sum(len(k) + len(v) for k, v in values.items()))
        return append(session_id, data, values)

    store.append = measured  # type: ignore[method-assign]
    return sizes


def _file_bytes(path: Path) -> int:
    """Bytes of the database's pages in use, after the WAL is folded into the file."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages, free, size = (
            conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "freelist_count", "page_size")
        )
    return int((pages - free) * size)


def _row_bytes(path: Path) -> int:
    """Bytes the session tables and their indexes fill: rows, keys, record and cell headers,
    cell pointers and page headers; everything but the free space left in their pages."""
    with sqlite3.connect(path) as conn:
        try:
            (used,) = conn.execute(
                "SELECT sum(pgsize - unused) FROM dbstat WHERE name LIKE 'session%' OR name LIKE '%autoindex_session%'"
            ).fetchone()
        except sqlite3.OperationalError:
            skip_or_fail("this SQLite has no dbstat table")
    return int(used)


def _answer(i: int) -> str:
    return f"Answer {i}: " + "the forecast says sun in the morning and light rain later in the afternoon. " * 3


@pytest.mark.slow
def test_500_turns_write_what_they_add_and_a_last_n_load_reads_n_rows(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SqliteSessionStore(db)
    sizes = _measured(store)
    runner, _ = chat(store, [_answer(i) for i in range(500)], LastTurns(3))
    turns(runner, ["first"])
    file_before = _file_bytes(db)  # the tables and the session row exist from here on
    loads = []
    for i in range(1, 500):
        read = store.rows_read
        turns(runner, [f"Question {i}: what will the weather be like tomorrow in Lisbon?"])
        loads.append(store.rows_read - read)
    own = sum(sizes)
    assert _row_bytes(db) <= 1.1 * own, (_row_bytes(db), own)
    # whole pages: ~400-byte rows leave up to one row's worth free in each 4 KB page
    grown = _file_bytes(db) - file_before
    assert grown <= 1.25 * sum(sizes[1:]), (grown, sum(sizes[1:]))
    assert set(loads[2:]) == {3}  # three turn rows per load, at turn 4 as at turn 500


def test_a_last_n_load_reads_a_bounded_number_of_rows(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    runner, model = chat(store, [f"a{i}" for i in range(60)], LastTurns(4))
    reads = []
    for i in range(60):
        read = store.rows_read
        turns(runner, [f"q{i}"])
        reads.append(store.rows_read - read)
    assert reads[:5] == [0, 1, 2, 3, 4] and set(reads[4:]) == {4}
    assert len(seen(model)) == 9


def test_a_full_disk_is_the_error_a_sqlite_session_append_raises(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "full.db")
    store.append("s", b"turn 1", {})
    conn = store._file.connect()
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
        store.append("s", b"x" * 200_000, {"v": b"y" * 100_000})
    assert not conn.in_transaction
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert store.append("s", b"turn 2", {}) == 2  # the failed turn left nothing behind


def test_a_block_list_session_turn_is_read_back_by_the_next_turn() -> None:
    """A turn of AgenticMessages is stored and the next turn loads it: the store was written
    a row it then refused as "not written by rillet" (decode took Message only)."""
    from rillet import AgenticMessage

    model = ScriptedModel([AgenticMessage.assistant("first"), AgenticMessage.assistant("second")])
    runner = Runner(ChatModelAgent("a", model=model), session_store=InMemorySessionStore())
    list(runner.run([AgenticMessage.user("one")], session_id="s"))
    events = list(runner.run([AgenticMessage.user("two")], session_id="s"))
    assert [e.error for e in events] == [None]
    seen = model.calls[-1].messages
    assert [(type(m).__name__, m.role, m.content) for m in seen] == [
        ("AgenticMessage", "user", "one"),
        ("AgenticMessage", "assistant", "first"),
        ("AgenticMessage", "user", "two"),
    ]


def test_a_block_list_sessions_summary_is_a_block_list_too() -> None:
    """SummarizeOldest over AgenticMessage turns: its summary (a text made a system Message) came
    before the AgenticMessage turns, one conversation of two types; a summarizer returning an
    AgenticMessage was refused ("return a str or a Message")."""
    from rillet import AgenticMessage

    for give in ("text", "blocks"):

        def summarize(messages: list[Message], give: str = give) -> Any:
            return "they talked" if give == "text" else AgenticMessage.system("they talked")

        model = ScriptedModel([AgenticMessage.assistant(f"a{i}") for i in range(1, 4)])
        agent = ChatModelAgent("pal", description="chats", model=model)
        runner = Runner(agent, session_store=InMemorySessionStore(), session_policy=SummarizeOldest(summarize, 1, 1))
        for text in ("q1", "q2", "q3"):
            events = list(runner.run([AgenticMessage.user(text)], session_id="s"))
            assert [e.error for e in events] == [None], give
        seen_types = {type(m).__name__ for m in model.calls[-1].messages}
        assert seen_types == {"AgenticMessage"}, give


# --- a cancelled run closes the streams it kept -----------------------------------------------


class _HeldStream:
    """A model whose streamed reply sends its first chunk, then holds the rest until
    ``go`` is set (or 10 s pass); ``stopped`` is set when its producer sees that every
    reader of the stream is gone (what a real model's HTTP stream is closed on)."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.stopped = threading.Event()
        self.tasks: set[Any] = set()

    async def generate(self, messages: list[Message], **options: Any) -> Message:
        return Message.assistant("whole answer")

    async def stream(self, messages: list[Message], **options: Any) -> Any:
        import asyncio

        from rillet import pipe

        reader, writer = pipe()

        async def produce() -> None:
            try:
                writer.send(Message.assistant("whole "))
                # nothing signals a reader's close: the producer polls for it (the test waits on events)
                await until(lambda: writer.reader_closed or self.go.is_set(), "the reader to close, or go")
                if writer.reader_closed:
                    self.stopped.set()
                    return
                writer.send(Message(role="assistant", content="answer"))
            finally:
                writer.close()

        task = asyncio.get_running_loop().create_task(produce())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return reader


def _held_runner(kind: str, tmp_path: Path) -> tuple[Runner, _HeldStream, SessionStore]:
    store: SessionStore = InMemorySessionStore() if kind == "memory" else SqliteSessionStore(tmp_path / "s.db")
    model = _HeldStream()
    runner = Runner(ChatModelAgent("pal", model=model), session_store=store, streaming=True)  # type: ignore[arg-type]
    return runner, model, store


def _kept_sessions() -> list[Any]:
    from rillet.sessions.session_run import TurnSession

    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, TurnSession) and o.kept]


def _told_to_stop(model: _HeldStream) -> None:
    """Waits until ``model``'s producer saw its readers gone and no turn keeps a reader."""
    wait_until(model.stopped.is_set, "the model's producer to be told to stop", 5)
    wait_until(lambda: not _kept_sessions(), "the turn's kept readers to go", 5)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("how", ["close", "with", "async_with", "cancelled_task"])
def test_a_run_cancelled_while_its_model_streams_closes_the_stream_and_stores_nothing(
    how: str, kind: str, tmp_path: Path
) -> None:
    """The turn keeps a reader of each streamed message to store it whole; a run that ends
    without storing (its consumer left) closes those readers, so the model's producer learns
    that nobody reads the rest (a real model's HTTP stream is closed)."""
    import asyncio

    runner, model, store = _held_runner(kind, tmp_path)
    try:
        if how in ("close", "with"):
            if how == "close":
                events = runner.query("hi", session_id="s")
                first = next(iter(events))
                events.close()
            else:
                with runner.query("hi", session_id="s") as events:
                    first = next(iter(events))
            assert first.error is None and first.message_output is not None  # the run was mid-stream
            del first, events  # the consumer's own reader of the stream goes with its event
            _told_to_stop(model)
        else:
            got: list[Any] = []

            async def consume(reached: asyncio.Event) -> None:
                async with runner.query("hi", session_id="s") as events:
                    async for ev in events:
                        got.append(ev)
                        reached.set()
                        if how == "async_with":
                            return
                        await asyncio.Event().wait()  # until cancelled

            async def main() -> None:  # (the model's producer runs on this loop: wait before it closes)
                reached = asyncio.Event()
                task = asyncio.ensure_future(consume(reached))
                await reached.wait()
                if how == "cancelled_task":
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                assert got[0].error is None and got[0].message_output is not None
                got.clear()
                await asyncio.to_thread(_told_to_stop, model)

            asyncio.run(main())
    finally:
        model.go.set()
    turns(runner, ["two"])  # the session is free, and the cancelled turn stored nothing
    data = store.get("s")
    assert data is not None and [[(m.role, m.content) for m in t.messages] for t in data.turns] == [
        [("user", "two"), ("assistant", "whole answer")]
    ]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_streamed_turn_nobody_read_is_still_stored_whole(kind: str, tmp_path: Path) -> None:
    runner, model, store = _held_runner(kind, tmp_path)
    model.go.set()
    turns(runner, ["hi"])
    data = store.get("s")
    assert data is not None and [[(m.role, m.content) for m in t.messages] for t in data.turns] == [
        [("user", "hi"), ("assistant", "whole answer")]
    ]
    assert not model.stopped.is_set() and not _kept_sessions()
