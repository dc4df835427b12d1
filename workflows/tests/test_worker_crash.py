"""A worker killed with SIGKILL mid-step loses nothing: a fresh worker (with beat)
finds the step's expired lease, runs it again on the same row, and the run completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from agents.models import AgentTurn
from aihummer.tests.brokers import point_app_at
from aihummer.tests.factories import make_agent, openai_preset
from aihummer.tests.waiting import wait_until
from workflows.models import StepRun
from workflows.services import workflow_create, workflow_run_start, workflow_run_wait
from workflows.tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def broker(settings, broker_url):
    """`enqueue` sends to this test's own broker (Redis, then RabbitMQ), emptied first;
    no worker here."""
    settings.CELERY_BROKER_URL = broker_url
    point_app_at(broker_url)
    yield broker_url
    point_app_at(None)


class Workers:
    """Celery workers in subprocesses (threads pool), each in its own process group."""

    def __init__(self, broker_url: str, tmp_path: Path) -> None:
        self.broker_url, self.tmp_path, self.processes = broker_url, tmp_path, []

    def start(self, *, lease: int, beat: bool = False) -> subprocess.Popen:
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": self.broker_url,
            "AIHUMMER_VAULT_KEYS": ",".join(settings.AIHUMMER_VAULT_KEYS),
            "AIHUMMER_STEP_LEASE_SEC": str(lease),
            "AIHUMMER_REVIVE_INTERVAL_SEC": "0.5",
            "AIHUMMER_PROVIDER_MAX_RETRIES": "0",
            # Fewer connections than threads: a turn gives its connection back while the
            # model answers, and the heartbeat between beats.
            "DATABASE_POOL_MAX_SIZE": "3",
        }
        command = [sys.executable, "-m", "celery", "-A", "aihummer", "worker", "--pool", "threads", "-c", "4"]
        command += ["--loglevel", "WARNING", "--without-gossip", "--without-mingle"]
        if beat:
            command += ["-B", "-s", str(self.tmp_path / "beat-schedule")]
        log = (self.tmp_path / f"worker-{len(self.processes)}.log").open("w")
        process = subprocess.Popen(
            command, cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)


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
