"""Runner(durability="step"): a run that stopped part-way (failed, dropped, or its process
killed: tests/runner/test_step_crash.py) is continued by resume(), which replays the model calls and
tool rounds it recorded instead of making them again; each record is written once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rillet import AgentEvent, ChatModelAgent, InMemoryCheckpointStore, Runner, ScriptedModel, SqliteCheckpointStore
from rillet.checkpoint import CheckpointCorruptError, CheckpointError
from rillet.checkpoint.journal import decode_records, encode_record, read_step_head, step_head
from rillet.checkpoint.payload import load
from rillet.tools.approval import approve
from support.checkpoint_agents import build
from support.plain_store import PlainStore
from support.step_agents import counting_agent, reused_id_agent


def lines(side: Path) -> list[str]:
    return side.read_text().splitlines()


def rows(events: list[AgentEvent]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for e in events:
        mv = e.message_output
        if mv is not None:
            m = mv.get_message()
            out.append((mv.role, m.content or ",".join(c.id for c in m.tool_calls)))
    return out


def errors(events: list[AgentEvent]) -> list[Any]:
    return [e.error for e in events if e.error is not None]


@pytest.fixture(params=["memory", "sqlite", "plain"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return InMemoryCheckpointStore()
    if request.param == "sqlite":
        return SqliteCheckpointStore(tmp_path / "c.db")
    return PlainStore()


@pytest.mark.parametrize("width", [1, 3])
def test_a_failed_run_resumes_replaying_what_it_recorded(store: Any, tmp_path: Path, width: int) -> None:
    whole = list(Runner(counting_agent(5, width=width)).query("go"))
    side = tmp_path / "side"
    runner = Runner(counting_agent(5, str(side), width=width, fail_at=3), checkpoint_store=store, durability="step")
    first = list(runner.query("go", checkpoint_id="run"))
    assert [str(e) for e in errors(first)] == ["the model failed at call 3"]
    resumed = list(
        Runner(counting_agent(5, str(side), width=width), checkpoint_store=store, durability="step").resume("run")
    )
    assert errors(resumed) == []
    if width == 1:
        assert rows(resumed) == rows(whole)  # the replayed events first, then the rest
    else:  # concurrent calls' events come in the order they finish
        assert sorted(rows(resumed)) == sorted(rows(whole))
    assert rows(resumed)[-1] == (
        "assistant",
        f"sum {sum(k * k * width + sum(range(width)) for k in range(5))} after 5 rounds",
    )
    seen = lines(side)
    assert seen.count("model 3") == 2  # the call that failed, then its retry
    assert all(seen.count(x) == 1 for x in seen if x != "model 3"), seen
    assert all(seen.count(f"tool {k}.{i}") == 1 for k in range(5) for i in range(width))
    assert store.get("run") is None  # finished: deleted


def test_a_dropped_run_resumes_without_rerunning_its_calls(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "c.db")
    side = tmp_path / "side"
    runner = Runner(counting_agent(6, str(side), hang_at=2), checkpoint_store=store, durability="step")
    with runner.query("go", checkpoint_id="run") as events:
        for n, _ in enumerate(events):
            if n == 4:  # model 0, tool 0, model 1, tool 1, model 2; tool 2 hangs: the consumer goes away
                break
    done = list(Runner(counting_agent(6, str(side)), checkpoint_store=store, durability="step").resume("run"))
    assert rows(done)[-1] == ("assistant", "sum 55 after 6 rounds")
    seen = lines(side)
    assert sorted(seen) == sorted([f"model {k}" for k in range(7)] + [f"tool {k}.0" for k in range(6)])


def test_the_log_holds_one_record_per_step_and_a_small_head(tmp_path: Path) -> None:
    store = InMemoryCheckpointStore()
    list(Runner(counting_agent(4, fail_at=4), checkpoint_store=store, durability="step").query("go", checkpoint_id="r"))
    head = store.get("r")
    assert head is not None and len(head) == 16 and read_step_head(head, "r") == (2, 9)
    kinds = [r[0] for r in decode_records(store.read_log("r"), "r")]
    assert kinds == ["start"] + ["model", "tools"] * 4


def test_interrupt_durability_writes_nothing_for_a_run_that_finishes() -> None:
    store = InMemoryCheckpointStore()
    assert Runner(counting_agent(2), checkpoint_store=store).durability == "interrupt"
    list(Runner(counting_agent(2), checkpoint_store=store).query("go", checkpoint_id="r"))
    assert len(store) == 0


def test_streaming_step_runs_replay_too(tmp_path: Path) -> None:
    store = InMemoryCheckpointStore()
    side = tmp_path / "side"
    failing = Runner(counting_agent(3, str(side), fail_at=2), checkpoint_store=store, durability="step", streaming=True)
    list(failing.query("go", checkpoint_id="r"))
    done = list(
        Runner(counting_agent(3, str(side)), checkpoint_store=store, durability="step", streaming=True).resume("r")
    )
    assert rows(done)[-1] == ("assistant", "sum 5 after 3 rounds")
    assert [x for x in lines(side) if x.startswith("tool")] == ["tool 0.0", "tool 1.0", "tool 2.0"]


def test_a_step_run_resumed_from_an_interrupt_records_the_resume(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "c.db")
    log = tmp_path / "paid"
    runner = Runner(build(str(log)), checkpoint_store=store, durability="step")
    events = list(runner.query("pay", checkpoint_id="p"))
    (info,) = [e.action.interrupted for e in events if e.action is not None and e.action.interrupted is not None]
    iid = info.interrupt_contexts[0].id
    assert read_step_head(store.get("p") or b"", "p") is None  # an interrupt saves the whole checkpoint

    def broken(*_: Any) -> Any:
        raise RuntimeError("the model is down")

    failing = build(str(log), first=False)
    failing.model = ScriptedModel(broken)
    out = list(Runner(failing, checkpoint_store=store, durability="step").resume("p", targets={iid: approve()}))
    assert "the model is down" in str(errors(out))
    assert [r[0] for r in decode_records(store.read_log("p"), "p")] == ["resume", "tools"]
    with pytest.raises(CheckpointError, match="without targets"):
        Runner(build(str(log), first=False), checkpoint_store=store, durability="step").resume(
            "p", targets={iid: approve()}
        )
    done = list(Runner(build(str(log), first=False), checkpoint_store=store, durability="step").resume("p"))
    assert errors(done) == [] and rows(done)[-1] == ("assistant", "Done.")
    assert log.read_text() == "paid\n"  # the approved call ran once, though the run was resumed twice
    assert store.get("p") is None


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="durability='always'.*interrupt.*step"):
        Runner(counting_agent(1), durability="always")  # type: ignore[arg-type]
    runner = Runner(counting_agent(1), checkpoint_store=InMemoryCheckpointStore(), durability="step")
    with pytest.raises(ValueError, match="session"):
        runner.query("go", checkpoint_id="r", session_id="s")


def test_bytes_written_grow_linearly_with_steps() -> None:
    """Every record is written once: the total written is the final checkpoint plus a 16-byte
    head per step (tests of the whole 200-turn run against LangGraph: benches/)."""
    written = []

    class Counting(InMemoryCheckpointStore):
        def append(self, checkpoint_id: str, records: list[bytes], head: bytes) -> None:
            written.append(sum(map(len, records)) + len(head))
            super().append(checkpoint_id, records, head)
            self.final = self.entries()[0][1]

        def set(self, checkpoint_id: str, data: bytes) -> None:
            written.append(len(data))
            super().set(checkpoint_id, data)

    store = Counting()
    turns = 60
    list(
        Runner(counting_agent(turns, fail_at=turns), checkpoint_store=store, durability="step").query(
            "go", checkpoint_id="r"
        )
    )
    steps = 2 * turns + 1
    assert sum(written) <= 1.1 * store.final + 16 * (steps + 1)


def test_a_damaged_step_record_is_refused_with_the_reason() -> None:
    store = InMemoryCheckpointStore()
    list(Runner(counting_agent(2, fail_at=1), checkpoint_store=store, durability="step").query("go", checkpoint_id="r"))
    head = store.get("r")
    assert head is not None
    runner = Runner(counting_agent(2), checkpoint_store=store, durability="step")
    with pytest.raises(CheckpointError, match="is the step record of a run that did not finish"):
        load(head, "r")  # what `rillet inspect` reads: it says what the bytes are
    store.set("r", head[:-1] + bytes([head[-1] ^ 1]))
    with pytest.raises(CheckpointCorruptError, match="damaged step head"):
        runner.resume("r")
    one = step_head(1)  # (set emptied the log: the garbage is its only record)
    store.append("r", [b"RCK\x01garbage"], one)
    with pytest.raises(CheckpointCorruptError, match="checksum"):
        runner.resume("r")
    assert store.get("r") == one  # refused before anything ran: the record stays, its claim released
    assert store.claim("r", "someone") == one


def test_a_transfer_and_a_sequence_replay_with_their_actions(tmp_path: Path) -> None:
    """The router's transfer (a return-directly tool whose event carries the action) comes back
    from the record with its action, so the run goes on in the same sub-agent; a sequence's
    agents keep their records apart."""
    from rillet import FunctionCall, Message, SequentialAgent, ToolCall, set_sub_agents

    side = tmp_path / "side"

    def build(fail: bool) -> Any:
        def route(messages: list[Message], tools: Any) -> Message | str:
            side.open("a").write("router\n")
            go = ToolCall(index=0, id="t", function=FunctionCall("transfer_to_agent", '{"agent_name": "worker"}'))
            return Message.assistant(tool_calls=[go])

        router = ChatModelAgent("router", description="routes", model=ScriptedModel(route))
        worker = counting_agent(2, str(side), fail_at=1 if fail else None, name="worker")
        tail = counting_agent(1, str(side), name="tail")
        return SequentialAgent("seq", description="both", sub_agents=[set_sub_agents(router, [worker]), tail])

    store = InMemoryCheckpointStore()
    first = list(Runner(build(True), checkpoint_store=store, durability="step").query("go", checkpoint_id="r"))
    assert "the model failed at call 1" in str(errors(first))
    done = list(Runner(build(False), checkpoint_store=store, durability="step").resume("r"))
    assert errors(done) == []
    transfers = [e.action.transfer_to_agent for e in done if e.action is not None and e.action.transfer_to_agent]
    assert [t.dest_agent_name for t in transfers if t is not None] == ["worker"]
    assert [e.agent_name for e in done if e.message_output is not None][-1] == "tail"
    seen = lines(side)
    assert seen.count("router") == 1 and seen.count("tool 0.0") == 2  # worker's and tail's first call
    assert seen.count("model 1") == 3  # worker's failed call, its retry, tail's answer


def test_a_step_run_resumes_against_the_limits_it_started_with_unless_given_others() -> None:
    """The start record keeps the run's limits: the replayed calls count again (the resume
    continues the same run), so a run that started with max_llm_calls=4 stops at its fifth
    call on resume too, and goes on when resumed with a higher limit."""
    from rillet import RunConfig, RunLimitExceededError

    store = InMemoryCheckpointStore()
    limited = RunConfig(max_llm_calls=4)
    runner = Runner(counting_agent(5, fail_at=3), checkpoint_store=store, durability="step")
    first = list(runner.query("go", checkpoint_id="r", run_config=limited))
    assert [str(e) for e in errors(first)] == ["the model failed at call 3"]
    again = list(Runner(counting_agent(5), checkpoint_store=store, durability="step").resume("r"))
    (err,) = errors(again)
    assert isinstance(err, RunLimitExceededError) and (err.maximum, err.count) == (4, 5), repr(err)
    raised = RunConfig(max_llm_calls=10)
    done = list(Runner(counting_agent(5), checkpoint_store=store, durability="step").resume("r", run_config=raised))
    assert errors(done) == [] and rows(done)[-1][1].endswith("after 5 rounds")


@pytest.mark.parametrize("record", [["model", "agent"], ["tools"], [["model"]], [7, 1, 2, 3], "model"])
def test_a_checksummed_record_of_the_wrong_shape_is_refused(record: Any) -> None:
    """A record whose checksum holds but whose fields are too few (or not a record at all) is
    a CheckpointCorruptError, not an IndexError during replay."""
    with pytest.raises(CheckpointCorruptError, match="record 0 of its log is not a step record"):
        decode_records([encode_record(record)], "r")


def test_a_log_missing_its_last_records_is_refused() -> None:
    """The head counts the records: a log that lost some (a store restored from an older
    backup, a list trimmed by hand) would replay less and make finished calls again."""
    store = InMemoryCheckpointStore()
    list(Runner(counting_agent(4, fail_at=3), checkpoint_store=store, durability="step").query("go", checkpoint_id="r"))
    head, log = store.get("r"), store.read_log("r")
    assert head is not None and read_step_head(head, "r") == (2, len(log)) == (2, 7)
    store.set("r", step_head(0))
    store.append("r", log[:-2], head)  # the head still says 7
    with pytest.raises(CheckpointCorruptError, match=r"step head counts 7 records but its log holds 5"):
        Runner(counting_agent(4), checkpoint_store=store, durability="step").resume("r")
    assert store.claim("r", "someone") == head  # refused before anything ran: its claim released


@pytest.mark.parametrize("sequential", [False, True])
def test_calls_that_returned_in_an_unfinished_round_are_not_made_again(sequential: bool) -> None:
    """A round of three calls whose third never returns (the run dropped, or its process
    killed): the two that returned are replayed on resume, not made again."""
    import asyncio

    from rillet import FunctionCall, Message, ToolCall, tool

    made: list[int] = []

    def build(hang: bool) -> ChatModelAgent:
        @tool
        async def ping(i: int) -> str:
            """Pings.

            Args:
                i: which.
            """
            if hang and i == 2:
                await asyncio.sleep(60)
            made.append(i)
            return f"pong {i}"

        def reply(messages: list[Message], tools: Any) -> Message | str:
            if any(m.role == "tool" for m in messages):
                return "done"
            calls: list[ToolCall | dict[str, Any]] = [
                ToolCall(index=i, id=f"c{i}", function=FunctionCall("ping", f'{{"i": {i}}}')) for i in range(3)
            ]
            return Message.assistant(tool_calls=calls)

        return ChatModelAgent(
            "pinger",
            description="pings",
            model=ScriptedModel(reply),
            tools=[ping],
            execute_tools_sequentially=sequential,
        )

    store = InMemoryCheckpointStore()
    with Runner(build(True), checkpoint_store=store, durability="step").query("go", checkpoint_id="r") as events:
        tools_seen = 0
        for e in events:
            tools_seen += e.message_output is not None and e.message_output.role == "tool"
            if tools_seen == 2:  # calls 0 and 1 returned; call 2 hangs: the consumer goes away
                break
    assert sorted(made) == [0, 1]
    done = list(Runner(build(False), checkpoint_store=store, durability="step").resume("r"))
    assert errors(done) == [] and rows(done)[-1] == ("assistant", "done")
    assert sorted(made) == [0, 1, 2]  # each call made once overall


@pytest.mark.parametrize("width", [1, 2])
def test_what_a_replayed_tool_stored_in_the_session_comes_back(width: int) -> None:
    """A replayed call does not run: the session values it stored come from the record, so the
    rest of the run sees them as the uninterrupted run did."""
    from rillet import FunctionCall, Message, ToolCall, tool
    from rillet.run.context import add_session_value, get_session_value

    logins: list[str] = []

    @tool
    def login(user: str) -> str:
        """Logs in.

        Args:
            user: who.
        """
        logins.append(user)
        add_session_value(f"token.{user}", {"token": f"tok-{user}"})
        return "logged in"

    @tool
    def fetch() -> str:
        """Fetches with the session's tokens."""
        return "fetched with " + ",".join(
            sorted(get_session_value(f"token.{u}")["token"] for u in ("ada", "bob")[:width])
        )

    def build(fail: bool) -> ChatModelAgent:
        failed: list[bool] = []

        def reply(messages: list[Message], tools: Any) -> Message | str:
            n = sum(m.role == "tool" for m in messages)
            if n == 0:
                users = ("ada", "bob")[:width]
                calls: list[ToolCall | dict[str, Any]] = [
                    ToolCall(index=i, id=f"l{i}", function=FunctionCall("login", f'{{"user": "{u}"}}'))
                    for i, u in enumerate(users)
                ]
                return Message.assistant(tool_calls=calls)
            if n == width:
                if fail and not failed:
                    failed.append(True)
                    raise RuntimeError("the model went away")
                return Message.assistant(tool_calls=[ToolCall(index=0, id="f", function=FunctionCall("fetch", "{}"))])
            return "answer: " + (messages[-1].content or "")

        return ChatModelAgent("a", description="logs in", model=ScriptedModel(reply), tools=[login, fetch])

    whole = [e for e in Runner(build(False)).query("go") if e.message_output is not None][-1]
    assert whole.message_output is not None
    want = whole.message_output.get_message().content
    store = InMemoryCheckpointStore()
    first = list(Runner(build(True), checkpoint_store=store, durability="step").query("go", checkpoint_id="s"))
    assert [str(e) for e in errors(first)] == ["the model went away"]
    logins.clear()
    done = list(Runner(build(False), checkpoint_store=store, durability="step").resume("s"))
    assert errors(done) == [] and rows(done)[-1] == ("assistant", want)
    assert logins == []  # replayed, not made again


