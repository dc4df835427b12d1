"""MCP tools for workflows (issues 16 and 17, assembled by `aihummer/mcp.py`): list,
change and delete workflows, run one and read a run's per-step story.

The rules live in `workflows.services` and `workflows.selectors`; these tools parse
the seed's parameter shapes (definitions and inputs as JSON strings) and format
results. `run_workflow` and `inspect_workflow_run` serve real and sandbox workflows
alike, with the API key's rights.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import pydantic
from django.core.exceptions import ValidationError
from pydantic import Field

from agents.mcp import KEY_PATTERN, NOTHING_GIVEN, WAITING_FOR, Force, IncludeSandbox, WaitingFor, waiting_for
from agents.models import DebugLog
from agents.selectors import approval_requests_waited_for
from aihummer.exceptions import ApplicationError, NotFound
from aihummer.jsonsafe import json_loads
from aihummer.mcp import Caller, Out, ToolOutput, differing, saved_message, tool
from workflows.models import RunStatus, StepRun, Workflow, WorkflowRun
from workflows.selectors import workflow_list, workflow_run_get
from workflows.services import (
    workflow_delete,
    workflow_get,
    workflow_run_cancel,
    workflow_run_start,
    workflow_run_wait,
    workflow_update,
)

WAIT_DEFAULT_SECONDS = 30
WAIT_MAX_SECONDS = 120

WorkflowKey = Annotated[
    str,
    Field(description="The workflow's key ([a-z0-9_-], at most 100 characters).", pattern=KEY_PATTERN, max_length=100),
]
Definition = Annotated[
    str,
    Field(
        description="The definition as a JSON string in the pivot format: "
        '{"version": 1, "steps": [{"name", "agent_name", "input_mapping": {"text": "$.steps.<step>.output.answer"}, '
        '"output_key"}, ...], "outputs": {"<name>": "$.steps.<step>.output.answer"}}.',
        max_length=1_000_000,  # as the REST API's body limit
    ),
]


# --- answers (each tool's outputSchema) ---------------------------------------------------
class WorkflowItem(Out):
    workflowKey: str
    name: str
    description: str
    version: int
    stepsCount: int
    agents: list[str]
    isActive: bool
    isBuiltin: bool
    isSandbox: bool
    updatedAt: datetime


class RunUsage(Out):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    costUsd: float


class StepTokens(Out):
    input: int
    output: int


class StepItem(Out):
    index: int
    name: str
    agent: str
    agentVersion: int | None
    status: str
    input: Any
    output: Any
    errorMessage: str | None
    attempts: int
    tokens: StepTokens
    cost: float
    durationSeconds: float | None
    debugIds: list[int]
    waitingFor: WaitingFor | None = WAITING_FOR


class RunOutput(Out):
    outputs: Any
    answer: str


class ListWorkflowsOutput(ToolOutput):
    count: int
    workflows: list[WorkflowItem]


class UpdateWorkflowOutput(ToolOutput):
    workflowKey: str
    changed: list[str]
    message: str
    workflow: WorkflowItem


class DeleteWorkflowOutput(ToolOutput):
    workflowKey: str
    deleted: bool
    runsInProgress: list[str]


class RunWorkflowOutput(ToolOutput):
    workflowKey: str
    workflowRunId: str
    runStatus: str = pydantic.Field(description="The run's own status; the answer's `status` is the call's.")
    stepsExecuted: int
    stepsCount: int
    outputs: Any
    answer: str
    usage: RunUsage
    errorMessage: str | None
    message: str | None = pydantic.Field(
        default=None, description="Only while the run goes on after the wait: how to follow it."
    )
    waitingFor: WaitingFor | None = WAITING_FOR


class InspectWorkflowRunOutput(ToolOutput):
    workflowRunId: str
    workflowKey: str
    workflowVersion: int
    runStatus: str
    currentStepIndex: int
    stepsCount: int
    input: Any
    output: RunOutput
    errorMessage: str | None
    totalTokens: int
    totalCost: float
    durationSeconds: float | None
    startedAt: datetime | None
    completedAt: datetime | None
    waitingFor: WaitingFor | None = WAITING_FOR
    steps: list[StepItem]


def parse_json(text: str, field: str) -> Any:
    """A JSON string parameter, or a field error saying where it breaks (hostile JSON
    included: see `aihummer.jsonsafe`)."""
    return json_loads(text, field=field)


def definition_agents(definition: dict) -> list[str]:
    """The agents a (valid) definition runs, in step order, each once."""
    return list(dict.fromkeys(step["agent_name"] for step in definition.get("steps", [])))


def workflow_item(workflow: Workflow) -> dict:
    return {
        "workflowKey": workflow.key,
        "name": workflow.name,
        "description": workflow.description,
        "version": workflow.version,
        "stepsCount": len(workflow.definition.get("steps", [])),
        "agents": definition_agents(workflow.definition),
        "isActive": workflow.is_active,
        "isBuiltin": workflow.is_builtin,
        "isSandbox": workflow.is_sandbox,
        "updatedAt": workflow.updated_at,
    }


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def _usage(run: WorkflowRun) -> dict:
    return {
        "prompt_tokens": run.input_tokens,
        "completion_tokens": run.output_tokens,
        "total_tokens": run.input_tokens + run.output_tokens,
        "costUsd": float(run.cost_usd),
    }


# --- workflows ----------------------------------------------------------------------------
@tool(title="List workflows", output=ListWorkflowsOutput, read_only=True)
def list_workflows(caller: Caller, includeSandbox: IncludeSandbox = False) -> dict:
    """List the workspace's workflows: key, name, description, definition version, the
    number of steps and the agents they run, whether enabled, built in or a sandbox
    workflow."""
    workflows = list(workflow_list(actor=caller.actor, workspace=caller.workspace, include_sandbox=includeSandbox))
    return {"count": len(workflows), "workflows": [workflow_item(workflow) for workflow in workflows]}


@tool(title="Update a workflow", output=UpdateWorkflowOutput, parameter_names={"is_active": "isActive"})
def update_workflow(
    caller: Caller,
    workflowKey: WorkflowKey,
    name: Annotated[str | None, Field(description="New display name.", min_length=1, max_length=200)] = None,
    description: Annotated[str | None, Field(description="New description.")] = None,
    # Plain `str` (empty: unchanged): the SDK would decode a JSON string given to an
    # optional parameter before validation, and a JSON string is this parameter's shape.
    definition: Definition = "",
    isActive: Annotated[bool | None, Field(description="Enable or disable the workflow.")] = None,
) -> dict:
    """Update a workflow's name, description, definition or enabled flag (applies at once;
    the API key's publish scope for real workflows). A new definition is validated
    against the workspace's agents (every problem is reported) and bumps the version;
    runs already started keep the definition they started with."""
    if all(value is None for value in (name, description, isActive)) and not definition:
        raise ValidationError(NOTHING_GIVEN)
    workflow = workflow_get(workspace=caller.workspace, key=workflowKey, actor=caller.actor)
    wanted = {"name": name, "description": description, "is_active": isActive}
    if definition:
        wanted["definition"] = parse_json(definition, "definition")
    fields = differing(workflow, wanted)
    if fields:
        workflow = workflow_update(workflow=workflow, actor=caller.actor, **fields)
    changed = [update_workflow.parameter_for(field) for field in fields]
    return {
        "workflowKey": workflow.key,
        "changed": changed,
        "message": saved_message(changed),
        "workflow": workflow_item(workflow),
    }


@tool(title="Delete a workflow", output=DeleteWorkflowOutput, destructive=True)
def delete_workflow(caller: Caller, workflowKey: WorkflowKey, force: Force = False) -> dict:
    """Delete a workflow; its finished runs stay readable (they keep their copy of the
    definition). Refused for built-in workflows, and, unless force is true, while runs of
    it are in progress (they are listed; forced, they still finish)."""
    workflow = workflow_get(workspace=caller.workspace, key=workflowKey, actor=caller.actor)
    dependents = workflow_delete(workflow=workflow, actor=caller.actor, force=force)
    return {"workflowKey": workflowKey, "deleted": True, "runsInProgress": dependents}


# --- runs ---------------------------------------------------------------------------------
@tool(title="Run a workflow", output=RunWorkflowOutput)
def run_workflow(
    caller: Caller,
    workflowKey: WorkflowKey,
    message: Annotated[str | None, Field(description="The message the first steps receive.")] = None,
    inputs: Annotated[
        str, Field(description='Named inputs as a JSON object string, e.g. {"text": "…"}; empty: none.')
    ] = "",
    waitSeconds: Annotated[
        int,
        Field(
            description=f"How long to wait for the run to finish (0 to {WAIT_MAX_SECONDS}); past it, the run "
            "goes on and its id and current status come back: poll inspect_workflow_run.",
            ge=0,
            le=WAIT_MAX_SECONDS,
        ),
    ] = WAIT_DEFAULT_SECONDS,
    cancelRunIfAbandoned: Annotated[
        bool,
        Field(
            description="true: if this call is cancelled (or, over HTTP, the client goes away) while it waits, "
            "the run is cancelled too. Default false: the run goes on; follow it with inspect_workflow_run."
        ),
    ] = False,
) -> dict:
    """Start a run of a workflow (real or sandbox, with the API key's rights), wait for it
    up to waitSeconds, and return its status, outputs, final answer and usage. A run
    that failed or was cancelled is a tool error carrying the same fields. A run still
    going after the wait is not stopped: its id comes back to poll with
    inspect_workflow_run. With a progress token, progress notifications count the steps
    done; cancelling the call stops the wait, not the run (unless cancelRunIfAbandoned)."""
    workflow = workflow_get(workspace=caller.workspace, key=workflowKey, actor=caller.actor)
    parsed_inputs = parse_json(inputs, "inputs") if inputs else None
    run = workflow_run_start(workflow=workflow, actor=caller.actor, message=message, inputs=parsed_inputs)
    steps_count = len(run.definition.get("steps", []))
    try:
        run = workflow_run_wait(run=run, timeout=waitSeconds, on_poll=_progress_of(caller, steps_count))
    except BaseException:  # the call's cancellation is no Exception; nobody reads this answer
        if cancelRunIfAbandoned and caller.progress is not None and caller.progress.abandoned:
            with contextlib.suppress(ApplicationError):  # it finished meanwhile: nothing to cancel
                workflow_run_cancel(run=run, actor=caller.actor)
        raise
    steps_executed = StepRun.objects.filter(run=run, status__in=StepRun.DONE).count()
    body = {
        "workflowKey": run.workflow_key,
        "workflowRunId": str(run.pk),
        # The answer's own "status" is "success": the run's is `runStatus`.
        "runStatus": run.status,
        "stepsExecuted": steps_executed,
        "stepsCount": steps_count,
        "outputs": run.outputs,
        "answer": run.answer,
        "usage": _usage(run),
        "errorMessage": run.error or None,
        "waitingFor": None,
    }
    if run.status == RunStatus.WAITING:
        body["waitingFor"] = waiting_for(caller, approval_requests_waited_for(run_id=run.pk))
        body["message"] = (
            "Waiting for a person to decide a tool call (waitingFor.reviewUrl); the run goes on once decided: "
            "poll inspect_workflow_run with this run id."
        )
    elif not run.is_finished:
        body["message"] = f"Still {run.status} after {waitSeconds} s: poll inspect_workflow_run with this run id."
    if run.status in (RunStatus.FAILED, RunStatus.CANCELLED):
        # A run that did not complete is the tool's failure, with the whole story.
        reason = f": {run.error}" if run.error else "."
        raise ApplicationError(f"The run {run.status}{reason} See inspect_workflow_run for each step.", extra=body)
    return body


def _progress_of(caller: Caller, steps_count: int) -> Callable[[WorkflowRun], None] | None:
    """What `run_workflow` does at each poll while it waits: tell the client how many
    steps are done (when it asked for progress), and stop waiting when it cancelled the
    call or went away. The run goes on either way: inspect_workflow_run follows it."""
    progress = caller.progress
    if progress is None:
        return None

    def on_poll(run: WorkflowRun) -> None:
        progress.check()
        done = StepRun.objects.filter(run=run, status__in=StepRun.DONE).count()
        progress.report(done, steps_count, f"{done} of {steps_count} steps done ({run.status})")

    return on_poll


@tool(title="Inspect a workflow run", output=InspectWorkflowRunOutput, read_only=True)
def inspect_workflow_run(
    caller: Caller,
    workflowRunId: Annotated[str, Field(description="The run's id, as run_workflow returns it.", max_length=64)],
) -> dict:
    """Read a workflow run step by step: its status, input and output, error, tokens,
    cost and duration, and for each step the agent and agent version it ran, its
    status, the input it resolved, its output, usage, duration and the debug log ids of
    its model calls (read them with inspect_agent_debug)."""
    run = workflow_run_get(run_id=workflowRunId, actor=caller.actor)
    if run.workspace_id != caller.workspace.pk:  # a key answers for its own workspace only
        raise NotFound(f"No workflow run '{workflowRunId}'.")
    steps = list(StepRun.objects.filter(run=run).order_by("position"))
    # all_objects: a sandbox run's logs are sandbox rows; the run was checked above.
    debug_ids: dict[int, list[int]] = {}
    turn_ids = [step.turn_id for step in steps if step.turn_id]
    for turn_id, pk in DebugLog.all_objects.filter(turn_id__in=turn_ids).order_by("pk").values_list("turn_id", "pk"):
        debug_ids.setdefault(turn_id, []).append(pk)
    current = next((s.position for s in steps if s.status not in (*StepRun.DONE, StepRun.Status.FAILED)), len(steps))
    # One query for the calls the run's waiting steps wait for, oldest first.
    pending = approval_requests_waited_for(run_id=run.pk) if run.status == RunStatus.WAITING else []
    by_step: dict[str, list] = {}
    for request in pending:
        by_step.setdefault(request.step_name, []).append(request)
    return {
        "workflowRunId": str(run.pk),
        "workflowKey": run.workflow_key,
        "workflowVersion": run.workflow_version,
        "runStatus": run.status,
        "currentStepIndex": current,
        "stepsCount": len(steps),
        "input": run.inputs,
        "output": {"outputs": run.outputs, "answer": run.answer},
        "errorMessage": run.error or None,
        "totalTokens": run.input_tokens + run.output_tokens,
        "totalCost": float(run.cost_usd),
        "durationSeconds": _seconds(run.duration_ms),
        "startedAt": run.started_at,
        "completedAt": run.finished_at,
        "waitingFor": waiting_for(caller, pending),
        "steps": [
            {
                "index": step.position,
                "name": step.name,
                "agent": step.agent_key,
                "agentVersion": step.agent_version,
                "status": step.status,
                "input": step.input,
                "output": step.output,
                "errorMessage": step.error or None,
                "attempts": step.attempts,
                "tokens": {"input": step.input_tokens, "output": step.output_tokens},
                "cost": float(step.cost_usd),
                "durationSeconds": _seconds(step.duration_ms),
                "debugIds": debug_ids.get(step.turn_id, []),
                "waitingFor": waiting_for(caller, by_step.get(step.name, [])),
            }
            for step in steps
        ],
    }


TOOLS = [list_workflows, update_workflow, delete_workflow, run_workflow, inspect_workflow_run]
