"""The dev UI in a real browser: Playwright driving Debian's chromium, headless, against
`python -m rillet.web` on loopback. Each state's screenshot goes to .test-output/web/ (not
committed) to be looked at. Where no browser can be found the tests skip, and fail under
CI=true (tests/support/optional.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.optional import need, skip_or_fail
from support.web_agent import GREETING
from support.web_server import web_server

pytestmark = pytest.mark.slow

SHOTS = Path(__file__).resolve().parents[2] / ".test-output" / "web"
QUESTION = "Book me two nights in Lisbon"
TIMEOUT_MS = 20_000


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    skip_or_fail("no chromium to drive (install it with: apt-get install -y chromium)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = need("playwright.sync_api")
    executable = _chromium()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=["--no-sandbox"], headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, tmp_path: Path) -> Iterator[Any]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with web_server("support.web_agent:build", tmp_path / "runs.db") as url:
        context = browser.new_context(viewport={"width": 1400, "height": 820})
        pg = context.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        pg.goto(url)
        pg.wait_for_selector("#agent-name:has-text('front_desk')")
        try:
            yield pg
        finally:
            context.close()


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"))


@contextmanager
def opened(browser: Any, spec: str, name: str, db: Path | None = None, *extra: str) -> Iterator[Any]:
    """A page of ``rillet web spec [extra]`` (agent ``name``), loaded."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with web_server(spec, db, extra=extra) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 820})
        try:
            pg = context.new_page()
            pg.set_default_timeout(TIMEOUT_MS)
            pg.goto(url)
            pg.wait_for_selector(f"#agent-name:has-text('{name}')")
            pg.url_base = url  # type: ignore[attr-defined]
            yield pg
        finally:
            context.close()


def send(page: Any, text: str = QUESTION) -> None:
    page.fill("#chat-input", text)
    page.click("#send")


def test_a_message_streams_its_tokens_into_the_timeline_and_the_chat(page: Any) -> None:
    send(page)
    # caught mid-stream: a card that holds some tokens and has not ended
    page.wait_for_function(
        "() => [...document.querySelectorAll('#timeline .card')].some(c => c.querySelector('.token') && !c.classList.contains('ended'))"
    )
    partial = page.eval_on_selector("#timeline .card:not(.ended) .text", "e => e.textContent")
    shot(page, "1-streaming")
    assert 0 < len(partial) < len(GREETING) and GREETING.startswith(partial)

    card = page.locator("#timeline .card.assistant.ended").first
    card.wait_for()
    assert card.locator(".text").text_content() == GREETING
    assert card.locator(".token").count() == 0  # the whole message replaced the tokens at its end
    assert "transfer_to_agent" in card.locator(".tool-call").text_content()
    assert page.locator("#chat .bubble.assistant").first.locator(".text").text_content() == GREETING


def test_the_run_path_tree_nests_the_agent_transferred_to(page: Any) -> None:
    send(page)
    nested = page.locator("#tree .node[data-agent=front_desk] .node[data-agent=booker]")
    nested.wait_for()
    page.wait_for_selector("#status:has-text('waiting for approval')")
    shot(page, "2-tree-after-transfer")
    assert page.locator("#tree > .node").count() == 1
    assert "⚙ book_hotel" in nested.locator(".tools").text_content()
    assert page.locator("#timeline .act", has_text="transfer to booker").count() == 1


def test_approving_the_interrupt_resumes_the_run_to_its_end(page: Any) -> None:
    send(page)
    box = page.locator("#chat .approval")
    box.wait_for()
    assert "Approve the call of book_hotel?" in box.text_content()
    assert '"city": "Lisbon"' in box.locator("pre").text_content()
    shot(page, "3-interrupt")
    assert page.locator("#tree .node.interrupted").count() == 1  # booker is marked paused
    box.locator("button.approve").click()
    page.wait_for_selector("#timeline .run-end.done")
    page.wait_for_selector("#status:has-text('done')")
    assert page.locator("#tree .node.interrupted").count() == 0  # the resume ran it: no longer paused
    shot(page, "4-approved-done")
    answer = page.locator("#chat .bubble.assistant").last.locator(".text").text_content()
    assert answer == "All set: booked 2 nights in Lisbon, confirmation H-311. Enjoy Lisbon!"
    assert "answered: approve" in box.text_content()
    # the finished resume deleted its checkpoint
    page.wait_for_selector("#checkpoints :text('No checkpoints')")