def test_a_session_value_the_record_cannot_keep_is_named() -> None:
    import threading

    from rillet import FunctionCall, Message, ToolCall, tool
    from rillet.errors import EncodeError
    from rillet.run.context import add_session_value

    @tool
    def grab() -> str:
        """Keeps a lock in the session."""
        add_session_value("lock", threading.Lock())
        return "ok"

    def reply(messages: list[Message], tools: Any) -> Message | str:
        if any(m.role == "tool" for m in messages):
            return "done"
        return Message.assistant(tool_calls=[ToolCall(index=0, id="a", function=FunctionCall("grab", "{}"))])

    agent = ChatModelAgent("a", description="grabs", model=ScriptedModel(reply), tools=[grab])
    runner = Runner(agent, checkpoint_store=InMemoryCheckpointStore(), durability="step")
    (error,) = errors(list(runner.query("go", checkpoint_id="x")))
    assert isinstance(error, EncodeError)
    assert str(error).startswith("session value 'lock' cannot be kept in the step record")


def agent_tool_log(side: Path) -> tuple[InMemoryCheckpointStore, list[list[Any]]]:
    """A failed step run of an agent tool called in two rounds under the call id ``c1``
    (the outer model fails after both rounds): its store and its log's records."""
    store = InMemoryCheckpointStore()
    runner = Runner(
        reused_id_agent("agent-tool", str(side), fail="outer model 2"), checkpoint_store=store, durability="step"
    )
    assert [str(e) for e in errors(list(runner.query("go", checkpoint_id="r")))] == ["failed at outer model 2"]
    return store, decode_records(store.read_log("r"), "r")


