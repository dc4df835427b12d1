"""The demo workflows: seeded once, and both run from the shell on the echo preset."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from workflows.models import Workflow


@pytest.mark.django_db(transaction=True)
def test_seed_demo_adds_the_pipeline_and_the_fan_in_and_both_run(settings, tmp_path) -> None:
    settings.BASE_DIR = tmp_path
    call_command("seed_demo", stdout=StringIO())
    call_command("seed_demo", stdout=StringIO())
    assert list(Workflow.objects.values_list("key", "version")) == [("lecture-critique", 1), ("resume-et-brouillon", 1)]
    for key in ("lecture-critique", "resume-et-brouillon"):
        out = StringIO()
        call_command("run_workflow", "demo", key, "--message", "Un texte à lire.", "--json", stdout=out)
        summary = json.loads(out.getvalue())
        assert summary["status"] == "completed", summary["error"]
        assert summary["answer"]
    fan_in = {step["name"]: step for step in summary["steps"]}
    assert fan_in["critique"]["input"].startswith("## Résumé\n[echo echo-1] Un texte à lire. #sp=")
    assert "\n\n## Brouillon\n[echo echo-1] Un texte à lire. #sp=" in fan_in["critique"]["input"]
