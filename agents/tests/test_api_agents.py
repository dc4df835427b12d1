"""/v1/admin/agents: list, read, create, update, delete, profile, runtime policy,
versions, restore, clone and test."""

from __future__ import annotations

import pytest

from agents.models import Agent, AgentSection, AgentTurn, PromptVersion
from agents.policy import default_runtime_policy
from agents.services import agent_create, prompt_version_propose
from aihummer.actors import Actor

AGENT = "/v1/admin/agents/redacteur"


def error(response) -> dict:
    return response.json()["error"]


@pytest.fixture
def reader_api(api_as, make_key, vic):
    return api_as(make_key("read", owner=vic))


# --- reading --------------------------------------------------------------------------
def test_the_list_shows_the_workspaces_agents_but_no_sandbox_row(
    api_agent, reader_api, workspace, ada, django_assert_num_queries
):
    agent_create(workspace=workspace, actor=Actor.for_user(ada), key="hidden", name="Hidden", is_sandbox=True)
    reader_api.get("/v1/admin/agents")  # the key's first use is recorded once

    with django_assert_num_queries(2):  # the key, the page
        response = reader_api.get("/v1/admin/agents")

    assert response.status_code == 200
    assert [(a["key"], a["live_version"], a["preset"]) for a in response.json()["results"]] == [("redacteur", 1, None)]


def test_an_agent_whose_version_1_waits_for_review_reads_everywhere_as_no_live_version_yet(
    workspace, echo_preset, ada_api, reader_api
):
    workspace.every_change_needs_review = True
    workspace.save()

    created = ada_api.post("/v1/admin/agents", {"key": "fresh", "name": "Fresh"})
    listed = reader_api.get("/v1/admin/agents")
    detail = reader_api.get("/v1/admin/agents/fresh")
    profile = reader_api.get("/v1/admin/agents/fresh/profile")
    sections = reader_api.get("/v1/admin/agents/fresh/sections")
    queued = reader_api.get(f"/v1/admin/prompt-versions/{PromptVersion.objects.get(agent__key='fresh').pk}")

    assert (created.status_code, created.json()["live_version"]) == (201, None)
    assert "ETag" not in created
    assert [(a["key"], a["live_version"]) for a in listed.json()["results"]] == [("fresh", None)]
    body = detail.json()
    assert (detail.status_code, body["live_version"], body["profile"], body["runtime_policy"]) == (200,) + (None,) * 3
    assert (body["sections"], body["skills"], body["allowed_tool_names"]) == ([], [], [])
    for response in (profile, sections):
        assert response.status_code == 409
        assert error(response) == {
            "code": "no_live_version",
            "message": "Agent 'fresh' has no live version yet: its version 1 is waiting for review.",
            "fields": {},
        }
    assert (queued.status_code, queued.json()["live_version"], queued.json()["status"]) == (200, None, "pending")


def test_an_agent_reads_with_its_live_profile_and_version_as_etag(api_agent, reader_api, django_assert_num_queries):
    reader_api.get(AGENT)

    with django_assert_num_queries(2):  # the key, the agent with its live version
        response = reader_api.get(AGENT)

    assert response["ETag"] == '"1"'
    body = response.json()
    assert body["profile"] == {
        "name": "Camille",
        "role": "Rédactrice",
        "persona": "",
        "language": "fr",
        "goals": [],
        "system_prompt": None,
        "onboarding": "",
    }
    assert [s["key"] for s in body["sections"]] == ["methode", "sources"]
    assert body["runtime_policy"] == default_runtime_policy()


# --- create, update, delete (the publish right) ---------------------------------------
def test_a_publisher_creates_an_agent_with_version_1_live(echo_preset, ada_api):
    body = {
        "key": "critique",
        "name": "Critique",
        "preset": "echo",
        "profile": {"role": "Relectrice", "goals": ["Trouver les failles"]},
        "sections": [{"key": "ton", "body": "Direct."}],
        "runtime_policy": {"max_iterations": 8},
    }

    response = ada_api.post("/v1/admin/agents", body)

    assert response.status_code == 201
    assert response["Location"] == "/v1/admin/agents/critique"
    agent = Agent.objects.get(key="critique")
    snapshot = agent.live_version.snapshot
    assert (agent.preset.key, agent.live_version.number, agent.live_version.source) == ("echo", 1, "api:key-0")
    assert snapshot["identity"]["name"] == "Critique"
    assert snapshot["identity"]["goals"] == ["Trouver les failles"]
    assert snapshot["runtime_policy"]["max_iterations"] == 8


