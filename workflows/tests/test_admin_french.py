"""The runs desk in French: the run page and the runs list speak the browser's language."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db
FRENCH = {"accept-language": "fr"}


def test_the_run_page_and_the_runs_list_speak_french(client, bob, make_run) -> None:
    run = make_run(3)
    client.force_login(bob)

    page_url = reverse("admin:workflows_workflowrun_change", args=[run.pk])
    page = client.get(page_url, headers=FRENCH).content.decode()
    listing = client.get(reverse("admin:workflows_workflowrun_changelist"), headers=FRENCH).content.decode()
    english = client.get(page_url, headers={"accept-language": "en"}).content.decode()

    assert f"Exécution de fan3 v{run.workflow_version}" in page
    assert "Chronologie" in page and "Graphe des étapes" in page and "Étapes" in page
    assert 'data-status="completed" style="background:#2f855a">terminée</span>' in page
    assert "Lancée par" in page and "Tentatives" in page and "Version de l\u2019agent" in page
    assert "en entrée," in page and "ignorée" in page  # the step that never runs
    for english_word in ("Timeline", "Step graph", "Started by", "Attempts"):
        assert english_word not in page
    assert "Durée des exécutions terminées" in listing and "Lancée par" in listing
    assert "Timeline" in english and ">completed</span>" in english


def test_the_workflow_change_versions_and_start_pages_speak_french(client, ada, pipeline, operator) -> None:
    from workflows.services import workflow_update

    first, *others = pipeline.definition["steps"]
    edited = {**pipeline.definition, "steps": [{**first, "retries": 2}, *others]}
    workflow_update(workflow=pipeline, actor=operator, definition=edited)
    client.force_login(ada)

    def get(view: str) -> str:
        url = reverse(f"admin:workflows_workflow_{view}", args=[pipeline.pk])
        return client.get(url, headers=FRENCH).content.decode()

    change, versions, start = get("change"), get("versions"), get("start")
    started = client.post(
        reverse("admin:workflows_workflow_start", args=[pipeline.pk]), {"message": "", "inputs": ""}, headers=FRENCH
    ).content.decode()

    assert ">Lancer une exécution</a>" in change and "Graphe des étapes (v2, tel qu\u2019enregistré)" in change
    assert "De gauche à droite dans l\u2019ordre des dépendances\u00a0;" in change
    assert "Actuelle\u00a0: v2." in versions and "(actuelle)" in versions and "Modifications depuis la v1" in versions
    assert '<span class="aih-tag edited">modifiée</span><code>lecture</code>' in versions
    assert "La première version." in versions and "Définition et graphe" in versions
    assert 'value="Lancer l\u2019exécution"' in start and "Le message de l\u2019exécution\u00a0:" in start
    assert "Donnez un message, des entrées JSON, ou les deux." in started
    for page in (change, versions, start):
        for english in ("Start a run", "Step graph", "Current:", "Changes from", "Definition and graph", "Home"):
            assert english not in page
