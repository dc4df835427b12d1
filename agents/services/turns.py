"""Turns a dead worker left behind.

A turn's row is written once, with its outcome — except when a tool needs it to exist
first (a child turn points at its parent): then it is written `running` and a worker
killed before the end leaves it so. No live worker holds a turn past its deadline
(`AIHUMMER_TURN_TIMEOUT_SEC` from its start, children within their parent's), so past
that and one lease of grace the turn is ended as failed, with a reason a reader can use.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from agents.models import AgentTurn

ABANDONED = (
    "The worker running this turn stopped before it finished (no outcome {seconds} s after "
    "it started); what it did before is in its debug log."
)


def agent_turns_abandon(*, now: datetime | None = None) -> int:
    """End as failed every turn still `running` past any live worker's deadline; returns
    how many. Safe to run anywhere and twice: a finished turn is never touched."""
    now = now or timezone.now()
    limit = settings.AIHUMMER_TURN_TIMEOUT_SEC + settings.AIHUMMER_STEP_LEASE_SEC
    return AgentTurn.all_objects.filter(
        status=AgentTurn.Status.RUNNING, started_at__lt=now - timedelta(seconds=limit)
    ).update(status=AgentTurn.Status.FAILED, finished_at=now, error=ABANDONED.format(seconds=limit))
