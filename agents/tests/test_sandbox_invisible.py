"""Issue 10: sandbox rows stay invisible to people in counts, messages and dependents
lists, as they are in lists and pickers."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from agents.services import (
    agent_create,
    credential_create,
    preset_create,
    preset_dependents,
    skill_as_snapshot_entry,
    skill_create,
)
from aihummer.actors import Actor
from aihummer.services import api_key_create


@pytest.fixture
def bot(workspace, ada):
    api_key, _ = api_key_create(workspace=workspace, name="bot", scopes="write", actor=Actor.for_user(ada))
    return Actor.for_api_key(api_key, surface="mcp")


@pytest.fixture
def shared(workspace, ada, bot):
    """A credential, a preset and a shared skill, each used by one visible row and one sandbox row."""
    as_ada = Actor.for_user(ada)
    credential = credential_create(workspace=workspace, key="openai", secret="sk-x-123456789012345678", actor=as_ada)
    preset = preset_create(
        workspace=workspace,
        actor=as_ada,
        key="gpt",
        name="GPT",
        provider_name="openai",
        model="gpt-4.1",
        credential=credential,
        is_active=True,
    )
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
