"""What docs/interrupts.md promises under "Guarantees": an approved call runs once however many
resumes race for it, a checkpoint resumes only with the agent that saved it, altered bytes are
refused, a slow store does not stall other runs, and `rillet resume` fails in one line."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rillet import ChatModelAgent, FunctionCall, Message, Runner, ScriptedModel, SequentialAgent, ToolCall
from rillet.checkpoint import (
    CheckpointAgentMismatchError,
    CheckpointClaimedError,
    CheckpointCorruptError,
    CheckpointError,
    CheckpointNotFoundError,
    InMemoryCheckpointStore,
    SqliteCheckpointStore,
)
from rillet.checkpoint.binding import agent_binding
from rillet.checkpoint.payload import load
from rillet.tools.approval import approve
from support.checkpoint_agents import build
from support.waiting import until, wait_until

TESTS = Path(__file__).resolve().parents[1]  # tests/, which holds support/


def interrupt_id(runner: Runner, checkpoint_id: str) -> str:
    """Runs to the approval interrupt (saved under ``checkpoint_id``); its interrupt id."""
    events = list(runner.query("pay", checkpoint_id=checkpoint_id))
    ev = next(e for e in events if e.action is not None and e.action.interrupted is not None)
    assert ev.action is not None and ev.action.interrupted is not None
    return str(ev.action.interrupted.interrupt_contexts[0].id)


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture(params=["memory", "sqlite"])
def store(request: Any, tmp_path: Path) -> Any:
    return InMemoryCheckpointStore() if request.param == "memory" else SqliteCheckpointStore(tmp_path / "c.db")


# --- exactly one resume runs ---------------------------------------------------------------


def test_one_claim_wins_among_threads(store: Any) -> None:
    store.set("a", b"data")
    barrier = threading.Barrier(8)
    results: list[Any] = []

    def claim(owner: str) -> None:
        barrier.wait()
        try:
            results.append(store.claim("a", owner))
        except CheckpointClaimedError as e:
            results.append(e)

    threads = [threading.Thread(target=claim, args=(f"o{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results.count(b"data") == 1
    assert sum(isinstance(r, CheckpointClaimedError) for r in results) == 7
    assert "already being resumed" in str(next(r for r in results if isinstance(r, Exception)))
    assert store.claim("missing", "o") is None


def test_a_claim_ends_with_set_release_delete_or_its_lease(store: Any) -> None:
    store.set("a", b"1")
    assert store.claim("a", "o1") == b"1"
    with pytest.raises(CheckpointClaimedError):
        store.claim("a", "o2")
    store.release("a", "o2")  # not its claim: no effect
    with pytest.raises(CheckpointClaimedError):
        store.claim("a", "o2")
    store.release("a", "o1")
    assert store.claim("a", "o2") == b"1"
    store.set("a", b"2")  # a re-interrupt writes it again: claimable again
    assert store.claim("a", "o3") == b"2"
    store.release("a", "o3")
    store.claim_lease = 0.05  # the next claimer dies: its lease runs out
    assert store.claim("a", "o4") == b"2"
    time.sleep(0.1)  # past the lease (o2 above was refused inside one, however slow the machine)
    assert store.claim("a", "o5") == b"2"
    store.delete("a")
    assert store.claim("a", "o6") is None


def test_a_schema_1_database_gains_the_claim_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE checkpoints (id TEXT PRIMARY KEY, data BLOB NOT NULL,"
        " updated_at REAL NOT NULL DEFAULT (julianday('now')))"
    )
    conn.execute(f"PRAGMA application_id = {0x72696C6C}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO checkpoints (id, data) VALUES ('old', x'0102')")
    conn.commit()
    conn.close()
    store = SqliteCheckpointStore(path)
    assert store.claim("old", "o") == b"\x01\x02"
    with pytest.raises(CheckpointClaimedError):
        store.claim("old", "p")


def test_concurrent_resumes_in_threads_run_the_approved_call_once(store: Any, tmp_path: Path) -> None:
    for round in range(5):
        log = tmp_path / f"log{round}"
        iid = interrupt_id(Runner(build(str(log)), checkpoint_store=store), f"c{round}")
        barrier = threading.Barrier(2)
        outcomes: list[Any] = []

        def resume() -> None:
            runner = Runner(build(str(log), first=False), checkpoint_store=store)
            barrier.wait()
            try:
                events = list(runner.resume(f"c{round}", targets={iid: approve()}))
                outcomes.append([e.error for e in events if e.error is not None] or "ran")
            except CheckpointError as e:
                outcomes.append(e)

        threads = [threading.Thread(target=resume) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert lines(log) == ["paid"], outcomes
        assert outcomes.count("ran") == 1, outcomes
        loser = next(o for o in outcomes if o != "ran")
        assert isinstance(loser, (CheckpointClaimedError, CheckpointNotFoundError)), outcomes


def test_a_failed_resume_keeps_the_checkpoint_and_releases_its_claim(store: Any, tmp_path: Path) -> None:
    log = tmp_path / "log"
    iid = interrupt_id(Runner(build(str(log)), checkpoint_store=store), "c")
    broken = ChatModelAgent("banker", description="moves money", model=ScriptedModel([]), tools=build(str(log)).tools)
    events = list(Runner(broken, checkpoint_store=store).resume("c", targets={iid: approve()}))
    assert any(e.error is not None for e in events)  # the model had nothing to say
    events = list(Runner(build(str(log), first=False), checkpoint_store=store).resume("c", targets={iid: approve()}))
    assert [e.error for e in events if e.error is not None] == []
    assert store.get("c") is None  # finished: deleted


@pytest.mark.parametrize("bad", [{"session_values": [1, 2]}, {"options": 5}, {"model_options": "x"}], ids=str)
def test_a_resume_call_refused_for_a_bad_argument_leaves_the_checkpoint_unclaimed(
    store: Any, tmp_path: Path, bad: dict[str, Any]
) -> None:
    log = tmp_path / "log"
    iid = interrupt_id(Runner(build(str(log)), checkpoint_store=store), "c")
    runner = Runner(build(str(log), first=False), checkpoint_store=store)
    with pytest.raises((TypeError, ValueError)):
        runner.resume("c", targets={iid: approve()}, **bad)

    async def aresume() -> None:
        await runner.aresume("c", targets={iid: approve()}, **bad)

    with pytest.raises((TypeError, ValueError)):
        asyncio.run(aresume())
    list(runner.resume("c", targets={iid: approve()}))  # not held for the lease by the refused calls
    assert lines(log) == ["paid"]


def test_an_aresume_cancelled_while_claiming_does_not_hold_the_checkpoint(tmp_path: Path) -> None:
    go_on, released = threading.Event(), threading.Event()

    class SlowClaim(InMemoryCheckpointStore):
        def claim(self, checkpoint_id: str, owner: str) -> bytes | None:
            go_on.wait(60)  # as SQLite waiting for another writer's lock
            return super().claim(checkpoint_id, owner)

        def release(self, checkpoint_id: str, owner: str) -> None:
            super().release(checkpoint_id, owner)
            released.set()

    log = tmp_path / "log"
    store = SlowClaim()
    iid = interrupt_id(Runner(build(str(log)), checkpoint_store=store), "c")
    runner = Runner(build(str(log), first=False), checkpoint_store=store)

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(runner.aresume("c", targets={iid: approve()}), 0.05)
        go_on.set()  # the claim lands after the caller gave up ...
        assert await asyncio.to_thread(released.wait, 60)  # ... and is released
        errors = [e.error async for e in await runner.aresume("c", targets={iid: approve()})]
        assert errors and not any(errors)

    asyncio.run(main())
    assert lines(log) == ["paid"]


def test_an_abandoned_resume_releases_its_claim(store: Any, tmp_path: Path) -> None:
    log = tmp_path / "log"
    iid = interrupt_id(Runner(build(str(log), extra_tool=True), checkpoint_store=store), "c")
    wait = Message.assistant(tool_calls=[ToolCall(index=0, id="w", function=FunctionCall("audit", '{"seconds": 30}'))])
    busy = build(str(log), first=False, extra_tool=True, replies=[wait, "Done."])
    it = Runner(busy, checkpoint_store=store).resume("c", targets={iid: approve()})
    assert next(it).message_output is not None  # the approved call ran; now it waits in audit
    with pytest.raises(CheckpointClaimedError):
        Runner(busy, checkpoint_store=store).resume("c", targets={iid: approve()})
    it.close()

    def claimed() -> bool:
        try:
            return store.claim("c", "next") is not None  # kept, and free again
        except CheckpointClaimedError:
            return False

    wait_until(claimed, "the abandoned resume to release its claim")


def test_a_resume_that_interrupts_again_leaves_it_resumable(store: Any, tmp_path: Path) -> None:
    log = tmp_path / "log"
    interrupt_id(Runner(build(str(log)), checkpoint_store=store), "c")
    runner = Runner(build(str(log), first=False), checkpoint_store=store)
    again = list(runner.resume("c"))  # no targets: the approval asks again
    assert any(e.action is not None and e.action.interrupted is not None for e in again)
    iid = load(store.get("c"), "c").addresses.popitem()[0]
    list(Runner(build(str(log), first=False), checkpoint_store=store).resume("c", targets={iid: approve()}))
    assert lines(log) == ["paid"]


_RACER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from support.checkpoint_agents import build
    from rillet import Runner
    from rillet.tools.approval import approve
    from rillet.checkpoint import SqliteCheckpointStore
    store = SqliteCheckpointStore(sys.argv[2])
    print("ready", flush=True)
    for line in sys.stdin:
        cid, iid, log = line.split()
        runner = Runner(build(log, cid, first=False), checkpoint_store=store)
        try:
            errors = [e.error for e in runner.resume(cid, targets={iid: approve()}) if e.error is not None]
            print("ran" if not errors else f"error {errors}", flush=True)
        except Exception as e:
            print(type(e).__name__, flush=True)
    """
)


