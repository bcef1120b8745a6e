"""The house rules of rillet's module graph (docs/architecture.md): imports go one way, from
rillet._core up, as the import-linter contract in pyproject.toml says; no module imports
itself back through others; a function-local import says why it is not at the top; and no
module reads another module's underscore names. And one of the test suite's: no test sleeps a
fixed time to wait for another thread."""

from __future__ import annotations

import ast
import operator
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Collection
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "rillet"
# The applications (the CLI and what only it runs) import on demand, so that `rillet --help`
# starts without loading the agent layers; the rule for commented local imports is the library's.
APPLICATIONS = ("cli", "examples", "benchmarks")


def _lint_imports(project: Path, python_path: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` run on ``project``'s pyproject.toml, finding rillet under ``python_path``."""
    pytest.importorskip("importlinter", reason="import-linter is in the `test` extra: pip install 'rillet[test]'")
    paths = [str(python_path), *sys.path]
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
            "--no-cache",
        ],
        cwd=project,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_layers_contract_holds() -> None:
    result = _lint_imports(ROOT, ROOT / "python")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken." in result.stdout


def test_the_layers_contract_fails_when_the_foundation_imports_a_higher_layer(tmp_path: Path) -> None:
    copy = tmp_path / "python" / "rillet"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    address = copy / "_core" / "address.py"
    address.write_text(address.read_text() + "\nfrom rillet.runner import Runner  # noqa: E402  (the bad import)\n")

    result = _lint_imports(tmp_path, tmp_path / "python")

    assert result.returncode != 0, result.stdout
    assert "rillet imports go one way, from the foundation up BROKEN" in result.stdout
    assert "rillet._core is not allowed to import rillet.runner" in result.stdout
    assert "- rillet._core.address -> rillet.runner" in result.stdout


def _layers() -> list[list[str]]:
    """The rows of the layers contract in pyproject.toml, top first: each a list of packages."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    return [[m.strip() for m in layer.replace(":", "|").split("|")] for layer in contract["layers"]]


def test_every_module_is_in_a_layer_of_the_contract() -> None:
    """A module the contract does not name is checked by nothing: it may import any layer."""
    layered = [m for row in _layers() for m in row]
    # the package root only re-exports what its modules define
    unlayered = [m for m in _modules() if m != "rillet" and not any(m == x or m.startswith(x + ".") for x in layered)]
    assert unlayered == []


def _top_level(package: Path) -> set[str]:
    """The packages and modules directly under ``package`` (the compiled core aside)."""
    return {
        f"rillet.{p.stem}"
        for p in package.iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").exists()
    }


def disagreements(package: Path, rows: list[list[str]]) -> list[str]:
    """Where the tree under ``package`` (python/rillet) and the contract's ``rows`` disagree: a
    package or module that is not in the contract, an entry of the contract that is not in the
    tree, or a docstring without a ``Layer: ... May import`` paragraph naming the row below."""
    entries = [m for row in rows for m in row]
    found = [f"{m}: not in the contract" for m in sorted(_top_level(package) - set(entries))]
    found += [f"{m}: in the contract, not in the tree" for m in entries if m not in _top_level(package)]
    for i, row in enumerate(rows):
        below = rows[i + 1] if i + 1 < len(rows) else ["rillet._native"]
        for module in (m for m in row if m in _top_level(package)):
            path = package.joinpath(*module.split(".")[1:])
            path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
            doc = " ".join((ast.get_docstring(ast.parse(path.read_text())) or "").split())
            may = doc[doc.find("Layer: ") :] if "Layer: " in doc else ""
            if "May import" not in may or any(b not in may for b in below):
                found.append(f"{module}: its docstring's 'Layer: ... May import' should name {', '.join(below)}")
    return found


def test_the_tree_the_contract_and_the_docs_agree() -> None:
    """The folders of python/rillet are the contract's rows: each package (or module) under it
    is one entry of the contract and each entry one of them; each has a docstring naming its
    layer (``Layer: ...``) and what it may import, the rows below its own, by naming the row
    just below; and docs/architecture.md's picture is the one scripts/architecture draws from
    the contract (run it after changing the contract)."""
    assert disagreements(PACKAGE, _layers()) == []
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "architecture"), "--check"], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stderr


def test_the_agreement_check_finds_a_missing_entry_and_a_silent_docstring(tmp_path: Path) -> None:
    package = tmp_path / "rillet"
    for name, doc in [
        ("high", "High.\n\nLayer: high. May import rillet.low and rillet.gone."),
        ("low", "Low, with no layer paragraph."),
        ("stray", "Layer: stray. May import rillet.low."),
    ]:
        (package / name).mkdir(parents=True)
        (package / name / "__init__.py").write_text(f'"""{doc}"""\n')
    (package / "errors.py").write_text('"""Layer: errors. May import rillet._native."""\n')

    found = disagreements(package, [["rillet.high"], ["rillet.low", "rillet.gone"], ["rillet.errors"]])

    assert found == [
        "rillet.stray: not in the contract",
        "rillet.gone: in the contract, not in the tree",
        "rillet.low: its docstring's 'Layer: ... May import' should name rillet.errors",
    ]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_guard(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` (types only) or ``if __name__ == "__main__":`` (run as a script,
    the module is ``__main__``, not itself): imports under these make no cycle."""
    if not isinstance(node, ast.If):
        return False
    test = ast.unparse(node.test)
    return "TYPE_CHECKING" in test or "__name__" in test


def _imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int, bool]]:
    """``(imported rillet module, line, inside a function)`` for each import ``module`` makes
    outside the guards of :func:`_is_guard`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def target(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_guard(child):
                continue
            local = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*up, base] if base else up)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in child.names]
            for name in names:
                hit = target(name) if name.startswith("rillet") else None
                if hit is not None and hit != module:
                    found.append((hit, child.lineno, in_function))
            if isinstance(child, (ast.Import, ast.ImportFrom)) and not names[:1]:
                continue
            visit(child, local)

    visit(ast.parse(path.read_text()), False)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {m: {t for t, _, _ in _imports(m, p, known)} for m, p in known.items()}


