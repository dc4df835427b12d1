"""Workflow use cases: define, change, delete, start a run, wait for it."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext

from agents.services.tool_approvals import approval_requests_withdraw
from aihummer import telemetry
from aihummer.actors import Actor, Verb
from aihummer.exceptions import ApplicationError, NotFound
from aihummer.models import Workspace
from aihummer.service_checks import (
    delete_with_dependents,
    require_key_free,
    require_visible,
    save_checked,
    write_verb,
)
from workflows.engine import DefinitionError, Plan, compile_definition
from workflows.models import RunStatus, StepRun, Workflow, WorkflowRun
from workflows.store import definition_agents

WORKFLOW_FIELDS = ("name", "description", "definition", "is_active")
WAIT_POLL_SECONDS = 0.05


# --- validation -----------------------------------------------------------------------
def workflow_agents(*, workspace: Workspace, is_sandbox: bool, keys: list[str]) -> dict[str, tuple[int, str]]:
    """The agents a definition names, as `key → (id, problem)` ("" when usable)."""
    # Sandbox ones too: a sandbox workflow runs sandbox agents; a real one must be told why not.
    found = {}
    for key, pk, is_active, agent_is_sandbox in definition_agents(workspace_id=workspace.pk, keys=keys):
        problem = ""
        if agent_is_sandbox and not is_sandbox:
            problem = f"agent '{key}' is a sandbox agent; only a sandbox workflow may use it."
        elif not is_active:
            problem = f"agent '{key}' is disabled; enable it or name another."
        found[key] = (pk, problem)
    return found


def _raw_agent_names(definition: Any) -> list[str]:
    steps = definition.get("steps") if isinstance(definition, dict) else None
    if not isinstance(steps, list):
        return []
    return [s["agent_name"] for s in steps if isinstance(s, dict) and isinstance(s.get("agent_name"), str)]


def workflow_validate(*, workspace: Workspace, definition: Any, is_sandbox: bool = False) -> tuple[Plan, dict]:
    """Compile `definition` for `workspace`: the Plan and the agents' ids by key, or a
    ValidationError on `definition` listing every problem with its location."""
    agents = workflow_agents(workspace=workspace, is_sandbox=is_sandbox, keys=_raw_agent_names(definition))
    try:
        plan = compile_definition(definition, agents={key: problem for key, (_, problem) in agents.items()})
    except DefinitionError as exc:
        raise ValidationError({"definition": exc.problems}) from None
    return plan, {key: pk for key, (pk, _) in agents.items()}


# --- workflows ------------------------------------------------------------------------
def workflow_create(
    *,
    workspace: Workspace,
    actor: Actor,
    key: str,
    name: str,
    definition: Any,
    description: str = "",
    is_active: bool = True,
    is_builtin: bool = False,
    is_sandbox: bool = False,
) -> Workflow:
    """A new workflow, its definition validated against the workspace's agents."""
    actor.require(write_verb(is_sandbox), workspace)
    workflow_validate(workspace=workspace, definition=definition, is_sandbox=is_sandbox)
    require_key_free(Workflow, workspace=workspace, key=key, noun="workflow", actor=actor)
    workflow = Workflow(
        workspace=workspace,
        key=key,
        name=name,
        description=description,
        definition=definition,
        is_active=is_active,
        is_builtin=is_builtin,
        is_sandbox=is_sandbox,
    )
    save_checked(workflow, actor=actor, reason="created", noun="workflow")
    return workflow


def workflow_update(*, workflow: Workflow, actor: Actor, **fields: Any) -> Workflow:
    """Change name, description, definition or enabled; a new definition is validated
    and bumps `version` (runs keep the definition they started with)."""
    require_visible(actor, workflow.workspace, "workflow")
    actor.require(write_verb(workflow.is_sandbox), workflow.workspace)
    unknown = set(fields) - set(WORKFLOW_FIELDS)
    if unknown:
        raise ValidationError(dict.fromkeys(sorted(unknown), "Not editable."))
    if "definition" in fields:
        workflow_validate(workspace=workflow.workspace, definition=fields["definition"], is_sandbox=workflow.is_sandbox)
    with transaction.atomic():
        # Locked so two editors' version bumps do not both become version n + 1.
        workflow = Workflow.all_objects.select_for_update().get(pk=workflow.pk)
        if "definition" in fields and fields["definition"] != workflow.definition:
            workflow.version += 1
        for field, value in fields.items():
            setattr(workflow, field, value)
        save_checked(workflow, actor=actor, reason="updated", noun="workflow")
    return workflow


