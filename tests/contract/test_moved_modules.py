"""The module paths of rillet before its loose modules moved into layer packages (commit
f5a1930) still import, and give the very objects of the new paths: rillet/_core/moved.py's
table, for code and pickles written against the old paths."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

import pytest
import rillet
from rillet._core.moved import MOVED

# `git ls-tree -r --name-only f5a1930 python/rillet` as module paths (the __main__ modules left
# out: importing one runs its command)
# fmt: off
OLD_MODULES = (
    "rillet", "rillet._core", "rillet._core.address", "rillet._core.interrupt", "rillet._core.loop",
    "rillet._core.scope", "rillet._core.workers", "rillet._docstrings", "rillet._interpreter", "rillet.a2a",
    "rillet.a2a.remote", "rillet.a2a.server", "rillet.a2a.wire", "rillet.agent", "rillet.agent_tool",
    "rillet.approval", "rillet.artifacts", "rillet.benchmarks", "rillet.benchmarks.channel",
    "rillet.benchmarks.runner", "rillet.chatmodel", "rillet.chatmodel.agent", "rillet.chatmodel.config",
    "rillet.chatmodel.deps", "rillet.chatmodel.guardrails", "rillet.chatmodel.live",
    "rillet.chatmodel.middleware", "rillet.chatmodel.output", "rillet.chatmodel.state",
    "rillet.chatmodel.steps", "rillet.chatmodel.task", "rillet.chatmodel.tool_call", "rillet.checkpoint",
    "rillet.checkpoint.adapter", "rillet.checkpoint.binding", "rillet.checkpoint.journal",
    "rillet.checkpoint.payload", "rillet.checkpoint.postgres_store", "rillet.checkpoint.redis_store",
    "rillet.checkpoint.remote", "rillet.checkpoint.sqlite_file", "rillet.checkpoint.stores",
    "rillet.checkpoint_state", "rillet.cli", "rillet.cli.bench", "rillet.cli.common", "rillet.cli.demo",
    "rillet.cli.drive", "rillet.cli.inspect", "rillet.cli.jsonout", "rillet.cli.resume", "rillet.cli.run",
    "rillet.cli.web", "rillet.codec", "rillet.context", "rillet.demo", "rillet.errors", "rillet.event_pair",
    "rillet.events", "rillet.examples", "rillet.examples.deep", "rillet.examples.plan",
    "rillet.examples.research", "rillet.examples.review_loop", "rillet.examples.team", "rillet.flow",
    "rillet.interrupts", "rillet.live", "rillet.live.model", "rillet.live.openai_realtime",
    "rillet.live.queue", "rillet.live.scripted", "rillet.mcp", "rillet.mcp.approval", "rillet.mcp.connection",
    "rillet.mcp.results", "rillet.mcp.servers", "rillet.mcp.tool", "rillet.mcp.toolset",
    "rillet.mcp.transports", "rillet.middlewares", "rillet.middlewares.patch_tool_calls",
    "rillet.middlewares.reduction", "rillet.middlewares.summarization", "rillet.models",
    "rillet.models.anthropic", "rillet.models.base", "rillet.models.errors", "rillet.models.fallback",
    "rillet.models.openai", "rillet.models.responses", "rillet.models.scripted", "rillet.models.strict_schema",
    "rillet.observer", "rillet.prebuilt", "rillet.prebuilt.deep", "rillet.prebuilt.filesystem",
    "rillet.prebuilt.plan_execute", "rillet.prebuilt.supervisor", "rillet.redis", "rillet.redis.client",
    "rillet.redis.sink", "rillet.redis.source", "rillet.redis.wire", "rillet.run_config", "rillet.run_handle",
    "rillet.runner", "rillet.schema", "rillet.sessions", "rillet.sessions.memory", "rillet.sessions.policies",
    "rillet.sessions.protocol", "rillet.sessions.run", "rillet.sessions.sqlite", "rillet.temporal",
    "rillet.temporal.client", "rillet.temporal.proxies", "rillet.temporal.registry", "rillet.temporal.worker",
    "rillet.temporal.workflow", "rillet.tools", "rillet.tracing", "rillet.web", "rillet.web.app",
    "rillet.web.checkpoints", "rillet.web.runs", "rillet.web.wire", "rillet.workflow",
)
# fmt: on


@pytest.mark.parametrize("old", OLD_MODULES)
def test_every_old_module_path_still_imports(old: str) -> None:
    module = importlib.import_module(old)
    assert module is sys.modules[old]
    if old in MOVED:
        new = importlib.import_module(MOVED[old])
        assert module is new
        assert module.__name__ == module.__spec__.name == MOVED[old]  # the module keeps its own spec


def test_the_table_names_only_old_paths_that_are_gone_and_new_ones_that_exist() -> None:
    assert set(MOVED) <= set(OLD_MODULES)
    for old, new in MOVED.items():
        assert importlib.util.find_spec(new) is not None, new
        assert importlib.util.find_spec(old).loader is not None
        assert importlib.util.find_spec(new).name == new


def test_names_from_an_old_path_are_the_public_ones() -> None:
    from rillet.agent import BaseAgent
    from rillet.approval import approve
    from rillet.codec import encode
    from rillet.events import AgentEvent
    from rillet.workflow import SequentialAgent

    assert (BaseAgent, approve, AgentEvent, SequentialAgent) == (
        rillet.BaseAgent,
        rillet.approve,
        rillet.AgentEvent,
        rillet.SequentialAgent,
    )
    assert encode is rillet.codec.encode
    assert rillet.codec is importlib.import_module("rillet.data.codec")


def test_an_object_pickled_from_an_old_path_loads() -> None:
    """Pickles name the class's module: those written before the move name the old one."""
    from rillet.data.run_config import RunConfig

    data = pickle.dumps(RunConfig(max_transfers=3), protocol=0).replace(b"rillet.data.run_config", b"rillet.run_config")
    assert b"rillet.run_config" in data
    assert pickle.loads(data) == RunConfig(max_transfers=3)


def test_import_of_an_old_path_in_a_fresh_interpreter() -> None:
    """The finder is installed by `import rillet`, which importing any rillet module runs first."""
    code = "import rillet.events, rillet.data.events as e; print(rillet.events is e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "True"


def test_python_dash_m_runs_an_old_path() -> None:
    """runpy asks the loader for the module's code: `python -m rillet.demo` ran before the move
    and must still (it failed with "'_Alias' object has no attribute 'get_code'")."""
    code = "import runpy, sys; sys.argv = ['x']; runpy.run_module('rillet.demo', run_name='__main__'); print('ran')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ran"
