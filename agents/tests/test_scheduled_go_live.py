"""Issue 33: scheduled go-live. An approver may ask for a time; the tier's wait time is a
minimum; beat puts a fully approved version live then, unless the live version moved
since its last approval (then it stays pending, with the reason)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from agents.models import Agent, PromptVersion
from agents.services import (
    approval_policy_update,
    approval_state,
    prompt_version_approve,
    prompt_version_propose,
    prompt_versions_go_live_due,
)
from aihummer.actors import Actor
from aihummer.tests.celery_processes import beat_and_worker
from aihummer.tests.factories import make_agent
from aihummer.tests.waiting import wait_until

GO_LIVE_TIMEOUT_SECONDS = 40


def reword(agent: Agent, actor: Actor, body: str) -> PromptVersion:
    return prompt_version_propose(agent=agent, changes={"sections": [{"key": "method", "body": body}]}, actor=actor)


def test_the_tier_s_wait_time_is_a_minimum_and_the_due_version_goes_live(workspace, ada, alice, bob):
    approval_policy_update(workspace=workspace, actor=Actor.for_user(ada), wording_wait_minutes=60)
    agent = make_agent(workspace, "writer", by=ada)
    version = reword(agent, Actor.for_user(alice), "Plan, then write.")
    soon = timezone.now() + timedelta(minutes=5)  # sooner than the wait allows

    approved = prompt_version_approve(version=version, actor=Actor.for_user(bob), live_at=soon)

    assert (approved.status, approved.go_live_at) == ("pending", version.created_at + timedelta(minutes=60))
    assert approval_state(approved).summary == "1 of 1 approval"
    assert prompt_versions_go_live_due() == {"live": 0, "left": 0}
    PromptVersion.all_objects.filter(pk=version.pk).update(go_live_at=timezone.now())  # the hour has passed
    assert prompt_versions_go_live_due() == {"live": 1, "left": 0}
    version.refresh_from_db()
    assert (version.status, version.reviewed_by, version.go_live_at) == ("approved", bob, None)
    assert Agent.objects.get(pk=agent.pk).live_number == 2
    assert prompt_versions_go_live_due() == {"live": 0, "left": 0}  # twice is harmless


def test_a_schedule_in_the_past_or_too_far_is_a_field_error(workspace, ada, alice, bob):
    version = reword(make_agent(workspace, "writer", by=ada), Actor.for_user(alice), "Plan, then write.")

    for when, message in (
        (timezone.now() - timedelta(minutes=1), "Give a time in the future, or leave it empty to go live at once."),
        (timezone.now() + timedelta(days=91), "At most 90 days ahead."),
    ):
        with pytest.raises(ValidationError) as refused:
            prompt_version_approve(version=version, actor=Actor.for_user(bob), live_at=when)
        assert refused.value.message_dict == {"live_at": [message]}
    assert approval_state(version).decisions == []


@pytest.mark.django_db(transaction=True)
def test_beat_puts_a_scheduled_version_live_and_leaves_one_that_turned_stale(
    workspace, ada, alice, bob, redis_url: str, tmp_path: Path
):
    as_ada, as_alice, as_bob = Actor.for_user(ada), Actor.for_user(alice), Actor.for_user(bob)
    on_time = make_agent(workspace, "ontime", by=ada)
    overtaken = make_agent(workspace, "overtaken", by=ada)
    in_two_seconds = timezone.now() + timedelta(seconds=2)
    scheduled = prompt_version_approve(
        version=reword(on_time, as_alice, "Plan, then write."), actor=as_bob, live_at=in_two_seconds
    )
    stale = prompt_version_approve(
        version=reword(overtaken, as_alice, "Plan, then write."), actor=as_bob, live_at=in_two_seconds
    )
    prompt_version_propose(agent=overtaken, changes={"onboarding": "Hello."}, actor=as_ada, mode="live")  # v3 live
    assert (scheduled.status, stale.status) == ("pending", "pending")

    with beat_and_worker(redis_url, tmp_path, AIHUMMER_GO_LIVE_INTERVAL_SEC="1") as celery:

        def both_handled() -> bool:
            assert celery.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
            return not PromptVersion.all_objects.filter(go_live_at__isnull=False).exists()

        wait_until(both_handled, seconds=GO_LIVE_TIMEOUT_SECONDS, what="beat to handle both scheduled versions")

    scheduled.refresh_from_db()
    stale.refresh_from_db()
    assert (scheduled.status, Agent.objects.get(pk=on_time.pk).live_number) == ("approved", 2)
    assert (stale.status, Agent.objects.get(pk=overtaken.pk).live_number) == ("pending", 3)
    assert stale.go_live_problem == (
        "Not put live at its scheduled time: v3 went live after it was approved against v1. Review it again."
    )
    assert scheduled.history.latest().history_change_reason == "task:schedule: approved: live at its scheduled time"
