"""Turns a dead worker left behind.

A turn's row is written once, with its outcome — except when a tool needs it to exist
first (a child turn points at its parent): then it is written `running` and a worker
killed before the end leaves it so. No live worker holds a turn past its deadline
(`AIHUMMER_TURN_TIMEOUT_SEC` from its start, children within their parent's), so past
that and one lease of grace the turn is ended as failed, with a reason a reader can use.

A turn resumed after a person decided its call (issue 30) stays `waiting` while it runs
again, under its approval request's `resuming` lease: past that lease and one step lease
of grace (the approvals sweep resends a dead resume within a minute; a resend that
claims it pushes the lease), it is ended the same way and its request marked resumed.
A workflow step's is left to that resend: its step waits for the turn.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.models import AgentTurn, ApprovalRequest

# Stuck resumed turns ended per sweep (each its own small transaction); more wait a minute.
RESUMED_BATCH = 200
RESUME_ABANDONED = (
    "The worker resuming this turn after its call was decided stopped before it finished (its lease "
    "passed at {until:%H:%M:%S} UTC); what it did before is in its debug log."
)
ABANDONED = (
    "The worker running this turn stopped before it finished (no outcome {seconds} s after "
    "it started); what it did before is in its debug log."
)


def agent_turns_abandon(*, now: datetime | None = None) -> int:
    """End as failed every turn still `running` past any live worker's deadline; returns
    how many. Safe to run anywhere and twice: a finished turn is never touched."""
    now = now or timezone.now()
    limit = settings.AIHUMMER_TURN_TIMEOUT_SEC + settings.AIHUMMER_STEP_LEASE_SEC
    running = AgentTurn.all_objects.filter(
        status=AgentTurn.Status.RUNNING, started_at__lt=now - timedelta(seconds=limit)
    ).update(status=AgentTurn.Status.FAILED, finished_at=now, error=ABANDONED.format(seconds=limit))
    return running + _abandon_resumed(now)


def _abandon_resumed(now: datetime) -> int:
    """Resumed turns (not a workflow step's) whose resuming worker is gone: see the module."""
    grace = timedelta(seconds=settings.AIHUMMER_STEP_LEASE_SEC)
    stuck = ApprovalRequest.all_objects.filter(
        origin=ApprovalRequest.Origin.TURN,
        progress=ApprovalRequest.Progress.RESUMING,
        progress_until__lt=now - grace,
        turn__status=AgentTurn.Status.WAITING,
    ).values_list("pk", "turn_id", "progress_until")
    ended = 0
    for pk, turn_id, until in stuck.order_by("progress_until")[:RESUMED_BATCH]:
        with transaction.atomic():
            # The request first, on the lease read: a resend that claimed it meanwhile
            # pushed the lease, and this matches nothing (the resumer's claim is the same
            # kind of conditional update, so exactly one of the two goes on).
            taken = ApprovalRequest.all_objects.filter(
                pk=pk, progress=ApprovalRequest.Progress.RESUMING, progress_until=until
            ).update(progress=ApprovalRequest.Progress.RESUMED, progress_until=None, updated_at=now)
            if taken:
                ended += AgentTurn.all_objects.filter(pk=turn_id, status=AgentTurn.Status.WAITING).update(
                    status=AgentTurn.Status.FAILED, finished_at=now, error=RESUME_ABANDONED.format(until=until)
                )
    return ended
