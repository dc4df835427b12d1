"""Issue 33: the approval policy as data. Tiers computed from the diff, a quorum of
distinct people (never the proposer nor the proposing key's creator), consensus, the
policy's own history, and the last approval going live exactly once under a race."""

from __future__ import annotations

import threading

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.utils import translation

from agents.models import Agent, ApprovalPolicy, PromptVersion, VersionDecision
from agents.policy import validate_runtime_policy
from agents.services import (
    AlreadyApprovedByYou,
    agent_create,
    approval_policy_get,
    approval_policy_update,
    approval_state,
    prompt_version_approve,
    prompt_version_propose,
    prompt_version_reject,
)
from agents.templatetags.review_queue import tier_reason, tier_reason_text
from agents.tests.helpers import policy_with
from agents.tiers import Reason, change_tier
from aihummer.actors import Actor
from aihummer.exceptions import AlreadyDecided
from aihummer.models import Membership
from aihummer.tests.factories import make_agent, make_key
from conftest import make_member

PROFILE = {
    "identity": {"name": "Camille", "role": "Writer"},
    "sections": [
        {"key": "method", "title": "Method", "body": "Plan first."},
        {"key": "sources", "title": "Sources", "body": "No invented figures."},
    ],
    "allowed_tool_names": ["propose_section_edit"],
}


def as_(user) -> Actor:
    return Actor.for_user(user)


@pytest.fixture
def agent(workspace, ada):
    return make_agent(workspace, "writer", by=ada, **PROFILE)


@pytest.fixture
def two_for_power(workspace, ada) -> ApprovalPolicy:
    return approval_policy_update(workspace=workspace, actor=as_(ada), power_approvals=2, reason="power needs two")


@pytest.fixture
def carol(workspace):
    return make_member(workspace, "carol", Membership.Role.REVIEWER)


def add_tool(agent: Agent, actor: Actor) -> PromptVersion:
    return prompt_version_propose(
        agent=agent, changes={"allowed_tool_names": ["propose_section_edit", "delegate"]}, actor=actor
    )


# --- tiers from the diff ----------------------------------------------------------------
def test_tiers_come_from_the_structured_diff(agent):
    live = agent.live_snapshot

    def tier(**changes):
        return said(change_tier(live, {**live, **changes}))

    sections = [{**live["sections"][0], "body": "Plan, then write."}, live["sections"][1]]
    assert tier(sections=sections) == ("wording", [_reason("wording", "section method: body changed")])
    assert tier(identity={**live["identity"], "persona": "Dry."})[0] == "identity"
    assert tier(allowed_tool_names=[])[1] == [_reason("wording", "tool removed: propose_section_edit")]
    raised = tier(allowed_tool_names=["propose_section_edit", "delegate"], runtime_policy=_policy("max_iterations", 40))
    assert raised == (
        "power",
        [
            _reason("power", "tool added: delegate"),
            _reason("power", "runtime_policy.max_iterations: 16 → 40 (raised)"),
        ],
    )
    assert tier(runtime_policy=_policy("max_iterations", 4)) == (
        "wording",
        [_reason("wording", "runtime_policy.max_iterations: 16 → 4 (lowered)")],
    )
    narrowed = _policy("interaction.spawn_agent_ids", ["critic"])
    assert tier(runtime_policy=narrowed)[0] == "wording"  # any agent → one agent
    widened = said(change_tier({**live, "runtime_policy": narrowed}, live))
    assert widened == ("power", [_reason("power", "runtime_policy.interaction.spawn_agent_ids: [critic] → null")])
    none = said(
        change_tier(
            {**live, "runtime_policy": narrowed}, {**live, "runtime_policy": _policy("interaction.spawn_agent_ids", [])}
        )
    )
    assert none == ("wording", [_reason("wording", "runtime_policy.interaction.spawn_agent_ids: [critic] → []")])
    more = _policy("interaction.spawn_agent_ids", ["critic", "writer"])
    assert change_tier({**live, "runtime_policy": narrowed}, {**live, "runtime_policy": more})[0] == "power"


def _policy(path: str, value: object) -> dict:
    return validate_runtime_policy(policy_with(path, value))


def _reason(tier: str, line: str) -> tuple[str, str]:
    return tier, line


def said(result: tuple[str, list[Reason]]) -> tuple[str, list[tuple[str, str]]]:
    """A change's tier and its reasons as the API reads them: (tier, line)."""
    tier, reasons = result
    return tier, [(reason.tier, reason.line) for reason in reasons]


