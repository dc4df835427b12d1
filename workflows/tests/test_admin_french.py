"""The runs desk in French: the run page and the runs list speak the browser's language."""

from __future__ import annotations

import pytest
from django.urls import reverse

from workflows.tests.test_admin_runs import make_run, run_url  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db
FRENCH = {"accept-language": "fr"}


def test_the_run_page_and_the_runs_list_speak_french(client, bob, make_run) -> None:  # noqa: F811
    run = make_run(3)
    client.force_login(bob)

    page = client.get(run_url(run), headers=FRENCH).content.decode()
    listing = client.get(reverse("admin:workflows_workflowrun_changelist"), headers=FRENCH).content.decode()
    english = client.get(run_url(run), headers={"accept-language": "en"}).content.decode()

    assert f"Exécution de fan3 v{run.workflow_version}" in page
    assert "Chronologie" in page and "Graphe des étapes" in page and "Étapes" in page
    assert 'data-status="completed" style="background:#2f855a">terminée</span>' in page
    assert "Lancée par" in page and "Tentatives" in page and "Version de l\u2019agent" in page
    assert "en entrée," in page and "ignorée" in page  # the step that never runs
    for english_word in ("Timeline", "Step graph", "Started by", "Attempts"):
        assert english_word not in page
    assert "Durée des exécutions terminées" in listing and "Lancée par" in listing
    assert "Timeline" in english and ">completed</span>" in english
