"""The approval queue's services: propose, approve, reject, withdraw, restore, clone."""

import threading

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection

from agents.models import Agent, AgentSection, PromptVersion
from agents.services import (
    IdenticalToLive,
    StaleProposal,
    agent_clone,
    agent_create,
    prompt_version_approve,
    prompt_version_propose,
    prompt_version_reject,
    prompt_version_restore,
    prompt_version_reverts,
    prompt_version_withdraw,
    skill_as_snapshot_entry,
    skill_create,
    skill_update,
)
from aihummer.actors import Actor
from aihummer.exceptions import AlreadyDecided, NotFound
from aihummer.models import Membership
from aihummer.services import api_key_create
from aihummer.tests.factories import make_echo_preset

SNAPSHOT = {
    "identity": {"name": "Camille", "role": "Rédactrice", "language": "fr"},
    "sections": [
        {"key": "methode", "title": "Méthode", "body": "Un plan en trois points."},
        {"key": "sources", "title": "Sources", "body": "Aucun chiffre inventé."},
    ],
    "allowed_tool_names": ["propose_section_edit"],
}


def actor(user):
    return Actor.for_user(user)


def section_edit(body: str) -> dict:
    return {"sections": [{"key": "methode", "title": "Méthode", "body": body}, SNAPSHOT["sections"][1]]}


def counts() -> tuple[int, int, int, int]:
    return (
        PromptVersion.all_objects.count(),
        PromptVersion.history.count(),
        Agent.history.count(),
        AgentSection.history.count(),
    )


@pytest.fixture
def agent(workspace, ada):
    return agent_create(workspace=workspace, actor=actor(ada), key="redacteur", name="Rédacteur", snapshot=SNAPSHOT)


@pytest.fixture
def proposal(agent, alice, bob):
    return prompt_version_propose(agent=agent, changes=section_edit("Un plan en deux points."), actor=actor(alice))


# --- propose --------------------------------------------------------------------------
def test_a_pending_proposal_leaves_the_live_agent_untouched(agent, alice):
    version = prompt_version_propose(
        agent=agent, changes=section_edit("Deux points."), actor=actor(alice), reason="plus court"
    )

    agent.refresh_from_db()
    assert (version.number, version.status, version.source, version.reason) == (
        2,
        "pending",
        "admin:alice",
        "plus court",
    )
    assert version.base_version == agent.live_version
    assert version.proposer_identity == f"user:{alice.pk}"
    assert agent.live_version.number == 1
    assert agent.sections.get(key="methode").body == "Un plan en trois points."


def test_live_mode_applies_at_once_for_a_publisher(agent, ada):
    version = prompt_version_propose(agent=agent, changes=section_edit("Deux points."), actor=actor(ada), mode="live")

    agent.refresh_from_db()
    assert (version.status, version.reviewed_by, version.review_note) == ("approved", ada, "applied directly")
    assert agent.live_version == version
    assert agent.sections.get(key="methode").body == "Deux points."


def test_live_mode_is_refused_to_an_editor_naming_the_missing_right(agent, alice):
    before = counts()

    with pytest.raises(PermissionDenied) as refused:
        prompt_version_propose(agent=agent, changes=section_edit("x"), actor=actor(alice), mode="live")

    assert (
        str(refused.value)
        == "alice is an editor in workspace 'acme'; publishing changes directly needs the admin role."
    )
    assert counts() == before


def test_live_mode_for_keys_follows_the_publish_scope(agent, workspace, ada):
    writer, _ = api_key_create(workspace=workspace, name="writer", scopes="write", actor=actor(ada))
    publisher, _ = api_key_create(workspace=workspace, name="publisher", scopes="write,publish", actor=actor(ada))

    with pytest.raises(PermissionDenied, match="lacks the 'publish' scope"):
        prompt_version_propose(agent=agent, changes=section_edit("x"), actor=Actor.for_api_key(writer), mode="live")
    version = prompt_version_propose(
        agent=agent,
        changes=section_edit("y"),
        actor=Actor.for_api_key(publisher, surface="mcp", client_name="claude"),
        mode="live",
    )

    assert (version.status, version.source) == ("approved", "mcp:publisher/claude")