def test_rejecting_with_a_reason_sends_it_to_the_model(page: Any) -> None:
    send(page)
    box = page.locator("#chat .approval")
    box.wait_for()
    reason = box.locator("input.reason")
    # its placeholder, "reason (for reject)", is not cut off in the narrow chat column
    room, needed = reason.evaluate(
        "e => { const s = getComputedStyle(e), c = document.createElement('canvas').getContext('2d');"
        " c.font = s.font; return [e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight),"
        " c.measureText(e.placeholder).width]; }"
    )
    assert room >= needed
    reason.fill("too expensive")
    box.locator("button.reject").click()
    page.wait_for_selector("#timeline .run-end.done")
    answer = page.locator("#chat .bubble.assistant").last.locator(".text").text_content()
    assert "rejected this call of book_hotel (too expensive)" in answer
    # a second turn calls book_hotel again: the tree counts the calls on one chip
    send(page)
    page.locator("#chat .approval").nth(1).wait_for()
    chips = page.locator("#tree .node[data-agent=booker] .tool-chip")
    assert chips.all_text_contents() == ["⚙ book_hotel \u00d72"]


def test_a_checkpoint_opens_decoded_and_can_be_approved_from_there(page: Any) -> None:
    send(page)
    page.wait_for_selector("#status:has-text('waiting for approval')")
    row = page.locator("#checkpoints tr[data-checkpoint]")
    row.wait_for()
    row.locator("button.open").click()
    view = page.locator("#checkpoint-view")
    view.locator(".cp-interrupt.root").wait_for()
    shot(page, "5-checkpoint")
    assert f"user: {QUESTION}" in view.text_content()
    assert (
        "agent:front_desk / agent:booker / tool:book_hotel:call_book"
        in view.locator(".cp-interrupt.root").text_content()
    )
    assert "front_desk\u203abooker" in view.locator(".cp-events").text_content()
    view.locator(".cp-interrupt.root button.approve").click()
    page.wait_for_selector("#timeline .run-end.done")
    assert "Enjoy Lisbon!" in page.locator("#chat .bubble.assistant").last.text_content()


def test_parallel_lanes_sit_side_by_side_in_the_tree(browser: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with web_server("support.web_agent:build_parallel", None) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 820})
        try:
            pg = context.new_page()
            pg.set_default_timeout(TIMEOUT_MS)
            pg.goto(url)
            pg.wait_for_selector("#agent-name:has-text('trip')")
            send(pg, "Plan a weekend")
            pg.wait_for_selector("#timeline .run-end.done")
            shot(pg, "6-parallel-lanes")
            weather = pg.locator(".node[data-agent=research] > .lanes > .node[data-agent=weather]").bounding_box()
            prices = pg.locator(".node[data-agent=research] > .lanes > .node[data-agent=prices]").bounding_box()
            writer = pg.locator(".node[data-agent=research] > .children:not(.lanes) > .node[data-agent=writer]")
            assert weather is not None and prices is not None and writer.count() == 1
            assert abs(weather["y"] - prices["y"]) < 2 and prices["x"] > weather["x"] + weather["width"] / 2
            checker = writer.locator(".children:not(.lanes) > .node[data-agent=fact_checker]")
            assert checker.locator(".badge.tool").text_content() == "agent tool"
            assert "⚙ fact_checker" in writer.locator("> .tools").text_content()
            # the agent tool's own model call is inspectable too, under its caller's run path
            inner = pg.locator("#timeline .card.assistant", has_text="Both facts hold.")
            inner.locator("button.inspect").click()
            assert pg.locator("#call-title").text_content().startswith("Model call · fact_checker · ")
        finally:
            context.close()


def test_errors_show_in_the_chat_where_they_happen_and_a_failed_tool_is_a_failure(browser: Any) -> None:
    with opened(browser, "support.web_agent:build_troubled", "troubled") as pg:
        send(pg, "tool")  # the tool fails; its error goes back to the model, which answers
        pg.wait_for_selector("#timeline .run-end.done")
        failed = pg.locator("#timeline .card.tool.failed")
        assert failed.count() == 1
        assert "tool failed · check_availability" in failed.locator(".kind").text_content()
        color = failed.evaluate("e => getComputedStyle(e).borderLeftColor")
        assert color == "rgb(197, 48, 48)"  # red, not the green of a result
        assert pg.locator("#timeline .card.tool:not(.failed)").count() == 0
        note = pg.locator("#chat .bubble.error[data-kind=tool]")
        assert "tool failed · troubled" in note.locator(".who").text_content()
        assert "the availability service for Lisbon is down" in note.text_content()

        send(pg, "crash")  # the model raises: the chat says so, not only the timeline
        pg.wait_for_selector("#chat .bubble.error[data-kind=model]")
        model = pg.locator("#chat .bubble.error[data-kind=model]")
        assert "model error · troubled" in model.locator(".who").text_content()
        assert "RuntimeError: the model provider hung up" in model.text_content()

        send(pg, "loop")  # too many model calls
        limit = pg.locator("#chat .bubble.error[data-kind=limit]")
        limit.wait_for()
        assert "ExceedMaxIterationsError" in limit.text_content()

        send(pg, "forbidden")  # an input guardrail rejects it
        guard = pg.locator("#chat .bubble.error[data-kind=guardrail]")
        guard.wait_for()
        assert "guardrail error · troubled" in guard.locator(".who").text_content()
        assert "forbidden topic" in guard.text_content()
        shot(pg, "7-errors")


