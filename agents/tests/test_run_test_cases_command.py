"""`manage.py run_test_cases WORKSPACE AGENT [--version N] [--json]`: an agent's active
cases on one version, a line per case, and a non-zero exit when one fails (for CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from agents.models import AgentTurn
from agents.services import agent_create, agent_test_case_create, prompt_version_propose
from aihummer.actors import Actor

SNAPSHOT = {"identity": {"name": "Camille"}, "sections": [{"key": "ton", "body": "Sois brève."}]}


@pytest.fixture(autouse=True)
def one_at_a_time(settings) -> None:
    settings.AIHUMMER_EVIDENCE_CONCURRENCY = 1  # threads cannot see the test's transaction


@pytest.fixture
def agent(workspace, ada, echo_preset):
    actor = Actor.for_user(ada)
    agent = agent_create(workspace=workspace, actor=actor, key="camille", name="Camille", snapshot=SNAPSHOT)
    agent_test_case_create(
        agent=agent, actor=actor, name="salue", message="Bonjour", assertions={"contains": ["Bonjour"]}
    )
    agent_test_case_create(agent=agent, actor=actor, name="budget", message="Résume", assertions={"max_tokens": 400})
    agent_test_case_create(agent=agent, actor=actor, name="off", message="x", is_active=False)
    return agent


def test_all_cases_pass_on_live(agent, capsys):
    call_command("run_test_cases", "acme", "camille")

    assert capsys.readouterr().out == "PASSED budget\nPASSED salue\n-- camille v1: 2/2 passed\n"
    assert set(AgentTurn.objects.values_list("dry_run", "actor_source")) == {(True, "cli:run_test_cases")}


def test_a_failing_case_on_a_chosen_version_fails_the_command(agent, alice, capsys):
    long = {"key": "details", "body": "Détaille chaque étape avec soin. " * 120}
    prompt_version_propose(
        agent=agent, changes={"sections": [*SNAPSHOT["sections"], long]}, actor=Actor.for_user(alice)
    )

    with pytest.raises(CommandError) as caught:
        call_command("run_test_cases", "acme", "camille", "--version", "2")

    assert str(caught.value) == "1 of 2 test case(s) failed: budget."
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "FAILED budget"
    assert out[1].startswith("       max_tokens '400': ") and out[1].endswith(" tokens")
    assert out[2:] == ["PASSED salue", "-- camille v2: 1/2 passed"]


def test_json_prints_one_object(agent, capsys):
    call_command("run_test_cases", "acme", "camille", "--json")

    result = json.loads(capsys.readouterr().out)
    turn = AgentTurn.objects.get(message="Bonjour")
    assert (result["agent"], result["version"], result["passed"], result["failed"]) == ("camille", 1, 2, 0)
    assert result["cases"][1] == {
        "name": "salue",
        "status": "passed",
        "checks": [{"assertion": "contains", "expected": "Bonjour", "passed": True, "detail": ""}],
        "answer": turn.answer,
        "error": None,
        "tokens": turn.input_tokens + turn.output_tokens,
        "cost": "0.000000",
        "turn_id": turn.pk,
    }


def test_unknown_agent_version_or_no_case_are_clear_errors(agent, workspace, ada):
    with pytest.raises(CommandError, match=r"^No agent 'nobody' in workspace 'acme'\.$"):
        call_command("run_test_cases", "acme", "nobody")
    with pytest.raises(CommandError, match=r"^Agent 'camille' has no version 9\.$"):
        call_command("run_test_cases", "acme", "camille", "--version", "9")
    agent_create(workspace=workspace, actor=Actor.for_user(ada), key="bare", name="Bare")
    with pytest.raises(CommandError, match=r"^Agent 'bare' has no active test case\.$"):
        call_command("run_test_cases", "acme", "bare")


@pytest.mark.django_db(transaction=True)
def test_the_exit_code_is_non_zero_when_a_case_fails(agent, alice):
    # The CI contract itself, through a real process on the (committed) test database.
    long = {"key": "details", "body": "Détaille chaque étape avec soin. " * 120}
    prompt_version_propose(
        agent=agent, changes={"sections": [*SNAPSHOT["sections"], long]}, actor=Actor.for_user(alice)
    )
    db = settings.DATABASES["default"]
    env = {**os.environ, "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"}

    done = subprocess.run(
        [sys.executable, "manage.py", "run_test_cases", "acme", "camille", "--version", "2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stderr.strip() == "CommandError: 1 of 2 test case(s) failed: budget."