def test_no_import_cycles_among_rillets_modules() -> None:
    """Function-local imports count too: a cycle held apart by one is still a cycle. A package
    importing its own submodules (its ``__init__``) is not a cycle with them."""
    graph = _graph()
    for module in graph:
        graph[module] = {t for t in graph[module] if not module.startswith(t + ".")}
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = _graph()
    graph["rillet._core.scope"].add("rillet.run.context")  # context imports _core.scope: a cycle
    assert any({"rillet._core.scope", "rillet.run.context"} <= set(c) for c in _cycles(graph))


def test_function_local_imports_in_the_library_say_why() -> None:
    """Optional dependencies and costly imports may load on first use; the comment says which."""
    known = _modules()
    silent = []
    for module, path in known.items():
        if module.split(".")[1:2] and module.split(".")[1] in APPLICATIONS:
            continue
        lines = path.read_text().splitlines()
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)) and "#" not in lines[inner.lineno - 1]:
                    silent.append(f"{path.relative_to(ROOT)}:{inner.lineno}: {lines[inner.lineno - 1].strip()}")
    assert silent == []


# --- the test suite: no sleeping to synchronise ------------------------------------------------

TESTS = ROOT / "tests"
FOREVER = 10.0  # seconds: a sleep this long stands for "until cancelled" (or the test takes that long)
# The fixed sleeps the suite keeps: in each, time passing is the behaviour under test, and the
# outcome does not depend on how long the machine takes. Keyed by the file's path under tests/ and
# the qualified name of the function the sleep is in.
SLEEPS_KEPT = {
    (
        "integrations/test_a2a.py",
        "Endless.execute",
    ): "the server's pace between WORKING updates, not a wait for the test",
    ("support/store_conformance.py", "tick"): "the clock moves on, so that two writes have different times",
    ("support/store_conformance.py", "a_claim_expires_after_its_lease"): "the store's clock passes a 0.2 s lease",
    (
        "support/store_conformance.py",
        "prune_deletes_what_was_last_written_too_long_ago",
    ): "the clock moves on between writes",
    (
        "checkpoint/test_checkpoint_guarantees.py",
        "test_a_claim_ends_with_set_release_delete_or_its_lease",
    ): "past a 0.05 s lease",
    ("checkpoint/test_checkpoint_log.py", "test_prune_by_count_and_by_age"): "the clock moves on between writes",
    ("checkpoint/test_checkpoint_payload.py", "test_restored_lanes_join_in_lane_order_before_new_events"): (
        "two records get different monotonic stamps"
    ),
    ("tools/test_def_tool_hop.py", "test_a_def_tool_that_runs_slowly_is_no_longer_waited_for.nap"): (
        "a def tool slower than workers.SLOW_CALL: a busy machine only makes it slower"
    ),
    ("tools/test_def_tool_hop.py", "test_tools_made_again_from_one_function_share_its_slow_count.nap"): (
        "a def tool slower than workers.SLOW_CALL: a busy machine only makes it slower"
    ),
    ("tools/test_def_tool_hop.py", "test_a_slow_def_tool_among_quick_ones_leaves_them_waited_for.nap"): (
        "a def tool slower than workers.SLOW_CALL: a busy machine only makes it slower"
    ),
    ("run/test_faults.py", "shapes.ok"): "a sibling of a failing tool that answers after a moment: either order passes",
    (
        "live/test_live.py",
        "test_what_the_user_sends_while_an_ending_tool_runs_is_left_for_the_next_agent.SlowHandoff.invoke",
    ): "a handoff that takes a while: the user's message must wait for the next agent however long",
    ("run/test_run_batches.py", "Script._run"): "pauses that move where batches split: any split passes",
    (
        "data/test_streams_hardening.py",
        "test_an_item_whose_del_releases_the_gil_does_not_deadlock_two_threads.out:Probe.__del__",
    ): "a __del__ that lets go of the interpreter while an item is dropped: the hazard under test",
    ("run/test_faults.py", "SHUTDOWN_SCRIPT:tools.agen"): "a tool that streams slowly until its loop is closed",
    ("run/test_faults.py", "SHUTDOWN_SCRIPT:tools.sgen"): "a tool that streams slowly until its loop is closed",
    # a producer's pace, so that consumers interleave with it: any pace passes
    ("run/test_agent_runtime.py", "Endless._run"): "paces an endless producer",
    ("data/test_channel.py", "test_cancel_storm_delivers_every_item_exactly_once.main.produce"): "paces a producer",
    ("data/test_channel.py", "test_receiver_on_another_event_loop_than_the_sender.sender"): "paces a sender",
    ("integrations/test_redis_streams.py", "Endless._run"): "paces an endless publisher",
    ("data/test_streams.py", "test_thread_producer_to_asyncio_consumer.produce"): "paces a producer",
    ("data/test_streams.py", "test_copy_children_in_asyncio_and_threads_mixed.main.produce"): "paces a producer",
}
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _seconds(node: ast.expr) -> float | None:
    """The value of a constant number expression (``0.05``, ``2 * 0.01``); None for any other."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _seconds(node.left), _seconds(node.right)
        return None if left is None or right is None else _ARITHMETIC[type(node.op)](left, right)
    return None


class _Sleeps(ast.NodeVisitor):
    """Each ``time.sleep(c)`` and ``asyncio.sleep(c)`` (or a ``sleep`` imported from either)
    with a constant 0 < c < FOREVER: ``(line, qualified name of its function, c)``; also in
    the scripts that tests write into strings for a child process, named ``<where the string
    is>:<function in the script>`` (``EARLY_STOP:stopped``)."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str, float]] = []
        self._names: set[str] = set()
        self._scope: list[str] = []

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module in ("time", "asyncio"):
            self._names.update(a.asname or a.name for a in node.names if a.name == "sleep")

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self._scope.append(node.name)
        self.generic_visit(node)
        self._scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Assign(self, node: ast.Assign) -> None:  # SCRIPT = "..." names the script in it
        named = len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        self._scope += [node.targets[0].id] if named else []  # type: ignore[attr-defined]
        self.generic_visit(node)
        self._scope = self._scope[:-1] if named else self._scope

    def visit_Constant(self, node: ast.Constant) -> None:
        if not (isinstance(node.value, str) and "sleep(" in node.value):
            return
        try:
            script = ast.parse(textwrap.dedent(node.value))
        except SyntaxError:
            return  # prose, not a script
        inner = _Sleeps()
        inner.visit(script)
        here = ".".join(self._scope) or "<module>"
        self.found += [(node.lineno + line - 1, f"{here}:{where}", seconds) for line, where, seconds in inner.found]

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        sleeps = (isinstance(f, ast.Attribute) and f.attr == "sleep" and isinstance(f.value, ast.Name)) and (
            f.value.id in ("time", "asyncio")
        )
        if (sleeps or (isinstance(f, ast.Name) and f.id in self._names)) and node.args:
            seconds = _seconds(node.args[0])
            if seconds is not None and 0 < seconds < FOREVER:
                self.found.append((node.lineno, ".".join(self._scope) or "<module>", seconds))
        self.generic_visit(node)


