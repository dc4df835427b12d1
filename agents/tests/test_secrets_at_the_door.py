"""Issue 25, item 7: a vault secret's value pasted into what an agent is told (profile,
section, skill, onboarding) or into a shared skill is refused with a field error that
names the credential, never the value — on the admin, REST and MCP alike. Turns keep
redacting by value as a second line (test_redaction.py, test_secret_echo.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Agent, PromptVersion, Skill
from agents.services import agent_create, credential_create, skill_create
from agents.tests.helpers import form_data
from aihummer.actors import Actor
from aihummer.tests.mcp_helpers import call_tool, error

SECRET = "sk-live-Zq81xW0pLm44vT7c"
REFUSAL = "the secret of credential 'openai' is in this text: secrets never go into what an agent is told; remove it."
SKILL_REFUSAL = REFUSAL.capitalize()  # a shared skill's own field, not a snapshot path
AGENT = "/v1/admin/agents/writer"


@pytest.fixture
def writer(workspace, ada, echo_preset) -> Agent:
    actor = Actor.for_user(ada)
    credential_create(workspace=workspace, key="openai", secret=SECRET, actor=actor)
    snapshot = {
        "identity": {"name": "Camille", "role": "Writer"},
        "sections": [{"key": "method", "title": "Method", "body": "Plan first."}],
        "skills": [{"key": "style", "title": "Style", "body": "Short.", "shared": False}],
    }
    return agent_create(workspace=workspace, actor=actor, key="writer", name="Writer", snapshot=snapshot)


def versions() -> int:
    return PromptVersion.all_objects.count()


# --- REST ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "url", "body", "fields"),
    [
        ("patch", f"{AGENT}/profile", {"onboarding": f"Key: {SECRET}"}, {"onboarding": [REFUSAL]}),
        ("patch", f"{AGENT}/profile", {"system_prompt": f"Use {SECRET}."}, {"system_prompt": [REFUSAL]}),
        ("patch", f"{AGENT}/profile", {"persona": SECRET}, {"identity.persona": [REFUSAL]}),
        ("patch", f"{AGENT}/profile", {"goals": ["Draft", f"x{SECRET}x"]}, {"identity.goals[1]": [REFUSAL]}),
        ("post", f"{AGENT}/sections", {"key": "k", "title": "K", "body": SECRET}, {"sections[1].body": [REFUSAL]}),
        ("patch", f"{AGENT}/sections/method", {"title": SECRET}, {"sections[0].title": [REFUSAL]}),
        ("post", f"{AGENT}/skills", {"key": "own", "title": "Own", "body": SECRET}, {"skills[1].body": [REFUSAL]}),
        ("patch", f"{AGENT}/skills/style", {"body": SECRET}, {"skills[0].body": [REFUSAL]}),
        (
            "post",
            "/v1/admin/skills",
            {"key": "tone", "title": "Tone", "body": SECRET},
            {"body": [SKILL_REFUSAL]},
        ),
    ],
)
def test_rest_refuses_a_secret_in_every_text_field(writer, alice_api, method, url, body, fields):
    before = versions()

    response = getattr(alice_api, method)(url, body)

    assert response.status_code == 422, response.json()
    assert response.json()["error"]["fields"] == fields
    assert SECRET not in response.content.decode()
    assert versions() == before
    assert not Skill.objects.exists()


def test_rest_refuses_a_secret_in_a_new_agent_and_a_shared_skill_edit(writer, api_as, make_key, ada, workspace):
    publisher = api_as(make_key("read,write,publish", owner=ada))
    skill_create(workspace=workspace, key="tone", title="Tone", body="Be brief.", actor=Actor.for_user(ada))

    created = publisher.post("/v1/admin/agents", {"key": "spy", "name": "Spy", "profile": {"onboarding": SECRET}})
    edited = publisher.patch("/v1/admin/skills/tone", {"body": f"Be brief. {SECRET}"})

    assert (created.status_code, created.json()["error"]["fields"]) == (422, {"onboarding": [REFUSAL]})
    assert (edited.status_code, edited.json()["error"]["fields"]) == (422, {"body": [SKILL_REFUSAL]})
    assert not Agent.all_objects.filter(key="spy").exists()
    assert Skill.objects.get(key="tone").body == "Be brief."


# --- MCP --------------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_mcp_refuses_a_secret_in_a_system_prompt_and_a_sandbox_agent(writer, make_key, alice):
    raw = make_key("read,write", owner=alice)
    before = versions()

    proposed = error(call_tool(raw, "update_agent_system_prompt", agentId="writer", systemPrompt=f"Key {SECRET}"))
    sandbox = error(call_tool(raw, "create_sandbox_agent", key="sb_spy", name="Spy", systemPrompt=SECRET))

    assert proposed["fields"] == {"systemPrompt": [f"$.system_prompt: {REFUSAL}"]}
    assert sandbox["fields"] == {"systemPrompt": [f"$.system_prompt: {REFUSAL}"]}
    assert SECRET not in str(proposed) + str(sandbox)
    assert versions() == before
    assert not Agent.all_objects.filter(key="sb_spy").exists()


# --- the admin ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "shown"),
    [
        ("onboarding", f"$.onboarding: {REFUSAL}"),
        ("system_prompt", f"$.system_prompt: {REFUSAL}"),
        ("persona", f"identity: $.identity.persona: {REFUSAL}"),
        ("sections-0-body", f"sections: $.sections[0].body: {REFUSAL}"),
        ("skills-0-body", f"skills: $.skills[0].body: {REFUSAL}"),
    ],
)
def test_the_propose_page_refuses_a_secret_in_every_text_field(client, writer, alice, field, shown):
    client.force_login(alice)
    url = reverse("admin:agents_agent_propose", args=[writer.pk])
    data = form_data(client.get(url).content.decode()) | {field: f"see {SECRET}", "reason": "try"}
    before = versions()

    response = client.post(url, data)

    page = response.content.decode()
    assert response.status_code == 200
    assert shown.replace("'", "&#x27;") in page
    assert SECRET not in page.replace(f"see {SECRET}", "")  # only in the field the person typed it in
    assert versions() == before


def test_the_skill_page_refuses_a_secret(client, writer, ada, workspace):
    client.force_login(ada)

    response = client.post(
        reverse("admin:agents_skill_add"), {"workspace": workspace.pk, "key": "tone", "title": "Tone", "body": SECRET}
    )

    assert response.status_code == 200
    assert SKILL_REFUSAL.replace("'", "&#x27;") in response.content.decode()
    assert not Skill.objects.exists()
