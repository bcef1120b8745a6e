"""What every checkpoint store promises, as checks run against each store by
tests/checkpoint/test_store_conformance.py (and by any new store's tests: give `run_check` an opener).

An opener makes a store object over the store's data: called twice it gives two objects (two
connections, for a server) over the same checkpoints, the way two processes would see them.
`claim_lease` sets the claim's lease in seconds. Each check names the optional methods it
needs beyond get/set/delete/claim/release (`append`, `read_log`, `prune`, `ids`, `entries`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from rillet.checkpoint import CheckpointClaimedError, StoreAdapter

Opener = Callable[..., Any]


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[Opener], None]
    needs: tuple[str, ...]


CHECKS: list[Check] = []


def check(*needs: str) -> Callable[[Callable[[Opener], None]], Callable[[Opener], None]]:
    def register(fn: Callable[[Opener], None]) -> Callable[[Opener], None]:
        CHECKS.append(Check(fn.__name__, fn, needs))
        return fn

    return register


def tick() -> None:
    """Lets the clock move on, so write times differ (SQLite's are milliseconds)."""
    time.sleep(0.01)


BINARY = bytes(range(256)) * 4


# --- get, set, delete ------------------------------------------------------------------------


@check()
def get_of_an_unknown_id_is_none(open_store: Opener) -> None:
    assert open_store().get("nowhere") is None


@check()
def set_then_get_gives_the_same_bytes(open_store: Opener) -> None:
    store = open_store()
    for i, data in enumerate([b"", b"\x00", BINARY, b"x" * 2_000_000]):
        store.set(f"c{i}", data)
        assert store.get(f"c{i}") == data
    assert open_store().get("c2") == BINARY  # another connection sees it


@check()
def set_replaces_the_head(open_store: Opener) -> None:
    store = open_store()
    store.set("c", b"one")
    store.set("c", b"two")
    assert store.get("c") == b"two"


@check("ids", "entries")
def delete_removes_a_checkpoint_and_deleting_twice_is_fine(open_store: Opener) -> None:
    store = open_store()
    store.set("c", b"one")
    store.set("d", b"other")
    store.delete("c")
    store.delete("c")
    store.delete("never")
    assert (store.get("c"), store.get("d")) == (None, b"other")
    assert "c" not in store.ids()


@check("ids", "entries")
def ids_and_entries_list_the_most_recently_written_first(open_store: Opener) -> None:
    store = open_store()
    before = time.time()
    for name, data in [("a", b"1"), ("b", b"22"), ("c", b"333")]:
        store.set(name, data)
        tick()
    store.set("a", b"4444")  # rewritten: newest now
    assert store.ids() == ["a", "c", "b"]
    entries = store.entries()
    assert [(i, size) for i, size, _ in entries] == [("a", 4), ("c", 3), ("b", 2)]
    assert all(
        before - 5 <= at <= time.time() + 5 for _, _, at in entries
    )  # Unix time (server clocks may differ a little)


# --- claims ----------------------------------------------------------------------------------


@check()
def claim_returns_the_head_and_keeps_other_owners_out(open_store: Opener) -> None:
    store, other = open_store(), open_store()
    store.set("c", b"head")
    assert store.claim("c", "worker-1") == b"head"
    with pytest.raises(CheckpointClaimedError, match=r"checkpoint\[c\] is already being resumed .*nothing was run"):
        other.claim("c", "worker-2")
    assert store.claim("c", "worker-1") == b"head"  # its holder may claim again
    other.release("c", "worker-2")  # not the holder: no effect
    with pytest.raises(CheckpointClaimedError):
        other.claim("c", "worker-2")
    store.release("c", "worker-1")
    assert other.claim("c", "worker-2") == b"head"


@check()
def claim_of_an_unknown_id_is_none(open_store: Opener) -> None:
    store = open_store()
    assert store.claim("nowhere", "worker-1") is None
    store.release("nowhere", "worker-1")


@check()
def set_and_delete_clear_the_claim(open_store: Opener) -> None:
    store = open_store()
    store.set("c", b"one")
    store.claim("c", "worker-1")
    store.set("c", b"two")
    assert store.claim("c", "worker-2") == b"two"
    store.delete("c")
    store.set("c", b"three")
    assert store.claim("c", "worker-3") == b"three"


@check()
def a_claim_expires_after_its_lease(open_store: Opener) -> None:
    store = open_store()  # the default lease: the refused claim is made inside it however slow the machine
    store.set("c", b"head")
    store.claim("c", "alive")
    with pytest.raises(CheckpointClaimedError):
        store.claim("c", "worker-2")
    short = open_store(claim_lease=0.2)
    short.set("c", b"head")  # a write clears the claim
    short.claim("c", "died")
    time.sleep(0.5)  # the store's clock passes the lease
    assert short.claim("c", "worker-2") == b"head"


@check()
def of_many_simultaneous_claims_exactly_one_wins(open_store: Opener) -> None:
    stores = [open_store() for _ in range(6)]
    stores[0].set("c", b"head")
    start, won, refused = threading.Barrier(len(stores)), [], []

    def claim(i: int) -> None:
        start.wait(timeout=10)
        try:
            won.append(stores[i].claim("c", f"worker-{i}"))
        except CheckpointClaimedError:
            refused.append(i)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert (won, len(refused)) == ([b"head"], len(stores) - 1)


# --- through the adapter and the Runner -------------------------------------------------------


@check()
def the_adapter_calls_it_from_async_code(open_store: Opener) -> None:
    adapter = StoreAdapter(open_store())

    async def main() -> tuple[bytes | None, bytes | None]:
        await adapter.set("c", b"head")
        got = await adapter.claim("c", "worker-1")
        await adapter.release("c", "worker-1")
        await adapter.delete("c")
        return got, await adapter.get("c")

    assert asyncio.run(main()) == (b"head", None)


@check()
def a_run_interrupts_into_it_and_resumes_from_another_connection(open_store: Opener) -> None:
    import tempfile

    from rillet import Runner, approve

    from support.checkpoint_agents import build

    with tempfile.TemporaryDirectory() as where:
        log = f"{where}/log"
        store = open_store()
        events = list(Runner(build(log), checkpoint_store=store).query("pay", checkpoint_id="pay-1"))
        question = next(e for e in events if e.action and e.action.interrupted)
        assert question.action is not None and question.action.interrupted is not None
        target = question.action.interrupted.interrupt_contexts[0].id
        assert store.get("pay-1") is not None
        resumed = Runner(build(log, first=False), checkpoint_store=open_store())
        texts = [
            e.message_output.get_message().content
            for e in resumed.resume("pay-1", targets={target: approve()})
            if e.message_output
        ]
        assert texts[-1] == "Done."
        with open(log) as f:
            assert f.read() == "paid\n"
        assert store.get("pay-1") is None  # the finished resume deleted it


# --- the log: append, read_log, prune ----------------------------------------------------------


@check("append", "read_log", "prune", "ids", "entries")
def append_creates_the_checkpoint_and_read_log_returns_records_from_an_index(open_store: Opener) -> None:
    store = open_store()
    store.append("c", [b"r0", b""], b"h1")
    assert (store.get("c"), store.read_log("c")) == (b"h1", [b"r0", b""])
    store.append("c", [BINARY], b"h2")
    assert store.get("c") == b"h2"
    assert open_store().read_log("c", 1) == [b"", BINARY]
    assert store.read_log("c", 3) == []
    store.append("c", [], b"h3")  # a head alone
    assert (store.get("c"), store.read_log("c")) == (b"h3", [b"r0", b"", BINARY])
    assert store.read_log("nowhere") == []


@check("append", "read_log", "prune", "ids", "entries")
def set_empties_the_log_and_delete_removes_it(open_store: Opener) -> None:
    store = open_store()
    store.append("c", [b"r0", b"r1"], b"h1")
    store.set("c", b"fresh")
    assert (store.get("c"), store.read_log("c")) == (b"fresh", [])
    store.append("c", [b"r2"], b"h2")
    assert store.read_log("c") == [b"r2"]
    store.delete("c")
    assert (store.get("c"), store.read_log("c")) == (None, [])
    store.append("c", [b"r3"], b"h3")
    assert store.read_log("c") == [b"r3"]


@check("append", "read_log", "prune", "ids", "entries")
def append_keeps_the_claim(open_store: Opener) -> None:
    store = open_store()
    store.set("c", b"h0")
    store.claim("c", "worker-1")
    store.append("c", [b"r0"], b"h1")
    with pytest.raises(CheckpointClaimedError):
        open_store().claim("c", "worker-2")
    assert store.claim("c", "worker-1") == b"h1"


@check("append", "read_log", "prune", "ids", "entries")
def concurrent_appends_land_whole_and_in_order(open_store: Opener) -> None:
    stores = [open_store() for _ in range(4)]
    start, errors = threading.Barrier(len(stores)), []

    def writer(i: int) -> None:
        start.wait(timeout=10)
        try:
            for n in range(20):
                stores[i].append("c", [f"{i}:{n}:a".encode(), f"{i}:{n}:b".encode()], f"{i}:{n}".encode())
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    log = [r.decode() for r in stores[0].read_log("c")]
    assert len(log) == 4 * 20 * 2
    assert all(a[:-1] == b[:-1] and a.endswith("a") and b.endswith("b") for a, b in zip(log[::2], log[1::2]))
    for i in range(len(stores)):  # each writer's appends in the order it made them
        assert [r for r in log if r.startswith(f"{i}:")] == [f"{i}:{n}:{s}" for n in range(20) for s in "ab"]
    last = log[-1].rsplit(":", 1)[0]
    assert stores[0].get("c") == last.encode()  # the head of the last append


@check("append", "read_log", "prune", "ids", "entries")
def entries_count_the_head_and_the_log(open_store: Opener) -> None:
    store = open_store()
    store.append("c", [b"abc", b"de"], b"head")
    store.append("c", [b"f"], b"hd")
    assert [(i, size) for i, size, _ in store.entries()] == [("c", 2 + 3 + 2 + 1)]


@check("append", "read_log", "prune", "ids", "entries")
def prune_keeps_the_most_recently_written(open_store: Opener) -> None:
    store = open_store()
    for name in "abcde":
        store.append(name, [b"record"], b"head")
        tick()
    store.set("b", b"again")  # written last
    assert store.prune(keep_last=2) == 3
    assert store.ids() == ["b", "e"]
    assert (store.read_log("a"), store.get("a")) == ([], None)
    assert store.prune(keep_last=2) == 0
    assert store.prune(keep_last=0) == 2
    assert store.ids() == []


@check("append", "read_log", "prune", "ids", "entries")
def prune_deletes_what_was_last_written_too_long_ago(open_store: Opener) -> None:
    store = open_store()
    store.append("old", [b"r"], b"h")
    store.set("old-too", b"h")
    old = time.time()
    time.sleep(1.0)  # the clock moves on
    new = time.time()
    store.append("new", [b"r"], b"h")
    assert store.prune(older_than=3600) == 0
    # the cut half-way between the writes, however long they took: 0.5 s from either
    assert store.prune(older_than=time.time() - (old + new) / 2) == 2
    assert (store.ids(), store.read_log("old")) == (["new"], [])
    assert store.prune(older_than=3600, keep_last=1) == 0
