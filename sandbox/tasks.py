"""Beat's sandbox sweep (scheduled in settings: `sandbox-sweep`)."""

from __future__ import annotations

from celery import shared_task

from sandbox.services import sandbox_sweep


@shared_task(name="sandbox.sandbox_sweep", ignore_result=True)
def sandbox_sweep_task() -> dict[str, dict]:
    """Delete sandbox rows older than `AIHUMMER_SANDBOX_TTL`, workspace by workspace."""
    return sandbox_sweep()
