"""The Python blocks of the docs run, and every Python block of the README and the docs
type-checks with ``mypy --strict``.

A page's blocks run in order in one fresh interpreter, as a reader pastes them into one
session (README.md's examples each stand alone: tests/contract/test_readme.py runs them, and
docs/multi-agent.md's snippets: tests/apps/test_examples.py). A block followed by an ```output
block must print exactly that. Names a page leaves to the reader (``byte_reads``,
``get_weather``...) come from a small typed prelude here. Blocks may ``await`` at top level,
as in ``python -m asyncio``. Every OpenAI-compatible endpoint a page names on its own
(``OPENAI_BASE_URL``) is the loopback server of tests/support/openai_server.py.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.doc_blocks import README, documents, examples
from support.openai_server import FakeOpenAIServer, Reply, transcript

# Pages whose blocks are separate examples rather than one session.
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

# What each page leaves for the reader to supply, typed, so the blocks also type-check.
PRELUDES = {
    "models.md": f'''
from rillet import Message, tool

@tool
def get_weather(city: str) -> str:
    """Tomorrow's forecast for a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {{city}}"

_stream = {STREAM!r}
byte_reads: list[bytes] = [_stream[:7], _stream[7:100], _stream[100:]]
body_bytes: bytes = {json.dumps(COMPLETION).encode()!r}
messages: list[Message] = [Message.user("Weather in Lisbon tomorrow?")]
''',
}

# Runs a page's blocks in one namespace; a marker line before each block's output.
DRIVER = """
import ast, asyncio, inspect, json, sys
page = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
exec(compile(page["prelude"], "<prelude>", "exec"), namespace)
for line, code in page["blocks"]:
    print(f"\\x1eblock {line}", flush=True)
    # padded so that tracebacks give the page's own line numbers
    compiled = compile("\\n" * line + code, page["path"], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if compiled.co_flags & inspect.CO_COROUTINE:
        asyncio.run(eval(compiled, namespace))
    else:
        exec(compiled, namespace)
    sys.stdout.flush()
"""


def replies_for(page: str) -> list[Reply]:
    """What the loopback server answers, in order, to the requests a page's blocks make."""
    if page == "models.md":  # the streamed agent run, then generate(response_format=Forecast)
        return [Reply.sse("openai_text"), Reply.json(COMPLETION)]
    if page == "structured-output.md":  # an agent with output_type=Forecast
        return [Reply.json(COMPLETION)]
    return []


def run_page(
    path: Path, server: FakeOpenAIServer, cwd: Path, more_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    blocks = [(line, code) for line, code, _ in examples(path.read_text(encoding="utf-8"))]
    page = {"path": str(path), "prelude": PRELUDES.get(path.name, ""), "blocks": blocks}
    env = {**os.environ, "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-doc-test", **(more_env or {})}
    return subprocess.run(
        [sys.executable, "-c", DRIVER],
        input=json.dumps(page),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )  # run() kills the child on a timeout


def test_every_page_with_python_blocks_is_run_or_covered_elsewhere() -> None:
    names = {p.name for p in documents()}
    assert {"quickstart.md", "interrupts.md", "testing.md", "models.md"} <= {p.name for p in RUN}
    assert names == {p.name for p in RUN} | STANDALONE


@pytest.mark.parametrize("path", RUN, ids=[p.name for p in RUN])
def test_doc_blocks_run_in_order(
    path: Path, server: FakeOpenAIServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    server.script(*replies_for(path.name))
    text = path.read_text(encoding="utf-8")
    more_env = {}  # a page naming REDIS_URL or DATABASE_URL runs against the session's servers (tests/support/servers.py)
    if "REDIS_URL" in text:
        more_env["REDIS_URL"] = request.getfixturevalue("redis_url")
    if "DATABASE_URL" in text:
        more_env["DATABASE_URL"] = request.getfixturevalue("postgres_url")
    proc = run_page(path, server, tmp_path, more_env)
    assert proc.returncode == 0, f"a block of docs/{path.name} failed:\n{proc.stderr}"
    printed = dict(
        (int(head), body) for head, _, body in (part.partition("\n") for part in proc.stdout.split("\x1eblock ")[1:])
    )
    for line, _, expected in examples(path.read_text(encoding="utf-8")):
        assert line in printed, f"docs/{path.name}:{line} never ran"
        if expected is not None:
            assert printed[line] == expected, f"docs/{path.name}:{line} printed something other than the page shows"
    if path.name == "models.md":  # the blocks reached the server, not a real endpoint
        sent = server.bodies()
        assert sent[0]["stream"] is True and sent[0]["tools"][0]["function"]["name"] == "get_weather"
        assert sent[1]["response_format"]["json_schema"]["name"] == "Forecast"


# --- mypy --strict over every block ----------------------------------------------------------


def awaits_at_top_level(code: str) -> bool:
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    return bool(compile(code, "<block>", "exec", flags=flags).co_flags & inspect.CO_COROUTINE)


def modules() -> dict[str, tuple[str, list[tuple[str, int]]]]:
    """{module file name: (source, where each source line comes from as (page, line))}: one
    module per standalone example, one per page for the others (its prelude, then its blocks;
    a block that awaits at top level becomes the body of an ``async def``)."""
    out: dict[str, tuple[str, list[tuple[str, int]]]] = {}
    for path in documents():
        rel = path.relative_to(README.parent).as_posix()
        stem = re.sub(r"\W", "_", path.stem)
        prelude = PRELUDES.get(path.name, "")
        parts: list[tuple[str, list[tuple[str, int]]]] = []
        for line, code, _ in examples(path.read_text(encoding="utf-8")):
            origin = [(rel, line + i + 1) for i in range(code.count("\n"))]
            if awaits_at_top_level(code):
                code = f"async def _block_{line}() -> None:\n" + textwrap.indent(code, "    ")
                origin = [(rel, line)] + origin
            parts.append((code, origin))
        groups = [[p] for p in parts] if path.name in STANDALONE else [parts]
        for i, group in enumerate(groups):
            source = prelude + "".join(code for code, _ in group)
            origin = [(f"<prelude of {rel}>", n + 1) for n in range(prelude.count("\n"))]
            origin += [o for _, lines in group for o in lines]
            out[f"doc_{stem}_{i}.py" if len(groups) > 1 else f"doc_{stem}.py"] = (source, origin)
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