def test_an_agent_tool_run_is_keyed_by_the_calls_position_not_its_id(tmp_path: Path) -> None:
    """The model sends the call id c1 in both rounds; the inner agent's records are kept under
    the round and position of the call (docs/checkpoint-format.md), so each round has its own."""
    _, records = agent_tool_log(tmp_path / "side")
    inner = "agent:outer#0/tool:inner@{}.0/agent:inner#0"
    assert [r[:3] for r in records[1:]] == [
        ["model", "agent:outer#0", 1],
        ["model", inner.format(1), 1],
        ["tools", "agent:outer#0", 1],
        ["model", "agent:outer#0", 2],
        ["model", inner.format(2), 1],
        ["tools", "agent:outer#0", 2],
    ]


def version_1(store: InMemoryCheckpointStore, records: list[list[Any]]) -> None:
    """Writes ``records`` under "r" as rillet wrote logs of version 1: an agent run by a tool
    call keyed by its address (the call id in it) and how many times it started there."""

    def old_key(key: str) -> str:
        head, sep, rest = key.partition("/tool:inner@")
        return f"agent:outer/tool:inner:c1/agent:inner#{int(rest.split('.')[0]) - 1}" if sep else key

    old = [[r[0], old_key(r[1]), *r[2:]] if r[0] in ("model", "tools") else r for r in records]
    store.set("r", step_head(0, 1))
    store.append("r", [encode_record(r) for r in old], step_head(len(old), 1))