def test_agents_never_publish_and_may_not_widen_their_tools_or_policy(agent, alice):
    as_agent = Actor.for_agent(agent, on_behalf_of=actor(alice))
    before = counts()

    with pytest.raises(PermissionDenied, match="Agent 'redacteur' may not do publishing changes directly"):
        prompt_version_propose(agent=agent, changes=section_edit("x"), actor=as_agent, mode="live")
    with pytest.raises(PermissionDenied) as tools:
        prompt_version_propose(agent=agent, changes={"allowed_tool_names": ["delegate"]}, actor=as_agent)
    with pytest.raises(PermissionDenied) as policy:
        prompt_version_propose(agent=agent, changes={"runtime_policy": {"max_iterations": 200}}, actor=as_agent)

    assert str(tools.value) == (
        "An agent may not widen its own power (tool added: delegate). You may propose wording changes and "
        "narrowing ones (removing a tool, lowering a limit); ask a person to propose this one."
    )
    assert str(policy.value).startswith(
        "An agent may not widen its own power (runtime_policy.max_iterations: 16 → 200 (raised))."
    )
    assert counts() == before
    version = prompt_version_propose(agent=agent, changes=section_edit("Trois points, courts."), actor=as_agent)
    assert (version.status, version.source, version.proposer_identity) == (
        "pending",
        "agent:redacteur",
        f"user:{alice.pk}",
    )


def test_a_proposal_identical_to_live_records_nothing(agent, alice):
    before = counts()

    with pytest.raises(IdenticalToLive) as identical:
        prompt_version_propose(agent=agent, changes={"sections": SNAPSHOT["sections"]}, actor=actor(alice))

    assert str(identical.value) == "Identical to live version 1; nothing recorded."
    assert counts() == before


def test_the_same_proposal_twice_from_one_proposer_returns_the_open_one(agent, alice, bob):
    first = prompt_version_propose(agent=agent, changes=section_edit("Deux."), actor=actor(alice))
    before = counts()

    again = prompt_version_propose(agent=agent, changes=section_edit("Deux."), actor=actor(alice))

    assert again == first
    assert counts() == before
    from_bob = prompt_version_propose(agent=agent, changes=section_edit("Deux."), actor=actor(bob))
    assert from_bob.number == 3


def test_every_change_needs_review_makes_publishers_propose(agent, workspace, ada):
    workspace.every_change_needs_review = True
    workspace.save()
    agent.refresh_from_db()

    with pytest.raises(PermissionDenied, match="requires a second person for every change"):
        prompt_version_propose(agent=agent, changes=section_edit("x"), actor=actor(ada), mode="live")
    assert prompt_version_propose(agent=agent, changes=section_edit("x"), actor=actor(ada)).status == "pending"


def test_sandbox_agents_apply_at_once_and_never_enter_the_queue(workspace, alice, ada):

    make_echo_preset(workspace, by=actor(ada))
    sandbox = agent_create(
        workspace=workspace, actor=actor(alice), key="sb_x", name="X", snapshot=SNAPSHOT, is_sandbox=True
    )

    version = prompt_version_propose(agent=sandbox, changes=section_edit("Vite."), actor=actor(alice))

    sandbox.refresh_from_db()
    assert (version.status, version.is_sandbox, sandbox.live_version) == ("approved", True, version)
    assert not PromptVersion.objects.filter(agent_id=sandbox.pk).exists()
    assert PromptVersion.all_objects.filter(agent_id=sandbox.pk).count() == 2


@pytest.mark.parametrize(
    ("changes", "mode", "field", "message"),
    [
        (section_edit("x"), "publish", "mode", "Unknown mode 'publish'; use pending or live."),
        (
            {"runtime_policy": {"max_iterations": 0}},
            "pending",
            "runtime_policy",
            "$.runtime_policy.max_iterations: must be at least 1 (got 0)",
        ),
        (
            {"sections": [], "identity": {"name": "", "role": ""}},
            "pending",
            "snapshot",
            "The agent would be told nothing: give an identity, sections or a prompt.",
        ),
        (
            {"colour": "blue"},
            "pending",
            "colour",
            "unknown snapshot key; use one of: identity, system_prompt, sections, "
            "onboarding, skills, runtime_policy, allowed_tool_names, preset",
        ),
    ],
)
def test_bad_proposals_are_field_errors_and_record_nothing(agent, alice, changes, mode, field, message):
    before = counts()

    with pytest.raises(ValidationError) as invalid:
        prompt_version_propose(agent=agent, changes=changes, actor=actor(alice), mode=mode)

    assert message in invalid.value.message_dict[field]
    assert counts() == before


