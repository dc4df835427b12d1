"""The review page's rendered-prompt panes in a real browser (headless Chromium through
Playwright): the live and candidate panes of a long prompt each scroll to their end,
and scrolling one brings the other to the same place."""

import pytest
from playwright.sync_api import expect

from agents.services import agent_create, prompt_version_propose
from aihummer.actors import Actor
from aihummer.tests.browser import admin_log_in
from aihummer.tests.factories import make_echo_preset

LONG = "\n".join(f"Point {n} : une règle de rédaction à suivre." for n in range(120))


@pytest.mark.django_db(transaction=True)
def test_the_live_and_candidate_panes_scroll_together(live_server, browser, workspace, alice, bob) -> None:
    # Given a proposal that changes a long prompt near its start
    operator = Actor.for_operator()
    make_echo_preset(workspace, by=operator)
    snapshot = {"identity": {"name": "Camille"}, "sections": [{"key": "regles", "title": "Règles", "body": LONG}]}
    agent = agent_create(workspace=workspace, actor=operator, key="camille", name="Camille", snapshot=snapshot)
    edit = {"sections": [{"key": "regles", "title": "Règles", "body": "Point neuf, en tête.\n" + LONG}]}
    version = prompt_version_propose(agent=agent, changes=edit, actor=Actor.for_user(alice), reason="un point de plus")

    # When bob opens its review page and scrolls the live pane to the middle, then the candidate to its end
    page = admin_log_in(browser, live_server.url, "bob", landmark="#aih-review-queue")
    page.goto(f"/admin/agents/promptversion/{version.pk}/review/")
    before, after = page.locator("#aih-prompt-before"), page.locator("#aih-prompt-after")
    expect(after.locator("ins")).to_contain_text("Point neuf")
    sizes = before.evaluate("e => [e.scrollHeight, e.clientHeight]")
    assert sizes[0] > sizes[1] * 2  # a pane of its own height, that scrolls

    def fraction(pane) -> float:
        return pane.evaluate("e => e.scrollTop / (e.scrollHeight - e.clientHeight)")

    before.evaluate("e => { e.scrollTop = (e.scrollHeight - e.clientHeight) / 2; }")
    page.wait_for_function("() => document.querySelector('#aih-prompt-after').scrollTop > 0")

    # Then the other pane follows to the same place, both ways, and each reaches its end
    assert abs(fraction(after) - 0.5) < 0.02
    after.evaluate("e => { e.scrollTop = e.scrollHeight; }")
    at_end = "e => e.scrollTop + e.clientHeight >= e.scrollHeight - 1"
    page.wait_for_function(f"() => ({at_end})(document.querySelector('#aih-prompt-before'))")
    assert fraction(after) > 0.99 and fraction(before) > 0.99
    expect(before).to_contain_text("Point 119")
    page.wait_for_timeout(200)  # no echo left bouncing between the panes
    assert fraction(before) > 0.99 and fraction(after) > 0.99
