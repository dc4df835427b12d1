"""Issue 33 in a real browser (headless Chromium): a power change needing two people.
The review page says the tier, why (the diff line) and "k of n approvals"; the first
reviewer's approval leaves it pending at 1 of 2, the second puts it live."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from agents.models import Agent
from agents.services import approval_policy_update, prompt_version_propose
from aihummer.actors import Actor
from aihummer.models import Membership
from aihummer.tests.browser import admin_log_in
from aihummer.tests.factories import make_agent, make_echo_preset
from conftest import make_member


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_put_a_power_change_live_one_approval_each(
    live_server, browser, workspace, alice, bob, ada, tmp_path: Path
):
    carol = make_member(workspace, "carol", Membership.Role.REVIEWER)
    make_echo_preset(workspace, by=ada)
    agent = make_agent(workspace, "writer", by=ada, allowed_tool_names=["propose_section_edit"])
    approval_policy_update(workspace=workspace, actor=Actor.for_user(ada), power_approvals=2)
    version = prompt_version_propose(
        agent=agent,
        changes={"allowed_tool_names": ["propose_section_edit", "delegate"]},
        actor=Actor.for_user(alice),
        reason="ask the critic",
    )
    review = f"/admin/agents/promptversion/{version.pk}/review/"

    page = admin_log_in(browser, live_server.url, "bob", landmark="#aih-review-queue")
    page.goto(review)
    expect(page.locator("#aih-tier")).to_have_text("power")
    expect(page.locator("#aih-approval-count")).to_have_text("0 of 2 approvals")
    expect(page.locator("#aih-tier-reasons")).to_contain_text("tool added: delegate")
    page.click("input[name=_approve]")
    expect(page.locator(".messagelist")).to_contain_text("Writer v2: approval recorded, 1 of 2 approvals.")
    expect(page.locator("#aih-approval-count")).to_have_text("1 of 2 approvals")
    expect(page.locator("#aih-decisions")).to_contain_text("bob")
    expect(page.locator("#aih-decide-refusal")).to_contain_text("You approved this version at")
    page.screenshot(path=str(tmp_path / "one-of-two.png"), full_page=True)
    assert Agent.objects.get(pk=agent.pk).live_number == 1

    second = admin_log_in(browser, live_server.url, carol.username, landmark="#aih-review-queue")
    second.goto(review)
    second.click("input[name=_approve]")
    expect(second.locator(".messagelist")).to_contain_text(re.compile("writer v2 approved", re.IGNORECASE))

    assert Agent.objects.get(pk=agent.pk).live_number == 2
