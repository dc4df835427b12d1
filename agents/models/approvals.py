"""Actions that wait for a person (issue 30): the tool settings of a workspace and of an
agent, and one ApprovalRequest per guarded tool call.

They name the other models by string, and import none of them.

An ApprovalRequest is a tool call with its exact arguments, frozen when the model made
it: no code path changes `arguments` (an edited call is a new request). Its
`ledger_key` is the effect's identity across retries and worker crashes: the effect is
claimed (`progress = effect`, with a lease), carried out with that key (an SMTP
Message-ID, an HTTP Idempotency-Key), and its result recorded (`recorded`) before the
turn resumes (`resuming`, then `resumed`), each step a conditional update. Just before
the network write that could make the receiver act (an e-mail's end of DATA, an HTTP
request's first byte) the attempt is marked `sending`, committed: an attempt that
stops after that mark without a recorded answer has an unknown outcome (`unknown`) and
waits for a person to say whether it happened, never sent again by itself.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.destinations import validate_host_patterns
from aihummer.history import ConfigurationHistory
from aihummer.models import TimeStampedModel, Workspace
from sandbox.models import SandboxedModel, SandboxQuerySet, VisibleManager

# The tools a person approves unless a workspace's settings say otherwise.
DEFAULT_APPROVAL_TOOLS = ["mail_send", "http_request"]


def default_approval_tools() -> list[str]:
    return list(DEFAULT_APPROVAL_TOOLS)


class WorkspaceToolPolicy(TimeStampedModel):
    """What a workspace requires of its agents' tool calls. Without a row: the
    defaults (mail_send and http_request need a person, no private address, 72 h)."""

    workspace = models.OneToOneField(
        Workspace, on_delete=models.CASCADE, related_name="tool_policy", verbose_name=_("workspace")
    )
    approval_tools = models.JSONField(
        default=default_approval_tools,
        blank=True,
        help_text=_("Tools whose every call waits for a person's approval (mail_send, http_request by default)."),
        verbose_name=_("approval tools"),
    )
    allow_private_addresses = models.BooleanField(
        default=False,
        help_text=_("Let http_request reach loopback and private addresses (tests, on-premises services)."),
        verbose_name=_("allow private addresses"),
    )
    approval_expiry_hours = models.PositiveIntegerField(
        default=72,
        validators=[MinValueValidator(1), MaxValueValidator(24 * 30)],
        help_text=_("A request nobody decided within this many hours is refused."),
        verbose_name=_("approval expiry hours"),
    )

    history = ConfigurationHistory()

    class Meta:
        verbose_name = _("workspace tool policy")
        verbose_name_plural = _("workspace tool policies")
        constraints = [
            models.CheckConstraint(
                condition=Q(approval_expiry_hours__gte=1, approval_expiry_hours__lte=24 * 30),
                name="agents_workspacetoolpolicy_expiry_bounded",
            ),
        ]

    def __str__(self) -> str:
        return gettext("tool policy of workspace %(workspace)s") % {"workspace": self.workspace_id}


class AgentToolSettings(TimeStampedModel):
    """An agent's side-effect tools: its SMTP account (password in the vault) and the
    hosts http_request may call, plus the tools it adds to the workspace's approvals."""

    class SmtpSecurity(models.TextChoices):
        NONE = "none", _("None (plain)")
        STARTTLS = "starttls", "STARTTLS"
        SSL = "ssl", "SSL/TLS"

    class OnReject(models.TextChoices):
        CONTINUE = "continue", _("Tell the model and go on")
        END = "end", _("End the turn")

    agent = models.OneToOneField(
        "agents.Agent", on_delete=models.CASCADE, related_name="tool_settings", verbose_name=_("agent")
    )
    extra_approval_tools = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Tools this agent adds to the workspace's approval list."),
        verbose_name=_("extra approval tools"),
    )
    on_reject = models.CharField(
        max_length=10, choices=OnReject.choices, default=OnReject.CONTINUE, verbose_name=_("on reject")
    )
    smtp_host = models.CharField(max_length=255, blank=True, verbose_name=_("SMTP host"))
    smtp_port = models.PositiveIntegerField(
        default=587, validators=[MinValueValidator(1), MaxValueValidator(65535)], verbose_name=_("SMTP port")
    )
    smtp_security = models.CharField(
        max_length=10, choices=SmtpSecurity.choices, default=SmtpSecurity.STARTTLS, verbose_name=_("SMTP security")
    )
    smtp_user = models.CharField(max_length=255, blank=True, verbose_name=_("SMTP user"))
    smtp_password = models.ForeignKey(
        "agents.Credential",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("The vault credential holding the SMTP password (never shown)."),
        verbose_name=_("SMTP password credential"),
    )
    mail_from = models.EmailField(
        blank=True, help_text=_("The From address of mail_send."), verbose_name=_("mail from")
    )
    http_allowed_hosts = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_host_patterns],
        help_text=_("Hosts http_request may call (api.example.com, *.example.com); empty: none."),
        verbose_name=_("HTTP allowed hosts"),
    )
    http_timeout_seconds = models.PositiveIntegerField(
        default=10,
        validators=[MinValueValidator(1), MaxValueValidator(60)],
        verbose_name=_("HTTP timeout seconds"),
    )
    http_max_response_bytes = models.PositiveIntegerField(
        default=100_000,
        validators=[MinValueValidator(1), MaxValueValidator(1_000_000)],
        verbose_name=_("HTTP max response bytes"),
    )

    history = ConfigurationHistory()

    class Meta:
        verbose_name = _("agent tool settings")
        verbose_name_plural = _("agent tool settings")
        constraints = [
            models.CheckConstraint(
                condition=Q(smtp_security__in=["none", "starttls", "ssl"]),
                name="agents_agenttoolsettings_smtp_security_valid",
            ),
            models.CheckConstraint(
                condition=Q(on_reject__in=["continue", "end"]), name="agents_agenttoolsettings_on_reject_valid"
            ),
        ]

    def __str__(self) -> str:
        return gettext("tool settings of agent %(agent)s") % {"agent": self.agent_id}