def fixed_sleeps(source: str) -> list[tuple[int, str, float]]:
    sleeps = _Sleeps()
    sleeps.visit(ast.parse(source))
    return sleeps.found


def test_no_test_sleeps_a_fixed_time_to_wait_for_another_thread() -> None:
    """A test that sleeps a fixed time for another thread, task or process to get somewhere
    fails on a busy machine: it waits for an event, a condition or a queue instead, or polls
    a condition with tests/support/waiting.py (whose own short sleeps are the poll). Scripts written
    into strings for a child process are not parsed here."""
    found, kept = [], set()
    for path in sorted(TESTS.rglob("*.py")):
        name = path.relative_to(TESTS).as_posix()
        if name in ("support/waiting.py", Path(__file__).relative_to(TESTS).as_posix()):  # the poll; examples
            continue
        for line, where, seconds in fixed_sleeps(path.read_text()):
            if (name, where) in SLEEPS_KEPT:
                kept.add((name, where))
            else:
                found.append(f"tests/{name}:{line} ({where}): sleep({seconds:g})")
    assert not found, (
        "wait for an event or a condition instead (tests/support/waiting.py polls one up to a deadline); "
        "if the time passing is itself what the test exercises, and its outcome cannot depend on "
        "the machine's speed, add it to SLEEPS_KEPT with why:\n" + "\n".join(found)
    )
    assert sorted(set(SLEEPS_KEPT) - kept) == [], "SLEEPS_KEPT names sleeps that are gone: remove them"


