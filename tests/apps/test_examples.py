"""The multi-agent examples (`rillet demo team|research|review`): they run offline, show what
docs/multi-agent.md says they show, and fit an 80-column terminal."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from rillet import Runner
from rillet.examples import EXAMPLES, deep, plan, research, review_loop, team


def path_of(ev: object) -> str:
    return "/".join(s.agent_name for s in ev.run_path)  # type: ignore[attr-defined]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)


def assert_fits_80(text: str) -> None:
    too_long = [line for line in text.splitlines() if len(line) > 80]
    assert not too_long, too_long


KEY_LINES = {
    "team": [
        "run path: supervisor / billing / supervisor / tech_support",
        '→ calls transfer_to_agent({"agent_name": "billing"})',
        "action: transfer to billing",
        "action: transfer to supervisor",
        "action: transfer to tech_support",
        "→ calls lookup_invoice(",
        "← refund_charge",
        "← recent_sign_outs",
        "Turn on automatic date and",
        "What tech_support's model was sent",
        "For context: [billing] said: Done: the duplicate 49.00 EUR charge on",
        "successfully transferred to agent [tech_support].",
        "13 events · 7 model calls",
    ],
    "research": [
        '→ calls searcher({"request": "how events cross from threads to asyncio"})',
        "run path: researcher / searcher",
        "→ calls search_notes(",
        "← search_notes",
        "← searcher",
        "→ calls summarizer(",
        "← summarizer",
        "- Wakeups are batched per receiver",
        "A worker thread sends into one Rust channel and your asyncio code reads it",
        "8 events · 5 model calls",
    ],
    "review": [
        "run path: review_loop / writer / reviewer / writer / reviewer",
        "Too long, and it lists parts instead of a benefit.",
        "rillet: agents that stream, on a Rust core.",
        "→ calls approve(",
        "action: break loop (from reviewer, ends the loop in round 2)",
        "Loop ended after 2 of at most 5 rounds: the reviewer approved.",
        "5 events · 4 model calls",
    ],
    "deep": [
        "run path: release_notes",
        '→ calls write_todos({"todos": [{"content": "Find the user-facing changes",',
        '→ calls task({"subagent_type": "researcher", "description": "Which changes',
        "Two of the four changes matter to users: coalesced wakeups (faster delivery)",
        '→ calls write_file({"path": "RELEASE.md",',
        "wrote 146 characters to RELEASE.md",
        "Todo list (session value):",
        "  [completed] Find the user-facing changes",
        "  [completed] Write RELEASE.md",
        "  - Safer resumes: a checkpoint only resumes the agent that saved it.",
        "11 events · 6 model calls",
    ],
    "plan": [
        "run path: plan_execute_replan / planner",
        '{"steps": ["Convert 120 USD to EUR", "Convert 80 GBP to EUR", "Add the',
        "run path: plan_execute_replan / planner / execute_replan / executor",
        "→ calls convert(",
        "    110.40 EUR",
        '{"steps": ["Convert 80 GBP to EUR", "Add the amounts"]}',
        "replanner (model call 7)",
        '{"response": "120 USD and 80 GBP make 204.00 EUR (110.40 + 93.60)."}',
        "action: break loop (from replanner, ends the loop in round 2)",
        "  1. Convert 120 USD to EUR → 120 USD is 110.40 EUR.",
        "  2. Convert 80 GBP to EUR → 80 GBP is 93.60 EUR.",
        "events · 7 model calls",  # 12 streamed (two state-delta events of their own), 10 whole
    ],
}

MAINS = {
    "team": team.main,
    "research": research.main,
    "review": review_loop.main,
    "deep": deep.main,
    "plan": plan.main,
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_main_prints_its_key_lines(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    for streaming in (True, False):
        assert MAINS[name](delay=0.0, streaming=streaming, color=False) == 0
        out = capsys.readouterr().out
        for line in KEY_LINES[name]:
            assert line in out, (streaming, line)
        assert "error" not in out
        assert_fits_80(out)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_rillet_demo_runs_each_example_offline(name: str) -> None:
    result = run_cli("-m", "rillet.cli", "demo", name, "--fast", "--no-color")
    assert result.returncode == 0, result.stderr
    for line in KEY_LINES[name]:
        assert line in result.stdout, line
    assert_fits_80(result.stdout)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_run_with_python_dash_m(name: str) -> None:
    """`python -m rillet.examples.<module>` runs that example, not another one."""
    result = run_cli("-m", EXAMPLES[name], "--fast", "--no-color")
    assert result.returncode == 0, result.stderr
    assert not result.stderr
    assert result.stdout.startswith(f"rillet demo {name}: "), result.stdout.splitlines()[:1]
    for line in KEY_LINES[name]:
        assert line in result.stdout, line


def test_rillet_demo_refuses_an_unknown_example_naming_the_choices() -> None:
    result = run_cli("-m", "rillet.cli", "demo", "nonesuch")
    assert result.returncode == 2
    assert "'nonesuch' is not one of" in result.stderr and "'team'" in result.stderr


# --- what the transcripts show, asserted on the events themselves ----------------------------


def test_team_transfers_there_and_back_with_nested_run_paths() -> None:
    root, tech_support = team.build_team()
    events = list(Runner(root).query(team.QUESTION))
    transfers = [(path_of(e), e.action.transfer_to_agent.dest_agent_name) for e in events if e.action]
    assert transfers == [
        ("supervisor", "billing"),
        ("supervisor/billing", "supervisor"),
        ("supervisor/billing/supervisor", "tech_support"),
    ]
    assert path_of(events[-1]) == "supervisor/billing/supervisor/tech_support"
    assert events[-1].message_output.get_message().content.startswith("The sign-outs come from")
    # with_disallow_transfer_to_parent: tech_support was never offered the transfer tool
    assert [t.name for t in tech_support.model.calls[0].tools] == ["recent_sign_outs"]  # type: ignore[attr-defined]
    sent = [(m.role, m.content) for m in tech_support.model.calls[0].messages[1:]]  # type: ignore[attr-defined]
    assert sent[0] == ("user", team.QUESTION)
    assert sent[7] == (
        "user",
        "For context: [billing] said: Done: the duplicate 49.00 EUR charge on INV-1042 is refunded "
        "(3-5 business days). [billing] called tool: `transfer_to_agent` with arguments: "
        '{"agent_name": "supervisor"}.',
    )
    assert all(role == "user" and text.startswith("For context: [") for role, text in sent[1:])


def test_team_supervisor_sees_its_own_messages_unchanged_when_control_returns() -> None:
    root, _ = team.build_team()
    list(Runner(root).query(team.QUESTION))
    second = root.agent.model.calls[1].messages  # type: ignore[attr-defined]
    assert [m.role for m in second[:4]] == ["system", "user", "assistant", "tool"]
    assert second[2].tool_calls[0].function.name == "transfer_to_agent"
    assert second[4].content.startswith("For context: [billing] called tool: `lookup_invoice`")


def test_research_agents_run_as_tools_with_fresh_conversations() -> None:
    researcher, searcher, summarizer = research.build_researcher()
    events = list(Runner(researcher).query(research.QUESTION))
    paths = {path_of(e) for e in events}
    assert paths == {"researcher", "researcher/searcher"}  # the summarizer's events stay inside its tool
    results = {
        e.message_output.tool_name: e.message_output.get_message().content
        for e in events
        if e.message_output and e.message_output.role == "tool" and path_of(e) == "researcher"
    }
    assert results["searcher"].startswith("Found 3 passages:\n[channel]")
    assert results["summarizer"].startswith("- One Rust channel carries every event")
    assert [m.content for m in searcher.model.calls[0].messages[1:]] == [  # type: ignore[attr-defined]
        "how events cross from threads to asyncio"
    ]
    assert [m.role for m in summarizer.model.calls[0].messages] == ["system", "user"]  # type: ignore[attr-defined]
    assert research.search_notes("wakeups") == "[wakeups] " + research.NOTES["wakeups"]


def test_review_loop_breaks_in_round_two_and_the_writer_sees_the_review() -> None:
    loop, writer, reviewer = review_loop.build_loop()
    events = list(Runner(loop).query(review_loop.QUESTION))
    brk = events[-1].action.break_loop
    assert brk.from_agent == "reviewer" and brk.done and brk.current_iterations == 1
    assert writer.model.call_count == 2 and reviewer.model.call_count == 2  # type: ignore[attr-defined]
    revision_input = [(m.role, m.content) for m in writer.model.calls[1].messages[1:]]  # type: ignore[attr-defined]
    assert revision_input[0] == ("user", review_loop.QUESTION)
    assert revision_input[1][0] == "assistant"  # the writer's own first draft, as it was
    assert revision_input[2] == (
        "user",
        "For context: [reviewer] said: Too long, and it lists parts instead of a benefit. "
        "Keep it under eight words and say what the user gets..",
    )


def test_review_loop_stops_at_max_iterations_without_an_approval() -> None:
    from rillet import ChatModelAgent, LoopAgent, ScriptedModel

    writer = ChatModelAgent("writer", description="drafts", model=ScriptedModel(["a", "b", "c"]))
    reviewer = ChatModelAgent(
        "reviewer", description="reviews", model=ScriptedModel(["no", "no", "no"]), tools=[review_loop.approve]
    )
    events = list(Runner(LoopAgent("l", sub_agents=[writer, reviewer], max_iterations=3)).query("x"))
    assert len(events) == 6 and all(e.action is None for e in events)


def test_example_flags_of_the_travel_demo_are_refused_with_a_reason() -> None:
    result = run_cli("-m", "rillet.cli", "demo", "team", "--approve", "--fast")
    assert result.returncode == 2
    assert "--approve/--reject only apply to the travel demo" in result.stderr


# --- docs/multi-agent.md stays true ----------------------------------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "multi-agent.md"
PREBUILT_DOC = DOC.parent / "prebuilt.md"  # the transcripts of `rillet demo deep` and `plan`


def doc_blocks(doc: Path = DOC) -> list[tuple[str, str]]:
    """The (language, text) of every fenced block in ``doc`` (docs/multi-agent.md), in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", doc.read_text(), re.M | re.S)]


