"""The desk in French: a person whose browser (or profile) asks for French reads the
queue, the review page, the agent page and the run page in French; English otherwise."""

import pytest
from django.urls import reverse

from agents.services import agent_create, prompt_version_propose
from aihummer.actors import Actor
from aihummer.tests.factories import make_echo_preset

SNAPSHOT = {
    "identity": {"name": "Camille", "role": "Rédactrice"},
    "sections": [{"key": "methode", "title": "Méthode", "body": "Un plan en trois points."}],
}
FRENCH = {"accept-language": "fr-FR,fr;q=0.9,en;q=0.5"}
ENGLISH = {"accept-language": "en-US,en;q=0.9"}


@pytest.fixture
def agent(workspace, ada):
    make_echo_preset(workspace, by=Actor.for_user(ada))
    return agent_create(
        workspace=workspace, actor=Actor.for_user(ada), key="redacteur", name="Rédacteur", snapshot=SNAPSHOT
    )


@pytest.fixture
def proposal(agent, alice):
    changes = {"sections": [{**SNAPSHOT["sections"][0], "body": "Un plan en deux points."}]}
    return prompt_version_propose(agent=agent, changes=changes, actor=Actor.for_user(alice), reason="court")


def test_the_queue_speaks_the_browser_language(client, bob, proposal):
    client.force_login(bob)
    url = reverse("admin:agents_promptversion_changelist")

    french = client.get(url, headers=FRENCH)
    english = client.get(url, headers=ENGLISH).content.decode()

    assert french.headers["Content-Language"] == "fr"
    page = french.content.decode()
    assert "<title>File de relecture | AiHummer</title>" in page
    assert "1 modification, +" in page and ">formulation · 0/1</span>" in page
    assert "En attente</a>" in page and "Approuver les propositions sélectionnées" in page  # the status filter
    assert "Ancienneté" in page and "Motif" in page  # column headings (bob reads one workspace: no workspace column)
    assert "Review queue" not in page
    # the models' names, in the side menu of any other page (the queue gives its width to its columns)
    menu = client.get(reverse("admin:agents_agent_changelist"), headers=FRENCH).content.decode()
    assert "Tours d\u2019agent" in menu and "Exécutions de workflows" in menu
    assert ">aucun cas</span>" in page

    assert "<title>Review queue | AiHummer</title>" in english and "1 change, +" in english


def test_a_profile_language_wins_over_the_browser(client, bob, proposal):
    bob.language = "fr"
    bob.save(update_fields=["language"])
    client.force_login(bob)

    page = client.get(reverse("admin:index"), headers=ENGLISH).content.decode()

    assert "<strong>1</strong> proposition attend votre décision." in page


def test_the_review_page_speaks_the_browser_language(client, bob, proposal):
    client.force_login(bob)
    url = reverse("admin:agents_promptversion_review", args=[proposal.pk])

    page = client.get(url, headers=FRENCH).content.decode()
    english = client.get(url, headers=ENGLISH).content.decode()

    assert "Relecture de redacteur v2" in page
    assert 'Proposée par <strong id="aih-source">admin:alice</strong> il y a' in page
    assert "Relecture requise\u00a0:" in page and "0 approbation sur 1" in page
    assert 'value="Approuver"' in page and 'value="Refuser"' in page
    assert "Prompt système rendu (premier tour)" in page and "Proposée v2" in page and "En service v1" in page
    assert '<span class="aih-muted">texte</span>' in page  # the changed field of the section, by its French name

    assert "Facultative pour approuver, obligatoire pour refuser." in page
    for english_word in ("Proposed by", "Review needed", "Decide", "Rendered system prompt"):
        assert english_word not in page
    assert "Proposed by" in english and 'value="Approve"' in english and "0 of 1 approval" in english


def test_the_agent_page_speaks_the_browser_language(client, ada, proposal):
    client.force_login(ada)
    url = reverse("admin:agents_agent_change", args=[proposal.agent_id])

    page = client.get(url, headers=FRENCH).content.decode()

    assert "Proposer une modification" in page and "1 proposition attend sa relecture." in page
    assert "Ce qui est dit \u00e0 l\u2019agent (version en service, en lecture seule)" in page
    assert "Pr\u00e9r\u00e9glage" in page and "Outils autoris\u00e9s" in page and "Cas de test (0)" in page
    assert "Prompt syst\u00e8me rendu (premier tour)" in page
    assert "Jetons du budget gard\u00e9s libres pour la r\u00e9ponse." in page  # the runtime policy's settings

    for english_word in ("What the agent is told", "Live version", "Allowed tool names"):
        assert english_word not in page


def test_a_refusal_on_the_review_page_speaks_french(client, alice, proposal):
    client.force_login(alice)

    page = client.get(reverse("admin:agents_promptversion_review", args=[proposal.pk]), headers=FRENCH)

    # alice is an editor: deciding needs the reviewer role, said in French on the desk
    assert (
        "alice est un éditeur dans l\u2019espace de travail «\u00a0acme\u00a0»\u00a0; approuver ou refuser demande "
        "le rôle relecteur." in page.content.decode()
    )