def test_the_sleep_check_finds_fixed_sleeps_and_only_those() -> None:
    source = """
import asyncio, time
from time import sleep as nap

def waits():
    time.sleep(0.2)

class Agent:
    async def _run(self):
        await asyncio.sleep(2 * 0.01)
        nap(1)
        time.sleep(0)           # a yield
        await asyncio.sleep(60)  # until cancelled
        time.sleep(delay)        # not a constant
        other.sleep(0.1)         # not time's or asyncio's

CHILD = '''
import time
time.sleep(0.5)
'''
NOTE = "time.sleep(0.5) would be wrong here"
"""
    assert fixed_sleeps(source) == [
        (6, "waits", 0.2),
        (10, "Agent._run", 0.02),
        (11, "Agent._run", 1.0),
        (19, "CHILD:<module>", 0.5),
    ]  # NOTE is prose: it does not parse


# --- the ReAct steps get their agent's dependencies as one record -----------------------------

STEP_MODULES = sorted(p for p in (PACKAGE / "chatmodel").glob("*.py") if p.name not in ("agent.py", "__init__.py"))


def agent_imports(source: str) -> list[tuple[int, str]]:
    """Each import of ChatModelAgent or of its module, under ``TYPE_CHECKING`` and in
    functions too: ``(line, the import)``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        if any(n.endswith(".ChatModelAgent") or n.startswith("rillet.chatmodel.agent") for n in names):
            found.append((node.lineno, ast.unparse(node)))
    return found


def _is_private(name: object) -> bool:
    return isinstance(name, str) and name.startswith("_") and not name.startswith("__")


def private_reads(source: str, own_names: Collection[str] = ()) -> list[tuple[int, str]]:
    """Each use of another object's underscore attribute (``agent._by_name``,
    ``getattr(sub, "_finish_task")``) but those named in ``own_names``: ``(line, the
    expression)``. ``self``, ``cls`` and ``super()`` are the module's own objects."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            v = node.value
            own = (isinstance(v, ast.Name) and v.id in ("self", "cls")) or ast.unparse(v) == "super()"
            if _is_private(node.attr) and not own and node.attr not in own_names:
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTRIBUTE_CALLS:
            key = node.args[1] if len(node.args) > 1 else None
            if isinstance(key, ast.Constant) and _is_private(key.value) and key.value not in own_names:
                found.append((node.lineno, ast.unparse(node)))
    return found


