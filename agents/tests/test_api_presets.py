"""/v1/admin/presets, models, skills, credentials, turns and debug-logs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import AgentTurn, Credential, DebugLog, Preset, PromptVersion
from agents.runtime import agent_run_test, agent_turn_run
from agents.services import agent_create, credential_create, prompt_version_propose, skill_create
from aihummer.actors import Actor

SECRET = "sk-live-0123456789abcdef"


def error(response) -> dict:
    return response.json()["error"]


# --- presets --------------------------------------------------------------------------
def test_presets_list_and_read(echo_preset, alice_api):
    listed = alice_api.get("/v1/admin/presets").json()["results"]
    one = alice_api.get("/v1/admin/presets/echo").json()

    assert [(p["key"], p["is_active"]) for p in listed] == [("echo", True)]
    assert (one["provider_name"], one["model"], one["credential"]) == ("echo", "echo-1", None)


def test_a_publisher_creates_updates_and_activates_presets(echo_preset, ada_api):
    created = ada_api.post(
        "/v1/admin/presets", {"key": "lent", "name": "Lent", "provider_name": "echo", "model": "echo-1"}
    )
    updated = ada_api.patch("/v1/admin/presets/lent", {"temperature": 0.2})
    activated = ada_api.post("/v1/admin/presets/lent/activate")

    assert (created.status_code, created["Location"]) == (201, "/v1/admin/presets/lent")
    assert updated.json()["temperature"] == 0.2
    assert activated.json()["is_active"] is True
    assert Preset.objects.get(key="echo").is_active is False


def test_a_preset_with_an_unknown_model_lists_the_providers_models(ada_api, echo_preset):
    response = ada_api.post("/v1/admin/presets", {"key": "x", "name": "X", "provider_name": "echo", "model": "gpt-9"})

    assert response.status_code == 422
    assert list(error(response)["fields"]) == ["model"]
    assert "echo-1" in error(response)["fields"]["model"][0]


@pytest.mark.parametrize("value", ["NaN", "Infinity", 2.5, -1])
def test_a_temperature_must_be_a_finite_number_in_range(echo_preset, ada_api, value):
    response = ada_api.patch("/v1/admin/presets/echo", {"temperature": value})

    assert response.status_code == 400
    assert list(error(response)["fields"]) == ["temperature"]


def test_an_editor_may_not_touch_presets(echo_preset, alice_api):
    response = alice_api.patch("/v1/admin/presets/echo", {"temperature": 0.3})

    assert response.status_code == 403
    assert "lacks the 'publish' scope" in error(response)["message"]


def test_a_preset_in_use_is_deleted_only_with_force(api_agent, workspace, ada, ada_api, echo_preset):
    prompt_version_propose(agent=api_agent, changes={"preset": "echo"}, actor=Actor.for_user(ada), mode="live")

    refused = ada_api.delete("/v1/admin/presets/echo")
    forced = ada_api.delete("/v1/admin/presets/echo?force=true")

    assert refused.status_code == 409
    assert error(refused)["dependents"] == ["agent 'redacteur'"]
    assert forced.status_code == 204


# --- the model catalog ----------------------------------------------------------------
def test_the_catalog_lists_providers_and_models_read_only(alice_api):
    response = alice_api.get("/v1/admin/models")

    providers = {p["name"]: p for p in response.json()}
    assert set(providers) == {"openai", "anthropic", "gemini", "echo"}
    assert "echo-1" in [m["name"] for m in providers["echo"]["models"]]
    assert alice_api.post("/v1/admin/models", {}).status_code == 405


# --- shared skills --------------------------------------------------------------------
def test_editing_a_shared_skill_proposes_it_to_each_carrier(api_agent, workspace, ada, alice_api):
    skill_create(workspace=workspace, key="ton", title="Ton", body="Chaleureux.", actor=Actor.for_user(ada))
    prompt_version_propose(
        agent=api_agent,
        changes={"skills": [{"key": "ton", "title": "Ton", "body": "Chaleureux.", "shared": True}]},
        actor=Actor.for_user(ada),
        mode="live",
    )

    response = alice_api.patch("/v1/admin/skills/ton", {"body": "Sobre."})

    assert response.status_code == 200
    assert response.json()["skill"]["body"] == "Sobre."
    assert [(p["agent"], p["status"]) for p in response.json()["proposals"]] == [("redacteur", "pending")]
    assert PromptVersion.objects.get(status="pending").snapshot["skills"][0]["body"] == "Sobre."


def test_an_editor_creates_a_shared_skill(alice_api, workspace):
    response = alice_api.post("/v1/admin/skills", {"key": "plan", "title": "Plan", "body": "Trois parties."})

    assert (response.status_code, response["Location"]) == (201, "/v1/admin/skills/plan")
    assert alice_api.get("/v1/admin/skills").json()["results"][0]["key"] == "plan"


# --- credentials ----------------------------------------------------------------------
def test_a_credential_secret_goes_in_and_never_comes_out(api_as, ada):
    session = api_as(ada)

    created = session.post("/v1/admin/credentials", {"key": "openai", "secret": SECRET})
    listed = session.get("/v1/admin/credentials")
    replaced = session.patch("/v1/admin/credentials/openai", {"secret": SECRET + "-2"})

    credential = Credential.objects.get()
    assert created.status_code == 201
    assert created.json()["secret"] == "set"
    assert created.json()["fingerprint"] != replaced.json()["fingerprint"] == credential.fingerprint
    for response in (created, listed, replaced):
        assert "sk-live" not in response.content.decode()


def test_api_keys_never_manage_credentials(workspace, ada, ada_api):
    credential_create(workspace=workspace, key="openai", secret=SECRET, actor=Actor.for_user(ada))

    response = ada_api.post("/v1/admin/credentials", {"key": "other", "secret": SECRET})

    assert response.status_code == 403
    assert error(response)["message"] == (
        "API keys may not do managing members, keys and credentials: only people decide and manage."
    )


def test_a_credential_a_preset_uses_is_not_deleted(workspace, ada, api_as):
    credential = credential_create(workspace=workspace, key="openai", secret=SECRET, actor=Actor.for_user(ada))
    Preset.objects.create(
        workspace=workspace, key="gpt", name="GPT", provider_name="openai", model="gpt-4.1-mini", credential=credential
    )

    response = api_as(ada).delete("/v1/admin/credentials/openai")

    assert response.status_code == 409
    assert error(response)["message"] == "Credential 'openai' is in use: preset 'gpt'."


# --- turns and debug logs -------------------------------------------------------------
def test_a_turn_and_its_debug_log_read_back(api_agent, alice, alice_api):
    turn = agent_run_test(agent=api_agent, message="Bonjour", actor=Actor.for_user(alice))
    log = DebugLog.objects.get(turn=turn)

    listed = alice_api.get("/v1/admin/turns").json()["results"]
    one = alice_api.get(f"/v1/admin/turns/{turn.pk}").json()
    debug = alice_api.get(f"/v1/admin/debug-logs/{log.pk}").json()

    assert [t["id"] for t in listed] == [turn.pk]
    assert (one["status"], one["debug_logs"]) == ("succeeded", [log.pk])
    assert (debug["turn"], debug["sequence"], debug["provider_name"]) == (turn.pk, 1, "echo")
    assert debug["messages"][-1]["content"] == "Bonjour"


def test_archived_child_turns_are_listed_only_when_asked_for(api_agent, workspace, ada, alice, alice_api):
    boss = agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="boss",
        name="Boss",
        snapshot={
            "identity": {"name": "Boss"},
            "allowed_tool_names": ["delegate"],
            "runtime_policy": {"children": {"archive_after_minutes": 5}},
        },
    )
    parent = agent_turn_run(
        agent=boss, message='@call delegate {"agent": "redacteur", "message": "hi"}', actor=Actor.for_user(alice)
    )
    child = AgentTurn.objects.get(parent=parent)
    AgentTurn.objects.filter(pk=child.pk).update(finished_at=timezone.now() - timedelta(minutes=6))

    listed = alice_api.get("/v1/admin/turns").json()["results"]
    everything = alice_api.get("/v1/admin/turns?include_archived=true").json()["results"]
    bad = alice_api.get("/v1/admin/turns?include_archived=maybe")

    assert [t["id"] for t in listed] == [parent.pk]
    assert [t["id"] for t in everything] == [child.pk, parent.pk]
    assert alice_api.get(f"/v1/admin/turns/{child.pk}").status_code == 200
    assert bad.status_code == 400
    assert error(bad)["fields"] == {"include_archived": ["Must be a valid boolean."]}


def test_another_workspaces_turns_are_404(api_agent, alice, api_as, charlie):
    turn = agent_run_test(agent=api_agent, message="Bonjour", actor=Actor.for_user(alice))
    globex = api_as(charlie)

    assert globex.get(f"/v1/admin/turns/{turn.pk}").status_code == 404
    assert globex.get(f"/v1/admin/debug-logs/{DebugLog.objects.get().pk}").status_code == 404
    assert globex.get("/v1/admin/turns").json()["results"] == []
    assert AgentTurn.objects.count() == 1


@pytest.mark.parametrize(
    "path",
    [
        "/v1/admin/presets/echo",
        "/v1/admin/skills/ton",
        "/v1/admin/credentials/openai",
    ],
)
def test_charlie_gets_404_for_acmes_rows(echo_preset, workspace, ada, api_as, charlie, path):
    skill_create(workspace=workspace, key="ton", title="Ton", body="x", actor=Actor.for_user(ada))
    credential_create(workspace=workspace, key="openai", secret=SECRET, actor=Actor.for_user(ada))

    response = api_as(charlie).get(path)

    assert response.status_code == 404
