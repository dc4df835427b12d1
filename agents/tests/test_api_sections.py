"""/v1/admin/agents/{key}/sections and /skills: each edit is a proposal on top of live."""

from __future__ import annotations

from agents.models import PromptVersion
from agents.services import prompt_version_propose, skill_create
from aihummer.actors import Actor

SECTIONS = "/v1/admin/agents/redacteur/sections"
SKILLS = "/v1/admin/agents/redacteur/skills"


def pending_snapshot() -> dict:
    return PromptVersion.objects.get(status="pending").snapshot


def keys(items: list[dict]) -> list[str]:
    return [item["key"] for item in items]


def test_sections_list_in_order_with_the_live_version_as_etag(api_agent, alice_api):
    response = alice_api.get(SECTIONS)

    assert keys(response.json()) == ["methode", "sources"]
    assert response["ETag"] == '"1"'


def test_a_new_section_is_proposed_at_its_position(api_agent, alice_api):
    response = alice_api.post(SECTIONS, {"key": "ton", "title": "Ton", "body": "Chaleureux.", "position": 1})

    assert response.status_code == 202
    sections = pending_snapshot()["sections"]
    assert [(s["key"], s["position"]) for s in sections] == [("methode", 0), ("ton", 1), ("sources", 2)]


def test_a_section_key_taken_is_a_422(api_agent, alice_api):
    response = alice_api.post(SECTIONS, {"key": "methode", "body": "x"})

    assert response.status_code == 422
    assert response.json()["error"]["fields"] == {
        "key": ["The agent already has a section 'methode'; update it instead."]
    }


def test_a_section_update_changes_only_the_fields_given(api_agent, alice_api):
    response = alice_api.patch(f"{SECTIONS}/sources", {"enabled": False})

    assert response.status_code == 202
    assert pending_snapshot()["sections"][1] == {
        "key": "sources",
        "title": "Sources",
        "body": "Aucun chiffre inventé.",
        "enabled": False,
        "position": 1,
    }


def test_an_unknown_section_is_a_404(api_agent, alice_api):
    response = alice_api.patch(f"{SECTIONS}/nope", {"body": "x"})

    assert response.status_code == 404
    assert response.json()["error"]["message"] == "The agent has no section 'nope'."


def test_a_section_delete_is_a_proposal_with_its_reason(api_agent, alice_api):
    response = alice_api.delete(f"{SECTIONS}/sources?reason=doublon")

    assert response.status_code == 202
    assert keys(pending_snapshot()["sections"]) == ["methode"]
    assert response.json()["reason"] == "doublon"


def test_reorder_needs_every_key_once(api_agent, alice_api):
    partial = alice_api.post(f"{SECTIONS}/reorder", {"keys": ["sources"]})
    response = alice_api.post(f"{SECTIONS}/reorder", {"keys": ["sources", "methode"]})

    assert partial.status_code == 422
    assert partial.json()["error"]["fields"] == {
        "keys": ["Give every section key exactly once, in the new order: methode, sources."]
    }
    assert response.status_code == 202
    assert keys(pending_snapshot()["sections"]) == ["sources", "methode"]


def test_two_clients_editing_different_sections_each_propose_against_live(api_agent, alice_api, api_as, make_key, bob):
    other = api_as(make_key("read,write", owner=bob))

    first = alice_api.patch(f"{SECTIONS}/methode", {"body": "Deux points."}, headers={"If-Match": '"1"'})
    second = other.patch(f"{SECTIONS}/sources", {"body": "Citer."}, headers={"If-Match": '"1"'})

    assert (first.status_code, second.status_code) == (202, 202)
    first_v, second_v = PromptVersion.objects.filter(status="pending").order_by("number")
    # Each changes only its own section: approving both in turn keeps both edits visible in review.
    assert [s["body"] for s in first_v.snapshot["sections"]] == ["Deux points.", "Aucun chiffre inventé."]
    assert [s["body"] for s in second_v.snapshot["sections"]] == ["Un plan en trois points.", "Citer."]


def test_a_shared_skill_is_attached_by_value_and_detached(api_agent, alice_api, workspace, ada):
    skill_create(workspace=workspace, key="ton", title="Ton", body="Chaleureux.", actor=Actor.for_user(ada))

    attached = alice_api.post(SKILLS, {"shared_skill": "ton"})
    assert attached.status_code == 202
    assert pending_snapshot()["skills"] == [{"key": "ton", "title": "Ton", "body": "Chaleureux.", "shared": True}]

    PromptVersion.objects.filter(status="pending").delete()
    prompt_version_propose(
        agent=api_agent,
        changes={"skills": [{"key": "ton", "title": "Ton", "body": "Chaleureux.", "shared": True}]},
        actor=Actor.for_user(ada),
        mode="live",
    )
    detached = alice_api.delete(f"{SKILLS}/ton")

    assert detached.status_code == 202
    assert pending_snapshot()["skills"] == []


def test_an_unknown_shared_skill_is_a_422(api_agent, alice_api):
    response = alice_api.post(SKILLS, {"shared_skill": "nope"})

    assert response.status_code == 422
    assert response.json()["error"]["fields"] == {"shared_skill": ["Unknown shared skill 'nope'."]}


def test_an_own_skill_is_added_and_edited_but_a_shared_one_is_edited_at_its_source(api_agent, alice_api, ada):
    prompt_version_propose(
        agent=api_agent,
        changes={"skills": [{"key": "ton", "title": "Ton", "body": "Chaleureux.", "shared": True}]},
        actor=Actor.for_user(ada),
        mode="live",
    )

    added = alice_api.post(SKILLS, {"key": "plan", "title": "Plan", "body": "Trois parties."})
    shared = alice_api.patch(f"{SKILLS}/ton", {"body": "Froid."})

    assert added.status_code == 202
    assert pending_snapshot()["skills"][1] == {
        "key": "plan",
        "title": "Plan",
        "body": "Trois parties.",
        "shared": False,
    }
    assert shared.status_code == 422
    assert shared.json()["error"]["fields"] == {
        "key": ["'ton' is a shared skill: edit it under /v1/admin/skills/ton, or detach it."]
    }


def test_a_skill_body_needs_either_a_shared_skill_or_a_key(api_agent, alice_api):
    response = alice_api.post(SKILLS, {"title": "x"})

    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"non_field_errors": ["Give exactly one of: shared_skill, key."]}
