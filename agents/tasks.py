"""Celery tasks of the agents app: thin wrappers that take ids and call services.

Services import this module to enqueue; a task imports its service in its body, so
this module imports nothing of the agents app when it loads."""

from celery import shared_task


@shared_task(name="agents.prompt_version_notify")
def prompt_version_notify_task(version_id: int, event: str) -> int:
    """E-mail reviewers about a proposal, or its proposer about a decision."""
    from agents.services.notifications import prompt_version_notify

    return prompt_version_notify(version_id=version_id, event=event)


@shared_task(name="agents.evidence_run_execute")
def evidence_run_task(run_id: int) -> str:
    """Run a queued evidence run: the proposal's cases on the candidate and on live,
    then the judge. Re-delivery is harmless: the run is claimed once."""
    from agents.runtime.evidence import evidence_run_execute

    run = evidence_run_execute(run_id=run_id)
    return run.status if run is not None else "already claimed"