def snippets() -> list[tuple[str, str]]:
    blocks = doc_blocks()
    return [
        (code, blocks[i + 1][1])
        for i, (lang, code) in enumerate(blocks[:-1])
        if lang == "python" and blocks[i + 1][0] == "text"
    ]


@pytest.mark.parametrize("code,expected", snippets(), ids=[f"snippet-{i + 1}" for i in range(len(snippets()))])
def test_doc_snippet_prints_what_the_doc_says(code: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, str(DOC), "exec"), {"__name__": "doc_snippet"})
    got = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert got == [line.rstrip() for line in expected.splitlines()]


def test_doc_has_every_python_snippet_checked() -> None:
    assert len(snippets()) == sum(1 for lang, _ in doc_blocks() if lang == "python") == 9


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_doc_transcripts_are_abridged_from_the_real_output(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every line of the doc's transcript appears in the real output, in the same order
    (``…`` marks cut lines; the timing is left out)."""
    doc = PREBUILT_DOC if name in ("deep", "plan") else DOC
    (block,) = [
        text for lang, text in doc_blocks(doc) if lang == "console" and text.startswith(f"$ rillet demo {name} ")
    ]
    assert MAINS[name](delay=0.0, color=False) == 0
    real = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    at = 0
    for line in block.splitlines()[1:]:
        if line == "…":
            continue
        line = re.sub(r" · [\d.]+ s$", "", line)
        found = next((i for i in range(at, len(real)) if real[i].startswith(line) and (line or not real[i])), None)
        assert found is not None, f"not in the output of `rillet demo {name}` (after line {at}): {line!r}"
        at = found + 1
