from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from agents.models import AgentTurn
from agents.services.turns import agent_turns_abandon
from agents.tasks import agent_turns_abandon_task


def turn(workspace, *, age_seconds: float, status: str = AgentTurn.Status.RUNNING, **fields) -> AgentTurn:
    return AgentTurn.all_objects.create(
        workspace=workspace,
        agent_key="writer",
        actor_source="run:cli:root",
        message="hello",
        status=status,
        started_at=timezone.now() - timedelta(seconds=age_seconds),
        **fields,
    )


def test_a_turn_left_running_past_every_deadline_is_ended_as_failed(workspace):
    limit = settings.AIHUMMER_TURN_TIMEOUT_SEC + settings.AIHUMMER_STEP_LEASE_SEC
    dead = turn(workspace, age_seconds=limit + 5)
    dead_sandbox = turn(workspace, age_seconds=limit + 5, is_sandbox=True)
    young = turn(workspace, age_seconds=limit - 5)
    finished = turn(workspace, age_seconds=limit + 5, status=AgentTurn.Status.SUCCEEDED, answer="done")

    assert agent_turns_abandon() == 2

    dead.refresh_from_db()
    assert dead.status == AgentTurn.Status.FAILED
    assert dead.finished_at is not None
    assert f"stopped before it finished (no outcome {limit} s after it started)" in dead.error
    assert AgentTurn.all_objects.get(pk=dead_sandbox.pk).status == AgentTurn.Status.FAILED
    young.refresh_from_db()
    finished.refresh_from_db()
    assert (young.status, young.finished_at) == (AgentTurn.Status.RUNNING, None)
    assert (finished.status, finished.answer, finished.error) == (AgentTurn.Status.SUCCEEDED, "done", "")
    assert agent_turns_abandon() == 0  # twice is harmless


def test_beat_runs_the_sweep_as_a_task(workspace):
    dead = turn(workspace, age_seconds=settings.AIHUMMER_TURN_TIMEOUT_SEC + settings.AIHUMMER_STEP_LEASE_SEC + 1)
    entry = settings.CELERY_BEAT_SCHEDULE["agent-turns-abandon"]

    assert entry["task"] == agent_turns_abandon_task.name
    assert agent_turns_abandon_task.apply().get() == 1
    dead.refresh_from_db()
    assert dead.status == AgentTurn.Status.FAILED