def test_a_version_1_step_record_is_replayed_with_its_keys(tmp_path: Path) -> None:
    """A run recorded by an older rillet (version 1) resumes: its agent tool's recorded model
    call is replayed, not made again."""
    store, records = agent_tool_log(tmp_path / "first")
    version_1(store, records[:3])  # the start, the outer model's call of A, the inner's answer to A
    side = tmp_path / "side"
    done = list(Runner(reused_id_agent("agent-tool", str(side)), checkpoint_store=store, durability="step").resume("r"))
    assert errors(done) == [] and rows(done)[-1] == ("assistant", "answer to A | answer to B")
    assert lines(side) == ["outer model 1", "inner B model 0", "outer model 2"]  # A's calls replayed


def test_a_version_1_record_of_a_reused_agent_tool_call_id_is_refused(tmp_path: Path) -> None:
    """Version 1 cannot tell apart the inner runs of two calls sent under one id: rather than
    replay one call's answer for the other, resume refuses the record, saying why."""
    store, records = agent_tool_log(tmp_path / "first")
    version_1(store, records)
    side = tmp_path / "side"
    runner = Runner(reused_id_agent("agent-tool", str(side)), checkpoint_store=store, durability="step")
    with pytest.raises(CheckpointError, match=r"version 1 .* tool call agent:outer/tool:inner:c1 more than once"):
        runner.resume("r")
    assert not side.exists()  # nothing ran
    assert store.claim("r", "someone") is not None  # and its claim was released


def test_a_step_head_of_a_newer_version_is_refused() -> None:
    store = InMemoryCheckpointStore()
    store.set("r", step_head(0, 3))
    with pytest.raises(
        CheckpointCorruptError, match="version 3, written by a newer rillet; this one reads versions 1, 2"
    ):
        Runner(counting_agent(1), checkpoint_store=store, durability="step").resume("r")
