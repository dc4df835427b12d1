"""Running a step: claim it, run its agent's turn, record it, dispatch what became ready.

Every step is one task call of `workflow_step_run(run_id=…, step=…)`, on any worker.
The database holds the state: a step is claimed with a conditional update (a second
delivery of the same task finds it taken and returns), recorded once per (run, step),
and its dependents are enqueued as soon as they are ready, together, so independent
steps run at the same time on a threads-pool worker. No transaction and no lock is held
while the model answers: claim and finish are single statements before and after.

Statements per echo step on PostgreSQL: claim 1 + the turn + finish 1; a run pays one
more to mark itself running and one to complete (see `workflows/tests/test_execution.py`).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from datetime import timedelta
from uuid import UUID

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from agents.models import Agent, AgentTurn
from agents.runtime import agent_turn_run
from aihummer.actors import Actor
from aihummer.models import Workspace
from aihummer.tasks import enqueue
from workflows.engine import (
    MappingError,
    Plan,
    compile_definition,
    run_answer,
    run_outputs,
    skip_reason,
    step_message,
    step_output,
)
from workflows.models import RunStatus, StepStatus, WorkflowRun
from workflows.store import Claim, Outcome, step_claim, step_finish

logger = logging.getLogger(__name__)

# Compiled plans by run: a run's definition never changes, so it is compiled once per
# process, not once per step.
_PLANS: OrderedDict[UUID, Plan] = OrderedDict()
_PLANS_LOCK = threading.Lock()
PLAN_CACHE_SIZE = 512


def plan_for(run_id: UUID, definition: dict) -> Plan:
    with _PLANS_LOCK:
        plan = _PLANS.get(run_id)
        if plan is not None:
            _PLANS.move_to_end(run_id)
            return plan
    plan = compile_definition(definition)
    with _PLANS_LOCK:
        _PLANS[run_id] = plan
        while len(_PLANS) > PLAN_CACHE_SIZE:
            _PLANS.popitem(last=False)
    return plan


def dispatch(run_id: UUID | str, names: list[str]) -> None:
    """Enqueue these steps of the run, each as its own task (they may run at once)."""
    from workflows.tasks import workflow_step_run_task

    for name in names:
        enqueue(workflow_step_run_task, str(run_id), name)


def workflow_step_run(*, run_id: UUID | str, step: str) -> str | None:
    """Run step `step` of run `run_id` if it is still to run; returns the status it
    ended with, or None when there was nothing to do (taken, done, or run stopped)."""
    now = timezone.now()
    claim = step_claim(
        run_id=run_id, name=step, now=now, lease_until=now + timedelta(seconds=settings.AIHUMMER_STEP_LEASE_SEC)
    )
    if claim is None:
        return None
    if claim.run_status == RunStatus.PENDING:
        WorkflowRun.all_objects.filter(pk=claim.run_id, status=RunStatus.PENDING).update(
            status=RunStatus.RUNNING, started_at=now
        )
    plan = plan_for(claim.run_id, claim.definition)
    outcome = _run_step(claim, plan)
    finished = step_finish(claim=claim, outcome=outcome, now=timezone.now())
    if finished is None:
        logger.warning("Step %s of run %s lost its claim before finishing; its result is dropped", step, run_id)
        return None
    run_status, context = finished
    _advance(plan, claim, outcome, run_status, context)
    return outcome.status


def _run_step(claim: Claim, plan: Plan) -> Outcome:
    step = plan.by_name[claim.name]
    reason = skip_reason(step, claim.context)
    if reason is not None:
        return Outcome(status=StepStatus.SKIPPED, error=reason)
    try:
        message = step_message(step, claim.context)
    except MappingError as exc:
        return Outcome(status=StepStatus.FAILED, error=str(exc))
    if claim.agent_id is None:
        return Outcome(
            status=StepStatus.FAILED,
            input=message,
            error=f"Agent '{claim.agent_key}' was deleted after the run started.",
        )
    # Built from the claim, not loaded: the turn reads the agent's row itself.
    workspace = Workspace(pk=claim.workspace_id)
    agent = Agent(pk=claim.agent_id, key=claim.agent_key, workspace=workspace, is_sandbox=claim.is_sandbox)
    actor = Actor.for_workflow_run(
        workspace_id=claim.workspace_id, source=claim.actor_source, person_id=claim.started_by_id
    )
    try:
        turn = agent_turn_run(agent=agent, message=message, actor=actor)
    except Agent.DoesNotExist:
        return Outcome(
            status=StepStatus.FAILED,
            input=message,
            error=f"Agent '{claim.agent_key}' was deleted after the run started.",
        )
    except (ValidationError, PermissionDenied) as exc:
        return Outcome(status=StepStatus.FAILED, input=message, error="; ".join(getattr(exc, "messages", [str(exc)])))
    succeeded = turn.status == AgentTurn.Status.SUCCEEDED
    return Outcome(
        status=StepStatus.COMPLETED if succeeded else StepStatus.FAILED,
        input=message,
        output=step_output(turn.answer) if succeeded else None,
        error="" if succeeded else turn.error,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
        cost_usd=turn.cost_usd,
        turn_id=turn.pk,
        agent_version=turn.version_number,
        prefix_hash=turn.prefix_hash,
    )


def _advance(plan: Plan, claim: Claim, outcome: Outcome, run_status: str, context: dict) -> None:
    """After a step: fail the run, complete it, or dispatch the steps now ready."""
    if run_status not in (RunStatus.PENDING, RunStatus.RUNNING):
        return  # cancelled or failed meanwhile: running steps finish, none starts
    if outcome.status == StepStatus.FAILED:
        run_fail(run_id=claim.run_id, error=f"Step '{claim.name}' failed: {outcome.error}", context=context, plan=plan)
    elif plan.is_complete(context):
        _run_complete(claim.run_id, plan, context)
    else:
        dispatch(claim.run_id, [step.name for step in plan.ready_after(claim.name, context)])


def _run_complete(run_id: UUID, plan: Plan, context: dict) -> None:
    outputs = run_outputs(plan, context)
    WorkflowRun.all_objects.filter(pk=run_id, status__in=(RunStatus.PENDING, RunStatus.RUNNING)).update(
        status=RunStatus.COMPLETED, outputs=outputs, answer=run_answer(outputs), finished_at=timezone.now()
    )


def run_fail(*, run_id: UUID, error: str, context: dict | None = None, plan: Plan | None = None) -> bool:
    """End an unfinished run as failed, saying why (with the outputs it reached)."""
    fields = {"status": RunStatus.FAILED, "error": error, "finished_at": timezone.now()}
    if plan is not None and context is not None:
        fields["outputs"] = {key: value for key, value in run_outputs(plan, context).items() if value is not None}
        fields["answer"] = run_answer(fields["outputs"])
    return bool(
        WorkflowRun.all_objects.filter(pk=run_id, status__in=(RunStatus.PENDING, RunStatus.RUNNING)).update(**fields)
    )