_ATTRIBUTE_CALLS = ("getattr", "setattr", "hasattr", "delattr")


def test_the_react_steps_never_import_chat_model_agent() -> None:
    """The steps, the tool call, the live run and the rest of rillet.chatmodel get what they
    need from the agent as one record built when its run starts (rillet.chatmodel.deps), not
    the agent: they neither import ChatModelAgent (not even for types) nor use another
    object's underscore attributes, so the agent's fields can change without the steps."""
    assert STEP_MODULES, "rillet/chatmodel has no step modules: the check checks nothing"
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in STEP_MODULES
        for check in (agent_imports, private_reads)
        for line, what in check(path.read_text())
    ]
    assert found == [], "take it from the run's ReactDeps (rillet/chatmodel/deps.py) instead"


def test_the_step_checks_find_an_agent_import_and_a_private_read() -> None:
    source = """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from rillet.chatmodel.agent import ChatModelAgent
def step(agent, self):
    from rillet import ChatModelAgent
    return agent._hooks, getattr(agent, "_finish_task", None), self._own, super()._own, agent.__class__
"""
    assert agent_imports(source) == [
        (4, "from rillet.chatmodel.agent import ChatModelAgent"),
        (6, "from rillet import ChatModelAgent"),
    ]
    assert private_reads(source) == [(7, "agent._hooks"), (7, "getattr(agent, '_finish_task', None)")]


# --- no module reads another module's underscore names ---------------------------------------

# The underscore names of other libraries (and of rillet's compiled core) that a module uses on
# purpose, by module (relative to python/rillet): which, and why. Anything else a module needs
# from another is a named internal interface there (no underscore, not in __all__).
FOREIGN_PRIVATES: dict[str, tuple[tuple[str, ...], str]] = {
    "_core/loop.py": (("_log_destroy_pending",), "asyncio.Task's log flag, cleared as asyncio.gather does"),
    "_core/workers.py": (("_ready",), "asyncio's ready queue (getattr, other loops fall back): no loop round trip"),
    "checkpoint/remote.py": (("_replace",), "a namedtuple's public method (urllib's SplitResult)"),
    "errors.py": (("_init_errors",), "the compiled core's one-time hook that takes errors.py's classes"),
    "data/schema.py": (
        ("_poll", "_subscribe", "_try_send", "_subscribe_space", "_drain_into"),
        "the compiled streams' non-blocking hooks, kept out of users' sight, that this async facade is built on",
    ),
    "redis/sink.py": (("_poll",), "the compiled reader's non-blocking poll, to batch the chunks already there"),
    "mcp/connection.py": (("_session", "_dispatcher", "_closed"), "the mcp package has no public closed flag"),
    "mcp/transports.py": (
        ("_get_executable_command", "_create_platform_compatible_process", "_drain_stdout", "_stop_server_process"),
        "mcp's stdio client pieces, reused for a transport that outlives one task",
    ),
    "temporal/client.py": (("_client",), "temporalio keeps a handle's client private; following runs needs it"),
}


