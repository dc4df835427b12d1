"""Issue 33: stale proposals rebased. Non-overlapping changes carry onto live as a new
pending version (evidence run again, approvals start over, the old one withdrawn with
a link); overlapping ones are refused and shown three ways."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from agents.models import EvidenceRun, PromptVersion
from agents.rebase import Conflict, three_way
from agents.services import (
    RebaseConflict,
    agent_test_case_create,
    approval_policy_update,
    approval_state,
    prompt_version_approve,
    prompt_version_propose,
    prompt_version_rebase,
)
from aihummer.actors import Actor
from aihummer.models import Membership
from aihummer.tests.factories import make_agent
from conftest import make_member

SECTIONS = [
    {"key": "method", "title": "Method", "body": "Plan first."},
    {"key": "sources", "title": "Sources", "body": "No invented figures."},
]


def sections(**bodies: str) -> dict:
    return {"sections": [{**section, "body": bodies.get(section["key"], section["body"])} for section in SECTIONS]}


def propose(agent, user, changes: dict, **kwargs: object) -> PromptVersion:
    return prompt_version_propose(agent=agent, changes=changes, actor=Actor.for_user(user), **kwargs)


@pytest.fixture
def agent(workspace, ada, echo_preset):
    return make_agent(workspace, "writer", by=ada, sections=SECTIONS)


def test_non_overlapping_section_edits_rebase_into_both_and_rerun_evidence(
    workspace, agent, alice, bob, ada, django_capture_on_commit_callbacks
):
    approval_policy_update(workspace=workspace, actor=Actor.for_user(ada), wording_approvals=2)
    agent_test_case_create(agent=agent, actor=Actor.for_user(ada), name="greets", message="Hello")
    stale = propose(agent, alice, sections(method="Plan, then write."))
    prompt_version_approve(version=stale, actor=Actor.for_user(bob))  # 1 of 2, then live moves
    moved = propose(agent, ada, sections(sources="Cite every figure."))
    for reviewer in (bob, make_member(workspace, "carol", Membership.Role.REVIEWER)):
        prompt_version_approve(version=moved, actor=Actor.for_user(reviewer))

    with django_capture_on_commit_callbacks(execute=True):
        rebased = prompt_version_rebase(version=stale, actor=Actor.for_user(bob), expected_live=3)

    stale.refresh_from_db()
    assert (rebased.number, rebased.status, rebased.base_version.number) == (4, "pending", 3)
    assert [(s["key"], s["body"]) for s in rebased.snapshot["sections"]] == [
        ("method", "Plan, then write."),
        ("sources", "Cite every figure."),
    ]
    assert (stale.status, stale.superseded_by) == ("withdrawn", rebased)
    assert (rebased.proposed_by, rebased.source) == (alice, "admin:alice (rebased by admin:bob)")
    assert approval_state(rebased).summary == "0 of 2 approvals"  # approvals start over
    (run,) = EvidenceRun.objects.filter(version=rebased)
    assert (run.trigger, run.status, run.cases_total) == ("proposed", "done", 1)
    with pytest.raises(PermissionDenied, match="You proposed this version"):
        prompt_version_approve(version=rebased, actor=Actor.for_user(bob))  # the rebaser: not its reviewer
    assert stale.history.latest().history_change_reason == "admin:bob: rebased onto v3 as v4"


def test_overlapping_edits_are_refused_and_the_review_page_shows_three_ways(agent, alice, ada, bob, client):
    stale = propose(agent, alice, sections(method="Plan, then write."))
    propose(agent, ada, sections(method="Outline first."), mode="live")

    with pytest.raises(RebaseConflict) as refused:
        prompt_version_rebase(version=stale, actor=Actor.for_user(bob))
    client.force_login(bob)
    page = client.get(f"/admin/agents/promptversion/{stale.pk}/review/").content.decode()

    assert str(refused.value) == (
        "Version 2 and live v3 both changed section method: it cannot be rebased automatically. Propose the merged "
        "text by hand (the review page shows base, live and proposal)."
    )
    assert refused.value.extra == {"conflicts": ["section method"]}
    assert PromptVersion.objects.get(pk=stale.pk).status == "pending"
    assert 'id="aih-three-way"' in page and "aih-rebase-submit" not in page
    for text in ("Plan first.", "Outline first.", "Plan, then write."):
        assert text in page


def test_the_review_page_offers_the_rebase_and_it_lands_on_the_new_version(agent, alice, ada, bob, client):
    stale = propose(agent, alice, sections(method="Plan, then write."))
    propose(agent, ada, {"onboarding": "Say hello."}, mode="live")
    client.force_login(bob)
    review = f"/admin/agents/promptversion/{stale.pk}/review/"

    offered = client.get(review).content.decode()
    response = client.post(review, {"_rebase": "1", "live_number": "3"}, follow=True)

    assert 'value="Rebase onto v3"' in offered
    rebased = PromptVersion.objects.get(agent=agent, number=4)
    assert response.redirect_chain[-1][0] == f"/admin/agents/promptversion/{rebased.pk}/review/"
    assert "Writer v2 rebased onto v3 as v4: it waits for its approvals again." in response.content.decode()
    assert rebased.snapshot["onboarding"] == "Say hello."
    assert rebased.snapshot["sections"][0]["body"] == "Plan, then write."


def test_three_way_merges_parts_and_orders_and_names_conflicts(agent):
    base = agent.live_snapshot
    reordered = {**base, "sections": list(reversed(base["sections"]))}
    edited = {**base, "sections": [{**base["sections"][0], "body": "Plan, then write."}, base["sections"][1]]}
    policy_live = {**base, "runtime_policy": {**base["runtime_policy"], "max_iterations": 8}}
    policy_proposal = {**base, "runtime_policy": {**base["runtime_policy"], "max_iterations": 4}}

    merged = three_way(base, edited, reordered)
    conflict = three_way(base, policy_live, policy_proposal)

    assert [(s["key"], s["body"]) for s in merged.snapshot["sections"]] == [
        ("sources", "No invented figures."),
        ("method", "Plan, then write."),
    ]
    assert conflict.conflicts == [Conflict("runtime_policy.max_iterations", "16", "8", "4")]
    assert three_way(base, policy_live, edited).snapshot["runtime_policy"]["max_iterations"] == 8


def test_rest_says_whether_a_stale_proposal_rebases_and_rebases_it(agent, alice, ada, bob, client):
    clean = propose(agent, alice, sections(method="Plan, then write."))
    clashing = propose(agent, ada, sections(sources="Only sourced figures."))
    propose(agent, ada, {**sections(sources="Cite every figure."), "onboarding": "Hi."}, mode="live")  # v4
    client.force_login(bob)
    headers = {"X-Workspace": "acme"}

    detail = "/v1/admin/prompt-versions/{}"
    plans = [client.get(detail.format(v.pk), headers=headers).json()["rebase"] for v in (clean, clashing)]
    refused = client.post(f"/v1/admin/prompt-versions/{clashing.pk}/rebase", headers=headers)
    rebased = client.post(f"/v1/admin/prompt-versions/{clean.pk}/rebase", headers=headers)

    assert plans == [
        {"possible": True, "conflicts": []},
        {
            "possible": False,
            "conflicts": [
                {
                    "part": "section sources",
                    "base": "Sources\nNo invented figures.",
                    "live": "Sources\nCite every figure.",
                    "proposal": "Sources\nOnly sourced figures.",
                }
            ],
        },
    ]
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "rebase_conflict")
    body = rebased.json()
    assert (rebased.status_code, body["number"], body["status"], body["base_version"]) == (202, 5, "pending", 4)


def test_three_way_merges_tool_lists_tool_by_tool_and_refuses_two_different_reorders(agent):
    base = {**agent.live_snapshot, "allowed_tool_names": ["delegate", "web_fetch", "mail_send"]}
    tools = lambda *names: {**base, "allowed_tool_names": list(names)}  # noqa: E731

    one_added_one_removed = three_way(
        base, tools("delegate", "web_fetch", "mail_send", "run_workflow"), tools("delegate", "mail_send")
    )
    both_added = three_way(
        base,
        tools("delegate", "web_fetch", "mail_send", "run_workflow"),
        tools("run_workflow", "delegate", "web_fetch", "mail_send"),
    )
    reorder_and_add = three_way(
        base, tools("mail_send", "web_fetch", "delegate"), tools("delegate", "web_fetch", "mail_send", "run_workflow")
    )
    two_reorders = three_way(
        base, tools("mail_send", "web_fetch", "delegate"), tools("web_fetch", "delegate", "mail_send")
    )
    same_reorder = three_way(
        base, tools("mail_send", "web_fetch", "delegate"), tools("mail_send", "web_fetch", "delegate", "run_workflow")
    )

    assert one_added_one_removed.snapshot["allowed_tool_names"] == ["delegate", "mail_send", "run_workflow"]
    assert both_added.snapshot["allowed_tool_names"] == ["delegate", "web_fetch", "mail_send", "run_workflow"]
    # A tool the proposal added goes after the tool that precedes it in the proposal.
    assert reorder_and_add.snapshot["allowed_tool_names"] == ["mail_send", "run_workflow", "web_fetch", "delegate"]
    assert two_reorders.conflicts == [
        Conflict(
            "tools order",
            "delegate, web_fetch, mail_send",
            "mail_send, web_fetch, delegate",
            "web_fetch, delegate, mail_send",
        )
    ]
    assert same_reorder.snapshot["allowed_tool_names"] == ["mail_send", "web_fetch", "delegate", "run_workflow"]