def test_an_oversized_prompt_is_refused(agent, alice, settings):
    settings.AIHUMMER_MAX_TEXT_CHARS = 100

    with pytest.raises(ValidationError) as invalid:
        prompt_version_propose(agent=agent, changes=section_edit("x" * 101), actor=actor(alice))

    assert invalid.value.message_dict["sections"] == ["$.sections[0].body: at most 100 characters (got 101)"]


def test_another_workspaces_agent_answers_as_missing(agent, charlie):
    with pytest.raises(NotFound, match=r"Unknown agent\."):
        prompt_version_propose(agent=agent, changes=section_edit("x"), actor=actor(charlie))


# --- decide ---------------------------------------------------------------------------
def test_approval_puts_the_proposal_live_and_records_the_reviewer(proposal, bob):
    version = prompt_version_approve(version=proposal, actor=actor(bob), note="ok")

    agent = Agent.objects.get(pk=proposal.agent_id)
    assert (version.status, version.reviewed_by, version.review_note) == ("approved", bob, "ok")
    assert version.reviewed_at is not None
    assert agent.live_version == version
    assert agent.sections.get(key="methode").body == "Un plan en deux points."
    assert list(version.history.values_list("status", flat=True).order_by("history_date")) == ["pending", "approved"]


def test_rejection_needs_a_note_and_never_applies(proposal, bob):
    with pytest.raises(ValidationError) as invalid:
        prompt_version_reject(version=proposal, actor=actor(bob), note="  ")
    assert invalid.value.message_dict == {"note": ["Say why you reject it: the proposer reads this note."]}

    version = prompt_version_reject(version=proposal, actor=actor(bob), note="Trop vague")

    agent = Agent.objects.get(pk=proposal.agent_id)
    assert (version.status, version.review_note) == ("rejected", "Trop vague")
    assert agent.live_version.number == 1
    assert agent.sections.get(key="methode").body == "Un plan en trois points."


def test_deciding_a_decided_version_says_it_was_already_decided(proposal, bob, ada):
    prompt_version_reject(version=proposal, actor=actor(bob), note="non")
    before = counts()

    with pytest.raises(AlreadyDecided, match="Version 2 of 'redacteur' was already rejected by bob at "):
        prompt_version_approve(version=proposal, actor=actor(ada))
    assert counts() == before


def test_editors_may_not_decide(proposal, alice, vic):
    with pytest.raises(PermissionDenied, match="approving or rejecting needs the reviewer role"):
        prompt_version_approve(version=proposal, actor=actor(alice))
    with pytest.raises(PermissionDenied, match="vic is a viewer"):
        prompt_version_reject(version=proposal, actor=actor(vic), note="no")


def test_only_the_proposer_withdraws(proposal, alice, bob):
    with pytest.raises(PermissionDenied, match="Only the proposer may withdraw"):
        prompt_version_withdraw(version=proposal, actor=actor(bob))

    version = prompt_version_withdraw(version=proposal, actor=actor(alice))

    assert version.status == "withdrawn"
    with pytest.raises(AlreadyDecided, match="was already withdrawn"):
        prompt_version_approve(version=proposal, actor=actor(bob))


# --- four eyes ------------------------------------------------------------------------
FOUR_EYES = "You proposed this version: another person must decide it (four eyes)."


def test_four_eyes_for_a_user_and_a_superuser(agent, ada, root):
    by_ada = prompt_version_propose(agent=agent, changes=section_edit("a"), actor=actor(ada))
    by_root = prompt_version_propose(agent=agent, changes=section_edit("b"), actor=actor(root))

    for version, person in ((by_ada, ada), (by_root, root)):
        with pytest.raises(PermissionDenied) as refused:
            prompt_version_approve(version=version, actor=actor(person))
        assert str(refused.value) == FOUR_EYES


