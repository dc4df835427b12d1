"""/v1/admin/prompt-versions: the queue, its filters, and people's decisions."""

from __future__ import annotations

import pytest

from agents.models import Agent, PromptVersion
from agents.services import prompt_version_propose
from aihummer.actors import Actor
from aihummer.tests.sso_helpers import sign

QUEUE = "/v1/admin/prompt-versions"


def error(response) -> dict:
    return response.json()["error"]


@pytest.fixture
def proposal(api_agent, alice):
    """v2 of redacteur, proposed by alice (pending)."""
    return prompt_version_propose(agent=api_agent, changes={"onboarding": "Bonjour."}, actor=Actor.for_user(alice))


@pytest.fixture
def sign_token():
    return sign


@pytest.fixture
def bob_session(api_as, bob):
    return api_as(bob)


def test_the_queue_filters_by_status_agent_source_and_staleness(proposal, api_agent, ada, alice_api):
    prompt_version_propose(agent=api_agent, changes={"onboarding": "Salut."}, actor=Actor.for_user(ada))
    live = prompt_version_propose(
        agent=api_agent, changes={"identity": {"persona": "Vive."}}, actor=Actor.for_user(ada), mode="live"
    )

    def numbers(query: str) -> list[int]:
        response = alice_api.get(f"{QUEUE}?{query}")
        assert response.status_code == 200, response.json()
        return [row["number"] for row in response.json()["results"]]

    assert numbers("") == [live.number, 3, 2, 1]
    assert numbers("status=pending") == [3, 2]
    assert numbers("agent=redacteur&status=approved") == [4, 1]
    assert numbers("source_kind=admin&status=pending") == [3, 2]
    assert numbers("source_kind=api") == []
    assert numbers("stale=true") == [3, 2]
    assert numbers("stale=false&status=pending") == []
    assert error(alice_api.get(f"{QUEUE}?status=maybe"))["fields"] == {"status": ['"maybe" is not a valid choice.']}


def test_a_version_reads_with_its_diff_against_live(proposal, alice_api):
    response = alice_api.get(f"{QUEUE}/{proposal.pk}")

    body = response.json()
    assert (body["number"], body["status"], body["proposed_by"], body["is_stale"]) == (2, "pending", "alice", False)
    assert body["diff"]["onboarding"] == {"field": "onboarding", "before": "", "after": "Bonjour."}
    assert body["reverts"] == []


def test_a_reviewer_approves_through_a_session(proposal, bob_session):
    response = bob_session.post(f"{QUEUE}/{proposal.pk}/approve", {"note": "ok"})

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["reviewed_by"]) == ("approved", "bob")
    assert Agent.objects.get().live_version.number == 2


def test_an_api_key_never_decides_even_a_reviewers(proposal, api_as, make_key, bob):
    bobs_key = api_as(make_key("read,write,publish", owner=bob))

    approve = bobs_key.post(f"{QUEUE}/{proposal.pk}/approve", {})
    reject = bobs_key.post(f"{QUEUE}/{proposal.pk}/reject", {"note": "non"})

    for response in (approve, reject):
        assert response.status_code == 403
        assert (
            error(response)["message"] == "API keys may not do approving or rejecting: only people decide and manage."
        )
    assert PromptVersion.objects.get(pk=proposal.pk).status == "pending"


def test_an_editor_may_not_decide(proposal, api_as, alice):
    response = api_as(alice).post(f"{QUEUE}/{proposal.pk}/approve", {})

    assert response.status_code == 403
    assert error(response)["message"] == (
        "alice is an editor in workspace 'acme'; approving or rejecting needs the reviewer role."
    )


def test_a_reject_needs_a_note(proposal, bob_session):
    missing = bob_session.post(f"{QUEUE}/{proposal.pk}/reject", {})
    blank = bob_session.post(f"{QUEUE}/{proposal.pk}/reject", {"note": "  "})
    rejected = bob_session.post(f"{QUEUE}/{proposal.pk}/reject", {"note": "Trop familier."})

    assert error(missing)["fields"] == {"note": ["This field is required."]}
    assert error(blank)["fields"] == {"note": ["This field may not be blank."]}
    assert (rejected.status_code, rejected.json()["review_note"]) == (200, "Trop familier.")


