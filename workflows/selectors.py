"""Read queries of the workflows app."""

from __future__ import annotations

from decimal import Decimal
from uuid import UUID

from django.core.exceptions import ValidationError
from django.db.models import (
    Count,
    DecimalField,
    DurationField,
    ExpressionWrapper,
    F,
    OuterRef,
    QuerySet,
    Subquery,
    Sum,
)
from django.db.models.functions import Coalesce

from agents.models import AgentTurn, PromptVersion
from aihummer.actors import Actor, Verb
from aihummer.exceptions import NotFound
from aihummer.models import Workspace
from workflows.models import RunStatus, StepRun, Workflow, WorkflowRun


def workflow_list(*, actor: Actor, workspace: Workspace, include_sandbox: bool = False) -> QuerySet:
    """The workspace's workflows by key; sandbox ones too when asked and allowed."""
    if not actor.belongs_to(workspace):
        raise NotFound("Unknown workspace.")
    actor.require(Verb.READ, workspace)
    if include_sandbox:
        actor.require(Verb.SANDBOX, workspace)
    # all_objects only when sandbox rows were asked for, and allowed (programs only).
    with_sandbox = include_sandbox and actor.sees_sandbox_rows(workspace)
    return (Workflow.all_objects if with_sandbox else Workflow.objects).filter(workspace=workspace).order_by("key")


def workflow_run_get(*, run_id: str | UUID, actor: Actor) -> WorkflowRun:
    """The run `run_id` if `actor` may read its workspace (sandbox runs only for
    programs allowed to use sandboxes); a malformed id, a missing run and another
    workspace's run all answer the same NotFound."""
    try:
        run_id = UUID(str(run_id))
    except ValueError:
        raise NotFound(f"No workflow run '{run_id}'.") from None
    run = WorkflowRun.all_objects.select_related("workspace").filter(pk=run_id).first()
    if run is None or not actor.belongs_to(run.workspace):
        raise NotFound(f"No workflow run '{run_id}'.")
    if run.is_sandbox and not actor.sees_sandbox_rows(run.workspace):
        raise NotFound(f"No workflow run '{run_id}'.")  # hidden rows answer as missing ones
    # Inside its workspace, a missing right is said plainly (a key without `read`).
    actor.require(Verb.READ, run.workspace)
    return run


def _iso(value: object) -> str | None:
    return value.isoformat() if value is not None else None


def workflow_run_summary(run: WorkflowRun) -> dict:
    """One run and its steps as plain JSON (the shape of `inspect_run --json`)."""
    steps = StepRun.objects.filter(run=run).order_by("position")
    return {
        "id": str(run.pk),
        "workflow": run.workflow_key,
        "workflow_version": run.workflow_version,
        "status": run.status,
        "inputs": run.inputs,
        "outputs": run.outputs,
        "answer": run.answer,
        "error": run.error or None,
        "started_by": run.actor_source,
        "created_at": _iso(run.created_at),
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
        "duration_ms": run.duration_ms,
        "tokens": {"input": run.input_tokens, "output": run.output_tokens},
        "cost": str(run.cost_usd),
        "steps": [
            {
                "name": step.name,
                "agent": step.agent_key,
                "status": step.status,
                "input": step.input,
                "output": step.output,
                "error": step.error or None,
                "attempts": step.attempts,
                "started_at": _iso(step.started_at),
                "finished_at": _iso(step.finished_at),
                "tokens": {"input": step.input_tokens, "output": step.output_tokens},
                "cost": str(step.cost_usd),
                "agent_version": step.agent_version,
                "turn_id": step.turn_id,
            }
            for step in steps
        ],
    }


def validation_messages(exc: ValidationError) -> list[str]:
    """A service's ValidationError as lines an operator reads (`field: message`)."""
    if not hasattr(exc, "error_dict"):
        return list(exc.messages)
    lines = []
    for field, messages in exc.message_dict.items():
        # Definition problems carry their own location already.
        lines.extend(messages if field == "definition" else [f"{field}: {m}" for m in messages])
    return lines


# --- the admin desk -------------------------------------------------------------------
def step_runs_for_page(run: WorkflowRun) -> QuerySet[StepRun]:
    """A run's steps for its page, in order, each with the pk of the prompt version it
    ran (for the link to that version's review page), in one query whatever the count."""
    version = PromptVersion.objects.filter(agent_id=OuterRef("agent_id"), number=OuterRef("agent_version"))
    return StepRun.objects.filter(run=run).annotate(version_pk=Subquery(version.values("pk")[:1])).order_by("position")


def step_child_turns(run: WorkflowRun) -> dict[int, list[AgentTurn]]:
    """The turns the steps' turns delegated to, by parent turn id: one query (a subquery
    on the run, so it runs even when no step has a turn yet and the count stays fixed)."""
    children: dict[int, list[AgentTurn]] = {}
    rows = AgentTurn.all_objects.filter(parent__step_runs__run=run).only("pk", "parent_id", "agent_key", "status")
    for turn in rows.order_by("pk"):
        children.setdefault(turn.parent_id, []).append(turn)
    return children


def workflow_run_totals(queryset: QuerySet[WorkflowRun]) -> dict:
    """Totals over a list of runs: how many, tokens, cost, and the time the finished
    ones took."""
    duration = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    totals = queryset.order_by().aggregate(
        runs=Count("pk"),
        input_tokens=Coalesce(Sum("input_tokens"), 0),
        output_tokens=Coalesce(Sum("output_tokens"), 0),
        cost_usd=Coalesce(Sum("cost_usd"), Decimal(0), output_field=DecimalField()),
        duration=Sum(duration),
    )
    totals["tokens"] = totals["input_tokens"] + totals["output_tokens"]
    return totals


def workflow_run_running_count(*, actor: Actor) -> int:
    """Runs in progress in the workspaces `actor` may read (sandbox runs never)."""
    runs = WorkflowRun.objects.filter(status=RunStatus.RUNNING)
    workspace_ids = actor.workspace_ids(Verb.READ)
    if workspace_ids is not None:
        runs = runs.filter(workspace_id__in=workspace_ids)
    return runs.count()


def prompt_version_runs(*, version: PromptVersion, actor: Actor) -> QuerySet[WorkflowRun]:
    """The runs (newest first) with a step that ran `version` of its agent, in the
    workspaces `actor` may read."""
    ran = StepRun.objects.filter(agent_id=version.agent_id, agent_version=version.number).values("run_id")
    runs = WorkflowRun.objects.filter(pk__in=ran).order_by("-created_at")
    workspace_ids = actor.workspace_ids(Verb.READ)
    return runs if workspace_ids is None else runs.filter(workspace_id__in=workspace_ids)
