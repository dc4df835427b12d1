"""Evidence: saved test cases, their runs on proposals, each case's result and the judge's."""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from agents.evidence import ASSERTION_FIELDS, Assertions, parse_assertions
from agents.models.profiles import Agent
from aihummer.history import ConfigurationHistory
from aihummer.models import TimeStampedModel, Workspace


class AgentTestCase(TimeStampedModel):
    """A saved check of an agent: a message (or structured input) in, assertions on the
    answer out. Every active case runs on each proposal, on the candidate and on live."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="test_cases", verbose_name=_("agent"))
    name = models.CharField(max_length=200, verbose_name=_("name"))
    message = models.TextField(blank=True, help_text=_("What the agent is asked."), verbose_name=_("message"))
    input = models.JSONField(
        null=True,
        blank=True,
        help_text=_("Instead of a message: a JSON object, sent to the agent as JSON text."),
        verbose_name=_("input"),
    )
    contains = models.JSONField(
        default=list, blank=True, help_text=_("Strings the answer must contain."), verbose_name=_("contains")
    )
    not_contains = models.JSONField(
        default=list, blank=True, help_text=_("Strings the answer must not contain."), verbose_name=_("not contains")
    )
    case_insensitive = models.BooleanField(
        default=False, help_text=_("contains, not_contains and regex ignore case."), verbose_name=_("case insensitive")
    )
    regex = models.CharField(
        max_length=500, blank=True, help_text=_("A regular expression found in the answer."), verbose_name=_("regex")
    )
    min_length = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Characters."), verbose_name=_("min length")
    )
    max_length = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Characters."), verbose_name=_("max length")
    )
    max_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Tokens of the whole turn, input and output."), verbose_name=_("max tokens")
    )
    max_cost_usd = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, verbose_name=_("max cost usd")
    )
    is_active = models.BooleanField(_("active"), default=True)

    history = ConfigurationHistory(sandbox_via="agent")

    class Meta:
        verbose_name = _("test case")
        verbose_name_plural = _("test cases")
        ordering = ["agent", "name"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "name"], name="agents_agenttestcase_unique_name"),
            models.CheckConstraint(
                condition=(Q(input__isnull=True) & ~Q(message="")) | (Q(input__isnull=False) & Q(message="")),
                name="agents_agenttestcase_message_or_input",
            ),
            models.CheckConstraint(
                condition=Q(min_length__isnull=True) | Q(max_length__isnull=True) | Q(min_length__lte=F("max_length")),
                name="agents_agenttestcase_length_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors = {}
        has_message, has_input = bool(self.message.strip()), self.input is not None
        if has_message == has_input:
            errors["message"] = "Give either a message or a structured input (a JSON object), not both."
        elif has_input and (not isinstance(self.input, dict) or not self.input):
            errors["input"] = "Give a non-empty JSON object."
        try:
            parse_assertions({field: getattr(self, field) for field in ASSERTION_FIELDS})
        except ValidationError as exc:
            errors.update(exc.message_dict)
        if errors:
            raise ValidationError(errors)

    @property
    def prompt(self) -> str:
        """What the agent is sent: the message, or the input as JSON."""
        return self.message if self.input is None else json.dumps(self.input, ensure_ascii=False, sort_keys=True)

    def assertions(self) -> Assertions:
        return parse_assertions({field: getattr(self, field) for field in ASSERTION_FIELDS})


class EvidenceRunQuerySet(models.QuerySet):
    def for_workspace(self, workspace: Workspace | int) -> EvidenceRunQuerySet:
        return self.filter(workspace=workspace)


class EvidenceRun(models.Model):
    """One run of an agent's active cases for one proposal: each case on the candidate
    and on live, then the judge. Re-runs add rows; none is ever deleted with the
    version kept. Advisory only: nothing here decides a proposal."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    class Trigger(models.TextChoices):
        PROPOSED = "proposed", _("Proposed")
        CASES_CHANGED = "cases_changed", _("Cases changed")
        REQUESTED = "requested", _("Requested")

    class JudgeStatus(models.TextChoices):
        NONE = "none", _("No judge")
        PENDING = "pending", _("Pending")
        DONE = "done", _("Done")
        UNAVAILABLE = "unavailable", _("Unavailable")

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="evidence_runs")
    version = models.ForeignKey("PromptVersion", on_delete=models.CASCADE, related_name="evidence_runs")
    trigger = models.CharField(max_length=20, choices=Trigger.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    live_version = models.ForeignKey(
        "PromptVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("Compared with."),
    )
    cases_total = models.PositiveIntegerField(default=0)
    candidate_passed = models.PositiveIntegerField(default=0)
    live_passed = models.PositiveIntegerField(default=0)
    regressions = models.PositiveIntegerField(
        default=0, help_text=_("Cases that pass on live and not on the candidate.")
    )
    error = models.TextField(blank=True)
    judge_status = models.CharField(max_length=20, choices=JudgeStatus.choices, default=JudgeStatus.NONE)
    judge_preset_key = models.CharField(max_length=50, blank=True)
    judgement = models.JSONField(default=dict, blank=True)
    judge_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = EvidenceRunQuerySet.as_manager()

    class Meta:
        verbose_name = _("evidence run")
        verbose_name_plural = _("evidence runs")
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed"]), name="agents_evidencerun_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(judge_status__in=["none", "pending", "done", "unavailable"]),
                name="agents_evidencerun_judge_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(candidate_passed__lte=F("cases_total"))
                & Q(live_passed__lte=F("cases_total"))
                & Q(regressions__lte=F("cases_total")),
                name="agents_evidencerun_counts_within_total",
            ),
        ]
        indexes = [models.Index(fields=["version", "-created_at"], name="agents_evidencerun_latest")]

    def __str__(self) -> str:
        return f"evidence {self.pk} for version {self.version_id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def summary(self) -> str:
        """ "9/10 pass on candidate, 10/10 on live: 1 regression"."""
        if not self.is_finished:
            return gettext("Running the test cases…")
        if self.status == self.Status.FAILED:
            return gettext("The test cases could not run: %(error)s") % {"error": self.error}
        if not self.cases_total:
            return gettext("No test cases.")
        line = gettext("%(candidate)d/%(total)d pass on candidate, %(live)d/%(total)d on live") % {
            "candidate": self.candidate_passed,
            "live": self.live_passed,
            "total": self.cases_total,
        }
        if self.regressions:
            return ngettext("%(line)s: %(count)d regression", "%(line)s: %(count)d regressions", self.regressions) % {
                "line": line,
                "count": self.regressions,
            }
        return gettext("%(line)s: no regression") % {"line": line}


