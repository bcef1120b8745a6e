"""`rillet web`: only its argument handling (rillet.web's own tests cover serving): loopback
unless --allow-remote (then a warning), the agent loaded as `rillet run` loads it, and a
missing `web` extra named in one line."""

from __future__ import annotations

import socket
import subprocess
import sys
import types
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from rillet.cli import main
from support.cli_harness import one_line_error, rillet, write_agents


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Calls of a stand-in rillet.web.serve, with agents.py importable from the current folder."""
    calls: list[dict[str, Any]] = []
    fake = types.ModuleType("rillet.web")

    def serve(
        agent: object,
        *,
        db: str | None,
        host: str = "127.0.0.1",
        port: int = 8000,
        allow_remote: bool = False,
        durability: str = "interrupt",
    ) -> None:
        assert durability in ("interrupt", "step")
        calls.append(
            {"agent": getattr(agent, "name", None), "db": db, "host": host, "port": port, "remote": allow_remote}
        )

    fake.serve = serve  # type: ignore[attr-defined]
    fake.PortUnavailableError = type("PortUnavailableError", (OSError,), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rillet.web", fake)
    (tmp_path / "web_agents.py").write_text("from agents import agent, number\n")
    write_agents(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return calls


def test_web_serves_the_agent_on_loopback_by_default(
    served: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["web", "web_agents:agent", "--db", "ui.db", "--port", "8123"]) == 0
    assert served == [{"agent": "clerk", "db": "ui.db", "host": "127.0.0.1", "port": 8123, "remote": False}]
    assert capsys.readouterr().err == ""
    assert main(["web", "web_agents:agent", "--host", "::1"]) == 0  # IPv6 loopback needs no flag either
    assert served[-1]["host"] == "::1" and served[-1]["db"] is None


def test_another_interface_needs_allow_remote_and_warns(
    served: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["web", "web_agents:agent", "--host", "0.0.0.0"])
    assert refused.value.code == 2 and served == []
    err = capsys.readouterr().err
    assert err.startswith("rillet web: --host 0.0.0.0 is not a loopback address") and "--allow-remote" in err
    assert main(["web", "web_agents:agent", "--host", "0.0.0.0", "--allow-remote"]) == 0
    assert served[-1]["remote"] is True and served[-1]["host"] == "0.0.0.0"
    (warning,) = capsys.readouterr().err.splitlines()
    assert warning.startswith("rillet web: warning: serving on 0.0.0.0:8000, reachable from other machines")


def test_a_bad_agent_or_store_is_one_line(served: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    for argv, says in [
        (["web", "web_agents:number"], "rillet web: 'web_agents:number' is an int, not an agent"),
        (["web", "web_agents:agent", "--db", "."], "rillet web: --db '.' is a directory"),
        (  # the Evals view listed nothing, and saving a chat turn as a case failed on mkdir
            ["web", "web_agents:agent", "--evals", "agents.py"],
            "rillet web: --evals 'agents.py' is a file: give the folder of eval reports",
        ),
    ]:
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        assert says in capsys.readouterr().err
    assert served == []


def test_without_the_web_extra_it_names_the_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "rillet.web", None)  # what a missing module or dependency raises
    with pytest.raises(SystemExit) as e:
        main(["web", "rillet.examples.demo:build_agent"])
    assert e.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("rillet web: the dev UI is not installed") and line.endswith("pip install 'rillet[web]'")


@pytest.mark.parametrize("dependency", ["starlette", "uvicorn"])
def test_without_starlette_or_uvicorn_it_is_one_line_too(
    dependency: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # rillet.web itself imports without them (what `make demo`'s environment has): the
    # missing dependency must still be one line, not serve()'s traceback
    monkeypatch.setitem(sys.modules, dependency, None)
    with pytest.raises(SystemExit) as e:
        main(["web", "rillet.examples.demo:build_agent"])
    assert e.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("rillet web: the dev UI is not installed") and line.endswith("pip install 'rillet[web]'")
    assert dependency in line


def test_refused_before_anything_is_imported_in_a_subprocess(tmp_path: Path) -> None:
    write_agents(tmp_path)
    one_line_error(rillet("web", "agents:agent", "--host", "192.0.2.1", cwd=tmp_path), 2, "is not a loopback address")
    port = rillet("web", "agents:agent", "--port", "70000", cwd=tmp_path)
    assert port.returncode == 2 and "Invalid value for '--port'" in port.stderr


def test_a_port_in_use_is_one_line_naming_it_and_no_url_is_printed(tmp_path: Path) -> None:
    write_agents(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = rillet("web", "agents:agent", "--port", str(port), cwd=tmp_path)
    one_line_error(result, 2, f"rillet web: cannot listen on 127.0.0.1:{port}: port {port} is already in use")
    assert "--port 0 picks a free one" in result.stderr
    assert "http://" not in result.stderr  # the URL is printed only once the port is bound


def test_port_0_serves_on_a_free_port_and_prints_its_url(tmp_path: Path) -> None:
    write_agents(tmp_path)
    server = subprocess.Popen(
        [sys.executable, "-m", "rillet.cli", "web", "agents:agent", "--port", "0"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()  # printed once bound: the server answers from then on
        assert line.startswith("rillet web: http://127.0.0.1:") and line.endswith("/ (Ctrl-C stops)\n"), line
        url = line.split()[2]
        assert not url.endswith(":0/")
        with urllib.request.urlopen(url + "api/agent", timeout=10) as response:
            assert response.status == 200
    finally:
        server.terminate()
        server.wait(timeout=20)
        if server.stderr is not None:
            server.stderr.close()