def test_an_editors_key_may_not_create_agents(alice_api):
    response = alice_api.post("/v1/admin/agents", {"key": "critique", "name": "Critique"})

    assert response.status_code == 403
    assert (
        error(response)["message"]
        == "API key 'key-0' lacks the 'publish' scope needed for publishing changes directly."
    )


def test_a_create_refused_after_the_write_leaves_nothing_behind(echo_preset, api_as, make_key, ada):
    """Issue 24, item 7: a publish key without `read` may not read back what it would
    create; the refusal comes after the service wrote, and undoes the write."""
    response = api_as(make_key("write,publish", owner=ada)).post(
        "/v1/admin/agents", {"key": "critique", "name": "Critique"}
    )

    assert response.status_code == 403
    assert error(response)["message"].endswith("lacks the 'read' scope needed for reading.")
    assert not Agent.all_objects.filter(key="critique").exists()
    assert not PromptVersion.all_objects.filter(agent__key="critique").exists()


def test_create_refuses_an_unknown_preset_and_a_taken_key(api_agent, ada_api):
    unknown = ada_api.post("/v1/admin/agents", {"key": "x", "name": "X", "preset": "gpt-9"})
    taken = ada_api.post("/v1/admin/agents", {"key": "redacteur", "name": "X"})

    assert error(unknown)["fields"] == {"preset": ["Unknown preset 'gpt-9'."]}
    assert error(taken)["fields"] == {"key": ["An agent with key 'redacteur' already exists in workspace 'acme'."]}


def test_create_reports_a_bad_policy_with_its_json_path(ada_api, echo_preset):
    response = ada_api.post(
        "/v1/admin/agents", {"key": "x", "name": "X", "runtime_policy": {"children": {"max_depth": 9, "nope": 1}}}
    )

    assert response.status_code == 400
    assert error(response)["fields"] == {
        "runtime_policy.children.max_depth": ["must be at most 4 (got 9)"],
        "runtime_policy.children.nope": ["unknown field"],
    }


def test_a_bad_policy_has_the_same_path_on_create_and_update(api_agent, ada_api):
    # Issue 25, item 10: the body names the policy `runtime_policy` on both routes.
    bad = {"runtime_policy": {"children": {"max_depth": 9}}}

    created = ada_api.post("/v1/admin/agents", {"key": "x", "name": "X", **bad})
    updated = ada_api.patch(AGENT, bad)
    replaced = ada_api.put(f"{AGENT}/runtime-policy", bad["runtime_policy"])  # the body is the policy

    assert (
        error(created)["fields"]
        == error(updated)["fields"]
        == {"runtime_policy.children.max_depth": ["must be at most 4 (got 9)"]}
    )
    assert error(replaced)["fields"] == {"children.max_depth": ["must be at most 4 (got 9)"]}
    assert PromptVersion.objects.count() == 1


def test_an_update_changes_plain_fields_and_checks_if_match(api_agent, ada_api):
    moved = ada_api.patch(AGENT, {"name": "Autre"}, headers={"If-Match": '"7"'})
    updated = ada_api.patch(AGENT, {"name": "Rédacteur en chef", "is_active": False}, headers={"If-Match": '"1"'})

    assert moved.status_code == 412
    assert updated.status_code == 200
    assert (updated.json()["name"], updated.json()["is_active"]) == ("Rédacteur en chef", False)


