"""DeepAgent (Eino's adk/prebuilt/deep): write_todos, the task tool over sub-agents (and the
general-purpose one), file tools over a backend, and sub-agent interrupts resumed through the
task call, in this process and in another."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from rillet import (
    ChatModelAgent,
    InMemoryCheckpointStore,
    Runner,
    ScriptedModel,
    approve,
    get_session_values,
    requires_approval,
    tool,
)
from rillet.prebuilt import (
    GENERAL_AGENT_NAME,
    TODOS_KEY,
    DeepAgent,
    DirectoryBackend,
    InMemoryBackend,
    Todo,
    file_tools,
)
from support.event_rows import calls, row

TODOS = {"todos": [{"content": "find the bug", "status": "in_progress"}, {"content": "fix it", "status": "pending"}]}


def test_todos_and_a_task_for_a_sub_agent() -> None:
    researcher = ChatModelAgent(
        "researcher", description="finds things out", model=ScriptedModel(["The bug is in parse()."])
    )
    model = ScriptedModel(
        [
            calls("write_todos", TODOS, "t1"),
            calls("task", {"subagent_type": "researcher", "description": "Where is the bug?"}, "k1"),
            "The bug is in parse(); next I fix it.",
        ]
    )
    seen: dict[str, Any] = {}
    agent = DeepAgent(model, sub_agents=[researcher], after_agent=lambda _: seen.update(get_session_values()))
    events = list(Runner(agent).query("Fix the bug."))
    assert [row(e) for e in events] == [
        ("deep_agent", "deep_agent", "assistant:write_todos", ""),
        (
            "deep_agent",
            "deep_agent",
            'tool:Updated todo list to [{"content": "find the bug", "status": "in_progress"}, '
            '{"content": "fix it", "status": "pending"}]',
            "",
        ),
        ("deep_agent", "deep_agent", "assistant:task", ""),
        ("deep_agent", "deep_agent", "tool:The bug is in parse().", ""),
        ("deep_agent", "deep_agent", "assistant:The bug is in parse(); next I fix it.", ""),
    ]
    assert seen[TODOS_KEY] == [Todo("find the bug", "in_progress"), Todo("fix it", "pending")]
    # the sub-agent got the description as its request, in a fresh conversation
    assert [(m.role, m.content) for m in researcher.model.calls[0].messages] == [  # type: ignore[attr-defined]
        ("user", "Where is the bug?")
    ]
    offered = [t.name for t in model.calls[0].tools]
    assert offered == ["write_todos", "task"]
    task = model.calls[0].tools[1]
    assert task.parameters["properties"]["subagent_type"]["enum"] == [GENERAL_AGENT_NAME, "researcher"]
    system = model.calls[0].messages[0]
    assert system.role == "system" and "`write_todos`" in system.content and "`task`" in system.content


def test_the_general_purpose_sub_agent_is_cloned_from_the_deep_agent() -> None:
    @tool
    def grep(pattern: str) -> str:
        """Searches the code.

        Args:
            pattern: what to find.
        """
        return f"src/parse.py: {pattern}"

    # one scripted model serves both, as the general-purpose agent uses the deep agent's model
    model = ScriptedModel(
        [
            calls("task", {"subagent_type": GENERAL_AGENT_NAME, "description": "grep for parse"}, "k1"),
            calls("grep", {"pattern": "def parse"}, "g1"),
            "Found it in src/parse.py.",
            "It is in src/parse.py.",
        ]
    )
    agent = DeepAgent(model, tools=[grep], instruction="Be exact.")
    events = list(Runner(agent).query("Where is parse defined?"))
    assert [row(e) for e in events] == [
        ("deep_agent", "deep_agent", "assistant:task", ""),
        ("deep_agent", "deep_agent", "tool:Found it in src/parse.py.", ""),
        ("deep_agent", "deep_agent", "assistant:It is in src/parse.py.", ""),
    ]
    general = agent.general_agent
    assert general is not None and general.model is model
    assert [t.info.name for t in general.tools] == ["grep", "write_todos"]  # no task tool inside
    sub_call = model.calls[1]
    assert sub_call.messages[0].content.startswith("Be exact.")
    assert [(m.role, m.content) for m in sub_call.messages[1:]] == [("user", "grep for parse")]


def test_without_todos_and_general_agent_there_are_no_builtin_tools() -> None:
    model = ScriptedModel(["hi"])
    list(Runner(DeepAgent(model, write_todos=False, general_agent=False)).query("hello"))
    assert model.calls[0].tools == ()


def test_bad_task_and_todo_arguments_go_back_to_the_model() -> None:
    model = ScriptedModel(
        [
            calls("task", {"subagent_type": "nobody", "description": "x"}, "k1"),
            calls("write_todos", {"todos": [{"content": "x", "status": "someday"}]}, "t1"),
            "ok",
        ]
    )
    events = list(Runner(DeepAgent(model)).query("go"))
    results = [e.message_output.get_message().content for e in events if e.message_output.role == "tool"]  # type: ignore[union-attr]
    assert "'nobody' is not one of general-purpose" in results[0]
    assert "todos[0]: needs content (a string) and status (one of pending, in_progress, completed)" in results[1]


def test_sub_agent_names_are_checked_when_the_agent_is_made() -> None:
    twin = ChatModelAgent(GENERAL_AGENT_NAME, description="clash", model=ScriptedModel(["x"]))
    with pytest.raises(ValueError, match="general_agent=False"):
        DeepAgent(ScriptedModel(["x"]), sub_agents=[twin])
    nameless = ChatModelAgent("quiet", model=ScriptedModel(["x"]))
    with pytest.raises(ValueError, match="needs a description"):
        DeepAgent(ScriptedModel(["x"]), sub_agents=[nameless])


# --- file tools -------------------------------------------------------------------------------


def test_file_tools_over_memory() -> None:
    backend = InMemoryBackend({"notes/a.txt": "alpha beta"})
    model = ScriptedModel(
        [
            calls("ls", {"path": "/"}, "1"),
            calls("edit_file", {"path": "notes/a.txt", "old_text": "beta", "new_text": "gamma"}, "2"),
            calls("write_file", {"path": "/notes/b.txt", "content": "new"}, "3"),
            calls("read_file", {"path": "notes/../notes/a.txt"}, "4"),
            calls("read_file", {"path": "../etc/passwd"}, "5"),
            "done",
        ]
    )
    events = list(Runner(DeepAgent(model, backend=backend, general_agent=False)).query("edit"))
    results = [e.message_output.get_message().content for e in events if e.message_output.role == "tool"]  # type: ignore[union-attr]
    assert results[:4] == [
        "notes/",
        "replaced 1 occurrence(s) in notes/a.txt",
        "wrote 3 characters to /notes/b.txt",
        "alpha gamma",
    ]
    assert "leaves the file area" in results[4]
    assert backend.files == {"notes/a.txt": "alpha gamma", "notes/b.txt": "new"}


def test_the_directory_backend_refuses_paths_outside_its_root(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("s3cret")
    (root / "link").symlink_to(tmp_path)
    backend = DirectoryBackend(root)
    backend.write("/src/main.py", "print(1)\n")
    assert (root / "src" / "main.py").read_text() == "print(1)\n"
    assert backend.ls("/") == ["link/", "src/"] and backend.read("src/main.py") == "print(1)\n"
    for path in ("../secret.txt", "link/secret.txt", "src/../../secret.txt", "/../secret.txt"):
        with pytest.raises(PermissionError, match="outside the agent's directory"):
            backend.read(path)
        with pytest.raises(PermissionError):
            backend.write(path, "x")
    assert (tmp_path / "secret.txt").read_text() == "s3cret"
    with pytest.raises(FileNotFoundError):  # an absolute path is taken under the root
        backend.read(str(tmp_path / "secret.txt"))
    with pytest.raises(ValueError, match="not a directory"):
        DirectoryBackend(tmp_path / "missing")


def test_edit_file_needs_a_unique_match() -> None:
    backend = InMemoryBackend({"a": "x x"})
    edit = {t.info.name: t for t in file_tools(backend)}["edit_file"]
    import asyncio

    with pytest.raises(ValueError, match="occurs 2 times"):
        asyncio.run(edit.invoke(json.dumps({"path": "a", "old_text": "x", "new_text": "y"})))
    asyncio.run(edit.invoke(json.dumps({"path": "a", "old_text": "x", "new_text": "y", "replace_all": True})))
    assert backend.files == {"a": "y y"}


# --- interrupts in a sub-agent -----------------------------------------------------------------


def deploy_team(deep_replies: list[Any], ops_replies: list[Any], log: Path) -> DeepAgent:
    @tool
    def deploy(env: str) -> str:
        """Deploys the build.

        Args:
            env: where to.
        """
        from rillet import get_session_value

        todos = get_session_value(TODOS_KEY)
        with log.open("a") as f:
            f.write(f"deploy {env} with {len(todos)} todos\n")
        return f"deployed to {env}"

    ops = ChatModelAgent(
        "ops", description="deploys builds", model=ScriptedModel(ops_replies), tools=[requires_approval(deploy)]
    )
    return DeepAgent(ScriptedModel(deep_replies), sub_agents=[ops])


FIRST_DEEP = [
    calls("write_todos", {"todos": [{"content": "deploy", "status": "in_progress"}]}, "t1"),
    calls("task", {"subagent_type": "ops", "description": "Deploy to prod."}, "k1"),
]
FIRST_OPS = [calls("deploy", {"env": "prod"}, "d1")]


def test_an_interrupt_in_a_sub_agent_resumes_through_the_task_call(tmp_path: Path) -> None:
    log = tmp_path / "log"
    agent = deploy_team([*FIRST_DEEP, "Shipped."], [*FIRST_OPS, "Deployed to prod."], log)
    runner = Runner(agent, checkpoint_store=InMemoryCheckpointStore())
    first = list(runner.query("Ship it.", checkpoint_id="cp"))
    assert [row(e) for e in first][2:] == [
        ("deep_agent", "deep_agent", "assistant:task", ""),
        ("deep_agent", "deep_agent", "", "interrupted"),
    ]
    ctx = first[-1].action.interrupted.interrupt_contexts[0]  # type: ignore[union-attr]
    assert ctx.address == ("agent:deep_agent", "tool:task:k1", "agent:ops", "tool:deploy:d1")
    assert not log.exists()
    rest = list(runner.resume("cp", targets={ctx.id: approve()}))
    assert [row(e) for e in rest] == [
        ("deep_agent", "deep_agent", "tool:Deployed to prod.", ""),
        ("deep_agent", "deep_agent", "assistant:Shipped.", ""),
    ]
    assert log.read_text() == "deploy prod with 1 todos\n"


_CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    sys.path[:0] = [sys.argv[4], str(Path(sys.argv[4]).parent)]  # this file's folder, and tests/ for support/
    from test_prebuilt_deep import FIRST_DEEP, FIRST_OPS, deploy_team
    from rillet import Runner, SqliteCheckpointStore, approve

    db, step, log = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    if step == "run":  # each process scripts only the model calls it makes
        agent = deploy_team(FIRST_DEEP, FIRST_OPS, log)
    else:
        agent = deploy_team(["Shipped."], ["Deployed to prod."], log)
    runner = Runner(agent, checkpoint_store=SqliteCheckpointStore(db))
    if step == "run":
        events = runner.query("Ship it.", checkpoint_id="job")
    else:
        events = runner.resume("job", targets={sys.argv[5]: approve()})
    for ev in events:
        mv = ev.message_output
        if ev.action and ev.action.interrupted:
            ctx = ev.action.interrupted.interrupt_contexts[0]
            print("interrupt", ctx.id, ";".join(ctx.address))
        elif ev.error is not None:
            print("error", ev.error)
        else:
            msg = mv.get_message()
            print(mv.role, msg.content or msg.tool_calls[0].function.name)
    """
)