class CaseResult(models.Model):
    """One case on one side of an evidence run: each assertion's outcome, the answer,
    its tokens and cost, and the turn that produced it. Kept with the version."""

    class Side(models.TextChoices):
        LIVE = "live", _("Live")
        CANDIDATE = "candidate", _("Candidate")

    class Status(models.TextChoices):
        PASSED = "passed", _("Passed")
        FAILED = "failed", _("Failed")
        ERROR = "error", _("Error")

    run = models.ForeignKey(EvidenceRun, on_delete=models.CASCADE, related_name="results")
    case = models.ForeignKey(AgentTestCase, null=True, blank=True, on_delete=models.SET_NULL, related_name="results")
    case_name = models.CharField(max_length=200)
    side = models.CharField(max_length=20, choices=Side.choices)
    version = models.ForeignKey(
        "PromptVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("What answered."),
    )
    version_number = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices)
    checks = models.JSONField(default=list, blank=True)
    answer = models.TextField(blank=True)
    error = models.TextField(blank=True)
    tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    turn = models.ForeignKey("AgentTurn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "case_name", "side"]
        constraints = [
            models.UniqueConstraint(fields=["run", "case_name", "side"], name="agents_caseresult_unique_side"),
            models.CheckConstraint(condition=Q(side__in=["live", "candidate"]), name="agents_caseresult_side_valid"),
            models.CheckConstraint(
                condition=Q(status__in=["passed", "failed", "error"]), name="agents_caseresult_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.case_name} on {self.side} v{self.version_number}: {self.status}"

    @property
    def passed(self) -> bool:
        return self.status == self.Status.PASSED
