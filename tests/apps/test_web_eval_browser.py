"""The dev UI's Evals view in a real browser (test_web_browser.py's chromium and helpers),
against `rillet web --evals DIR`: the reports of DIR with each case's pass rate, a failing
case's steps with the step where the trajectory left the expected one marked, two reports
compared, and a finished chat turn saved as an eval case that then passes on its agent."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from rillet.eval import load_eval_set, run_eval
from rillet.examples.demo import build_agent
from support.web_agent import build
from support.web_server import web_server
from test_web_browser import QUESTION, SHOTS, TIMEOUT_MS, browser, send, shot

pytestmark = pytest.mark.slow

__all__ = ["browser"]  # the fixture, imported from test_web_browser

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eval" / "travel.evalset.json"


def evaluate(agent: Any, evals: Any, repeat: int | None = None) -> Any:
    """``run_eval(agent, evals)`` on a thread of its own (Playwright's sync API holds an event
    loop on this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run_eval, agent, evals, repeat=repeat, progress=False).result()


def evals_server(folder: Path, timeout: float = 30.0) -> AbstractContextManager[str]:
    """`rillet web support.web_agent:build --evals folder` on a free loopback port."""
    return web_server("support.web_agent:build", None, timeout, extra=["--evals", str(folder)])


@pytest.fixture
def evals_page(browser: Any, tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    """The page, with DIR holding after.json (the example set on the demo agent, each case run
    twice: two cases fail) and before.json (the same, every case passing: they regressed since)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    folder = tmp_path / "evals"
    folder.mkdir()
    after = evaluate(build_agent, EXAMPLE, repeat=2).to_json()
    before = json.loads(json.dumps(after))
    for result in before["results"]:
        result.update(passed=True, pass_rate=1.0)
    before.update(passed=True, cases_passed=before["cases"])
    (folder / "before.json").write_text(json.dumps(before))
    (folder / "after.json").write_text(json.dumps(after))
    os.utime(folder / "before.json", (1_700_000_000, 1_700_000_000))  # the older: listed first
    (folder / "travel.evalset.json").write_text(EXAMPLE.read_text())  # an eval set: not listed as a report
    with evals_server(folder) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 820})
        pg = context.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        pg.goto(url)
        pg.wait_for_selector("#agent-name:has-text('front_desk')")
        try:
            yield pg, folder
        finally:
            context.close()


def test_a_report_shows_its_cases_and_the_failing_step_and_two_compare(evals_page: tuple[Any, Path]) -> None:
    page, _ = evals_page
    page.click("#open-evals")
    rows = page.locator("#evals-reports tr[data-report]")
    rows.first.wait_for()
    # oldest first; the comparison's before and after default to the oldest and the newest
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.report)") == ["before.json", "after.json"]
    assert "2/4 FAIL" in page.locator("#evals-reports tr[data-report='after.json']").text_content()

    page.locator("#evals-reports tr[data-report='after.json'] button.open").click()
    cases = page.locator("#evals-detail .evals-cases tr[data-case]")
    cases.first.wait_for()
    results = {r.get_attribute("data-case"): r.locator(".result").text_content() for r in cases.all()}
    assert results == {
        "trip-with-booking": "PASS",
        "booking-declined": "PASS",
        "wrong-order": "FAIL",
        "rain-expected": "FAIL",
    }
    wrong = page.locator(".evals-case[data-case='wrong-order']")
    assert "left the expected trajectory at step 2" in wrong.locator(".evals-why").first.text_content()
    failing = wrong.locator(".step.failing")
    assert failing.count() == 1 and failing.get_attribute("data-step") == "2"
    assert failing.text_content().startswith("travel_assistant: calls get_weather")
    # each run of the case has a chip; the first failing one is shown, another opens on a click
    chips = wrong.locator(".run-chip")
    assert chips.all_text_contents() == ["run 1 \u2717", "run 2 \u2717"]
    assert wrong.locator(".run-chip.active").get_attribute("data-attempt") == "0"
    chips.nth(1).click()
    assert wrong.locator(".run-chip.active").get_attribute("data-attempt") == "1"
    assert wrong.locator(".step.failing").get_attribute("data-step") == "2"
    assert page.locator(".evals-cases tr[data-case='trip-with-booking'] td").nth(1).text_content() == "2/2"
    shot(page, "7-evals-report")
    page.locator("#evals-dialog").screenshot(path=str(SHOTS / "evals-dialog.png"))  # docs/images/web-evals.png

    assert page.locator("#evals-before").input_value() == "before.json"
    assert page.locator("#evals-after").input_value() == "after.json"
    page.click("#evals-compare")
    changes = page.locator(".evals-comparison tr[data-case]")
    changes.first.wait_for()
    statuses = {r.get_attribute("data-case"): r.locator(".status").text_content() for r in changes.all()}
    assert statuses == {
        "trip-with-booking": "same",
        "booking-declined": "same",
        "wrong-order": "regressed",
        "rain-expected": "regressed",
    }
    assert "2 regressed" in page.locator("#evals-detail h3").text_content()
    shot(page, "8-evals-compare")


def test_a_finished_turn_saved_as_a_case_passes_on_its_agent(evals_page: tuple[Any, Path]) -> None:
    page, folder = evals_page
    send(page)
    page.locator("#chat .approval button.approve").click()
    page.wait_for_selector("#timeline .run-end.done")
    page.click("#open-evals")
    turn = page.locator(".evals-run").first
    turn.wait_for()
    assert turn.locator(".q").text_content() == QUESTION
    turn.locator("input.case-id").fill("lisbon")
    turn.locator("button.save-case").click()
    page.wait_for_selector(".evals-run .note.saved")
    assert turn.locator(".note").text_content() == "saved as case lisbon in saved.evalset.json (1 cases)"
    shot(page, "9-evals-saved")

    saved = load_eval_set(folder / "saved.evalset.json")
    (case,) = saved.cases
    (t,) = case.turns
    assert t.input == QUESTION
    assert t.trajectory is not None and [c.name for c in t.trajectory.calls] == ["transfer_to_agent", "book_hotel"]
    assert [(i.tool, i.resume) for i in t.interrupts] == [("book_hotel", {"decision": "approve"})]
    assert t.answer is not None and t.answer.exact is not None and "Enjoy Lisbon!" in t.answer.exact
    report = evaluate(build, saved)  # the round trip: the saved case passes on the agent
    assert report.passed, report.failure_text()

    turn.locator("button.save-case").click()  # the same id again is refused, and said so
    page.wait_for_selector(".evals-run .note.err")
    assert "it has a case 'lisbon' already" in turn.locator(".note").text_content()