def test_a_proposal_records_its_tier_and_why(agent, alice):
    version = add_tool(agent, as_(alice))

    assert version.tier == "power"
    assert version.tier_reasons == [
        {
            "tier": "power",
            "line": "tool added: delegate",
            "template": "tool added: %(tool)s",
            "names": {"tool": "delegate"},
        }
    ]


def test_a_stored_reason_is_said_in_the_readers_language_its_names_as_code(agent, alice):
    reason = add_tool(agent, as_(alice)).tier_reasons[0]

    with translation.override("fr"):
        assert tier_reason_text(reason) == "outil ajouté : delegate"
        assert tier_reason(reason) == "outil ajouté : <code>delegate</code>"
        # A reason stored before reasons carried their template reads as recorded.
        assert tier_reason_text({"tier": "power", "line": "tool added: delegate"}) == "tool added: delegate"
    hostile = {**reason, "names": {"tool": "<script>x</script>"}}
    assert tier_reason(hostile) == "tool added: <code>&lt;script&gt;x&lt;/script&gt;</code>"


# --- quorum -----------------------------------------------------------------------------
def test_a_power_change_needing_two_waits_at_one_of_two_then_goes_live(agent, alice, bob, carol, ada, two_for_power):
    version = add_tool(agent, as_(ada))  # an admin: a reviewer, but not of her own

    first = prompt_version_approve(version=version, actor=as_(bob), note="fine by me", expected_live=1)

    assert first.status == "pending"
    assert approval_state(first).summary == "1 of 2 approvals"
    assert Agent.objects.get(pk=agent.pk).live_number == 1
    with pytest.raises(AlreadyApprovedByYou, match="You already decided version 2"):
        prompt_version_approve(version=version, actor=as_(bob))
    with pytest.raises(PermissionDenied, match="You proposed this version"):
        prompt_version_approve(version=version, actor=as_(ada))

    second = prompt_version_approve(version=version, actor=as_(carol))

    assert (second.status, second.reviewed_by) == ("approved", carol)
    assert Agent.objects.get(pk=agent.pk).live_number == 2
    decisions = VersionDecision.objects.filter(version=version).order_by("created_at")
    assert [(d.kind, d.reviewer.username, d.seen_live_number, d.note) for d in decisions] == [
        ("approve", "bob", 1, "fine by me"),
        ("approve", "carol", 1, ""),
    ]
    assert approval_state(second).summary == "2 of 2 approvals"
    assert list(version.history.order_by("history_date").values_list("history_change_reason", flat=True)) == [
        "admin:ada: pending",
        "admin:bob: 1 of 2 approvals",
        "admin:carol: approved",
    ]


def test_the_creator_of_the_proposing_key_is_refused(workspace, agent, ada, bob, two_for_power):
    key, _ = make_key(workspace, "ci", "read,write", by=ada)  # no owner: the key answers for itself and ada
    version = add_tool(agent, Actor.for_api_key(key))

    with pytest.raises(PermissionDenied, match="You proposed this version"):
        prompt_version_approve(version=version, actor=as_(ada))

    assert approval_state(version).summary == "0 of 2 approvals"
    assert prompt_version_approve(version=version, actor=as_(bob)).status == "pending"


def test_wording_still_needs_one_where_power_needs_two(agent, alice, bob, two_for_power):
    version = prompt_version_propose(
        agent=agent, changes={"sections": [{"key": "method", "body": "Plan, then write."}]}, actor=as_(alice)
    )

    assert (version.tier, prompt_version_approve(version=version, actor=as_(bob)).status) == ("wording", "approved")


def test_consensus_one_rejection_ends_it(agent, alice, bob, carol, two_for_power):
    version = add_tool(agent, as_(alice))
    prompt_version_approve(version=version, actor=as_(bob))

    rejected = prompt_version_reject(version=version, actor=as_(carol), note="Not this tool.")

    assert (rejected.status, rejected.reviewed_by, rejected.review_note) == ("rejected", carol, "Not this tool.")
    with pytest.raises(AlreadyDecided, match="was already rejected by carol"):
        prompt_version_approve(version=version, actor=as_(make_member(agent.workspace, "dan", "reviewer")))
    assert Agent.objects.get(pk=agent.pk).live_number == 1