def test_a_decided_version_is_a_409_naming_who_decided(proposal, bob_session):
    bob_session.post(f"{QUEUE}/{proposal.pk}/reject", {"note": "Non."})

    response = bob_session.post(f"{QUEUE}/{proposal.pk}/approve", {})

    assert response.status_code == 409
    assert error(response)["code"] == "already_decided"
    assert error(response)["message"].startswith("Version 2 of 'redacteur' was already rejected by bob at ")


def test_the_proposer_withdraws_and_nobody_else(proposal, alice_api, bob_session):
    refused = bob_session.post(f"{QUEUE}/{proposal.pk}/withdraw")
    withdrawn = alice_api.post(f"{QUEUE}/{proposal.pk}/withdraw")

    assert refused.status_code == 403
    assert error(refused)["message"] == "Only the proposer may withdraw a proposal; reviewers reject it instead."
    assert (withdrawn.status_code, withdrawn.json()["status"]) == (200, "withdrawn")


def test_a_stale_proposal_is_approved_only_against_the_live_version_seen(proposal, api_agent, ada, bob_session):
    prompt_version_propose(agent=api_agent, changes={"onboarding": "Salut."}, actor=Actor.for_user(ada), mode="live")
    url = f"{QUEUE}/{proposal.pk}/approve"

    unconfirmed = bob_session.post(url, {})
    outdated = bob_session.post(url, {"confirm_stale": 2})
    confirmed = bob_session.post(url, {"confirm_stale": 3})

    assert unconfirmed.status_code == 409
    assert error(unconfirmed)["code"] == "stale_proposal"
    assert error(unconfirmed)["reverts"] == ["v3"]
    assert outdated.status_code == 409
    assert error(outdated)["message"] == (
        "You looked at live v2, but v3 is live now: review the proposal again and approve it against the live "
        "version you see."
    )
    assert confirmed.status_code == 200
    assert Agent.objects.get().live_version.number == 2


def test_the_detail_of_a_stale_proposal_lists_what_it_would_revert(proposal, api_agent, ada, alice_api):
    prompt_version_propose(agent=api_agent, changes={"onboarding": "Salut."}, actor=Actor.for_user(ada), mode="live")

    body = alice_api.get(f"{QUEUE}/{proposal.pk}").json()

    assert (body["is_stale"], body["reverts"], body["live_version"]) == (True, [3], 3)


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [("get", "", None), ("post", "/withdraw", {}), ("post", "/approve", {}), ("post", "/reject", {"note": "x"})],
)
def test_charlie_gets_404_for_acmes_versions(proposal, api_as, charlie, method, suffix, body):
    response = getattr(api_as(charlie), method)(f"{QUEUE}/{proposal.pk}{suffix}", body)

    assert response.status_code == 404
    assert error(response) == {"code": "not_found", "message": "Unknown version.", "fields": {}}


def test_a_version_id_too_large_is_a_404_not_a_crash(api_agent, alice_api):
    assert alice_api.get(f"{QUEUE}/99999999999999999").status_code == 404
    assert alice_api.get(f"{QUEUE}/123456789012345678901234").status_code == 404


@pytest.mark.parametrize("proposals", [1, 6])
def test_the_queue_page_costs_the_same_whatever_its_length(
    api_agent, alice, alice_api, proposals, django_assert_num_queries
):
    for n in range(proposals):
        prompt_version_propose(agent=api_agent, changes={"onboarding": f"Bonjour {n}."}, actor=Actor.for_user(alice))
    alice_api.get(QUEUE)

    with django_assert_num_queries(2):  # the key, the page (agent, proposer, reviewer, base joined)
        response = alice_api.get(f"{QUEUE}?status=pending")

    assert len(response.json()["results"]) == proposals


def test_a_version_detail_is_read_in_a_fixed_number_of_queries(proposal, alice_api, django_assert_num_queries):
    alice_api.get(f"{QUEUE}/{proposal.pk}")

    # The key, the version with its agent, live version and approval policy (not stale), its decisions.
    with django_assert_num_queries(3):
        alice_api.get(f"{QUEUE}/{proposal.pk}")


def test_a_reviewer_signed_in_at_the_identity_provider_approves_with_a_bearer_token(
    proposal,
    client,
    oidc,
    ursula,
    sign_token,
):
    response = client.post(
        f"{QUEUE}/{proposal.pk}/approve",
        {"note": "ok"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {sign_token({})}"},
    )

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["reviewed_by"]) == ("approved", ursula.get_username())
