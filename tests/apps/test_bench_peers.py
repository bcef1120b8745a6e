"""The peer benchmark (benches/peers/run.py, a script of the source tree): the table of medians
and ratios (a run whose counts are wrong is never a time), the rillet adapter doing every
workload for real, the harness end to end with rillet and peers made here (one that runs in its
own venv, one whose install fails), and `rillet bench --peers` saying what to run instead."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rillet.cli import cli
from support.optional import need

SCRIPTS = Path(__file__).resolve().parents[2] / "benches" / "peers"  # not in the installed package
RUN = [sys.executable, str(SCRIPTS / "run.py")]
sys.path.insert(0, str(SCRIPTS))  # the harness's modules import each other from their folder

import harness  # noqa: E402
import run  # noqa: E402
from results import BEGIN, END, SECTION, Outcome, build, markdown, plot, render, text, write_section  # noqa: E402


def line(workload: str, variant: str, median: float, ok: bool = True, **extra: object) -> dict[str, object]:
    seen = {"tools": 50} if ok else {"tools": 49}
    return {"workload": workload, "variant": variant, "unit": "us/step", "median": median, "ok": ok,
            "expected": {"tools": 50}, "seen": seen, **extra}  # fmt: skip


def canned() -> list[Outcome]:
    rillet = Outcome("rillet", {"rillet": "1.0"}, [
        line("react", "def-invoke", 20.0),
        line("react", "async-invoke", 10.0),
        {**line("construct", "one-tool-inline", 4.0), "unit": "us/agent", "bytes_per_agent": 1000.0},
        line("http", "one-tool-call", 3.0),
    ])  # fmt: skip
    peer = Outcome("peer", {"peerlib": "2.0"}, [
        line("react", "def-invoke", 50.0),
        line("react", "async-invoke", 99.0, ok=False),
        {**line("construct", "one-tool-inline", 8.0), "unit": "us/agent", "bytes_per_agent": 5000.0},
        {"workload": "http", "variant": "-", "error": "ConnectError: refused"},
    ])  # fmt: skip
    return [peer, rillet, Outcome("absent", problem="not installed: exit status 1: no such package")]


def test_the_table_gives_medians_and_ratios_to_rillet_and_never_times_a_failed_run() -> None:
    outcomes = canned()
    table = build(outcomes)
    assert table.frameworks == ["rillet", "peer"]  # rillet first; a framework that never ran has no column
    assert table.rows == [
        ("react", "def-invoke", "us/step"),
        ("react", "async-invoke", "us/step"),
        ("construct", "one-tool-inline", "us/agent"),
        ("construct", "one-tool-inline", "B/agent"),
        ("http", "one-tool-call", "us/step"),
    ]
    assert text(table, table.rows[0], "peer") == "50.0 (2.50x)"  # peer / rillet
    assert text(table, table.rows[0], "rillet") == "20.0"
    assert table.ratio(table.rows[3], "peer") == 5.0  # bytes per agent: 5000 / 1000
    failed = text(table, table.rows[1], "peer")
    assert failed.startswith("FAILED") and "{'tools': 49}" in failed and "99" not in failed
    assert table.ratio(table.rows[1], "peer") is None
    assert text(table, table.rows[4], "peer") == "error: ConnectError: refused"  # a workload's error fills its rows
    assert table.failures() == [
        "peer react/async-invoke: FAILED: expected {'tools': 50}, saw {'tools': 49}",
        "peer http/one-tool-call: error: ConnectError: refused",
    ]
    page = markdown(table, outcomes)
    assert "| react | def-invoke | us/step | 20.0 | 50.0 (2.50x) |" in page
    assert "| absent | - | **not installed: exit status 1: no such package** |" in page
    assert "| peer | peerlib 2.0 | ran |" in page


def test_write_section_replaces_between_the_markers_or_appends_the_section(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text("# B\n\nbefore\n")
    write_section(page, "first")
    assert page.read_text() == f"# B\n\nbefore\n\n{SECTION}\n\n{BEGIN}\nfirst\n{END}\n"
    page.write_text(page.read_text() + "\n## Next\n\nafter\n")
    write_section(page, "second")
    assert page.read_text() == f"# B\n\nbefore\n\n{SECTION}\n\n{BEGIN}\nsecond\n{END}\n\n## Next\n\nafter\n"


def test_plots_are_written_per_framework(tmp_path: Path) -> None:
    need("matplotlib")
    rillet, peer = (Outcome(n, lines=[line("react", "def-invoke", m), {**line("concurrent", "waiting-9", 1.0),
                    "bytes_per_run": 4000.0 * m}]) for n, m in (("rillet", 1), ("peer", 3)))  # fmt: skip
    made = plot(build([rillet, peer]), tmp_path / "plots")
    assert [p.name for p in made] == ["react-per-step.png", "concurrent-memory.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in made)


def test_a_venv_is_reused_while_its_requirements_are_unchanged(tmp_path: Path) -> None:
    requirements = tmp_path / "fake.txt"
    requirements.write_text("fakelib==1.0\n")
    peer = harness.Peer("fake", tmp_path / "bench_fake.py", requirements)
    python = tmp_path / "venvs" / "fake" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    (tmp_path / "venvs" / "fake" / harness.STAMP).write_text(hashlib.sha256(b"fakelib==1.0\n").hexdigest())
    assert harness.ensure_venv(peer, tmp_path / "venvs") == (python, "")
    missing = harness.Peer("other", tmp_path / "bench_other.py", tmp_path / "other.txt")
    assert harness.ensure_venv(missing, tmp_path / "venvs") == (
        None,
        "not installed: no other.txt next to bench_other.py",
    )
    assert harness.requirement_names("# pinned\nagno==3.1.0  # the framework\nopenai[x]>=1\n-r other.txt\n") == [
        "agno",
        "openai",
    ]


def test_the_script_refuses_an_unknown_framework_or_workload(tmp_path: Path) -> None:
    shutil.copy(SCRIPTS / "bench_rillet.py", tmp_path)
    result = CliRunner().invoke(run.run_peers, ["nosuch", "--scripts-dir", str(tmp_path)])
    assert result.exit_code == 2 and "unknown framework nosuch; choose from rillet" in result.output
    result = CliRunner().invoke(run.run_peers, ["--workloads", "react,nap", "--scripts-dir", str(tmp_path)])
    assert result.exit_code == 2 and "unknown workload nap" in result.output
    assert "Invalid value for --workloads" in result.output  # the message names the option
    # an empty list is refused too: it used to mean every workload, a full run with installs
    result = CliRunner().invoke(run.run_peers, ["--workloads", "", "--scripts-dir", str(tmp_path)])
    assert result.exit_code == 2 and "unknown workload ''" in result.output


def test_rillet_bench_peers_names_the_script_that_runs_the_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    import rillet

    result = CliRunner().invoke(cli, ["bench", "--peers", "agno,langgraph"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())  # click wraps the message
    script = Path(rillet.__file__).resolve().parents[2] / "benches" / "peers" / "run.py"
    if script.is_file():  # rillet imported from a source tree (make setup's editable install)
        assert f"{sys.executable} {script} agno,langgraph" in said
    # installed from a wheel, away from any source tree: the command to run in a clone
    monkeypatch.setattr(rillet, "__file__", "/nowhere/site-packages/rillet/__init__.py")
    said = " ".join(CliRunner().invoke(cli, ["bench", "--peers"]).output.split())
    assert "not part of the installed package" in said and "clone of rillet's repository" in said
    assert ".venv/bin/python benches/peers/run.py (docs/benchmarks.md" in said


def test_the_harness_with_rillet_alone_prints_the_table(tmp_path: Path) -> None:
    shutil.copy(SCRIPTS / "bench_rillet.py", tmp_path)  # no other framework: no venv, no network
    cmd = [*RUN, "--quick", "--rounds", "1"]
    cmd += ["--workloads", "construct,workflow", "--scripts-dir", str(tmp_path), "--venvs", str(tmp_path / "v")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [r.split("│")[1:5] for r in done.stdout.splitlines() if r.count("│") == 5]
    assert [[c.strip() for c in r[:3]] for r in rows] == [  # in the workloads' (a)-(g) order
        ["workflow", "sequential3", "us/run"],
        ["workflow", "parallel8", "us/run"],
        ["construct", "one-tool-inline", "us/agent"],
        ["construct", "one-tool-inline", "B/agent"],
    ]
    assert all(float(r[3].strip().replace(",", "")) > 0 for r in rows)
    assert "[rillet] workflow/parallel8:" in done.stderr and not (tmp_path / "v").exists()


@pytest.mark.slow
def test_the_rillet_script_does_every_workload(tmp_path: Path) -> None:
    with harness.loopback_server() as url:
        done = subprocess.run(
            [sys.executable, str(SCRIPTS / "bench_rillet.py"), "--quick", "--rounds", "1"]
            + ["--base-url", url, "--db-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(raw) for raw in done.stdout.splitlines()]
    got = {(d["workload"], d["variant"]): (d["ok"], d["seen"]) for d in lines}
    react = (True, {"tools": 50, "models": 51})
    assert got == {
        ("react", "def-invoke"): react,
        ("react", "def-stream"): react,
        ("react", "async-invoke"): react,
        ("react", "async-stream"): react,
        ("react", "def-invoke-sync"): react,
        ("workflow", "sequential3"): (True, {"models": 3}),
        ("workflow", "parallel8"): (True, {"models": 8}),
        ("approval", "interrupt-resume"): (True, {"tools": 1, "models": 2}),
        ("import", "cold"): (True, None),
        ("construct", "one-tool-inline"): (True, None),
        ("concurrent", "waiting-1000"): (True, {"finished": 1000}),
        ("http", "one-tool-call"): (True, {"tools": 1}),
        ("http", "one-tool-call-warm"): (True, {"tools": 1}),
        ("http", "httpx-floor"): (True, {"requests": 2}),
        ("http", "httpx-floor-warm"): (True, {"requests": 2}),
        ("eval", "concurrency-1"): (True, {"tools": 20, "passed": 20}),
        ("eval", "default-concurrency"): (True, {"tools": 20, "passed": 20}),
    }
    assert all(d["median"] > 0 for d in lines if d["workload"] != "import")
    assert next(d for d in lines if d["workload"] == "construct")["bytes_per_agent"] > 0


# a framework made here: the shared script's workloads on a plain dict "agent", standard library
# only, imported as the peers import it (``from _common import``) from a folder elsewhere
TWIN = """
from _common import construction_workload, lookup, main
main({"construct": construction_workload(lambda: {"tools": [lookup]})})
"""


@pytest.mark.slow
def test_the_harness_runs_rillet_and_peers_in_their_venvs_and_reports_a_failed_install(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    shutil.copy(SCRIPTS / "bench_rillet.py", scripts)
    (scripts / "bench_twin.py").write_text(TWIN)
    (scripts / "twin.txt").write_text("# nothing to install\n")
    (scripts / "bench_broken.py").write_text(TWIN)
    (scripts / "broken.txt").write_text("this is not a requirement!\n")  # pip refuses it without a download
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# Benchmarks\n\n{SECTION}\n\n{BEGIN}\nold\n{END}\n")
    cmd = [*RUN, "--quick", "--rounds", "1"]
    cmd += ["--workloads", "construct,nap", "--scripts-dir", str(scripts), "--venvs", str(tmp_path / "venvs")]
    cmd += ["--write-docs", str(page), "--timeout", "120"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "unknown workload nap" in done.stderr  # checked before anything installs
    cmd[cmd.index("construct,nap")] = "construct"
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # a framework did not install
    out = page.read_text()
    assert "old" not in out and "python benches/peers/run.py --workloads construct --rounds 1 --quick" in out
    assert "| construct | one-tool-inline | us/agent |" in out
    row = next(r for r in out.splitlines() if r.startswith("| construct | one-tool-inline | us/agent |"))
    assert row.count("x)") == 1  # the twin's ratio to rillet; broken has no column
    assert "| broken | - | **not installed: exit status 1:" in out
    assert "| twin | - | ran |" in out
    assert "not installed" in done.stdout and "[twin] construct/one-tool-inline" in done.stderr
    assert (tmp_path / "venvs" / "twin" / harness.STAMP).is_file()  # built once, reused next time
    assert "reusing" not in done.stderr


HANGS = """
import json, time
print(json.dumps({"workload": "construct", "variant": "x", "unit": "us/agent", "median": 1.0, "ok": True}), flush=True)
time.sleep(60)
"""


@pytest.mark.slow
def test_a_script_that_hangs_is_killed_and_reported_as_timed_out_with_what_it_printed(tmp_path: Path) -> None:
    script = tmp_path / "bench_hangs.py"
    script.write_text(HANGS)
    peer = harness.Peer("hangs", script, None)
    settings = harness.Settings("construct", 1, True, 1, timeout=1)
    outcome = harness.run_script(peer, Path(sys.executable), settings, "", str(tmp_path))
    assert outcome.problem == "timed out after 1 s"  # not "exited with status -9"
    assert [line["variant"] for line in outcome.lines] == ["x"]


def test_a_script_that_exits_cleanly_without_results_is_a_problem_not_a_clean_run(tmp_path: Path) -> None:
    script = tmp_path / "bench_silent.py"
    script.write_text("print('a log line, not a result')\n")
    settings = harness.Settings("construct", 1, True, 1, timeout=60)
    outcome = harness.run_script(
        harness.Peer("silent", script, None), Path(sys.executable), settings, "", str(tmp_path)
    )
    assert outcome.problem == "script printed no result lines" and outcome.lines == []


def test_the_table_printed_to_a_file_keeps_every_cell_whole() -> None:
    import io

    outcomes = canned()
    many = [Outcome(f"framework{i}", lines=outcomes[0].lines) for i in range(6)]  # seven columns, as all peers
    out = io.StringIO()
    harness.table_console(out).print(render(build([outcomes[1], *many]), [outcomes[1], *many]))
    assert "…" not in out.getvalue() and out.getvalue().count("50.0 (2.50x)") == 6
