"""Prompt versions: the immutable snapshots of what an agent is told, and their review status."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce, JSONObject
from django.utils.translation import gettext_lazy as _

from agents.models.approval_policy import VersionDecision
from agents.models.evidence import EvidenceRun
from agents.models.profiles import Agent
from aihummer.history import ConfigurationHistory
from aihummer.models import TimeStampedModel, Workspace
from sandbox.models import SandboxedModel, SandboxQuerySet, VisibleManager


class PromptVersionQuerySet(SandboxQuerySet):
    def pending(self) -> PromptVersionQuerySet:
        return self.filter(status=PromptVersion.Status.PENDING)

    def with_latest_evidence(self) -> PromptVersionQuerySet:
        """Annotate `latest_evidence`: the newest evidence run's status and counts as
        one JSON object (or None), in the same query, for the queue's column."""
        latest = EvidenceRun.objects.filter(version=OuterRef("pk")).order_by("-created_at", "-id")
        summary = JSONObject(status="status", total="cases_total", passed="candidate_passed", regressions="regressions")
        return self.annotate(latest_evidence=Subquery(latest.values(data=summary)[:1], output_field=models.JSONField()))

    def with_approval_count(self) -> PromptVersionQuerySet:
        """Annotate `approval_count`: the approvals recorded so far (one subquery)."""
        approvals = (
            VersionDecision.objects.filter(version=OuterRef("pk"), kind=VersionDecision.Kind.APPROVE)
            .values("version")
            .annotate(count=models.Count("pk"))
            .values("count")
        )
        return self.annotate(approval_count=Coalesce(Subquery(approvals, output_field=models.IntegerField()), Value(0)))


class PromptVersion(SandboxedModel, TimeStampedModel):
    """An immutable snapshot of what an agent is told, numbered per agent."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")
        WITHDRAWN = "withdrawn", _("Withdrawn")

    class Tier(models.TextChoices):
        WORDING = "wording", _("Wording")
        IDENTITY = "identity", _("Identity")
        POWER = "power", _("Power")

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="prompt_versions", verbose_name=_("workspace")
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions", verbose_name=_("agent"))
    number = models.PositiveIntegerField(_("number"))
    status = models.CharField(_("status"), max_length=20, choices=Status.choices, default=Status.PENDING)
    snapshot = models.JSONField(verbose_name=_("snapshot"))
    content_hash = models.CharField(max_length=64, verbose_name=_("content hash"))
    source = models.CharField(
        _("source"), max_length=200, help_text=_("Who proposed it, through what: admin:alice, mcp:ci/claude…")
    )
    reason = models.TextField(_("reason"), blank=True)
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("proposed by"),
    )
    # Four eyes compares this: the proposing person, or the key when no person owns it.
    proposer_identity = models.CharField(max_length=120, verbose_name=_("proposer identity"))
    base_version = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text=_("Live when proposed.")
    )
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("reviewed by"),
    )
    reviewed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("reviewed at"))
    review_note = models.TextField(blank=True, verbose_name=_("review note"))
    # Computed once against base_version when recorded (the snapshot never changes),
    # so the queue shows sizes without loading two snapshots per row.
    diff_stats = models.JSONField(default=dict, editable=False, verbose_name=_("diff stats"))
    # The risk tier of the change against base_version (agents.tiers), computed when
    # recorded, and the diff lines that put it there: [{"tier", "line"}, ...].
    tier = models.CharField(
        max_length=20, choices=Tier.choices, default=Tier.WORDING, editable=False, verbose_name=_("tier")
    )
    tier_reasons = models.JSONField(default=list, editable=False, verbose_name=_("tier reasons"))
    # Scheduled go-live: every required approval is in, and beat puts it live then
    # (still pending until it does). `go_live_problem`: why beat left it pending.
    go_live_at = models.DateTimeField(null=True, blank=True, editable=False, verbose_name=_("go live at"))
    go_live_problem = models.TextField(blank=True, editable=False, verbose_name=_("go live problem"))
    # A stale proposal rebased onto a newer live version: the new pending one.
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )

    objects = VisibleManager.from_queryset(PromptVersionQuerySet)()
    all_objects = models.Manager.from_queryset(PromptVersionQuerySet)()
    # The snapshot never changes, so history records only the decision fields.
    history = ConfigurationHistory(excluded_fields=["snapshot"])

    class Meta:
        verbose_name = _("prompt version")
        verbose_name_plural = _("prompt versions")
        ordering = ["agent", "-number"]

        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="agents_promptversion_unique_number"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "approved", "rejected", "withdrawn"]),
                name="agents_promptversion_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(status="pending", reviewed_at__isnull=True)
                | (~Q(status="pending") & Q(reviewed_at__isnull=False)),
                name="agents_promptversion_decided_iff_reviewed_at",
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="agents_promptversion_number_positive"),
            models.CheckConstraint(condition=~Q(base_version=F("id")), name="agents_promptversion_base_not_self"),
            models.CheckConstraint(
                condition=Q(tier__in=["wording", "identity", "power"]), name="agents_promptversion_tier_valid"
            ),
            models.CheckConstraint(
                condition=Q(go_live_at__isnull=True) | Q(status="pending"),
                name="agents_promptversion_scheduled_only_pending",
            ),
        ]
        indexes = [
            # The queue's default view: a workspace's pending versions, oldest first.
            models.Index(fields=["workspace", "status", "created_at"], name="agents_pv_queue_order"),
        ]

    def __str__(self) -> str:
        return f"{self.agent.key} v{self.number} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING

    @property
    def is_stale(self) -> bool:
        """Pending, and the live version moved since it was proposed."""
        return self.is_pending and self.agent.live_version_id != self.base_version_id