def own_names(tree: ast.AST) -> set[str]:
    """The attribute names the module's own classes define: methods, class attributes and
    fields, ``__slots__`` entries and ``self._x = ...`` assignments."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for st in node.body:
                if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    out.add(st.name)
                elif isinstance(st, (ast.Assign, ast.AnnAssign)):
                    for t in st.targets if isinstance(st, ast.Assign) else [st.target]:
                        out.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
                        if isinstance(t, ast.Name) and t.id == "__slots__" and st.value is not None:
                            out.update(c.value for c in ast.walk(st.value) if isinstance(c, ast.Constant))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                out.add(node.attr)
    return out


def private_imports(source: str, modules: Collection[str]) -> list[tuple[int, str]]:
    """Each ``from a import _b`` where ``a._b`` is not a module of ``modules`` (an underscore
    module, such as rillet._core or rillet._native, is the package's own, not another
    module's private name): ``(line, the import)``."""
    return [
        (node.lineno, f"from {node.module} import {a.name}")
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
        for a in node.names
        if _is_private(a.name) and f"{node.module}.{a.name}" not in modules
    ]


def reach_ins(package: Path) -> list[str]:
    """Every read or import of another module's underscore name in the modules under
    ``package`` (python/rillet), but those FOREIGN_PRIVATES keeps: ``path:line: what``."""
    files = {p: ".".join(p.relative_to(package.parent).with_suffix("").parts) for p in package.rglob("*.py")}
    modules = {m.removesuffix(".__init__") for m in files.values()}
    modules |= {".".join(p.relative_to(package.parent).with_suffix("").parts) for p in package.rglob("*.pyi")}
    found = []
    for path in sorted(files):
        where = path.relative_to(package).as_posix()
        kept = FOREIGN_PRIVATES.get(where, ((), ""))[0]
        source = path.read_text()
        hits = private_reads(source, own_names(ast.parse(source)) | set(kept)) + private_imports(source, modules)
        found += [f"{where}:{line}: {what}" for line, what in sorted(hits)]
    return found


def test_no_module_reads_another_modules_underscore_names() -> None:
    """What one module offers another is a named internal interface (no underscore, and not in
    ``__all__`` unless users may use it too), so that a module's private names can change
    without breaking another. A module's own names (its classes' attributes, read through any
    variable) and dunder names are its own to use."""
    found = reach_ins(PACKAGE)
    assert found == [], "name it in the module that owns it; for another library's, FOREIGN_PRIVATES with why"


def test_foreign_privates_are_all_still_used() -> None:
    used = {
        where: {what for line, what in private_reads((PACKAGE / where).read_text())}
        for where in FOREIGN_PRIVATES
        if (PACKAGE / where).exists()
    }
    stale = [
        f"{where}: {name}"
        for where, (names, _) in FOREIGN_PRIVATES.items()
        for name in names
        if not any(name in what for what in used.get(where, ()))
    ]
    assert stale == [], "FOREIGN_PRIVATES keeps reads that are gone: remove them"


def test_the_reach_in_check_finds_reads_and_imports_of_another_modules_underscore_names(tmp_path: Path) -> None:
    package = tmp_path / "rillet"
    (package / "_core").mkdir(parents=True)
    (package / "__init__.py").write_text("from rillet import _core, _native\n")
    (package / "_core" / "__init__.py").write_text("")
    (package / "_native.pyi").write_text("")
    (package / "owner.py").write_text("def _helper(): ...\nclass Action:\n    _signal = None\n")
    (package / "user.py").write_text(
        """from rillet.owner import _helper, Action
class Node:
    __slots__ = ("_up",)
    def __init__(self):
        self._mine = 1
def f(action, node, other):
    return action._signal, node._up, other._mine, getattr(action, "_signal"), action.__class__
"""
    )
    assert reach_ins(package) == [
        "user.py:1: from rillet.owner import _helper",
        "user.py:7: action._signal",
        "user.py:7: getattr(action, '_signal')",
    ]
