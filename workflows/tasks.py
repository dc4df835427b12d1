"""Celery tasks of the workflows app: thin wrappers that take ids and call the engine."""

from celery import shared_task


# acks_late: a re-delivered step finds itself claimed or finished and returns, so a
# worker lost mid-task costs nothing but the re-delivery.
@shared_task(name="workflows.workflow_step_run", acks_late=True)
def workflow_step_run_task(run_id: str, step: str) -> str | None:
    """Run one step of a workflow run (claim, turn, record, dispatch the next)."""
    from workflows.execution import workflow_step_run

    return workflow_step_run(run_id=run_id, step=step)


@shared_task(name="workflows.workflow_runs_revive")
def workflow_runs_revive_task() -> dict[str, int]:
    """Beat: fail runs past their limit, recover steps of dead workers, resend lost steps."""
    from workflows.execution import workflow_runs_revive

    return workflow_runs_revive()