@pytest.mark.slow
def test_two_processes_resuming_one_checkpoint_run_the_approved_call_once(tmp_path: Path) -> None:
    db, log = tmp_path / "race.db", tmp_path / "log"
    store = SqliteCheckpointStore(db)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(TESTS), str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        for _ in range(2)
    ]
    watchdog = threading.Timer(120, lambda: [p.kill() for p in procs])
    watchdog.start()
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        outcomes = []
        for i in range(20):
            cid = f"race{i}"
            iid = interrupt_id(Runner(build(str(log), cid), checkpoint_store=store), cid)
            for p in procs:
                assert p.stdin is not None
                p.stdin.write(f"{cid} {iid} {log}\n")
                p.stdin.flush()
            got = sorted(p.stdout.readline().strip() for p in procs if p.stdout is not None)
            outcomes.append(got)
            assert lines(log).count(cid) == 1, (i, got)
            assert "ran" in got and ({"CheckpointClaimedError", "CheckpointNotFoundError"} & set(got)), (i, got)
    finally:
        watchdog.cancel()
        for p in procs:
            p.kill()
            p.wait(10)


# --- the agent that saved it -----------------------------------------------------------------


def test_another_agent_is_refused_before_running_and_the_checkpoint_is_kept(store: Any, tmp_path: Path) -> None:
    log = tmp_path / "log"
    iid = interrupt_id(Runner(build(str(log)), checkpoint_store=store), "c")
    saved = store.get("c")
    other = Runner(build(str(log), "other's", first=False, name="other"), checkpoint_store=store)
    with pytest.raises(CheckpointAgentMismatchError, match=r"checkpoint\[c\] was saved by agent 'banker'.*'other'"):
        other.resume("c", targets={iid: approve()})
    changed = Runner(build(str(log), first=False, extra_tool=True), checkpoint_store=store)
    with pytest.raises(
        CheckpointAgentMismatchError, match=r"tools \['append'\] were saved, the Runner has \['append', 'audit'\]"
    ):
        changed.resume("c", targets={iid: approve()})
    assert lines(log) == [] and store.get("c") == saved
    list(Runner(build(str(log), first=False), checkpoint_store=store).resume("c", targets={iid: approve()}))
    assert lines(log) == ["paid"]


