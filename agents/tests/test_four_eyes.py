"""Issue 10: four eyes without loopholes — keys answer for their creator, clones and new
agents obey the same rule as any change, a stale confirmation is bound to the live
version the reviewer saw, and bulk approval never reverts what it did not list."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from agents.models import Agent, PromptVersion
from agents.runtime import agent_turn_run
from agents.services import (
    StaleProposal,
    agent_clone,
    agent_create,
    prompt_version_approve,
    prompt_version_propose,
    prompt_version_reject,
)
from aihummer.actors import Actor
from aihummer.services import api_key_create

FOUR_EYES = "You proposed this version: another person must decide it (four eyes)."


@pytest.fixture
def strict(workspace):
    workspace.every_change_needs_review = True
    workspace.save()
    return workspace


@pytest.fixture
def agent(workspace, ada, echo_preset):
    return agent_create(workspace=workspace, actor=Actor.for_user(ada), key="writer", name="Writer")


def propose(agent, user_or_actor, role: str) -> PromptVersion:
    actor = user_or_actor if isinstance(user_or_actor, Actor) else Actor.for_user(user_or_actor)
    return prompt_version_propose(agent=agent, changes={"identity": {"role": role}}, actor=actor)


# --- keys answer for their creator -------------------------------------------------------
def test_an_admin_cannot_approve_what_her_ownerless_key_proposed(agent, strict, ada, bob):
    api_key, _ = api_key_create(workspace=strict, name="bot", scopes="write", actor=Actor.for_user(ada))
    version = propose(agent, Actor.for_api_key(api_key), "through a key")

    with pytest.raises(PermissionDenied, match=re.escape(FOUR_EYES)):
        prompt_version_approve(version=version, actor=Actor.for_user(ada))

    assert prompt_version_approve(version=version, actor=Actor.for_user(bob)).status == "approved"


def test_neither_owner_nor_creator_decides_an_owned_keys_proposal(agent, ada, bob, workspace):
    owned, _ = api_key_create(workspace=workspace, name="bobs", scopes="write", owner=bob, actor=Actor.for_user(ada))
    version = propose(agent, Actor.for_api_key(owned), "bob's key")

    for person in (ada, bob):
        with pytest.raises(PermissionDenied, match=re.escape(FOUR_EYES)):
            prompt_version_reject(version=version, actor=Actor.for_user(person), note="no")


def test_the_review_page_refuses_the_keys_creator(client, agent, strict, ada):
    api_key, _ = api_key_create(workspace=strict, name="bot", scopes="write", actor=Actor.for_user(ada))
    version = propose(agent, Actor.for_api_key(api_key), "through a key")
    client.force_login(ada)

    page = client.get(reverse("admin:agents_promptversion_review", args=[version.pk])).content.decode()

    assert "another person must decide it (four eyes)" in page


# --- clones and new agents -----------------------------------------------------------
@pytest.mark.parametrize("status", ["pending", "rejected"])
def test_with_four_eyes_on_a_clone_is_made_only_from_a_version_that_was_once_live(agent, alice, ada, bob, status):
    agent.workspace.every_change_needs_review = True
    agent.workspace.save()
    version = propose(agent, alice, "never live")
    if status == "rejected":
        prompt_version_reject(version=version, actor=Actor.for_user(bob), note="no")

    with pytest.raises(PermissionDenied) as refused:
        agent_clone(version=version, actor=Actor.for_user(ada), key="copy", name="Copy")

    assert str(refused.value) == (
        f"Version {version.number} of 'writer' was never live: clone a version that was live, "
        "or ask someone who may publish."
    )
    assert not Agent.all_objects.filter(key="copy").exists()


def test_a_publisher_may_clone_a_pending_version(agent, ada, alice):
    version = propose(agent, alice, "pending")

    clone = agent_clone(version=version, actor=Actor.for_user(ada), key="by-ada", name="A")

    assert clone.live_version.snapshot["identity"]["role"] == "pending"


def test_with_four_eyes_on_a_new_agent_waits_for_review_and_does_not_run(strict, ada, bob, echo_preset):
    agent = agent_create(workspace=strict, actor=Actor.for_user(ada), key="fresh", name="Fresh")

    first = PromptVersion.objects.get(agent=agent)
    assert (agent.live_version, first.number, first.status) == (None, 1, "pending")
    with pytest.raises(PermissionDenied, match="Agent 'fresh' has no approved version yet"):
        agent_turn_run(agent=agent, message="hello", actor=Actor.for_user(ada))
    with pytest.raises(PermissionDenied, match=re.escape(FOUR_EYES)):
        prompt_version_approve(version=first, actor=Actor.for_user(ada))

    prompt_version_approve(version=first, actor=Actor.for_user(bob))

    assert Agent.objects.get(pk=agent.pk).live_version_id == first.pk
    assert agent_turn_run(agent=agent, message="hello", actor=Actor.for_user(ada)).status == "succeeded"


def test_the_review_page_of_a_new_agents_first_version_shows_and_tries_it(client, strict, ada, bob, echo_preset):
    agent = agent_create(workspace=strict, actor=Actor.for_user(ada), key="fresh", name="Fresh")
    first = PromptVersion.objects.get(agent=agent)
    client.force_login(bob)
    url = reverse("admin:agents_promptversion_review", args=[first.pk])

    assert client.get(url).status_code == 200
    tried = client.post(url, {"_try": "1", "message": "hello"})
    assert tried.status_code == 200 and "[echo echo-1] hello" in tried.content.decode()


def test_a_clone_with_four_eyes_on_waits_too(agent, strict, ada):
    clone = agent_clone(version=agent.live_version, actor=Actor.for_user(ada), key="copy", name="Copy")

    assert clone.live_version is None
    assert PromptVersion.objects.get(agent=clone).status == "pending"


# --- stale confirmation bound to what the reviewer saw -----------------------------------
def test_a_stale_confirmation_is_for_the_live_version_the_reviewer_saw(agent, alice, ada, bob):
    old = propose(agent, alice, "old")
    propose(agent, ada, "moved once")
    prompt_version_approve(version=PromptVersion.objects.get(agent=agent, number=3), actor=Actor.for_user(bob))
    seen = Agent.objects.get(pk=agent.pk).live_version.number
    newer = propose(agent, ada, "moved again")
    prompt_version_approve(version=newer, actor=Actor.for_user(bob))

    with pytest.raises(StaleProposal, match=f"You looked at live v{seen}, but v{newer.number} is live now"):
        prompt_version_approve(version=old, actor=Actor.for_user(bob), confirm_stale=True, expected_live=seen)

    approved = prompt_version_approve(
        version=old, actor=Actor.for_user(bob), confirm_stale=True, expected_live=newer.number
    )
    assert approved.status == "approved"


def test_the_review_page_shows_itself_again_when_live_moved_since_it_was_shown(client, agent, alice, ada, bob):
    old = propose(agent, alice, "old")
    prompt_version_approve(version=propose(agent, ada, "moved"), actor=Actor.for_user(bob))
    client.force_login(bob)
    url = reverse("admin:agents_promptversion_review", args=[old.pk])
    page = client.get(url).content.decode()
    seen = re.search(r'name="live_number" value="(\d+)"', page).group(1)
    prompt_version_approve(version=propose(agent, ada, "moved again"), actor=Actor.for_user(bob))

    response = client.post(url, {"_approve": "1", "note": "", "confirm_stale": "on", "live_number": seen})

    assert response.status_code == 200
    assert "You looked at live v3, but v4 is live now" in response.content.decode()
    assert PromptVersion.objects.get(pk=old.pk).status == "pending"


# --- bulk approval -----------------------------------------------------------------------
def test_bulk_approval_never_reverts_a_sibling_it_did_not_list(client, agent, alice, ada, bob):
    old = propose(agent, alice, "old")
    sibling = propose(agent, ada, "sibling")
    prompt_version_approve(version=sibling, actor=Actor.for_user(bob))
    client.force_login(bob)

    response = client.post(
        reverse("admin:agents_promptversion_changelist"),
        {"action": "approve_selected", "_selected_action": [old.pk], "apply": "1", "note": "", "confirm_stale": "on"},
        follow=True,
    )

    said = " ".join(str(m) for m in response.context["messages"])
    assert f"writer v{old.number}: refused." in said
    assert f"would revert v{sibling.number}, which is not in the selection" in said
    assert Agent.objects.get(pk=agent.pk).live_version_id == sibling.pk


def test_bulk_approval_may_revert_siblings_it_lists(client, agent, alice, ada, bob):
    first = propose(agent, alice, "first")
    second = propose(agent, ada, "second")
    client.force_login(bob)

    client.post(
        reverse("admin:agents_promptversion_changelist"),
        {
            "action": "approve_selected",
            "_selected_action": [first.pk, second.pk],
            "apply": "1",
            "note": "",
            "confirm_stale": "on",
        },
    )

    assert list(PromptVersion.objects.filter(pk__in=[first.pk, second.pk]).values_list("status", flat=True)) == [
        "approved",
        "approved",
    ]
    assert Agent.objects.get(pk=agent.pk).live_version_id == second.pk