def test_approval_decisions_stay_in_the_timeline(page: Any) -> None:
    send(page)
    box = page.locator("#chat .approval").nth(0)
    box.locator("input.reason").fill("too expensive")
    box.locator("button.reject").click()
    page.wait_for_selector("#timeline .run-end.done")
    rejected = page.locator("#timeline .card.decision.reject")
    assert rejected.locator(".text").text_content() == "✘ rejected the call of book_hotel"
    assert rejected.locator(".reason").text_content() == "reason: too expensive"
    assert "front_desk\u203abooker" in rejected.locator(".path").text_content()

    send(page)
    box = page.locator("#chat .approval").nth(1)
    box.locator("button.edit").click()
    box.locator("textarea.edit-args").fill('{"city": "Porto", "nights": 3}')
    box.locator("button.edit").click()
    page.locator("#timeline .run-end.done").nth(1).wait_for()
    edited = page.locator("#timeline .card.decision.edit")
    assert edited.locator(".text").text_content() == "✎ edited the arguments of book_hotel"
    assert '"city": "Porto"' in edited.locator("pre").text_content()

    send(page)
    page.locator("#chat .approval").nth(2).locator("button.approve").click()
    page.locator("#timeline .run-end.done").nth(2).wait_for()
    approved = page.locator("#timeline .card.decision.approve")
    assert approved.locator(".text").text_content() == "✔ approved the call of book_hotel"
    # each answer sits at the head of the resume it started, before the tool's result
    order = page.eval_on_selector_all(
        "#timeline .card.decision, #timeline .card.tool", "cs => cs.map(c => c.className.split(' ')[1])"
    )
    assert order == ["decision", "tool"] * 3
    page.locator(".card.decision.edit").scroll_into_view_if_needed()
    shot(page, "8-decisions")


def test_the_agent_tree_is_drawn_before_the_first_run(browser: Any) -> None:
    with opened(browser, "support.web_agent:build_parallel", "trip") as pg:
        tree = pg.locator("#agents")
        research = tree.locator(".anode[data-agent=trip] > .children > .anode[data-agent=research]")
        research.wait_for()
        assert pg.locator("#timeline .card").count() == 0  # nothing has run
        weather = research.locator("> .lanes > .anode[data-agent=weather]").bounding_box()
        prices = research.locator("> .lanes > .anode[data-agent=prices]").bounding_box()
        assert weather is not None and prices is not None
        assert abs(weather["y"] - prices["y"]) < 2 and prices["x"] > weather["x"] + weather["width"] / 2
        writer = tree.locator(".anode[data-agent=trip] > .children > .anode[data-agent=writer]")
        assert writer.locator("> .tools .tool-chip").all_text_contents() == ["⚙ fact_checker"]
        checker = writer.locator("> .children > .anode[data-agent=fact_checker]")
        assert checker.locator("> .label .badge.tool").text_content() == "agent tool"
        assert "Parallel" in research.locator("> .label .badge").first.text_content()
        tree.screenshot(path=str(SHOTS / "9-agent-tree.png"))
        shot(pg, "9-agent-tree-page")
    with opened(browser, "support.web_agent:build", "front_desk") as pg:
        booker = pg.locator("#agents .anode[data-agent=front_desk] > .children > .anode[data-agent=booker]")
        booker.wait_for()
        assert booker.locator("> .label .badge.tool").text_content() == "transfer"
        assert "⚙ book_hotel" in booker.locator(".tool-chip").all_text_contents()
        assert pg.locator("#agents-box").evaluate("d => d.open") is True
        send(pg)
        pg.wait_for_selector("#status:has-text('waiting for approval')")
        assert pg.locator("#agents-box").evaluate("d => d.open") is False  # folded: the run paths take the room