def test_an_update_proposes_a_runtime_policy_and_keeps_it_when_omitted(api_agent, alice_api, ada_api):
    renamed = ada_api.patch(AGENT, {"name": "Rédactrice"})
    proposed = alice_api.patch(AGENT, {"runtime_policy": {"max_iterations": 4}, "reason": "court"})
    empty = alice_api.patch(AGENT, {})

    assert (renamed.status_code, renamed.json()["proposal"]) == (200, None)
    assert proposed.status_code == 202
    version = PromptVersion.objects.get(status="pending")
    assert proposed["Location"] == f"/v1/admin/prompt-versions/{version.pk}"
    assert (proposed.json()["proposal"]["number"], version.reason) == (2, "court")
    assert version.snapshot["runtime_policy"]["max_iterations"] == 4
    assert Agent.objects.get().runtime_policy == default_runtime_policy()
    assert error(empty)["fields"] == {
        "non_field_errors": [
            "Name at least one of: name, description, preset, is_active, runtime_policy, allowed_tool_names."
        ]
    }


def test_an_update_proposes_the_tools_an_agent_may_call(api_agent, alice_api):
    response = alice_api.patch(AGENT, {"allowed_tool_names": ["delegate"]})
    unknown = alice_api.patch(AGENT, {"allowed_tool_names": ["rm_rf"]})

    assert response.status_code == 202
    assert PromptVersion.objects.get(status="pending").snapshot["allowed_tool_names"] == ["delegate"]
    assert error(unknown)["fields"] == {"allowed_tool_names[0]": ['"rm_rf" is not a valid choice.']}


def test_an_editor_may_propose_a_policy_but_not_rename(api_agent, alice_api):
    response = alice_api.patch(AGENT, {"name": "x", "runtime_policy": {}})

    assert response.status_code == 403
    assert PromptVersion.objects.count() == 1


def test_builtin_agents_are_never_deleted(workspace, ada, ada_api, echo_preset):
    agent_create(workspace=workspace, actor=Actor.for_user(ada), key="core", name="Core", is_builtin=True)

    response = ada_api.delete("/v1/admin/agents/core")

    assert response.status_code == 409
    assert error(response)["message"] == "Agent 'core' is built in and cannot be deleted; disable it instead."


def test_an_ownerless_key_deletes_an_agent_and_its_sections_history_names_no_one(api_agent, api_as, make_key):
    """Issue 24, item 6: the sections deleted with the agent are historied with the
    request's user, which for an owner-less key is no person."""
    response = api_as(make_key("read,write,publish")).delete(AGENT)

    assert response.status_code == 204
    assert not Agent.objects.filter(key="redacteur").exists()
    deleted = AgentSection.history.filter(history_type="-")
    assert deleted.count() == 2
    assert {record.history_user for record in deleted} == {None}
    (agent_deleted,) = Agent.history.filter(history_type="-")
    assert (agent_deleted.history_user, agent_deleted.history_change_reason) == (None, "api:key-0: deleted")


def test_an_agent_others_delegate_to_is_deleted_only_with_force(api_agent, workspace, ada, ada_api):
    agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="chef",
        name="Chef",
        snapshot={"identity": {"name": "Chef"}, "runtime_policy": {"interaction": {"spawn_agent_ids": ["redacteur"]}}},
    )

    refused = ada_api.delete(AGENT)
    moved = ada_api.delete(f"{AGENT}?force=true", headers={"If-Match": '"2"'})
    forced = ada_api.delete(f"{AGENT}?force=true", headers={"If-Match": '"1"'})

    assert refused.status_code == 409
    assert error(refused)["dependents"] == ["agent 'chef' delegates to it"]
    assert moved.status_code == 412
    assert forced.status_code == 204
    assert not Agent.objects.filter(key="redacteur").exists()


# --- the profile and the policy: proposals --------------------------------------------
def test_a_profile_change_waits_for_review_with_a_location(api_agent, alice_api):
    response = alice_api.patch(f"{AGENT}/profile", {"persona": "Précise.", "reason": "ton"})

    assert response.status_code == 202
    version = PromptVersion.objects.get(status="pending")
    assert response["Location"] == f"/v1/admin/prompt-versions/{version.pk}"
    assert response.json()["number"] == 2
    assert version.snapshot["identity"] == {
        "name": "Camille",
        "role": "Rédactrice",
        "persona": "Précise.",
        "language": "fr",
        "goals": [],
    }
    assert Agent.objects.get().live_version.number == 1