@pytest.mark.slow
def test_a_sub_agent_interrupt_resumes_from_sqlite_in_a_second_process(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    db, log, here = str(tmp_path / "runs.db"), str(tmp_path / "log"), str(Path(__file__).parent)
    first = subprocess.run(
        [sys.executable, str(script), db, "run", log, here], capture_output=True, text=True, timeout=60
    )
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[:3] == [
        "assistant write_todos",
        'tool Updated todo list to [{"content": "deploy", "status": "in_progress"}]',
        "assistant task",
    ]
    kind, interrupt_id, address = lines[3].split(" ")
    assert kind == "interrupt" and address == "agent:deep_agent;tool:task:k1;agent:ops;tool:deploy:d1"
    assert not Path(log).exists()
    second = subprocess.run(
        [sys.executable, str(script), db, "resume", log, here, interrupt_id], capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == ["tool Deployed to prod.", "assistant Shipped."]
    # the tool ran once, in the second process, and saw the todo list restored from the checkpoint
    assert Path(log).read_text() == "deploy prod with 1 todos\n"
    again = subprocess.run(
        [sys.executable, str(script), db, "resume", log, here, interrupt_id], capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 1 and "CheckpointNotFoundError" in again.stderr  # a finished run is not resumed twice
    assert Path(log).read_text() == "deploy prod with 1 todos\n"


def test_read_file_returns_a_window_of_a_large_file() -> None:
    """A big file must not land whole in the model's context: read_file gives at most 2000
    lines (Eino's default) and says how to read on."""
    backend = InMemoryBackend({"big.log": "".join(f"line {i}\n" for i in range(5000)), "small": "a\nb"})
    read = {t.info.name: t for t in file_tools(backend)}["read_file"]
    import asyncio

    first = asyncio.run(read.invoke('{"path": "big.log"}'))
    assert first.startswith("line 0\n") and "line 1999\n" in first and "line 2000" not in first
    assert first.endswith("[3000 more lines: read on with offset=2000]")
    last = asyncio.run(read.invoke('{"path": "big.log", "offset": 4998, "limit": 10}'))
    assert last == "line 4998\nline 4999\n"
    assert asyncio.run(read.invoke('{"path": "small"}')) == "a\nb"


def test_a_toolset_in_tools_serves_the_deep_agent_and_its_general_sub_agent() -> None:
    from rillet import BaseTool, Runner, ScriptedModel, tool
    from rillet.prebuilt import DeepAgent

    @tool
    def lookup(q: str) -> str:
        """Looks it up."""
        return q

    class Shelf:
        async def tools(self) -> list[BaseTool]:
            return [lookup]

    model = ScriptedModel(["done"])
    agent = DeepAgent(model, tools=[Shelf()])
    list(Runner(agent).query("go"))
    assert "lookup" in [t.name for t in model.calls[0].tools]
    assert agent.general_agent is not None and len(agent.general_agent.toolsets) == 1