def workflow_dependents(workflow: Workflow) -> list[str]:
    """What deleting `workflow` would disturb: its runs still in progress."""
    unfinished = WorkflowRun.all_objects.in_progress().filter(workflow=workflow).order_by("created_at")
    return [
        gettext("run %(run)s is %(status)s") % {"run": run_id, "status": RunStatus(status).label.lower()}
        for run_id, status in unfinished.values_list("pk", "status")
    ]


def workflow_delete(*, workflow: Workflow, actor: Actor, force: bool = False) -> list[str]:
    """Delete a workflow; finished runs keep their copy of the definition. Built-in
    workflows never; with runs in progress only when forced (they still finish)."""
    require_visible(actor, workflow.workspace, "workflow")
    actor.require(write_verb(workflow.is_sandbox), workflow.workspace)
    dependents = [] if workflow.is_builtin else workflow_dependents(workflow)
    return delete_with_dependents(workflow, actor=actor, noun="workflow", dependents=dependents, force=force)


def workflow_get(*, workspace: Workspace, key: str, actor: Actor) -> Workflow:
    """The workflow `key` of `workspace` as `actor` may see it (sandbox ones only for
    programs allowed to use sandboxes), or NotFound; naming a row needs the read right,
    whatever is done with it next (as for agents)."""
    if not actor.belongs_to(workspace):
        raise NotFound(f"Unknown workflow '{key}'.")
    actor.require(Verb.READ, workspace)
    workflow = Workflow.all_objects.filter(workspace=workspace, key=key).select_related("workspace").first()
    if workflow is None or (workflow.is_sandbox and not actor.sees_sandbox_rows(workspace)):
        raise NotFound(f"No workflow '{key}' in workspace '{workspace.slug}'.")
    return workflow


# --- runs -----------------------------------------------------------------------------
def _run_inputs(message: str | None, inputs: Any) -> dict:
    if inputs is not None and not isinstance(inputs, dict):
        raise ValidationError({"inputs": gettext('Give the inputs as a JSON object, e.g. {"message": "…"}.')})
    if message is not None and not isinstance(message, str):
        raise ValidationError({"message": gettext("Give the message as text.")})
    run_inputs = dict(inputs or {})
    if message is not None:
        run_inputs["message"] = message
    return run_inputs


def workflow_run_start(
    *, workflow: Workflow, actor: Actor, message: str | None = None, inputs: dict | None = None
) -> WorkflowRun:
    """Start a run of `workflow`: its definition is validated again (agents may have
    changed since), the run and one pending row per step are written, and the first
    steps are enqueued when the transaction commits. A definition that no longer
    validates gives a failed run that says why, never a pending one left behind."""
    require_visible(actor, workflow.workspace, "workflow")
    actor.require(Verb.SANDBOX if workflow.is_sandbox else Verb.RUN, workflow.workspace)
    if not workflow.is_active:
        raise ApplicationError(
            gettext("Workflow '%(workflow)s' is disabled; enable it to run it.") % {"workflow": workflow.key}
        )
    run_inputs = _run_inputs(message, inputs)
    now = timezone.now()
    run = WorkflowRun(
        workspace_id=workflow.workspace_id,
        workflow=workflow,
        workflow_key=workflow.key,
        workflow_version=workflow.version,
        definition=workflow.definition,
        inputs=run_inputs,
        context={"inputs": run_inputs, "steps": {}},
        started_by=actor.person,
        actor_source=actor.source,
        actor_identity=actor.identity_label,
        surface=actor.surface,
        is_sandbox=workflow.is_sandbox,
        deadline_at=now + timedelta(seconds=settings.AIHUMMER_RUN_TIMEOUT_SEC),
    )
    try:
        plan, agent_ids = workflow_validate(
            workspace=workflow.workspace, definition=workflow.definition, is_sandbox=workflow.is_sandbox
        )
    except ValidationError as exc:
        run.status, run.finished_at = RunStatus.FAILED, now
        run.error = "The definition no longer validates: " + " ".join(exc.message_dict["definition"])
        run.save()
        return run
    steps = [
        StepRun(
            run=run, name=step.name, position=step.index, agent_id=agent_ids[step.agent_name], agent_key=step.agent_name
        )
        for step in plan.steps
    ]
    # Here, not at the top: importing any runtime module loads the whole runtime, which
    # a process that loads this module with the admin need not pay for.
    from agents.runtime.prepared import insert_with_children
    from workflows.execution import dispatch

    # On PostgreSQL the run and its steps are one statement, atomic and committed by
    # itself (no BEGIN and COMMIT round trips); elsewhere two, in a transaction. The
    # first steps go to the broker once they are committed, either way.
    with nullcontext() if connection.vendor == "postgresql" else transaction.atomic():
        insert_with_children(run, steps, link="run")
        dispatch(run.pk, [step.name for step in plan.roots()])
    telemetry.run_started(run)
    return run


