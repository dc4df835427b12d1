"""Issue 10: sandbox rows stay invisible to people in counts, messages and dependents
lists, as they are in lists and pickers."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from agents.models import Agent, DebugLog
from agents.services import (
    agent_create,
    preset_create,
    preset_dependents,
    skill_as_snapshot_entry,
    skill_create,
)
from aihummer.actors import Actor
from aihummer.services import api_key_create
from aihummer.tests.factories import vault_preset


@pytest.fixture
def bot(workspace, ada):
    api_key, _ = api_key_create(workspace=workspace, name="bot", scopes="write", actor=Actor.for_user(ada))
    return Actor.for_api_key(api_key, surface="mcp")


@pytest.fixture
def shared(workspace, ada, bot):
    """A credential, a preset and a shared skill, each used by one visible row and one sandbox row."""
    as_ada = Actor.for_user(ada)
    preset = vault_preset(
        workspace,
        secret="sk-x-123456789012345678",
        key="gpt",
        name="GPT",
        credential_key="openai",
        by=as_ada,
        is_active=True,
    )
    credential = preset.credential
    preset_create(
        workspace=workspace,
        actor=Actor.for_operator(name="tests"),  # a key may not point a credential anywhere
        key="sbpreset",
        name="Sb",
        provider_name="openai",
        model="gpt-4.1",
        credential=credential,
        is_sandbox=True,
    )
    skill = skill_create(workspace=workspace, key="tone", title="Tone", body="Be brief.", actor=as_ada)
    snapshot = {"identity": {"name": "W"}, "skills": [skill_as_snapshot_entry(skill)]}
    agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer", preset=preset, snapshot=snapshot)
    agent_create(
        workspace=workspace, actor=bot, key="sbskill", name="Sb", preset=preset, snapshot=snapshot, is_sandbox=True
    )
    return credential, preset, skill


def cell(page: str, column: str) -> list[str]:
    return re.findall(rf'<td class="field-{column}">(\d+)</td>', page)


def test_list_counts_leave_sandbox_rows_out(client, shared, ada):
    client.force_login(ada)

    presets = client.get(reverse("admin:agents_preset_changelist")).content.decode()
    credentials = client.get(reverse("admin:agents_credential_changelist")).content.decode()

    assert cell(presets, "agent_count") == ["1"]
    assert cell(credentials, "preset_count") == ["1"]


def test_editing_a_shared_skill_names_only_visible_agents(client, shared, alice):
    _, _, skill = shared
    client.force_login(alice)

    response = client.post(
        reverse("admin:agents_skill_change", args=[skill.pk]), {"title": "Tone", "body": "Be briefer."}, follow=True
    )

    said = [str(m) for m in response.context["messages"]]
    assert "Proposed to writer as v2 (pending)." in said
    assert not any("sbskill" in m for m in said), said


def test_dependents_name_sandbox_rows_only_to_callers_that_see_them(shared, ada, bot):
    _, preset, _ = shared

    assert preset_dependents(preset, actor=Actor.for_user(ada)) == ["agent 'writer'", "1 sandbox agent"]
    assert preset_dependents(preset, actor=bot) == ["agent 'sbskill' (sandbox)", "agent 'writer'"]


# --- issue 25, item 6: hidden means hidden on every REST route ---------------------------
SANDBOX = "/v1/admin/agents/sbskill"
SANDBOX_ROUTES = [
    ("get", SANDBOX, None),
    ("get", f"{SANDBOX}/profile", None),
    ("get", f"{SANDBOX}/runtime-policy", None),
    ("get", f"{SANDBOX}/sections", None),
    ("get", f"{SANDBOX}/skills", None),
    ("get", f"{SANDBOX}/versions", None),
    ("get", f"{SANDBOX}/versions/1", None),
    ("patch", SANDBOX, {"name": "Renamed"}),
    ("patch", f"{SANDBOX}/profile", {"role": "Spy"}),
    ("post", f"{SANDBOX}/sections", {"key": "extra", "title": "Extra", "body": "More."}),
    ("post", f"{SANDBOX}/test", {"message": "hi"}),
    ("post", f"{SANDBOX}/clone", {"key": "copy", "name": "Copy"}),
    ("delete", SANDBOX, None),
]


@pytest.mark.parametrize("who", ["ada", "root"])
def test_a_sandbox_agent_answers_404_to_people_on_every_rest_route(shared, api_as, request, who):
    client = api_as(request.getfixturevalue(who), HTTP_X_WORKSPACE="acme")

    answers = [(method, url, getattr(client, method)(url, body).status_code) for method, url, body in SANDBOX_ROUTES]

    assert [answer for answer in answers if answer[2] != 404] == []
    agent = Agent.all_objects.get(key="sbskill")
    assert (agent.name, agent.live_version.number) == ("Sb", 1)
    assert not Agent.all_objects.filter(key="copy").exists()


def test_a_program_with_the_sandbox_right_still_reads_and_changes_its_sandbox_agent(shared, api_as, workspace, ada):
    _, raw = api_key_create(workspace=workspace, name="builder", scopes="read,write", actor=Actor.for_user(ada))
    client = api_as(raw)

    detail = client.get(SANDBOX)
    renamed = client.patch(f"{SANDBOX}/profile", {"role": "Tester"})
    tested = client.post(f"{SANDBOX}/test", {"message": "hi"})

    assert (detail.status_code, detail.json()["key"]) == (200, "sbskill")
    assert renamed.status_code == 200  # sandbox agents have no queue: applied at once
    assert Agent.all_objects.get(key="sbskill").role == "Tester"
    assert tested.status_code == 200
    logs = tested.json()["debug_logs"]
    assert logs == list(DebugLog.all_objects.filter(turn_id=tested.json()["id"]).values_list("pk", flat=True))
    assert len(logs) == 1
