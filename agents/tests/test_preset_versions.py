"""Issue 33: the preset an agent runs with is part of its versions. Another preset (another
model answers) is a `power` change: proposed, held to the power tier's quorum, never an
agent's own widening, and bound to the agent only when its version goes live."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from agents.models import Agent, Preset, PromptVersion
from agents.rebase import three_way
from agents.runtime import agent_run_test, agent_turn_run
from agents.services import (
    approval_policy_update,
    approval_state,
    preset_create,
    preset_delete,
    prompt_version_approve,
    prompt_version_propose,
)
from agents.tiers import change_tier
from aihummer.actors import Actor
from aihummer.tests.factories import make_agent, make_echo_preset
from conftest import make_member

SWITCH_LINE = "preset changed: echo → fast (another model answers)"


def as_(user) -> Actor:
    return Actor.for_user(user)


@pytest.fixture
def fast(workspace, ada) -> Preset:
    return make_echo_preset(workspace, by=as_(ada), key="fast", is_active=False, temperature=0.2)


@pytest.fixture
def agent(workspace, ada, echo_preset) -> Agent:
    return make_agent(workspace, "writer", by=ada, preset=echo_preset)


def switch(agent: Agent, actor: Actor, key: str | None = "fast", **options: object) -> PromptVersion:
    return prompt_version_propose(agent=agent, changes={"preset": key}, actor=actor, **options)


def bound(agent: Agent) -> str | None:
    agent = Agent.all_objects.select_related("preset", "live_version").get(pk=agent.pk)
    assert agent.live_version.snapshot["preset"] == (agent.preset.key if agent.preset else None)
    return agent.preset.key if agent.preset else None


def test_version_1_names_the_preset_it_was_created_with(agent, workspace, ada):
    default = make_agent(workspace, "plain", by=ada)

    assert agent.live_snapshot["preset"] == "echo"
    assert (bound(agent), bound(default)) == ("echo", None)


def test_another_preset_is_a_power_change_and_says_why(agent):
    live = agent.live_snapshot

    tier, reasons = change_tier(live, {**live, "preset": "fast"})
    assert (tier, [(reason.tier, reason.line) for reason in reasons]) == ("power", [("power", SWITCH_LINE)])
    assert [reason.line for reason in change_tier(live, {**live, "preset": None})[1]] == [
        "preset changed: echo → the workspace's default (another model answers)"
    ]


def test_a_switch_waits_for_the_power_quorum_and_rebinds_only_when_live(
    agent, fast, workspace, alice, bob, ada, django_assert_num_queries
):
    approval_policy_update(workspace=workspace, actor=as_(ada), power_approvals=2)
    carol = make_member(workspace, "carol", "reviewer")
    version = switch(agent, as_(alice))

    assert (version.status, version.tier, [(r["tier"], r["line"]) for r in version.tier_reasons]) == (
        "pending",
        "power",
        [("power", SWITCH_LINE)],
    )
    first = prompt_version_approve(version=version, actor=as_(bob))
    assert (approval_state(first).summary, bound(agent)) == ("1 of 2 approvals", "echo")

    prompt_version_approve(version=version, actor=as_(carol))

    assert bound(agent) == "fast"
    assert Agent.objects.get(pk=agent.pk).live_number == 2


def test_the_publish_right_does_not_skip_a_power_quorum_for_a_preset(agent, fast, workspace, ada):
    approval_policy_update(workspace=workspace, actor=as_(ada), power_approvals=2)

    with pytest.raises(PermissionDenied, match=r"in the power tier \(preset changed: echo → fast"):
        switch(agent, as_(ada), mode="live")

    assert PromptVersion.objects.filter(agent=agent).count() == 1
    assert bound(agent) == "echo"


def test_the_publish_right_switches_at_once_where_power_needs_one(agent, fast, ada):
    version = switch(agent, as_(ada), mode="live")

    assert (version.status, bound(agent)) == ("approved", "fast")


def test_an_agent_may_not_switch_its_own_preset(agent, fast, alice):
    as_agent = Actor.for_agent(agent, on_behalf_of=as_(alice))

    with pytest.raises(PermissionDenied) as refused:
        switch(agent, as_agent)

    assert str(refused.value).startswith(f"An agent may not widen its own power ({SWITCH_LINE}).")
    assert PromptVersion.objects.filter(agent=agent).count() == 1


def test_a_proposal_names_only_a_preset_of_its_workspace(agent, alice, ada, workspace, other_workspace, root):
    make_echo_preset(other_workspace, by=as_(root), key="theirs", is_active=False)
    make_echo_preset(workspace, by=as_(alice), key="sb_echo", name="Sandbox", is_sandbox=True)

    for key, message in (
        ("theirs", "Unknown preset 'theirs'."),
        ("ghost", "Unknown preset 'ghost'."),
        ("sb_echo", "A real row cannot use the sandbox preset 'sb_echo'."),
    ):
        with pytest.raises(ValidationError) as refused:
            switch(agent, as_(alice), key)
        assert refused.value.message_dict == {"preset": [message]}
    with pytest.raises(ValidationError) as malformed:
        switch(agent, as_(alice), "Not A Key!")

    assert list(malformed.value.message_dict) == ["preset"]
    assert PromptVersion.objects.filter(agent=agent).count() == 1


def test_a_proposal_whose_preset_was_deleted_cannot_go_live(agent, fast, alice, bob, ada):
    version = switch(agent, as_(alice))
    preset_delete(preset=fast, actor=as_(ada))  # not bound to any agent: nothing refuses it

    with pytest.raises(ValidationError) as refused:
        prompt_version_approve(version=version, actor=as_(bob))

    assert refused.value.message_dict == {"preset": ["Unknown preset 'fast'."]}
    assert PromptVersion.objects.get(pk=version.pk).status == "pending"
    assert (bound(agent), Agent.objects.get(pk=agent.pk).live_number) == ("echo", 1)


def test_a_candidate_is_tried_on_the_preset_it_names_and_live_turns_on_the_live_one(agent, workspace, alice, ada):
    preset_create(
        workspace=workspace, actor=as_(ada), key="remote", name="Remote", provider_name="openai", model="gpt-4.1-mini"
    )
    candidate = switch(agent, as_(alice), "remote")

    tried = agent_run_test(agent=agent, message="Bonjour", actor=as_(alice), version=candidate)
    live = agent_turn_run(agent=agent, message="Bonjour", actor=as_(alice))

    # The candidate's preset has no credential yet: its try says so; the live agent answers on echo.
    assert (tried.provider_name, tried.model, tried.status, tried.error_kind) == (
        "openai",
        "gpt-4.1-mini",
        "failed",
        "not_configured",
    )
    assert (live.provider_name, live.model, live.status) == ("echo", "echo-1", "succeeded")


def test_a_rebase_carries_a_preset_switch_over_a_wording_change(agent):
    base = agent.live_snapshot
    live = {**base, "onboarding": "Say hello first."}
    proposal = {**base, "preset": "fast"}

    merged = three_way(base, live, proposal)

    assert (merged.snapshot["preset"], merged.snapshot["onboarding"]) == ("fast", "Say hello first.")
    clash = three_way(base, {**base, "preset": None}, proposal)
    assert [conflict.part for conflict in clash.conflicts] == ["preset"]


def test_rest_patch_proposes_the_preset(api_agent, fast, alice_api, ada_api):
    response = alice_api.patch("/v1/admin/agents/redacteur", {"preset": "fast"})
    unknown = alice_api.patch("/v1/admin/agents/redacteur", {"preset": "ghost"})
    read = ada_api.get("/v1/admin/agents/redacteur")

    assert response.status_code == 202, response.json()
    assert response.json()["proposal"]["tier"] == "power"
    assert read.json()["preset"] is None  # the default until a person approves
    # A reference to a missing row is refused (422), as on create (test_api_contract).
    assert (unknown.status_code, unknown.json()["error"]["fields"]) == (422, {"preset": ["Unknown preset 'ghost'."]})
    diff = ada_api.get(response["Location"]).json()["diff"]
    assert diff["preset"] == {"before": None, "after": "fast"}
