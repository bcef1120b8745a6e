"""Every ```python block of the docs runs as written, and every Python block of the README and
the docs type-checks with ``mypy --strict``.

A block is a script: it runs alone, in a fresh interpreter, in a fresh directory, as
``python block.py`` would run it (so a top-level ``await`` is the SyntaxError it is there),
unless its first line says otherwise (tests/support/doc_blocks.py): ``# Continues the block
above.`` makes it go on from the block before it (it runs after the blocks it continues, in
the same interpreter), and ``# Not run in the docs test: <reason>`` leaves out a block that
cannot run offline. A block followed by an ```output block must print exactly that. README.md's
examples each stand alone too: tests/contract/test_readme.py runs them, and
docs/multi-agent.md's snippets: tests/apps/test_examples.py. Every OpenAI-compatible endpoint
a page names on its own (``OPENAI_BASE_URL``) is the loopback server of
tests/support/openai_server.py. The page's install lines name every package its blocks import.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.doc_blocks import README, MarkerError, documents, python_blocks, scripts
from support.openai_server import FakeOpenAIServer, Reply, transcript

# Pages whose blocks are run elsewhere.
STANDALONE = {README.name, "multi-agent.md"}
RUN = [p for p in documents() if p.name not in STANDALONE]

STREAM = transcript("openai_text")
COMPLETION = {
    "id": "chatcmpl-doc",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": '{"city": "Lisbon", "high_c": 24.0}'},
        }
    ],
}

# Runs one script's blocks in one namespace, as one file would; a marker line before each
# block's output. Each block is compiled on its own (no top-level await, as in a file), with
# the page's line numbers, so a traceback names the page and shows its lines.
DRIVER = """
import json, sys
script = json.load(sys.stdin)
namespace = {"__name__": "__main__", "__builtins__": __builtins__}
for line, code in script["blocks"]:
    print(f"\\x1eblock {line}", flush=True)
    exec(compile("\\n" * line + code, script["path"], "exec"), namespace)
    sys.stdout.flush()
"""
MARK = re.compile(r"^\x1eblock (\d+)\n", re.M)


def replies_for(page: str) -> list[Reply]:
    """What the loopback server answers, in order, to the requests a page's blocks make."""
    if page == "models.md":  # the streamed agent run, then generate(response_format=Forecast)
        return [Reply.sse("openai_text"), Reply.json(COMPLETION)]
    if page == "structured-output.md":  # an agent with output_type=Forecast
        return [Reply.json(COMPLETION)]
    return []


def check_page(name: str, path: Path, text: str, cwd: Path, env: dict[str, str]) -> list[str]:
    """Runs every script of a page (a block, and the blocks that continue it), each in a fresh
    interpreter in a fresh directory under ``cwd``; returns what went wrong, one message per
    failing script or wrong output, each naming the page and the block's line."""
    failures = []
    for script in scripts(python_blocks(text)):
        if any(b.not_run is not None for b in script):
            continue
        first = script[0].line
        workdir = cwd / f"block-{first}"
        workdir.mkdir()
        payload = {"path": str(path), "blocks": [(b.line, b.code) for b in script]}
        try:
            proc = subprocess.run(
                [sys.executable, "-c", DRIVER],
                input=json.dumps(payload),
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )  # run() kills the child on a timeout
        except subprocess.TimeoutExpired:
            failures.append(f"{name}:{first}: the script from this block did not end in 120 s")
            continue
        parts = MARK.split(proc.stdout)[1:]
        printed = {int(line): out for line, out in zip(parts[::2], parts[1::2])}
        if proc.returncode != 0:
            line = max(printed, default=first)
            chain = f" (run after the blocks it continues, from line {first})" if line != first else ""
            failures.append(f"{name}:{line}: the block does not run as written{chain}:\n{proc.stderr}")
            continue
        for block in script:
            if block.expected is not None and printed.get(block.line) != block.expected:
                failures.append(
                    f"{name}:{block.line}: the block printed something other than its ```output block shows:\n"
                    f"--- shown\n{block.expected}--- printed\n{printed.get(block.line)}"
                )
    return failures


def test_every_page_with_python_blocks_is_run_or_covered_elsewhere() -> None:
    names = {p.name for p in documents()}
    assert {"quickstart.md", "interrupts.md", "testing.md", "models.md"} <= {p.name for p in RUN}
    assert names == {p.name for p in RUN} | STANDALONE


def test_few_blocks_are_left_unrun_and_each_says_why() -> None:
    not_run = {
        f"{p.name}:{b.line}": b.not_run
        for p in documents()
        for b in python_blocks(p.read_text(encoding="utf-8"))
        if b.not_run
    }
    assert len(not_run) <= 6, f"more blocks than before are not run: {not_run}"


