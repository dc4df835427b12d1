"""Celery task of the evidence runs (moves into agents/tasks.py with the restructure)."""

from celery import shared_task


@shared_task(name="agents.evidence_run_execute")
def evidence_run_task(run_id: int) -> str:
    """Run a queued evidence run: the proposal's cases on the candidate and on live, then the judge."""
    from agents.evidence_runner import evidence_run_execute

    run = evidence_run_execute(run_id=run_id)
    return run.status if run is not None else "already claimed"
