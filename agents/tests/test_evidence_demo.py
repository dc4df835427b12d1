"""The demo's evidence: two or three cases per demo agent, and exactly one pending
proposal whose evidence shows a regression on echo."""

from __future__ import annotations

from django.core.management import call_command

from agents.models import Agent, EvidenceRun
from agents.services import evidence_regressions


def test_each_demo_agent_has_cases_and_one_proposal_regresses(
    db, settings, tmp_path, capsys, django_capture_on_commit_callbacks
):
    settings.BASE_DIR = tmp_path
    settings.AIHUMMER_EVIDENCE_CONCURRENCY = 1  # threads cannot see the test's transaction

    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo")

    agents = Agent.objects.filter(workspace__slug="demo")
    assert {agent.key: agent.test_cases.count() for agent in agents} == {
        "critique": 2,
        "lecteur": 2,
        "redacteur": 3,
        "support": 3,
    }
    runs = EvidenceRun.objects.filter(workspace__slug="demo", version__status="pending").select_related(
        "version__agent"
    )
    assert runs.count() == 4 and all(run.status == "done" for run in runs)
    regressed = {
        f"{run.version.agent.key} v{run.version.number}": evidence_regressions(run) for run in runs if run.regressions
    }
    assert regressed == {"redacteur v2": ["budget"]}