def test_four_eyes_for_a_key_with_an_owner_and_without(agent, workspace, ada, bob, root):
    owned, _ = api_key_create(workspace=workspace, name="bobs", scopes="write", owner=bob, actor=actor(ada))
    ownerless, _ = api_key_create(workspace=workspace, name="bot", scopes="write", actor=actor(ada))
    by_owned = prompt_version_propose(agent=agent, changes=section_edit("a"), actor=Actor.for_api_key(owned))
    by_bot = prompt_version_propose(agent=agent, changes=section_edit("b"), actor=Actor.for_api_key(ownerless))

    with pytest.raises(PermissionDenied, match="four eyes"):
        prompt_version_approve(version=by_owned, actor=actor(bob))
    assert prompt_version_approve(version=by_bot, actor=actor(bob)).status == "approved"
    # The key's creator answers for it too (issue 10): someone else decides.
    with pytest.raises(PermissionDenied, match="four eyes"):
        prompt_version_reject(version=by_owned, actor=actor(ada), note="later")
    assert prompt_version_reject(version=by_owned, actor=actor(root), note="later").status == "rejected"


def test_four_eyes_for_an_agent_acting_for_a_person(agent, bob, ada):
    as_agent = Actor.for_agent(agent, on_behalf_of=actor(bob))
    version = prompt_version_propose(agent=agent, changes=section_edit("a"), actor=as_agent)

    with pytest.raises(PermissionDenied, match="four eyes"):
        prompt_version_approve(version=version, actor=actor(bob))
    assert prompt_version_approve(version=version, actor=actor(ada)).status == "approved"


# --- stale ----------------------------------------------------------------------------
def test_a_stale_proposal_needs_confirmation_and_lists_what_it_reverts(agent, alice, bob):
    first = prompt_version_propose(agent=agent, changes=section_edit("A"), actor=actor(alice))
    second = prompt_version_propose(agent=agent, changes=section_edit("B"), actor=actor(alice))
    prompt_version_approve(version=first, actor=actor(bob))
    second.refresh_from_db()

    with pytest.raises(StaleProposal) as stale:
        prompt_version_approve(version=second, actor=actor(bob))

    assert str(stale.value) == (
        "Version 3 was proposed against v1, but the live version moved since; approving would revert v2. "
        "Confirm to approve."
    )
    assert stale.value.extra == {"reverts": ["v2"], "live_number": 2}
    assert prompt_version_reverts(second) == [first]
    assert prompt_version_approve(version=second, actor=actor(bob), confirm_stale=True).status == "approved"
    assert Agent.objects.get(pk=agent.pk).live_version == second


# --- restore and clone ----------------------------------------------------------------
def test_restore_proposes_an_old_snapshot_as_a_new_version(agent, alice, ada):
    v1 = agent.live_version
    prompt_version_propose(agent=agent, changes=section_edit("Changed"), actor=actor(ada), mode="live")

    restored = prompt_version_restore(version=v1, actor=actor(alice), reason="retour")

    assert (restored.number, restored.status, restored.reason) == (3, "pending", "restore of v1: retour")
    assert restored.content_hash == v1.content_hash
    v1.refresh_from_db()
    assert (v1.number, v1.status) == (1, "approved")
    applied = prompt_version_restore(version=v1, actor=actor(ada), mode="live")
    assert Agent.objects.get(pk=agent.pk).live_version == applied


def test_clone_makes_a_new_agent_from_any_version(agent, alice, ada):
    pending = prompt_version_propose(
        agent=agent, changes={**section_edit("Cloned"), "runtime_policy": {"max_iterations": 3}}, actor=actor(alice)
    )

    clone = agent_clone(version=pending, actor=actor(ada), key="redacteur-2", name="Rédacteur 2")

    assert clone.live_version.number == 1
    assert clone.live_version.snapshot == pending.snapshot
    assert clone.runtime_policy["max_iterations"] == 3
    assert clone.live_version.reason == "clone of redacteur v2"


