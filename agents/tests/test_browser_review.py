"""The review desk in a real browser (headless Chromium through Playwright): a reviewer
approves one proposal and rejects another, an editor proposes a section edit, then
both agents run on the echo provider."""

import re

import pytest
from playwright.sync_api import expect

from agents.models import Agent, PromptVersion
from agents.runtime import agent_turn_run
from agents.services import agent_create, prompt_version_propose
from aihummer.actors import Actor
from aihummer.tests.browser import admin_log_in
from aihummer.tests.factories import echo_sp, make_echo_preset

SNAPSHOT = {
    "identity": {"name": "Camille", "role": "Rédactrice"},
    "sections": [{"key": "methode", "title": "Méthode", "body": "Un plan en trois points."}],
}


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_clears_the_queue_and_an_editor_proposes_in_a_browser(
    live_server, browser, workspace, alice, bob, ada
):
    operator = Actor.for_operator()
    make_echo_preset(workspace, by=operator)
    first = agent_create(workspace=workspace, actor=operator, key="first", name="First", snapshot=SNAPSHOT)
    second = agent_create(workspace=workspace, actor=operator, key="second", name="Second", snapshot=SNAPSHOT)
    edit = {"sections": [{"key": "methode", "title": "Méthode", "body": "Un plan en deux points."}]}
    to_approve = prompt_version_propose(agent=first, changes=edit, actor=Actor.for_user(alice), reason="plus court")
    to_reject = prompt_version_propose(agent=second, changes=edit, actor=Actor.for_user(alice), reason="idem")

    # bob opens the queue, reads the diff of the first proposal and approves it
    page = admin_log_in(browser, live_server.url, "bob", landmark="#aih-review-queue")
    expect(page.locator(".aih-queue-count")).to_have_text("2")
    page.click("#aih-review-queue")
    page.click("text=first v2")
    expect(page.locator("#aih-diff del")).to_contain_text("trois")
    expect(page.locator("#aih-diff ins")).to_contain_text("deux")
    expect(page.locator("#aih-prompt-after ins")).to_contain_text("deux")
    page.click("input[name=_approve]")
    expect(page.locator(".messagelist")).to_contain_text(re.compile("first v2 approved", re.IGNORECASE))

    # then opens the second and rejects it with a note
    page.click("text=second v2")
    page.fill("#id_note", "Garder trois points.")
    page.click("input[name=_reject]")
    expect(page.locator(".messagelist")).to_contain_text(re.compile("second v2 rejected", re.IGNORECASE))
    expect(page.locator(".aih-queue-count")).to_have_text("0")

    # alice proposes a section edit through the form
    editor = admin_log_in(browser, live_server.url, "alice", landmark="#aih-review-queue")
    editor.goto(f"/admin/agents/agent/{first.pk}/change/")
    editor.click("#aih-propose-link")
    editor.fill("textarea[name='sections-0-body']", "Un plan en deux points, puis une conclusion.")
    editor.fill("#id_reason", "Ajouter une conclusion")
    editor.click("#aih-propose-submit")
    expect(editor.locator(".messagelist")).to_contain_text(
        re.compile("proposed as first v3; it waits for a reviewer", re.IGNORECASE)
    )
    expect(editor.locator("#aih-diff ins")).to_contain_text("conclusion")

    to_approve.refresh_from_db()
    to_reject.refresh_from_db()
    proposed = PromptVersion.objects.get(agent=first, number=3)
    assert (to_approve.status, to_approve.reviewed_by) == ("approved", bob)
    assert (to_reject.status, to_reject.review_note) == ("rejected", "Garder trois points.")
    assert (proposed.status, proposed.source) == ("pending", "admin:alice")

    # both agents on echo: the approved one runs the approved prompt, the rejected one is unchanged
    first_turn = agent_turn_run(agent=Agent.objects.get(pk=first.pk), message="Bonjour", actor=Actor.for_user(alice))
    second_turn = agent_turn_run(agent=Agent.objects.get(pk=second.pk), message="Bonjour", actor=Actor.for_user(alice))
    assert first_turn.answer == f"[echo echo-1] Bonjour #sp={echo_sp(to_approve.snapshot)}"
    assert second_turn.answer == f"[echo echo-1] Bonjour #sp={echo_sp(second.live_version.snapshot)}"
    assert echo_sp(to_reject.snapshot) != echo_sp(second.live_version.snapshot)
