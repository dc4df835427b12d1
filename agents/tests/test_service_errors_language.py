"""A service's refusal in the reader's language (issue 32): the services say it with
gettext where they raise it, so the desk reads it in French for a French admin, while
REST (and MCP) answer in English whatever the client's Accept-Language."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.services import prompt_version_propose
from aihummer.actors import Actor
from workflows.services import workflow_create

FRENCH = {"accept-language": "fr-FR,fr;q=0.9"}
TAKEN_EN = "An agent with key 'redacteur' already exists in workspace 'acme'."
TAKEN_FR = "La clé «\u00a0redacteur\u00a0» est déjà prise dans l\u2019espace de travail «\u00a0acme\u00a0» (agent)."


DISABLED_EN = "Workflow 'chaine' is disabled; enable it to run it."
DISABLED_FR = "Le workflow «\u00a0chaine\u00a0» est désactivé\u00a0; activez-le pour l\u2019exécuter."


@pytest.fixture
def disabled_workflow(workspace, ada, api_agent):
    return workflow_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="chaine",
        name="Chaîne",
        definition={"version": 1, "steps": [{"name": "ecrire", "agent_name": "redacteur"}]},
        is_active=False,
    )


def test_rest_refuses_a_disabled_workflow_in_english_to_a_french_client(ada_api, disabled_workflow) -> None:
    response = ada_api.post("/v1/admin/workflows/chaine/runs", {"message": "bonjour"}, headers=FRENCH)

    assert response.status_code == 409
    assert response.json()["error"]["message"] == DISABLED_EN
    assert "Content-Language" not in response.headers


def test_the_desk_refuses_the_same_start_in_french(client, ada, disabled_workflow) -> None:
    client.force_login(ada)
    url = reverse("admin:workflows_workflow_start", args=[disabled_workflow.pk])

    french = client.post(url, {"message": "bonjour"}, headers=FRENCH).content.decode()
    english = client.post(url, {"message": "bonjour"}).content.decode()

    assert DISABLED_FR in french and "is disabled" not in french
    assert DISABLED_EN.replace("'", "&#x27;") in english


def test_rest_answers_a_taken_key_in_english_to_a_french_client(api_agent, ada_api) -> None:
    response = ada_api.post("/v1/admin/agents", {"key": "redacteur", "name": "X"}, headers=FRENCH)

    assert response.status_code == 422
    assert response.json()["error"]["fields"] == {"key": [TAKEN_EN]}


def test_a_taken_key_reads_in_french_where_the_desk_reaches_the_service(workspace, ada, api_agent) -> None:
    from django.core.exceptions import ValidationError
    from django.utils import translation

    from agents.services import agent_create

    with translation.override("fr"), pytest.raises(ValidationError) as refused:
        agent_create(workspace=workspace, actor=Actor.for_user(ada), key="redacteur", name="Autre")

    assert refused.value.message_dict == {"key": [TAKEN_FR]}


def test_the_desk_asks_for_a_rejection_note_in_french(client, api_agent, alice, bob) -> None:
    version = prompt_version_propose(
        agent=api_agent, changes={"identity": {"role": "Relectrice"}}, actor=Actor.for_user(alice)
    )
    client.force_login(bob)

    desk = client.post(
        reverse("admin:agents_promptversion_review", args=[version.pk]), {"note": " ", "_reject": "1"}, headers=FRENCH
    ).content.decode()

    assert "Dites pourquoi vous la refusez\u00a0: l\u2019auteur de la proposition lit cette note." in desk