# --- shared skills --------------------------------------------------------------------
def test_editing_a_shared_skill_proposes_it_to_each_agent_that_carries_it(workspace, ada, alice):
    skill = skill_create(workspace=workspace, key="ton", title="Ton", body="Sois bref.", actor=actor(ada))
    carriers = [
        agent_create(
            workspace=workspace,
            actor=actor(ada),
            key=key,
            name=key,
            snapshot={**SNAPSHOT, "skills": [skill_as_snapshot_entry(skill)]},
        )
        for key in ("a", "b")
    ]
    agent_create(workspace=workspace, actor=actor(ada), key="c", name="c", snapshot=SNAPSHOT)

    proposals = skill_update(skill=skill, body="Sois bref et poli.", actor=actor(alice))

    assert sorted(p.agent.key for p in proposals) == ["a", "b"]
    assert all(p.status == "pending" and p.snapshot["skills"][0]["body"] == "Sois bref et poli." for p in proposals)
    for agent in carriers:
        agent.refresh_from_db()
        assert agent.live_version.snapshot["skills"][0]["body"] == "Sois bref."


# --- notifications --------------------------------------------------------------------
def test_reviewers_but_not_the_proposer_are_mailed_then_the_proposer_hears_the_decision(
    agent, alice, bob, ada, vic, charlie, mailoutbox, django_capture_on_commit_callbacks
):
    Membership.objects.create(user=charlie, workspace=agent.workspace, role=Membership.Role.VIEWER)
    with django_capture_on_commit_callbacks(execute=True):
        by_ada = prompt_version_propose(agent=agent, changes=section_edit("x"), actor=actor(ada))

    assert sorted(m.to[0] for m in mailoutbox) == ["bob@example.com"]
    assert mailoutbox[0].subject == "[AiHummer] redacteur v2 waits for review"

    mailoutbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        prompt_version_propose(agent=agent, changes=section_edit("y"), actor=actor(alice))
    assert sorted(m.to[0] for m in mailoutbox) == ["ada@example.com", "bob@example.com"]

    mailoutbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        prompt_version_reject(version=by_ada, actor=actor(bob), note="Pas maintenant")
    assert [(m.to, m.subject) for m in mailoutbox] == [(["ada@example.com"], "[AiHummer] redacteur v2 was rejected")]
    assert "Pas maintenant" in mailoutbox[0].body


# --- race -----------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_approve_and_reject_at_once_have_exactly_one_winner(workspace, alice, bob, ada):
    agent = agent_create(workspace=workspace, actor=actor(ada), key="race", name="Race", snapshot=SNAPSHOT)
    for round_number in range(20):
        version = prompt_version_propose(agent=agent, changes=section_edit(f"round {round_number}"), actor=actor(alice))
        live_before = Agent.objects.get(pk=agent.pk).live_version.snapshot
        barrier = threading.Barrier(2)
        outcomes: dict[str, str] = {}

        def decide(name: str, call, outcomes=outcomes, barrier=barrier) -> None:
            try:
                barrier.wait()
                call()
                outcomes[name] = "won"
            except AlreadyDecided as exc:
                outcomes[name] = str(exc)
            finally:
                connection.close()

        threads = [
            threading.Thread(
                target=decide, args=("approve", lambda v=version: prompt_version_approve(version=v, actor=actor(bob)))
            ),
            threading.Thread(
                target=decide,
                args=("reject", lambda v=version: prompt_version_reject(version=v, actor=actor(ada), note="no")),
            ),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

        winners = [name for name, outcome in outcomes.items() if outcome == "won"]
        assert len(winners) == 1, outcomes
        loser = next(name for name in outcomes if name not in winners)
        assert "was already" in outcomes[loser]
        version.refresh_from_db()
        live = Agent.objects.get(pk=agent.pk).live_version
        if winners == ["approve"]:
            assert (version.status, live.snapshot) == ("approved", version.snapshot)
        else:
            assert (version.status, live.snapshot) == ("rejected", live_before)
        assert list(version.history.order_by("history_date").values_list("status", flat=True)) == [
            "pending",
            version.status,
        ]