def test_without_consensus_a_rejection_is_counted_and_the_quorum_still_decides(
    workspace, agent, alice, bob, carol, ada
):
    approval_policy_update(workspace=workspace, actor=as_(ada), power_approvals=2, power_consensus=False)
    version = add_tool(agent, as_(alice))

    assert prompt_version_reject(version=version, actor=as_(bob), note="Unsure.").status == "pending"
    prompt_version_approve(version=version, actor=as_(carol))
    assert prompt_version_approve(version=version, actor=as_(ada)).status == "approved"
    assert [d.kind for d in approval_state(version).decisions] == ["reject", "approve", "approve"]


def test_the_publish_right_skips_review_only_where_the_tier_needs_one_approval(agent, ada, two_for_power):
    before = PromptVersion.objects.count()
    tools = {"allowed_tool_names": ["propose_section_edit", "delegate"]}

    with pytest.raises(PermissionDenied) as refused:
        prompt_version_propose(agent=agent, changes=tools, actor=as_(ada), mode="live")
    reworded = prompt_version_propose(
        agent=agent, changes={"sections": [{"key": "method", "body": "Plan, then write."}]}, actor=as_(ada), mode="live"
    )

    assert str(refused.value) == (
        "This change is in the power tier (tool added: delegate), which needs 2 approvals under workspace 'acme''s "
        "approval policy: propose it (mode pending)."
    )
    assert (reworded.status, PromptVersion.objects.count()) == ("approved", before + 1)


# --- the policy ---------------------------------------------------------------------------
def test_the_policy_is_the_default_until_changed_and_keeps_its_history(workspace, ada, bob):
    assert approval_policy_get(workspace=workspace).rule("power") == ("power", 1, True, 0)
    with pytest.raises(PermissionDenied, match="bob is a reviewer in workspace 'acme'"):
        approval_policy_update(workspace=workspace, actor=as_(bob), power_approvals=2)
    with pytest.raises(ValidationError) as too_many:
        approval_policy_update(workspace=workspace, actor=as_(ada), power_approvals=4)
    assert too_many.value.message_dict == {"power_approvals": ["Ensure this value is less than or equal to 3."]}
    assert not ApprovalPolicy.objects.exists()

    approval_policy_update(workspace=workspace, actor=as_(ada), power_approvals=2, reason="two for power")
    approval_policy_update(workspace=workspace, actor=as_(ada), power_wait_minutes=30, identity_approvals=2)

    policy = approval_policy_get(workspace=workspace)
    assert (policy.rule("power"), policy.rule("identity")) == (("power", 2, True, 30), ("identity", 2, True, 0))
    history = policy.history.order_by("history_date")
    assert [(h.power_approvals, h.power_wait_minutes, h.history_user, h.history_change_reason) for h in history] == [
        (2, 0, ada, "admin:ada: two for power"),
        (2, 30, ada, "admin:ada: approval policy changed"),
    ]