def test_a_publisher_applies_a_profile_change_live(api_agent, ada_api):
    response = ada_api.patch(f"{AGENT}/profile", {"onboarding": "Bienvenue.", "mode": "live"})

    assert response.status_code == 200
    assert response.json()["status"] == "approved"
    assert Agent.objects.get().onboarding == "Bienvenue."


def test_an_editor_cannot_apply_live(api_agent, alice_api):
    response = alice_api.patch(f"{AGENT}/profile", {"onboarding": "Bienvenue.", "mode": "live"})

    assert response.status_code == 403
    assert "lacks the 'publish' scope" in error(response)["message"]


def test_the_policy_resets_with_an_empty_object_and_is_kept_when_omitted(api_agent, ada, alice_api):
    prompt_version_propose(
        agent=api_agent, changes={"runtime_policy": {"max_iterations": 4}}, actor=Actor.for_user(ada), mode="live"
    )

    kept = alice_api.patch(f"{AGENT}/profile", {"persona": "Brève."})
    reset = alice_api.put(f"{AGENT}/runtime-policy?reason=defaults", {})

    assert (kept.status_code, reset.status_code) == (202, 202)
    kept_version, reset_version = PromptVersion.objects.filter(status="pending").order_by("number")
    assert kept_version.snapshot["runtime_policy"]["max_iterations"] == 4
    assert reset_version.snapshot["runtime_policy"] == default_runtime_policy()
    assert reset_version.reason == "defaults"


def test_a_policy_out_of_range_or_unknown_is_refused_with_its_path(api_agent, alice_api):
    response = alice_api.put(f"{AGENT}/runtime-policy", {"children": {"max_depth": 9}, "colour": "blue"})

    assert response.status_code == 400
    assert error(response)["fields"] == {
        "children.max_depth": ["must be at most 4 (got 9)"],
        "colour": ["unknown field"],
    }
    assert PromptVersion.objects.count() == 1


def test_the_policy_reads_with_every_default(api_agent, reader_api):
    response = reader_api.get(f"{AGENT}/runtime-policy")

    assert response.json() == default_runtime_policy()
    assert response["ETag"] == '"1"'


# --- versions, restore, clone, test ---------------------------------------------------
def test_versions_list_newest_first_and_one_reads_with_its_diff_against_live(api_agent, alice, reader_api):
    prompt_version_propose(agent=api_agent, changes={"onboarding": "Bonjour."}, actor=Actor.for_user(alice))

    listed = reader_api.get(f"{AGENT}/versions").json()["results"]
    detail = reader_api.get(f"{AGENT}/versions/2").json()

    assert [(v["number"], v["status"]) for v in listed] == [(2, "pending"), (1, "approved")]
    assert detail["live_version"] == 1
    assert detail["diff"]["onboarding"] == {"field": "onboarding", "before": "", "after": "Bonjour."}
    assert detail["diff"]["change_count"] == 1
    assert detail["snapshot"]["onboarding"] == "Bonjour."
    assert reader_api.get(f"{AGENT}/versions/9").status_code == 404


def test_restore_proposes_an_old_snapshot_as_a_new_version(api_agent, ada, alice_api):
    prompt_version_propose(agent=api_agent, changes={"onboarding": "Bonjour."}, actor=Actor.for_user(ada), mode="live")

    stale = alice_api.post(f"{AGENT}/versions/1/restore", {"reason": "retour"}, headers={"If-Match": '"1"'})
    response = alice_api.post(f"{AGENT}/versions/1/restore", {"reason": "retour"}, headers={"If-Match": '"2"'})

    assert stale.status_code == 412
    assert response.status_code == 202
    assert (response.json()["number"], response.json()["reason"]) == (3, "restore of v1: retour")


def test_clone_makes_a_new_agent_from_a_version(api_agent, ada_api, alice_api):
    refused = alice_api.post(f"{AGENT}/clone", {"key": "copie", "name": "Copie"})
    response = ada_api.post(f"{AGENT}/clone", {"key": "copie", "name": "Copie", "version": 1})

    assert refused.status_code == 403
    assert response.status_code == 201
    assert response.json()["sections"] == api_agent.live_version.snapshot["sections"]


