"""Celery tasks of the agents app: thin wrappers that take ids and call services.

Services enqueue them by name (`aihummer.tasks.enqueue`), a task imports its service in
its body: this module imports nothing of the agents app, and nothing imports it back
but the app's `ready()`."""

from smtplib import SMTPException

from celery import shared_task


# A mail server down for a while: retried with backoff by the worker (inline, without a
# broker, `enqueue` retries). The decision it reports was committed before; it stands.
@shared_task(
    name="agents.prompt_version_notify",
    autoretry_for=(OSError, SMTPException),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=6,
)
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


@shared_task(name="agents.agent_turns_abandon", ignore_result=True)
def agent_turns_abandon_task() -> int:
    """Beat: end the turns a dead worker left `running`."""
    from agents.services.turns import agent_turns_abandon

    return agent_turns_abandon()


@shared_task(name="agents.prompt_versions_go_live_due", ignore_result=True)
def prompt_versions_go_live_due_task() -> dict[str, int]:
    """Beat: put live the fully approved versions whose scheduled time came."""
    from agents.services.approvals import prompt_versions_go_live_due

    return prompt_versions_go_live_due()
