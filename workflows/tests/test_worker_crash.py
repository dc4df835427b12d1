"""A worker killed with SIGKILL mid-step loses nothing: a fresh worker (with beat)
finds the step's expired lease, runs it again on the same row, and the run completes."""

from __future__ import annotations

import pytest

from agents.models import AgentTurn
from aihummer.tests.factories import make_agent, openai_preset
from aihummer.tests.waiting import wait_until
from aihummer.tests.workers import Workers
from workflows.models import StepRun
from workflows.services import workflow_create, workflow_run_start, workflow_run_wait
from workflows.tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_step_killed_with_its_worker_runs_again_and_the_run_completes(broker, workspace, operator, tmp_path) -> None:
    workers = Workers(broker, tmp_path)
    with FakeOpenAI(delay=2.0) as server:
        preset = openai_preset(workspace, server, by=operator)
        for key in ("one", "two", "three"):
            make_agent(workspace, key, f"Step {key}.", preset=preset)
        definition = {
            "version": 1,
            "steps": [{"name": key, "agent_name": key} for key in ("one", "two", "three")],
        }
        workflow = workflow_create(
            workspace=workspace, actor=operator, key="crash", name="Crash", definition=definition
        )
        try:
            first = workers.start(lease=3)
            run = workflow_run_start(workflow=workflow, actor=operator, message="go")
            # A worker process boots in seconds, or a minute on a loaded machine.
            wait_until(lambda: StepRun.objects.filter(run=run, status="running").exists(), seconds=90, what="a step")
            killed = StepRun.objects.get(run=run, status="running")
            # Mid-call: the server has the step's request and answers it 2 s later.
            wait_until(lambda: len(server.bodies) > len(server.calls), what="the step's model call")
            workers.kill(first)
            # The killed step's lease is the first worker's (3 s). This one's own leases are long:
            # on a loaded machine a heartbeat late by 2 s gave its step away again (attempts 3).
            workers.start(lease=10, beat=True)
            run = workflow_run_wait(run=run, timeout=45)
        finally:
            workers.stop_all()
    steps = {step.name: step for step in StepRun.objects.filter(run=run)}
    assert run.status == "completed", (run.error, (tmp_path / "worker-1.log").read_text())
    assert len(steps) == 3
    assert steps[killed.name].attempts == 2
    assert [s.attempts for name, s in steps.items() if name != killed.name] == [1, 1]
    turns = AgentTurn.objects.filter(agent_key=steps[killed.name].agent_key)
    assert turns.filter(status="succeeded").count() == 1
    assert steps[killed.name].turn == turns.get(status="succeeded")
    assert run.outputs == {"three": "answer: go"}