# --- the race -----------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_ten_racing_second_approvers_put_it_live_exactly_once(workspace, alice, bob, ada):
    agent = make_agent(workspace, "race", by=ada, **PROFILE)  # before the quorum: its v1 is power too
    approval_policy_update(workspace=workspace, actor=as_(ada), power_approvals=2)
    version = add_tool(agent, as_(alice))
    prompt_version_approve(version=version, actor=as_(bob))
    racers = [make_member(workspace, f"reviewer{i}", Membership.Role.REVIEWER) for i in range(10)]
    history_before = Agent.history.filter(id=agent.pk).count()
    barrier = threading.Barrier(len(racers))
    outcomes: list[str] = []

    def approve(user) -> None:
        try:
            barrier.wait()
            outcomes.append(prompt_version_approve(version=version, actor=as_(user)).status)
        except AlreadyDecided as exc:
            outcomes.append(type(exc).__name__)
        finally:
            connection.close()

    threads = [threading.Thread(target=approve, args=(user,)) for user in racers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(outcomes) == ["AlreadyDecided"] * 9 + ["approved"]
    version.refresh_from_db()
    assert (version.status, Agent.objects.get(pk=agent.pk).live_version_id) == ("approved", version.pk)
    assert VersionDecision.objects.filter(version=version).count() == 2
    assert Agent.history.filter(id=agent.pk).count() == history_before + 1  # one go-live, not ten


# --- REST and admin -------------------------------------------------------------------------
def test_rest_reads_and_changes_the_policy_and_approve_says_one_of_two(client, workspace, agent, ada, bob, alice):
    client.force_login(ada)
    url, headers = "/v1/admin/approval-policy", {"X-Workspace": "acme"}

    default = client.get(url, headers=headers).json()
    bad = client.patch(url, {"power": {"approvals": 4}}, content_type="application/json", headers=headers)
    changed = client.patch(
        url,
        {"power": {"approvals": 2, "wait_minutes": 0}, "reason": "two"},
        content_type="application/json",
        headers=headers,
    )
    client.force_login(bob)
    refused = client.patch(url, {"power": {"approvals": 1}}, content_type="application/json", headers=headers)
    version = add_tool(agent, as_(alice))
    approved = client.post(
        f"/v1/admin/prompt-versions/{version.pk}/approve", {}, content_type="application/json", headers=headers
    )

    assert default["power"] == {"approvals": 1, "consensus": True, "wait_minutes": 0}
    assert (bad.status_code, bad.json()["error"]["fields"]) == (
        400,
        {"power.approvals": ["Ensure this value is less than or equal to 3."]},
    )
    assert (changed.status_code, changed.json()["power"]) == (
        200,
        {"approvals": 2, "consensus": True, "wait_minutes": 0},
    )
    assert refused.status_code == 403
    body = approved.json()
    assert (approved.status_code, body["status"], body["tier"], body["approvals"]["summary"]) == (
        200,
        "pending",
        "power",
        "1 of 2 approvals",
    )
    assert body["tier_reasons"] == [{"tier": "power", "line": "tool added: delegate"}]


def test_the_admin_edits_the_policy_through_the_service_with_history(client, workspace, ada):
    client.force_login(ada)
    fields = {
        f"{tier}_{name}": value
        for tier in ApprovalPolicy.TIERS
        for name, value in (("approvals", "1"), ("consensus", "on"), ("wait_minutes", "0"))
    }

    added = client.post(
        "/admin/agents/approvalpolicy/add/", {"workspace": workspace.pk, **fields, "power_approvals": "3"}
    )
    policy = ApprovalPolicy.objects.get()
    changed = client.post(f"/admin/agents/approvalpolicy/{policy.pk}/change/", {**fields, "power_approvals": "2"})
    history = client.get(f"/admin/agents/approvalpolicy/{policy.pk}/history/")

    assert (added.status_code, changed.status_code, history.status_code) == (302, 302, 200)
    assert list(policy.history.order_by("history_date").values_list("power_approvals", "history_user__username")) == [
        (3, "ada"),
        (2, "ada"),
    ]


def test_rest_lists_the_policy_history_newest_first_in_cursor_pages(
    client, workspace, ada, bob, charlie, django_assert_num_queries
):
    approval_policy_update(workspace=workspace, actor=as_(ada), power_approvals=2, reason="two for power")
    approval_policy_update(workspace=workspace, actor=as_(ada), power_wait_minutes=30)
    url, headers = "/v1/admin/approval-policy/history", {"X-Workspace": "acme"}
    client.force_login(bob)

    with django_assert_num_queries(5):  # session, user, membership, workspace, the page with its users
        first = client.get(f"{url}?limit=1", headers=headers)
    second = client.get(first.json()["next"], headers=headers)
    client.force_login(charlie)
    foreign = client.get(url, headers=headers)

    newest = first.json()["results"]
    assert [(row["change"], row["changed_by"], row["reason"]) for row in newest] == [
        ("changed", "ada", "admin:ada: approval policy changed")
    ]
    assert newest[0]["policy"]["power"] == {"approvals": 2, "consensus": True, "wait_minutes": 30}
    oldest = second.json()["results"]
    assert [(row["change"], row["reason"], row["policy"]["power"]["wait_minutes"]) for row in oldest] == [
        ("created", "admin:ada: two for power", 0)
    ]
    assert second.json()["next"] is None
    assert foreign.status_code == 404


def test_a_publisher_new_agent_waits_for_the_power_quorum(workspace, ada, bob, carol, two_for_power):
    created = agent_create(workspace=workspace, actor=as_(ada), key="fresh", name="Fresh")
    v1 = created.versions.get()

    assert (created.live_version_id, v1.status, v1.tier) == (None, "pending", "power")
    assert approval_state(v1).summary == "0 of 2 approvals"
    prompt_version_approve(version=v1, actor=as_(bob))
    prompt_version_approve(version=v1, actor=as_(carol))
    created.refresh_from_db()
    assert created.live_version_id == v1.pk


def test_a_publisher_new_agent_goes_live_at_once_where_power_needs_one(workspace, ada):
    created = agent_create(workspace=workspace, actor=as_(ada), key="fresh", name="Fresh")

    assert created.live_version.status == "approved"
