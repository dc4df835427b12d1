"""Approval policy: how much review each tier of change needs, and each approver's decision."""

from __future__ import annotations

from datetime import timedelta
from typing import NamedTuple

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from aihummer.history import ConfigurationHistory
from aihummer.models import TimeStampedModel, Workspace

TIER_FIELDS = ("approvals", "consensus", "wait_minutes")
# Each tier's bounds: its fields, their constraints and the REST API's input all read these.
MAX_APPROVALS = 3
MAX_WAIT_MINUTES = 30 * 24 * 60


def _approvals_field(label: str) -> models.PositiveSmallIntegerField:
    validators = [MinValueValidator(1), MaxValueValidator(MAX_APPROVALS)]
    return models.PositiveSmallIntegerField(default=1, validators=validators, verbose_name=label)


def _consensus_field(label: str) -> models.BooleanField:
    return models.BooleanField(default=True, help_text=_("One rejection rejects the proposal."), verbose_name=label)


def _wait_field(label: str) -> models.PositiveIntegerField:
    return models.PositiveIntegerField(
        default=0,
        validators=[MaxValueValidator(MAX_WAIT_MINUTES)],
        help_text=_("Least minutes from proposal to live."),
        verbose_name=label,
    )


class ApprovalPolicy(TimeStampedModel):
    """A workspace's approval policy, per risk tier (`agents.tiers`): how many distinct
    people must approve, whether one rejection ends the proposal (consensus), and the
    least time between the proposal and its going live. A workspace without one has
    the default: one approval, consensus, no wait, for every tier."""

    workspace = models.OneToOneField(
        Workspace, on_delete=models.CASCADE, related_name="approval_policy", verbose_name=_("workspace")
    )
    wording_approvals = _approvals_field(_("wording approvals"))
    wording_consensus = _consensus_field(_("wording consensus"))
    wording_wait_minutes = _wait_field(_("wording wait minutes"))
    identity_approvals = _approvals_field(_("identity approvals"))
    identity_consensus = _consensus_field(_("identity consensus"))
    identity_wait_minutes = _wait_field(_("identity wait minutes"))
    power_approvals = _approvals_field(_("power approvals"))
    power_consensus = _consensus_field(_("power consensus"))
    power_wait_minutes = _wait_field(_("power wait minutes"))

    TIERS = ("wording", "identity", "power")

    history = ConfigurationHistory()

    class Meta:
        verbose_name = _("approval policy")
        verbose_name_plural = _("approval policies")
        constraints = [
            models.CheckConstraint(
                condition=Q(wording_approvals__gte=1, wording_approvals__lte=MAX_APPROVALS)
                & Q(identity_approvals__gte=1, identity_approvals__lte=MAX_APPROVALS)
                & Q(power_approvals__gte=1, power_approvals__lte=MAX_APPROVALS),
                name="agents_approvalpolicy_approvals_range",
            ),
            models.CheckConstraint(
                condition=Q(wording_wait_minutes__lte=MAX_WAIT_MINUTES)
                & Q(identity_wait_minutes__lte=MAX_WAIT_MINUTES)
                & Q(power_wait_minutes__lte=MAX_WAIT_MINUTES),
                name="agents_approvalpolicy_wait_range",
            ),
        ]

    def __str__(self) -> str:
        return gettext("approval policy of %(workspace)s") % {"workspace": self.workspace}

    def rule(self, tier: str) -> TierRule:
        return TierRule(tier, *(getattr(self, f"{tier}_{name}") for name in TIER_FIELDS))


class TierRule(NamedTuple):
    tier: str
    approvals: int
    consensus: bool
    wait_minutes: int

    @property
    def wait(self) -> timedelta:
        return timedelta(minutes=self.wait_minutes)


class VersionDecision(models.Model):
    """One person's approval or rejection of a pending version, recorded one by one:
    who, when, and the live version they saw. A decision record: never edited, no
    history; one per person and version (distinct approvers, a database rule)."""

    class Kind(models.TextChoices):
        APPROVE = "approve", _("Approved")
        REJECT = "reject", _("Rejected")

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey("PromptVersion", on_delete=models.CASCADE, related_name="decisions")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    seen_live_number = models.PositiveIntegerField(
        null=True, blank=True, help_text="The live version the reviewer looked at (None: none was live yet)."
    )
    note = models.TextField(blank=True)
    live_at = models.DateTimeField(null=True, blank=True, help_text="When the approver asked it to go live.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["version", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["version", "reviewer"], name="agents_versiondecision_one_per_reviewer"),
            models.CheckConstraint(
                condition=Q(kind__in=["approve", "reject"]), name="agents_versiondecision_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of version {self.version_id} by {self.reviewer_id}"
