"""Workflows (pivot-format definitions), their runs and one StepRun per (run, step).

A run is rows, not a process: its definition, inputs and context (every finished
step's status, output and usage) live on the WorkflowRun, each step's story on its
StepRun, so any worker continues any run (see `workflows.execution`).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from agents.models import Agent, AgentTurn
from aihummer.history import ConfigurationHistory
from aihummer.models import KEY_VALIDATOR, TimeStampedModel, Workspace
from sandbox.models import SandboxedModel, SandboxQuerySet, VisibleManager


class Workflow(SandboxedModel, TimeStampedModel):
    """A named pipeline of agent steps in the pivot format (`workflows.engine`)."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="workflows", verbose_name=_("workspace")
    )
    key = models.CharField(max_length=100, validators=[KEY_VALIDATOR], verbose_name=_("key"))
    name = models.CharField(max_length=200, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    definition = models.JSONField(
        help_text=_("Pivot format v1: version, steps, optional outputs."), verbose_name=_("definition")
    )
    version = models.PositiveIntegerField(
        default=1, editable=False, help_text=_("Bumped when the definition changes."), verbose_name=_("version")
    )
    is_active = models.BooleanField(_("enabled"), default=True)
    is_builtin = models.BooleanField(default=False, editable=False, verbose_name=_("is builtin"))

    objects = VisibleManager.from_queryset(SandboxQuerySet)()
    all_objects = models.Manager.from_queryset(SandboxQuerySet)()
    history = ConfigurationHistory()

    class Meta:
        verbose_name = _("workflow")
        verbose_name_plural = _("workflows")
        ordering = ["workspace__slug", "key"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "key"], name="workflows_workflow_unique_key"),
            models.CheckConstraint(condition=Q(version__gte=1), name="workflows_workflow_version_positive"),
        ]

    def __str__(self) -> str:
        return self.key


class RunStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    RUNNING = "running", _("Running")
    WAITING = "waiting", _("Waiting for a person")  # a step's tool call awaits approval (issue 30)
    COMPLETED = "completed", _("Completed")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


class WorkflowRunQuerySet(SandboxQuerySet):
    def unfinished(self) -> WorkflowRunQuerySet:
        return self.filter(status__in=[RunStatus.PENDING, RunStatus.RUNNING])

    def in_progress(self) -> WorkflowRunQuerySet:
        """Runs not finished, those waiting for a person included: what deleting their
        workflow, agents or sandbox would disturb (unfinished() leaves waiting runs out
        because they may wait days past any deadline)."""
        return self.filter(status__in=[RunStatus.PENDING, RunStatus.RUNNING, RunStatus.WAITING])


class WorkflowRun(SandboxedModel):
    """One execution of a workflow: the definition and version it ran, its inputs, the
    run context its steps wrote, and the roll-up (outputs, answer, tokens, cost)."""

    Status = RunStatus
    FINISHED = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name=_("id"))
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="workflow_runs", verbose_name=_("workspace")
    )
    workflow = models.ForeignKey(
        Workflow, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs", verbose_name=_("workflow")
    )
    workflow_key = models.CharField(max_length=100, verbose_name=_("workflow key"))
    workflow_version = models.PositiveIntegerField(verbose_name=_("workflow version"))
    definition = models.JSONField(verbose_name=_("definition"))
    status = models.CharField(
        max_length=20, choices=RunStatus.choices, default=RunStatus.PENDING, verbose_name=_("status")
    )
    inputs = models.JSONField(default=dict, blank=True, verbose_name=_("inputs"))
    # {"inputs": {...}, "steps": {"<name>": {"status", "output": {"answer", "text"}, "usage"}}}
    context = models.JSONField(default=dict, blank=True, verbose_name=_("context"))
    outputs = models.JSONField(default=dict, blank=True, verbose_name=_("outputs"))
    answer = models.TextField(blank=True, verbose_name=_("answer"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("started by"),
    )
    actor_source = models.CharField(
        max_length=200,
        help_text=_("Who started it, through what: admin:alice, cli:ops…"),
        verbose_name=_("actor source"),
    )
    # Everyone answerable for the run (`Actor.identity_label`: a key's holder and its
    # creator), so what its agents propose is recorded against them for four eyes.
    actor_identity = models.CharField(max_length=120, blank=True, verbose_name=_("actor identity"))
    surface = models.CharField(max_length=20, verbose_name=_("surface"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    deadline_at = models.DateTimeField(
        null=True, blank=True, help_text=_("The run's wall-clock limit."), verbose_name=_("deadline at")
    )
    input_tokens = models.PositiveIntegerField(default=0, verbose_name=_("input tokens"))
    output_tokens = models.PositiveIntegerField(default=0, verbose_name=_("output tokens"))
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0, verbose_name=_("cost usd"))

    objects = VisibleManager.from_queryset(WorkflowRunQuerySet)()
    all_objects = models.Manager.from_queryset(WorkflowRunQuerySet)()

    class Meta:
        verbose_name = _("workflow run")
        verbose_name_plural = _("workflow runs")
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["pending", "running", "waiting", "completed", "failed", "cancelled"]),
                name="workflows_workflowrun_status_valid",
            ),
        ]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="workflows_run_ws_created")]

    def __str__(self) -> str:
        return f"{self.workflow_key} run {self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return int((self.finished_at - self.started_at).total_seconds() * 1000)


class StepStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    RUNNING = "running", _("Running")
    WAITING = "waiting", _("Waiting for a person")  # no worker, no lease: an approval request holds it
    COMPLETED = "completed", _("Completed")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")
    SKIPPED = "skipped", _("Skipped")


class StepRun(models.Model):
    """One step of one run, exactly once per (run, step): the input it resolved, what
    the agent answered, the attempts it took and the lease of the worker running it."""

    Status = StepStatus
    DONE = (StepStatus.COMPLETED, StepStatus.SKIPPED)

    run = models.ForeignKey(WorkflowRun, on_delete=models.CASCADE, related_name="steps", verbose_name=_("run"))
    name = models.CharField(max_length=100, verbose_name=_("name"))
    position = models.PositiveIntegerField(verbose_name=_("position"))
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="step_runs", verbose_name=_("agent")
    )
    agent_key = models.CharField(max_length=50, verbose_name=_("agent key"))
    status = models.CharField(
        max_length=20, choices=StepStatus.choices, default=StepStatus.PENDING, verbose_name=_("status")
    )
    input = models.TextField(blank=True, verbose_name=_("input"))
    output = models.JSONField(null=True, blank=True, verbose_name=_("output"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    attempts = models.PositiveIntegerField(default=0, verbose_name=_("attempts"))
    # The attempts before the current one, each as it ended (given back for a retry,
    # taken from a dead worker, or failed then resumed): the run page draws every one.
    attempt_log = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Earlier attempts: start, end, error, turn."),
        verbose_name=_("attempt log"),
    )
    # Set when a worker claims the step and renewed by its heartbeat; a running step
    # whose lease has passed belongs to a worker that died (issue 14's recovery).
    lease_expires_at = models.DateTimeField(null=True, blank=True, verbose_name=_("lease expires at"))
    retry_at = models.DateTimeField(
        null=True, blank=True, help_text=_("A pending retry is not sent before this."), verbose_name=_("retry at")
    )
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    input_tokens = models.PositiveIntegerField(default=0, verbose_name=_("input tokens"))
    output_tokens = models.PositiveIntegerField(default=0, verbose_name=_("output tokens"))
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0, verbose_name=_("cost usd"))
    agent_version = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("agent version"))
    prefix_hash = models.CharField(max_length=64, blank=True, verbose_name=_("prefix hash"))
    turn = models.ForeignKey(
        AgentTurn, null=True, blank=True, on_delete=models.SET_NULL, related_name="step_runs", verbose_name=_("turn")
    )

    class Meta:
        verbose_name = _("step run")
        verbose_name_plural = _("step runs")
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "name"], name="workflows_steprun_unique_step"),
            models.CheckConstraint(
                condition=Q(
                    status__in=["pending", "running", "waiting", "completed", "failed", "cancelled", "skipped"]
                ),
                name="workflows_steprun_status_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["lease_expires_at"], condition=Q(status="running"), name="workflows_step_lease"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def is_retrying(self) -> bool:
        """Given back after a failed attempt, waiting for the next one."""
        return self.status == StepStatus.PENDING and self.attempts > 0

    @property
    def earlier_attempts(self) -> list[dict]:
        """The attempt log with its times as datetimes (the log stores them as text)."""
        return [
            {
                **entry,
                "started_at": datetime.fromisoformat(entry["started_at"]) if entry.get("started_at") else None,
                "ended_at": datetime.fromisoformat(entry["ended_at"]),
            }
            for entry in self.attempt_log
        ]

    def attempt_log_closed(self, *, ended_at: datetime, error: str, turn_id: int | None = None) -> list[dict]:
        """The attempt log with the current attempt added as ended at `ended_at`."""
        entry = {
            "attempt": self.attempts,
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "ended_at": ended_at.isoformat(),
            "error": error,
            "turn_id": turn_id,
        }
        return [*self.attempt_log, entry]

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return int((self.finished_at - self.started_at).total_seconds() * 1000)