def workflow_run_wait(
    *, run: WorkflowRun, timeout: float, on_poll: Callable[[WorkflowRun], None] | None = None
) -> WorkflowRun:
    """The run once it has finished, or as it is after `timeout` seconds. `on_poll`
    sees the run at each poll (to report progress; it may raise to stop waiting, which
    leaves the run going)."""
    deadline = time.monotonic() + timeout
    while True:
        run = WorkflowRun.all_objects.get(pk=run.pk)
        if on_poll is not None:
            on_poll(run)
        if run.is_finished or time.monotonic() >= deadline:
            return run
        time.sleep(min(WAIT_POLL_SECONDS * 4, max(deadline - time.monotonic(), 0)))


def _require_run_rights(actor: Actor, run: WorkflowRun) -> None:
    # Another workspace's run answers exactly as a missing one.
    if not actor.belongs_to(run.workspace):
        raise NotFound(f"No workflow run '{run.pk}'.")
    actor.require(Verb.SANDBOX if run.is_sandbox else Verb.RUN, run.workspace)


def workflow_run_cancel(*, run: WorkflowRun, actor: Actor) -> WorkflowRun:
    """Stop a run: steps already running finish and are recorded, no step starts
    after this, and the run ends `cancelled`."""
    _require_run_rights(actor, run)
    now = timezone.now()
    with transaction.atomic():
        # Lock order of every writer: step rows, then the run's row.
        StepRun.objects.filter(run=run, status__in=[StepRun.Status.PENDING, StepRun.Status.WAITING]).update(
            status=StepRun.Status.CANCELLED, finished_at=now
        )
        run = WorkflowRun.all_objects.select_for_update().get(pk=run.pk)
        if run.is_finished:
            already = gettext("Run %(run)s is already %(status)s; there is nothing to cancel.")
            raise ApplicationError(already % {"run": run.pk, "status": run.get_status_display().lower()})
        run.status, run.finished_at, run.error = RunStatus.CANCELLED, now, f"Cancelled by {actor.source}."
        run.save(update_fields=["status", "finished_at", "error"])
        # A call of the run still waiting for a person is refused: nothing of it runs.
        approval_requests_withdraw(run_id=run.pk, note=f"The workflow run was cancelled by {actor.source}.")
    telemetry.run_finished(run.pk)
    return run


def workflow_run_resume(*, run: WorkflowRun, actor: Actor) -> WorkflowRun:
    """Run a failed run's failed and unstarted steps again, on the same (run, step)
    rows (their attempts go on counting), with a fresh wall-clock limit."""
    from workflows.execution import dispatch, plan_for

    _require_run_rights(actor, run)
    now = timezone.now()
    with transaction.atomic():
        failed_steps = list(
            StepRun.objects.select_for_update()
            .filter(run=run, status=StepRun.Status.FAILED)
            .order_by("pk")
            .only("name", "attempts", "started_at", "finished_at", "error", "turn_id", "attempt_log")
        )
        failed = [step.name for step in failed_steps]
        run = WorkflowRun.all_objects.select_for_update().get(pk=run.pk)
        if run.status != RunStatus.FAILED:
            only = gettext("Only a failed run can be resumed; run %(run)s is %(status)s.")
            raise ApplicationError(only % {"run": run.pk, "status": run.get_status_display().lower()})
        for step in failed_steps:  # the failed attempt stays on the timeline, in the step's log
            StepRun.objects.filter(pk=step.pk).update(
                status=StepRun.Status.PENDING,
                error="",
                finished_at=None,
                lease_expires_at=None,
                retry_at=None,
                attempt_log=step.attempt_log_closed(
                    ended_at=step.finished_at or now, error=step.error, turn_id=step.turn_id
                ),
            )
        for name in failed:
            run.context.get("steps", {}).pop(name, None)
        run.status, run.error, run.finished_at = RunStatus.RUNNING, "", None
        run.deadline_at = now + timedelta(seconds=settings.AIHUMMER_RUN_TIMEOUT_SEC)
        run.save(update_fields=["status", "error", "finished_at", "deadline_at", "context"])
        pending = set(StepRun.objects.filter(run=run, status=StepRun.Status.PENDING).values_list("name", flat=True))
        plan = plan_for(run.pk, run.definition)
        dispatch(run.pk, [step.name for step in plan.ready(run.context) if step.name in pending])
    return run
