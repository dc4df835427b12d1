"""Beat's sandbox sweep, end to end: a real `celery beat` and a real worker (two
processes on the test database and this run's own Redis database) with a one-second
interval; forgotten sandbox rows go, young ones and real ones stay."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from agents.models import Agent, Preset
from agents.services import agent_create
from aihummer.actors import Actor
from aihummer.tests.celery_processes import beat_and_worker
from aihummer.tests.factories import make_echo_preset

pytestmark = pytest.mark.django_db(transaction=True)

SWEEP_TIMEOUT_SECONDS = 40


def test_beat_sweeps_old_sandbox_rows_and_leaves_young_and_real_ones(
    workspace, ada, alice, redis_url: str, tmp_path: Path
) -> None:
    operator, as_alice = Actor.for_user(ada), Actor.for_user(alice)
    echo = make_echo_preset(workspace, by=operator)
    agent_create(workspace=workspace, actor=operator, key="writer", name="Writer", preset=echo)
    old_preset = make_echo_preset(workspace, by=as_alice, key="sb_old", name="Old", is_sandbox=True)
    agent_create(workspace=workspace, actor=as_alice, key="sb_old_agent", name="O", preset=old_preset, is_sandbox=True)
    agent_create(workspace=workspace, actor=as_alice, key="sb_young", name="Y", is_sandbox=True)
    long_ago = timezone.now() - timedelta(hours=2)
    for model in (Agent, Preset):  # the real rows are old too: age never makes a real row go
        model.all_objects.exclude(key="sb_young").update(created_at=long_ago)

    environ = {"AIHUMMER_SANDBOX_TTL": "3600", "AIHUMMER_SANDBOX_SWEEP_INTERVAL_SEC": "1"}
    with beat_and_worker(redis_url, tmp_path, **environ) as celery:
        deadline = time.monotonic() + SWEEP_TIMEOUT_SECONDS
        while Agent.all_objects.filter(key="sb_old_agent").exists() or Preset.all_objects.filter(key="sb_old").exists():
            assert celery.poll() is None, "celery exited"
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.2)

    assert sorted(Agent.all_objects.values_list("key", flat=True)) == ["sb_young", "writer"]
    assert sorted(Preset.all_objects.values_list("key", flat=True)) == ["echo"]
    assert (
        "Sandbox sweep of acme: 0 workflow run(s), 0 workflow(s), 1 agent(s), 1 preset(s)"
        in (tmp_path / "worker.log").read_text()
    )
    assert "Scheduler: Sending due task sandbox-sweep (sandbox.sandbox_sweep)" in (tmp_path / "worker.log").read_text()