def test_the_call_inspector_shows_what_each_model_and_tool_call_was_sent_and_gave(browser: Any) -> None:
    with opened(browser, "support.web_agent:build_troubled", "troubled") as pg:
        send(pg, "tool")
        pg.wait_for_selector("#timeline .run-end.done")
        first, answer = pg.locator("#timeline .card.assistant").all()
        assert "tok" not in (first.locator(".call-meta").text_content() or "")
        assert answer.locator(".call-meta").text_content().endswith(" · 49 tok")  # latency, then tokens
        dialog = pg.locator("#call-dialog")

        first.locator("button.inspect").click()
        dialog.wait_for()
        assert pg.locator("#call-title").text_content() == "Model call · troubled · m1"
        sent = dialog.locator(".sent-msg")
        assert sent.nth(0).locator(".role").text_content() == "system"  # the system prompt, as sent
        assert sent.nth(0).locator("pre").text_content() == "Answer briefly."
        assert sent.nth(1).locator("pre").text_content() == "tool"
        assert dialog.locator(".offered-tool summary").all_text_contents() == [
            "check_availability — Looks up free rooms."
        ]
        facts = dialog.locator("dl.call-facts").text_content()
        assert "tokensnot reported by the model" in facts and "modelScriptedModel" in facts
        assert "latency" in facts and " UTC" in facts  # timestamps
        assert "check_availability" in dialog.locator("section", has_text="Reply").text_content()
        dialog.locator("button:has-text('Close')").click()

        answer.locator("button.inspect").click()
        assert "tokens42 prompt + 7 completion = 49" in dialog.locator("dl.call-facts").text_content()
        assert "finish reasonstop" in dialog.locator("dl.call-facts").text_content()
        roles = dialog.locator(".sent .sent-msg .role").all_text_contents()
        assert roles == ["system", "user", "assistant", "tool · call_check"]
        shot(pg, "10-inspector-model")
        dialog.locator("button:has-text('Close')").click()

        pg.locator("#timeline .card.tool button.inspect").click()
        assert pg.locator("#call-title").text_content() == "Tool call · check_availability · call_check"
        assert '"city": "Lisbon"' in dialog.locator("section", has_text="Arguments").text_content()
        errors = dialog.locator("section pre.err").all_text_contents()  # the error, and the result the model got
        assert errors == [
            "RuntimeError: the availability service for Lisbon is down",
            "Error: the availability service for Lisbon is down",
        ]
        assert "statuserror" in dialog.locator("dl.call-facts").text_content()
        shot(pg, "10-inspector-tool")


def test_a_reload_keeps_the_chat_its_timelines_and_their_calls(page: Any) -> None:
    send(page)
    page.locator("#chat .approval button.approve").click()
    page.wait_for_selector("#timeline .run-end.done")
    send(page, "And a second request")
    page.wait_for_selector("#chat .approval:not(.answered)")
    page.wait_for_selector("#status:has-text('waiting for approval')")

    def view() -> dict[str, Any]:
        return {
            "chat": page.locator("#chat > div").evaluate_all("bs => bs.map(b => b.className + ': ' + b.innerText)"),
            "timeline": page.locator("#timeline > div").evaluate_all("cs => cs.map(c => c.className)"),
            "texts": page.locator("#timeline .card .text").all_text_contents(),
        }

    before = view()
    page.reload()
    page.wait_for_selector("#agent-name:has-text('front_desk')")
    page.wait_for_function(f"() => document.querySelectorAll('#timeline > div').length >= {len(before['timeline'])}")
    page.wait_for_selector("#status:has-text('waiting for approval')")
    after = view()
    assert after["texts"] == before["texts"] and after["timeline"] == before["timeline"]
    assert after["chat"] == before["chat"]
    assert page.locator("#timeline .card.decision.approve").count() == 1
    boxes = page.locator("#chat .approval")
    assert boxes.count() == 2 and "answered: approve" in boxes.nth(0).text_content()
    assert not boxes.nth(0).locator("button.approve").is_enabled()
    assert boxes.nth(1).locator("button.approve").is_enabled()  # still to answer, from the reloaded page
    page.locator("#timeline .card.assistant button.inspect").first.click()
    system = page.locator("#call-dialog .sent .sent-msg").first.locator("pre").text_content()
    assert system.startswith("Route every request.") and "transfer_to_agent" in system  # as the model got it
    page.locator("#call-dialog button:has-text('Close')").click()
    shot(page, "11-reloaded")
    boxes.nth(1).locator("button.approve").click()
    page.locator("#timeline .run-end.done").nth(1).wait_for()
    assert page.locator("#timeline .card.decision.approve").count() == 2