class ApprovalRequestQuerySet(SandboxQuerySet):
    def pending(self) -> ApprovalRequestQuerySet:
        return self.filter(status=ApprovalRequest.Status.PENDING)

    def waiting_for_a_person(self) -> ApprovalRequestQuerySet:
        """Pending requests, and approved calls whose outcome is unknown (a person says
        whether it happened): what the desk's queue shows and waiting runs wait for."""
        return self.filter(Q(status=ApprovalRequest.Status.PENDING) | Q(progress=ApprovalRequest.Progress.UNKNOWN))

    def unfinished_work(self) -> ApprovalRequestQuerySet:
        """Decided requests whose effect or resumed turn is not through yet."""
        return self.exclude(status=ApprovalRequest.Status.PENDING).exclude(progress=ApprovalRequest.Progress.RESUMED)


class ApprovalRequest(SandboxedModel, TimeStampedModel):
    """One guarded tool call waiting for (or decided by) a person. An execution record:
    no history, its arguments never change, and it outlives the turn's agent."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")
        EXPIRED = "expired", _("Expired")

    class Progress(models.TextChoices):
        NONE = "", _("Not started")
        EFFECT = "effect", _("Carrying out")
        SENDING = "sending", _("Sending (the receiver may be acting on it)")
        UNKNOWN = "unknown", _("Outcome unknown: a person decides")
        RECORDED = "recorded", _("Effect recorded")
        RESUMING = "resuming", _("Turn resuming")
        RESUMED = "resumed", _("Turn resumed")

    class Resolution(models.TextChoices):
        """What a person decided about a call whose outcome was unknown."""

        NONE = "", "—"
        RESENT = "resent", _("Sent again")
        CONFIRMED = "confirmed", _("Confirmed as done")

    class Origin(models.TextChoices):
        TURN = "turn", "Agent turn"
        WORKFLOW_STEP = "workflow_step", "Workflow step"

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="approval_requests", verbose_name=_("workspace")
    )
    agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="approval_requests"
    )
    agent_key = models.CharField(max_length=50, verbose_name=_("agent"))
    turn = models.ForeignKey(
        "agents.AgentTurn", null=True, blank=True, on_delete=models.SET_NULL, related_name="approval_requests"
    )
    origin = models.CharField(max_length=20, choices=Origin.choices, default=Origin.TURN)
    # The run and step it came from (a workflow step's turn); no foreign key: workflows
    # sit above agents.
    run_id = models.UUIDField(null=True, blank=True)
    step_name = models.CharField(max_length=100, blank=True)
    tool_name = models.CharField(max_length=50, verbose_name=_("tool"))
    call_id = models.CharField(max_length=200)
    arguments = models.JSONField(help_text="Exactly what will run when approved.")
    arguments_hash = models.CharField(max_length=64)
    ledger_key = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, verbose_name=_("status"))
    # Who answers for the call (the turn's or run's starter, `Actor.identity_label`):
    # none of them may approve it.
    proposer_identity = models.CharField(max_length=120)
    actor_source = models.CharField(max_length=200, verbose_name=_("on behalf of"))
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)
    expires_at = models.DateTimeField()
    progress = models.CharField(
        max_length=10, choices=Progress.choices, blank=True, default=Progress.NONE, verbose_name=_("progress")
    )
    progress_until = models.DateTimeField(null=True, blank=True, help_text="The lease of the worker at it.")
    effect_attempts = models.PositiveIntegerField(default=0)
    resume_attempts = models.PositiveIntegerField(default=0, help_text="How many times its turn was resumed.")
    effect_started_at = models.DateTimeField(
        null=True, blank=True, help_text="When the last attempt began the network write (the `sending` mark)."
    )
    resolution = models.CharField(
        max_length=10, choices=Resolution.choices, blank=True, default=Resolution.NONE, verbose_name=_("resolution")
    )
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    result = models.TextField(blank=True, help_text="What the model is told: the effect's result or the refusal.")
    effect_ok = models.BooleanField(null=True, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)
    # The turn as it stood when it paused: its messages (redacted), and how many of
    # them its debug logs already hold.
    resume_state = models.JSONField(default=dict, blank=True, editable=False)

    objects = VisibleManager.from_queryset(ApprovalRequestQuerySet)()
    all_objects = models.Manager.from_queryset(ApprovalRequestQuerySet)()

    class Meta:
        verbose_name = _("approval request")
        verbose_name_plural = _("approval requests")
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["pending", "approved", "rejected", "expired"]),
                name="agents_approvalrequest_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(progress__in=["", "effect", "sending", "unknown", "recorded", "resuming", "resumed"]),
                name="agents_approvalrequest_progress_valid",
            ),
            # Nothing is carried out before a person (or the clock) decided.
            models.CheckConstraint(
                condition=~Q(status="pending") | Q(progress=""), name="agents_approvalrequest_pending_not_started"
            ),
            # Only an approved call is ever sent, or in doubt.
            models.CheckConstraint(
                condition=~Q(progress__in=["sending", "unknown"]) | Q(status="approved"),
                name="agents_approvalrequest_sending_approved",
            ),
            models.CheckConstraint(
                condition=Q(resolution__in=["", "resent", "confirmed"]), name="agents_approvalrequest_resolution_valid"
            ),
            # A turn waits for one call at a time.
            models.UniqueConstraint(
                fields=["turn"], condition=Q(status="pending"), name="agents_approvalrequest_one_pending_per_turn"
            ),
        ]
        indexes = [
            models.Index(fields=["workspace", "status", "-created_at"], name="agents_apreq_ws_status"),
            models.Index(fields=["expires_at"], condition=Q(status="pending"), name="agents_apreq_expiry"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} request {self.pk} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING

    @property
    def origin_tuple(self) -> tuple[str, str, str] | None:
        """(kind, run id, step) for a workflow step's request; None for a plain turn's."""
        if self.origin != self.Origin.WORKFLOW_STEP:
            return None
        return (self.origin, str(self.run_id), self.step_name)

    @property
    def is_in_doubt(self) -> bool:
        return self.progress == self.Progress.UNKNOWN

    @property
    def is_expired(self) -> bool:
        return self.is_pending and self.expires_at <= timezone.now()