@pytest.mark.parametrize("path", RUN, ids=[p.name for p in RUN])
def test_doc_blocks_run_as_written(
    path: Path, server: FakeOpenAIServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    server.script(*replies_for(path.name))
    text = path.read_text(encoding="utf-8")
    env = {**os.environ, "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-doc-test"}
    # a page naming REDIS_URL or DATABASE_URL runs against the session's servers (tests/support/servers.py)
    if "REDIS_URL" in text:
        env["REDIS_URL"] = request.getfixturevalue("redis_url")
    if "DATABASE_URL" in text:
        env["DATABASE_URL"] = request.getfixturevalue("postgres_url")
    failures = check_page(f"docs/{path.name}", path, text, tmp_path, env)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
    if path.name == "models.md":  # the blocks reached the server, not a real endpoint
        sent = server.bodies()
        assert sent[0]["stream"] is True and sent[0]["tools"][0]["function"]["name"] == "get_weather"
        assert sent[1]["response_format"]["json_schema"]["name"] == "Forecast"


SAMPLE = """# A sample page

```python
x = 1
print(x)
```

```output
1
```

The block below goes on from the one above:

```python
# Continues the block above.
print(x + 1)
```

```output
2
```

```python
print(x)
```

```python
async def main() -> None:
    print("ok")
```

```python
# Not run in the docs test: it needs a real server.
raise SystemExit(1)
```
"""


def test_the_checker_names_the_page_line_and_error_of_a_block_that_does_not_run_alone(tmp_path: Path) -> None:
    sample = tmp_path / "sample.md"
    sample.write_text(SAMPLE, encoding="utf-8")
    (tmp_path / "run").mkdir()
    failures = check_page("sample.md", sample, SAMPLE, tmp_path / "run", dict(os.environ))
    assert len(failures) == 1, failures
    assert failures[0].startswith("sample.md:23: the block does not run as written:")
    assert "NameError: name 'x' is not defined" in failures[0]
    assert 'File "' + str(sample) + '", line 24' in failures[0]  # the page's own line


def test_the_checker_refuses_top_level_await_and_wrong_output(tmp_path: Path) -> None:
    text = "```python\nimport asyncio\nawait asyncio.sleep(0)\n```\n\n```python\nprint(1)\n```\n\n```output\n2\n```\n"
    failures = check_page("sample.md", tmp_path / "sample.md", text, tmp_path, dict(os.environ))
    assert [f.split(":", 2)[1] for f in failures] == ["1", "6"], failures
    assert "SyntaxError: 'await' outside function" in failures[0]
    assert "printed something other than its ```output block shows" in failures[1]


def test_the_markers_are_read_strictly() -> None:
    found = python_blocks(SAMPLE)
    assert [(b.line, b.continues, b.not_run) for b in found] == [
        (3, False, None),
        (14, True, None),
        (23, False, None),
        (27, False, None),
        (32, False, "it needs a real server."),
    ]
    assert [[b.line for b in s] for s in scripts(found)] == [[3, 14], [23], [27], [32]]
    for bad in ("# Not run in the docs test", "# not run: offline", "# continues the example"):
        with pytest.raises(MarkerError):
            python_blocks(f"```python\npass\n```\n\n```python\n{bad}\npass\n```\n")
    with pytest.raises(MarkerError, match="continues no block"):
        python_blocks("```python\n# Continues the block above.\npass\n```\n")


# --- install lines ----------------------------------------------------------------------------

# What an import needs installed beyond `pip install rillet`, as a page's install line names it:
# modules (and names imported from rillet) of an extra, and packages of their own. The core's
# own dependencies (pyproject.toml) need nothing; any other import must be listed here.
CORE = {"rillet", "pydantic", "httpx", "rich", "click"}
NEEDS = {
    "rillet.a2a": "rillet[a2a]",
    "a2a": "rillet[a2a]",
    "rillet.mcp": "rillet[mcp]",
    "mcp": "rillet[mcp]",
    "rillet.tracing": "rillet[otel]",
    "opentelemetry": "rillet[otel]",
    "opentelemetry.sdk": "opentelemetry-sdk",
    "rillet.web": "rillet[web]",
    "starlette": "rillet[web]",
    "uvicorn": "rillet[web]",
    "rillet.redis": "rillet[redis]",
    "redis": "rillet[redis]",
    "psycopg": "rillet[postgres]",
    "rillet.temporal": "rillet[temporal]",
    "temporalio": "rillet[temporal]",
    "websockets": "rillet[realtime]",
    "openai": "openai",
    "anthropic": "anthropic",
    # names of core modules whose use needs an extra
    "RedisCheckpointStore": "rillet[redis]",
    "PostgresCheckpointStore": "rillet[postgres]",
    "OpenAIRealtimeModel": "rillet[realtime]",
}
EXTRAS = {"otel", "web", "mcp", "a2a", "realtime", "redis", "postgres", "temporal"}
PIP_INSTALL = re.compile(r"pip install ([^`\n#]*)")


def installed_by(text: str) -> set[str]:
    """What the page's ``pip install`` lines (in code blocks or inline) install: ``rillet[x]``
    for each extra, and other packages by name."""
    names: set[str] = set()
    for m in PIP_INSTALL.finditer(text):
        for token in m.group(1).split():
            token = token.strip("'\"").lower()
            if token.startswith("-"):
                continue
            name, _, extras = token.partition("[")
            name = re.split(r"[<>=!~]", name)[0]
            if name == "rillet":
                chosen = {e.strip() for e in extras.rstrip("]").split(",") if e.strip()}
                names |= {f"rillet[{e}]" for e in (EXTRAS if "all" in chosen else chosen)}
            else:
                names.add(name)
    return names


def needed_by(code: str) -> set[str]:
    """What a block's imports need installed beyond rillet's core (see NEEDS); an import of
    something neither the core, the standard library nor NEEDS knows is a KeyError."""
    needed: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            imported = [(a.name, "") for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported = [(node.module, a.name) for a in node.names]
        else:
            continue
        for module, name in imported:
            parts = module.split(".")
            prefixes = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
            found = [NEEDS[p] for p in [name, *prefixes] if p in NEEDS]
            if found:
                needed.add(found[0])
            elif parts[0] not in CORE and parts[0] not in sys.stdlib_module_names:
                raise KeyError(f"import {module}: which package or extra does it need? (add it to NEEDS)")
    return needed


@pytest.mark.parametrize("path", documents(), ids=[p.name for p in documents()])
def test_a_pages_install_lines_name_what_its_blocks_import(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    needed = {n for b in python_blocks(text) for n in needed_by(b.code)}
    missing = needed - installed_by(text)
    assert not missing, f"{path.name} imports what its `pip install` lines leave out: {sorted(missing)}"


def test_the_install_check_reads_extras_and_packages() -> None:
    text = "```sh\npip install 'rillet[otel,web]'  # more\n```\nor `pip install rillet[all] openai>=1`"
    assert installed_by(text) == {f"rillet[{e}]" for e in EXTRAS} | {"openai"}
    code = "import os\nfrom opentelemetry.sdk.trace import TracerProvider\nfrom rillet.tracing import X\n"
    assert needed_by(code) == {"opentelemetry-sdk", "rillet[otel]"}
    assert needed_by("from rillet.checkpoint import RedisCheckpointStore\nimport pydantic") == {"rillet[redis]"}
    with pytest.raises(KeyError, match="numpy"):
        needed_by("import numpy")


# --- mypy --strict over every block ----------------------------------------------------------


def modules() -> dict[str, tuple[str, list[tuple[str, int]]]]:
    """{module file name: (source, where each source line comes from as (page, line))}: one
    module per script, as the docs test runs them (a block, then the blocks that continue it)."""
    out: dict[str, tuple[str, list[tuple[str, int]]]] = {}
    for path in documents():
        rel = path.relative_to(README.parent).as_posix()
        stem = re.sub(r"\W", "_", path.stem)
        for script in scripts(python_blocks(path.read_text(encoding="utf-8"))):
            source = "".join(b.code for b in script)
            origin = [(rel, b.line + i + 1) for b in script for i in range(b.code.count("\n"))]
            out[f"doc_{stem}_{script[0].line}.py"] = (source, origin)
    return out


def test_doc_blocks_type_check_strictly(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("mypy", reason="mypy is not installed (the installed-wheel run leaves it out)")
    found = modules()
    for name, (source, _) in found.items():
        (tmp_path / name).write_text(source, encoding="utf-8")
    cache = request.config.cache.mkdir("doc-mypy") if request.config.cache else tmp_path / ".mypy_cache"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-color-output",
            "--hide-error-context",
            "--cache-dir",
            str(cache),
            *found,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )

    def where(m: re.Match[str]) -> str:
        page, line = found[m.group(1)][1][int(m.group(2)) - 1]
        return f"{page}:{line}:"

    report = re.sub(r"^(doc_\w+\.py):(\d+):", where, proc.stdout, flags=re.M)
    assert proc.returncode == 0, f"mypy --strict on the docs' Python blocks:\n{report}{proc.stderr}"