def test_one_test_turn_runs_without_side_effects(api_agent, alice_api):
    response = alice_api.post(f"{AGENT}/test", {"message": "Bonjour"})

    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["dry_run"], body["version"]) == ("succeeded", True, 1)
    assert body["answer"].startswith("[echo echo-1] Bonjour #sp=")
    assert body["debug_logs"] == list(AgentTurn.objects.get().debug_logs.values_list("pk", flat=True))


def test_a_readers_key_may_not_run_a_test(api_agent, reader_api):
    response = reader_api.post(f"{AGENT}/test", {"message": "Bonjour"})

    assert response.status_code == 403
    assert (
        error(response)["message"] == "API key 'key-0' lacks the 'write' scope needed for running agents and workflows."
    )


# --- another workspace ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", AGENT, None),
        ("patch", AGENT, {"name": "x"}),
        ("delete", AGENT, None),
        ("get", f"{AGENT}/profile", None),
        ("patch", f"{AGENT}/profile", {"persona": "x"}),
        ("put", f"{AGENT}/runtime-policy", {}),
        ("get", f"{AGENT}/sections", None),
        ("post", f"{AGENT}/sections", {"key": "x", "body": "x"}),
        ("patch", f"{AGENT}/sections/methode", {"body": "x"}),
        ("delete", f"{AGENT}/sections/methode", None),
        ("post", f"{AGENT}/sections/reorder", {"keys": ["sources", "methode"]}),
        ("get", f"{AGENT}/skills", None),
        ("post", f"{AGENT}/skills", {"key": "x", "body": "x"}),
        ("get", f"{AGENT}/versions", None),
        ("get", f"{AGENT}/versions/1", None),
        ("post", f"{AGENT}/versions/1/restore", {}),
        ("post", f"{AGENT}/clone", {"key": "x", "name": "x"}),
        ("post", f"{AGENT}/test", {"message": "x"}),
    ],
)
def test_charlie_of_another_workspace_gets_404_everywhere(
    api_agent, api_as, make_key, other_workspace, charlie, method, path, body
):
    globex = api_as(make_key("read,write,publish", owner=charlie, workspace=other_workspace))

    response = getattr(globex, method)(path, body) if body is not None else getattr(globex, method)(path)

    assert response.status_code == 404
    assert error(response) == {"code": "not_found", "message": "Unknown agent 'redacteur'.", "fields": {}}
    assert PromptVersion.objects.count() == 1


# --- scopes, verb by verb -------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path", "body", "scope"),
    [
        ("post", "/v1/admin/agents", {"key": "x", "name": "x"}, "publish"),
        ("patch", AGENT, {"name": "x"}, "publish"),
        ("delete", AGENT, None, "publish"),
        ("patch", f"{AGENT}/profile", {"persona": "x"}, "write"),
        ("put", f"{AGENT}/runtime-policy", {}, "write"),
        ("post", f"{AGENT}/sections", {"key": "x", "body": "x"}, "write"),
        ("patch", f"{AGENT}/sections/methode", {"body": "x"}, "write"),
        ("delete", f"{AGENT}/sections/methode", None, "write"),
        ("post", f"{AGENT}/sections/reorder", {"keys": ["sources", "methode"]}, "write"),
        ("post", f"{AGENT}/skills", {"key": "x", "body": "x"}, "write"),
        ("post", f"{AGENT}/versions/1/restore", {}, "write"),
        ("post", f"{AGENT}/clone", {"key": "x", "name": "x"}, "publish"),
        ("post", f"{AGENT}/test", {"message": "x"}, "write"),
        ("post", "/v1/admin/presets", {"key": "x", "name": "x", "provider_name": "echo", "model": "echo-1"}, "publish"),
        ("post", "/v1/admin/skills", {"key": "x", "title": "x", "body": "x"}, "write"),
    ],
)
def test_a_read_key_is_refused_every_write_naming_the_scope(api_agent, reader_api, method, path, body, scope):
    response = getattr(reader_api, method)(path, body) if body is not None else getattr(reader_api, method)(path)

    assert response.status_code == 403
    assert f"lacks the '{scope}' scope" in error(response)["message"]
    assert (PromptVersion.objects.count(), Agent.objects.count()) == (1, 1)
