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


def stuck_request(workspace, waiting: AgentTurn, *, lease_passed_seconds: float, origin: str = "turn"):
    from agents.models import ApprovalRequest

    now = timezone.now()
    return ApprovalRequest.all_objects.create(
        workspace=workspace,
        agent_key="writer",
        turn=waiting,
        origin=origin,
        tool_name="http_request",
        call_id="c1",
        arguments={},
        arguments_hash="0" * 64,
        status="approved",
        proposer_identity="user:1",
        actor_source="admin:alice",
        expires_at=now + timedelta(hours=1),
        progress="resuming",
        progress_until=now - timedelta(seconds=lease_passed_seconds),
        effect_ok=True,
    )


def test_a_resumed_turn_whose_worker_died_is_ended_past_its_lease_and_a_grace(workspace):
    grace = settings.AIHUMMER_STEP_LEASE_SEC
    dead = turn(workspace, age_seconds=10, status=AgentTurn.Status.WAITING)
    dead_request = stuck_request(workspace, dead, lease_passed_seconds=grace + 5)
    resending = turn(workspace, age_seconds=10, status=AgentTurn.Status.WAITING)
    stuck_request(workspace, resending, lease_passed_seconds=grace - 5)  # the sweep's resend goes first
    step_turn = turn(workspace, age_seconds=10, status=AgentTurn.Status.WAITING)
    stuck_request(workspace, step_turn, lease_passed_seconds=grace + 5, origin="workflow_step")

    assert agent_turns_abandon() == 1

    dead.refresh_from_db()
    dead_request.refresh_from_db()
    assert dead.status == AgentTurn.Status.FAILED and dead.finished_at is not None
    assert dead.error.startswith("The worker resuming this turn after its call was decided stopped before it finished")
    assert (dead_request.progress, dead_request.progress_until) == ("resumed", None)
    assert AgentTurn.all_objects.get(pk=resending.pk).status == AgentTurn.Status.WAITING
    assert AgentTurn.all_objects.get(pk=step_turn.pk).status == AgentTurn.Status.WAITING
    assert agent_turns_abandon() == 0  # twice is harmless