def test_the_fingerprint_is_the_same_in_another_process_and_on_another_model(tmp_path: Path) -> None:
    here = agent_binding(build("x"))
    assert here == agent_binding(build("y", first=False)) and here["name"] == "banker"
    code = (
        f"import sys; sys.path.insert(0, {str(TESTS)!r}); from support.checkpoint_agents import build; "
        "from rillet.checkpoint.binding import agent_binding; print(agent_binding(build('z'))['fingerprint'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == here["fingerprint"], out.stderr
    one, two = build("x", name="one"), build("x", name="two")
    a = agent_binding(SequentialAgent("seq", description="both", sub_agents=[one, two]))
    b = agent_binding(
        SequentialAgent("seq", description="both", sub_agents=[build("x", name="two"), build("x", name="one")])
    )
    assert a["fingerprint"] != b["fingerprint"]
    assert a["tree"][3][0][0] == "one" and a["tree"][1] == "SequentialAgent"


# --- checksums -------------------------------------------------------------------------------


def _small_checkpoint() -> bytes:
    store = InMemoryCheckpointStore()
    interrupt_id(Runner(build("unused"), checkpoint_store=store), "small")
    data = store.get("small")
    assert data is not None and data[:3] == b"RCK"
    return data


def _flip_is_refused(data: bytes, bit: int) -> bool:
    flipped = bytearray(data)
    flipped[bit // 8] ^= 1 << (bit % 8)
    try:
        load(bytes(flipped), "small")
    except CheckpointError as e:
        return "checkpoint[small]" in str(e)
    except Exception as e:  # a DecodeError of the codec: must name the id too
        return "checkpoint[small]" in str(e)
    return False


def test_altered_bytes_are_refused_naming_the_id_and_kept(store: Any, tmp_path: Path) -> None:
    data = _small_checkpoint()
    step = max(1, len(data) * 8 // 64)
    assert all(_flip_is_refused(data, bit) for bit in range(0, len(data) * 8, step))
    log = tmp_path / "log"
    iid = interrupt_id(Runner(build(str(log)), checkpoint_store=store), "c")
    good = store.get("c")
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x10
    store.set("c", bytes(bad))
    with pytest.raises(CheckpointCorruptError, match=r"checkpoint\[c\] fails its checksum"):
        Runner(build(str(log), first=False), checkpoint_store=store).resume("c", targets={iid: approve()})
    assert store.get("c") == bytes(bad) and lines(log) == []
    store.set("c", good)  # put back: resumes (the failed attempt released its claim)
    list(Runner(build(str(log), first=False), checkpoint_store=store).resume("c", targets={iid: approve()}))
    assert lines(log) == ["paid"]


@pytest.mark.slow
def test_every_single_bit_flip_of_a_small_checkpoint_is_refused() -> None:
    data = _small_checkpoint()
    missed = [bit for bit in range(len(data) * 8) if not _flip_is_refused(data, bit)]
    assert missed == [], f"{len(missed)} of {len(data) * 8} flips loaded"


def test_a_store_returning_text_gets_a_clear_error(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "t.db")
    conn = sqlite3.connect(tmp_path / "t.db")
    conn.execute("INSERT INTO checkpoints (id, data) VALUES ('t', 'some text')")
    conn.commit()
    conn.close()
    with pytest.raises(CheckpointError, match=r"checkpoint\[t\] in .*the data column holds str, not a BLOB"):
        Runner(build("x"), checkpoint_store=store).resume("t")
    with pytest.raises(CheckpointError, match=r"checkpoint\[t\]: the store returned str, not bytes"):
        load("text", "t")  # type: ignore[arg-type]


# --- a slow store does not stall the loop ----------------------------------------------------


class SlowStore(InMemoryCheckpointStore):
    """A sync store whose set() blocks until ``go_on`` (SQLite waiting on a lock), or for a
    minute: ``left`` says whether it returned."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.go_on, self.left = threading.Event(), threading.Event(), False

    def set(self, checkpoint_id: str, data: bytes) -> None:
        self.entered.set()
        self.go_on.wait(60)
        self.left = True
        super().set(checkpoint_id, data)


def test_a_blocking_sync_store_does_not_delay_other_runs_on_the_loop(tmp_path: Path) -> None:
    store = SlowStore()

    async def main() -> None:
        slow = Runner(build(str(tmp_path / "log")), checkpoint_store=store)
        quick = Runner(ChatModelAgent("quick", description="answers", model=ScriptedModel(["hi there"]), tools=[]))

        async def drain(it: Any) -> list[Any]:
            return [e async for e in it]

        saving = asyncio.ensure_future(drain(slow.query("pay", checkpoint_id="c")))
        await until(store.entered.is_set, "the slow run to save its checkpoint")
        events = await drain(quick.query("hello"))
        assert not store.left, "another run waited for a store's set() to return"
        assert [e.message_output.get_message().content for e in events if e.message_output] == ["hi there"]
        store.go_on.set()
        assert any(e.action is not None and e.action.interrupted is not None for e in await saving)

    asyncio.run(main())
    assert store.get("c") is not None


# --- `rillet resume` -------------------------------------------------------------------------


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rillet.cli", "resume", *args, "--no-color"],
        stdin=subprocess.DEVNULL,  # never a terminal: an approval must come from the flags
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def test_resume_cli_on_bad_databases_prints_one_line(tmp_path: Path) -> None:
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    conn = sqlite3.connect(tmp_path / "foreign.db")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    SqliteCheckpointStore(tmp_path / "ours.db")
    conn = sqlite3.connect(tmp_path / "ours.db")
    conn.execute("INSERT INTO checkpoints (id, data) VALUES ('text', 'hello'), ('blob', x'00ff')")
    conn.commit()
    conn.close()
    for db, cid, says in [
        ("junk.db", "x", "is not a SQLite database"),
        ("foreign.db", "x", "a SQLite database of another application"),
        ("ours.db", "text", "checkpoint[text] in"),
        ("ours.db", "blob", "checkpoint[blob] is not a rillet checkpoint"),
    ]:
        out = cli(cid, "--db", str(tmp_path / db))
        assert out.returncode == 1, (db, out.stderr)
        assert len(out.stderr.splitlines()) == 1 and says in out.stderr, (db, out.stderr)


def test_resume_cli_resumes_only_with_the_agent_that_saved_it(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "log"
    interrupt_id(Runner(build(str(log)), checkpoint_store=SqliteCheckpointStore(db)), "inv-7")
    bare = cli("inv-7", "--db", str(db), "--approve")
    assert bare.returncode == 1 and len(bare.stderr.splitlines()) == 1
    assert "saved by agent 'banker', not by the demo" in bare.stderr and "--agent MODULE:ATTRIBUTE" in bare.stderr
    wrong = cli("inv-7", "--db", str(db), "--approve", "--agent", "rillet.examples.demo:build_agent")
    assert wrong.returncode == 1 and "'banker'" in wrong.stderr and "'travel_assistant'" in wrong.stderr
    nonsense = cli("inv-7", "--db", str(db), "--agent", "no_such_module:x")
    assert nonsense.returncode == 2 and "No module named 'no_such_module'" in nonsense.stderr
    assert lines(log) == []
    unattended = cli(
        "inv-7",
        "--db",
        str(db),
        "--agent",
        "support.checkpoint_agents:demo_like",
        cwd=TESTS,
        env={"RILLET_TEST_LOG": str(log)},
    )  # no terminal (stdin is not one here) and no --approve/--reject: nobody approved, nothing runs
    assert unattended.returncode == 2 and "pass --approve or --reject (nothing was run)" in unattended.stderr
    assert lines(log) == []
    ok = cli(
        "inv-7",
        "--db",
        str(db),
        "--approve",
        "--agent",
        "support.checkpoint_agents:demo_like",
        cwd=TESTS,
        env={"RILLET_TEST_LOG": str(log)},
    )
    assert ok.returncode == 0, ok.stderr
    assert "approval needed: append" in ok.stdout and lines(log) == ["paid"]


def test_the_tree_covers_agents_as_tools_and_transfer_targets() -> None:
    from rillet import AgentTool, set_sub_agents
    from rillet.checkpoint.binding import CheckpointAgentMismatchError as Mismatch
    from rillet.checkpoint.binding import check_binding

    def caller(inner: str) -> ChatModelAgent:
        return ChatModelAgent(
            "boss", description="delegates", model=ScriptedModel([]), tools=[AgentTool(build("x", name=inner))]
        )

    saved = agent_binding(caller("clerk"))
    assert saved["tree"][2] == [["clerk", agent_binding(build("x", name="clerk"))["tree"]]]
    with pytest.raises(Mismatch, match=r"at boss: tools \['clerk'\] were saved, the Runner has \['typist'\]"):
        check_binding(saved, caller("typist"), "c")
    router = set_sub_agents(build("x", name="router"), [build("x", name="billing")])
    tree = agent_binding(router)["tree"]
    assert [c[0] for c in tree[3]] == ["billing"] and "transfer_to_agent" in tree[2]
    with pytest.raises(
        Mismatch, match=r"tools \['append', 'transfer_to_agent'\] were saved, the Runner has \['append'\]"
    ):
        check_binding(agent_binding(router), build("x", name="router"), "c")
    clerk = ChatModelAgent(
        "boss",
        description="delegates",
        model=ScriptedModel([]),
        tools=[AgentTool(build("x", name="clerk", extra_tool=True))],
    )
    with pytest.raises(
        Mismatch, match=r"at boss/tool:clerk/clerk: tools \['append'\] were saved, the Runner has \['append', 'audit'\]"
    ):
        check_binding(saved, clerk, "c")


def test_the_agent_given_to_set_sub_agents_is_bound_with_its_sub_agents() -> None:
    """A Runner over the agent given to set_sub_agents runs its sub-agents, so its fingerprint
    must cover them: another sub-agent tree is refused, the returned wrapper matches."""
    from rillet import set_sub_agents
    from rillet.checkpoint.binding import CheckpointAgentMismatchError as Mismatch
    from rillet.checkpoint.binding import check_binding

    def router(child: str) -> tuple[ChatModelAgent, Any]:
        root = build("x", name="router")
        return root, set_sub_agents(root, [build("x", name=child)])

    original, wrapper = router("billing")
    saved = agent_binding(original)
    assert [c[0] for c in saved["tree"][3]] == ["billing"]
    assert saved == agent_binding(wrapper)
    with pytest.raises(Mismatch, match=r"sub-agents \['billing'\] were saved, the Runner has \['sales'\]"):
        check_binding(saved, router("sales")[0], "c")


def _fill_disk(conn: sqlite3.Connection) -> None:
    """A full disk for this connection: SQLite answers SQLITE_FULL once the file would grow."""
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages}")


def test_a_full_disk_is_the_error_every_sqlite_checkpoint_write_raises(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "full.db")
    store.set("kept", b"before")
    _fill_disk(store._file.connect())
    big = b"x" * 200_000
    writes = {
        "append": lambda: store.append("c", [big], big),
        "set": lambda: store.set("c", big),
        "set over a kept one": lambda: store.set("kept", big),
    }
    for name, write in writes.items():
        with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
            write()
        assert not store._file.connect().in_transaction, name
    assert store.get("kept") == b"before" and store.get("c") is None  # nothing half-written
    store._file.connect().execute("PRAGMA max_page_count = 1073741823")
    store.append("c", [b"r"], b"h")  # the connection is usable again once there is room
    assert store.read_log("c") == [b"r"] and store.get("c") == b"h"


def test_a_step_durable_run_on_a_full_disk_ends_with_an_error_naming_it(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "full.db")
    runner = Runner(build(str(tmp_path / "log")), checkpoint_store=store, durability="step")
    (pages,) = store._file.connect().execute("PRAGMA page_count").fetchone()
    store._file._pragmas = (f"PRAGMA max_page_count = {pages}",)  # the store writes from worker threads
    errors = [e.error for e in runner.query("x" * 300_000, checkpoint_id="c") if e.error is not None]
    assert errors and "database or disk is full" in str(errors[-1])
    assert "no transaction is active" not in str(errors[-1])
