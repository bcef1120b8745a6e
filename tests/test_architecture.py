"""The house rules of rillet's module graph (docs/architecture.md): imports go one way, from
rillet._core up, as the import-linter contract in pyproject.toml says; no module imports
itself back through others; and a function-local import says why it is not at the top."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "rillet"
# The applications (the CLI and what only it runs) import on demand, so that `rillet --help`
# starts without loading the agent layers; the rule for commented local imports is the library's.
APPLICATIONS = ("cli", "demo", "examples", "benchmarks")


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
    assert "Contracts: 1 kept, 0 broken." in result.stdout


def test_the_layers_contract_fails_when_the_foundation_imports_a_higher_layer(tmp_path: Path) -> None:
    copy = tmp_path / "python" / "rillet"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    address = copy / "_core" / "address.py"
    address.write_text(address.read_text() + "\nfrom rillet.runner import Runner  # noqa: E402  (the bad import)\n")

    result = _lint_imports(tmp_path, tmp_path / "python")

    assert result.returncode != 0, result.stdout
    assert "Contracts: 0 kept, 1 broken." in result.stdout
    assert "rillet._core is not allowed to import rillet.runner" in result.stdout
    assert "- rillet._core.address -> rillet.runner" in result.stdout


def test_every_module_is_in_a_layer_of_the_contract() -> None:
    """A module the contract does not name is checked by nothing: it may import any layer."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    layered = [m.strip() for layer in contract["layers"] for m in layer.replace(":", "|").split("|")]
    # the package roots only re-export what their modules define
    unlayered = [
        m
        for m in _modules()
        if m not in ("rillet", "rillet.checkpoint") and not any(m == x or m.startswith(x + ".") for x in layered)
    ]
    assert unlayered == []


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
    graph["rillet._core.scope"].add("rillet.context")  # context imports _core.scope: a cycle
    assert any({"rillet._core.scope", "rillet.context"} <= set(c) for c in _cycles(graph))


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