def test_sessions_are_listed_opened_with_their_state_and_continued(page: Any) -> None:
    send(page)
    page.wait_for_selector("#sessions tr.current .running")  # live: a run of this chat is going
    page.wait_for_selector("#status:has-text('waiting for approval')")
    page.wait_for_selector("#sessions tr.current:not(:has(.running))")  # paused: nothing runs
    page.locator("#chat .approval button.approve").click()
    page.wait_for_selector("#timeline .run-end.done")
    first = page.locator("#sessions tr.current")
    page.wait_for_function("() => document.querySelector('#sessions tr.current .turns').textContent === '1'")
    first_id = first.get_attribute("data-session")
    assert page.locator("#session-name").text_content() == f"session {first_id}"

    page.click("#new-chat")
    page.wait_for_function(f"() => document.querySelector('#sessions tr.current').dataset.session !== '{first_id}'")
    assert page.locator("#sessions tr.current .turns").text_content() == "0"
    assert page.locator("#chat > *").count() == 0
    old = page.locator(f"#sessions tr[data-session='{first_id}']")
    assert old.locator(".turns").text_content() == "1"

    old.locator("button.open").click()  # open the earlier chat: its turn, its state
    head = page.locator(f"#chat .session-head[data-session='{first_id}']")
    head.wait_for()
    assert "1 turns" in head.text_content()
    assert head.locator(".session-state pre").text_content() == "no session values"
    said = page.locator("#chat .bubble.history .text").all_text_contents()
    assert said == [QUESTION, "All set: booked 2 nights in Lisbon, confirmation H-311. Enjoy Lisbon!"]
    page.wait_for_selector(f"#sessions tr.current[data-session='{first_id}']")

    send(page, "And one more night?")  # continues it: the model is sent the earlier turn
    page.locator("#timeline .card.assistant button.inspect").first.wait_for()
    page.locator("#timeline .card.assistant button.inspect").first.click()
    sent = page.locator("#call-dialog .sent .sent-msg pre").all_text_contents()
    assert sent[1:] == [QUESTION, said[1], "And one more night?"]
    page.locator("#call-dialog button:has-text('Close')").click()
    page.locator("#chat .approval button.approve").click()
    page.wait_for_selector("#timeline .run-end.done")
    page.wait_for_function(
        f"() => document.querySelector(\"#sessions tr[data-session='{first_id}'] .turns\").textContent === '2'"
    )
    shot(page, "12-sessions")


def test_a_run_recorded_step_by_step_is_replayed_or_forked_from_any_step(browser: Any, tmp_path: Path) -> None:
    spec = "support.web_agent:build_troubled"
    with opened(browser, spec, "troubled", tmp_path / "runs.db", "--durability", "step") as pg:
        send(pg, "tool")
        end = pg.locator("#timeline .run-end.done")
        end.wait_for()
        end.locator("button.steps").click()
        steps = pg.locator("#timeline .steps-box li.step")
        steps.first.wait_for()
        kinds = [k.split(" ·")[0] for k in pg.locator(".steps-box .step-kind").all_text_contents()]
        assert kinds == ["start", "model", "tools", "model"]
        assert "check_availability" in steps.nth(1).text_content()
        assert "the availability service for Lisbon is down" in steps.nth(2).text_content()
        shot(pg, "13-steps")

        steps.nth(1).locator("button.fork").click()  # fork after the first model call
        pg.locator("#timeline .run-end.done").nth(1).wait_for()
        heads = pg.locator("#timeline .run-head").all_text_contents()
        assert heads[-1].startswith("fork of run ") and " from step 1 · checkpoint fork-" in heads[-1]
        forked = pg.locator("#timeline > div").evaluate_all(
            "ds => { const i = ds.findLastIndex(d => d.classList.contains('run-head'));"
            " return ds.slice(i + 1).map(d => d.className + ': ' + (d.querySelector('.text') || d).textContent); }"
        )
        # the model call is replayed from the record (its reply again, no call made); the tool runs anew
        assert [f.split(":")[0] for f in forked] == [
            "card assistant ended",
            "card tool failed",
            "card assistant ended",
            "run-end done",
        ]
        assert forked[2].endswith("Sorry: Error: the availability service for Lisbon is down")

        pg.locator("#timeline .run-end.done").first.locator("button.steps").click()
        pg.locator("#timeline .steps-box button.replay").click()  # every step: a replay
        pg.locator("#timeline .run-end.done").nth(2).wait_for()
        assert pg.locator("#timeline .run-head").last.text_content().startswith("replay of run ")
        answers = pg.locator("#chat .bubble.assistant .text").all_text_contents()
        assert answers[-1] == answers[0] == "Sorry: Error: the availability service for Lisbon is down"
        shot(pg, "14-forked")
