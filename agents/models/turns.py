"""Turns: one request to an agent and its outcome, and the debug log of every model call."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import DurationField, ExpressionWrapper, F, Q, Value
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, Now
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.models.profiles import Agent
from agents.models.versions import PromptVersion
from aihummer.models import Workspace
from sandbox.models import SandboxedModel, SandboxQuerySet, VisibleManager

# The children's listing window when an agent's policy names none: the default of
# `ChildrenPolicy.archive_after_minutes` (a test holds them equal; the models load no
# pydantic).
DEFAULT_ARCHIVE_AFTER_MINUTES = 60


class AgentTurnQuerySet(SandboxQuerySet):
    def listed(self) -> AgentTurnQuerySet:
        """The default list: every turn but the finished child turns older than their
        parent agent's `runtime_policy.children.archive_after_minutes` (kept, only not
        listed). Worked out in the query, so a policy change applies at once."""
        minutes = Coalesce(
            Cast(
                KeyTextTransform("archive_after_minutes", KeyTransform("children", "parent__agent__runtime_policy")),
                models.IntegerField(),
            ),
            Value(DEFAULT_ARCHIVE_AFTER_MINUTES),
        )
        listed_until = ExpressionWrapper(
            F("finished_at") + ExpressionWrapper(Value(timedelta(minutes=1)) * minutes, output_field=DurationField()),
            output_field=models.DateTimeField(),
        )
        archived = Q(parent__isnull=False, finished_at__isnull=False, listed_until__lte=Now())
        return self.alias(listed_until=listed_until).exclude(archived)


class AgentTurn(SandboxedModel):
    """One agent turn: a message in, tool calls, an answer out. An execution record:
    no history, and it outlives the agent it describes (nullable link, copied keys)."""

    class Status(models.TextChoices):
        RUNNING = "running", _("Running")
        WAITING = "waiting", _("Waiting for a person")  # a guarded tool call (agents.models.approvals)
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")

    class ErrorKind(models.TextChoices):
        """Why a turn failed, from the provider's exception types (`ProviderError.kind`,
        the same names) or the turn's own rules; retries decide on it, never on text."""

        NONE = "", "—"
        RATE_LIMIT = "rate_limit", _("Rate limited")
        UNAVAILABLE = "unavailable", _("Provider unavailable")
        TIMEOUT = "timeout", _("Timed out")
        DEADLINE = "deadline", _("Out of the turn's time")  # its deadline (a step's timeout_seconds) passed
        BAD_REQUEST = "bad_request", _("Invalid request")
        AUTH = "auth", _("Authentication")
        QUOTA = "quota", _("Quota exhausted")
        INVALID_RESPONSE = "invalid_response", _("Invalid response")
        NOT_CONFIGURED = "not_configured", _("Not configured")
        INTERNAL = "internal", _("Internal error")
        REFUSED = "refused", _("Refused by the turn's rules")  # disabled agent, limits, context budget

    # Failures that may pass on their own: worth another attempt.
    TRANSIENT_KINDS = frozenset({ErrorKind.RATE_LIMIT, ErrorKind.UNAVAILABLE, ErrorKind.TIMEOUT, ErrorKind.DEADLINE})

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="agent_turns", verbose_name=_("workspace")
    )
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="turns", verbose_name=_("agent")
    )
    agent_key = models.CharField(max_length=50, verbose_name=_("agent key"))
    version = models.ForeignKey(
        PromptVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="turns", verbose_name=_("version")
    )
    version_number = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("version number"))
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children", verbose_name=_("parent")
    )

    root = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="descendants",
        help_text=_("The root turn of this turn's execution tree; null on a root."),
    )
    depth = models.PositiveSmallIntegerField(default=0, verbose_name=_("depth"))
    actor_source = models.CharField(max_length=200, verbose_name=_("actor source"))
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("started by"),
    )
    dry_run = models.BooleanField(
        default=False, help_text=_("Side-effect tools were recorded, not executed."), verbose_name=_("dry run")
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING, verbose_name=_("status"))
    provider_name = models.CharField(max_length=20, blank=True, verbose_name=_("provider name"))
    model = models.CharField(max_length=100, blank=True, verbose_name=_("model"))
    message = models.TextField(verbose_name=_("message"))
    answer = models.TextField(blank=True, verbose_name=_("answer"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    error_kind = models.CharField(
        max_length=20, choices=ErrorKind.choices, blank=True, default=ErrorKind.NONE, verbose_name=_("error kind")
    )
    model_calls = models.PositiveIntegerField(default=0, verbose_name=_("model calls"))
    input_tokens = models.PositiveIntegerField(default=0, verbose_name=_("input tokens"))
    output_tokens = models.PositiveIntegerField(default=0, verbose_name=_("output tokens"))
    cached_input_tokens = models.PositiveIntegerField(default=0, verbose_name=_("cached input tokens"))
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0, verbose_name=_("cost usd"))
    prefix_hash = models.CharField(max_length=64, blank=True, verbose_name=_("prefix hash"))
    # When the turn began (not when its row was written: a plain turn's row is written
    # once, with its outcome).
    started_at = models.DateTimeField(default=timezone.now, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))

    objects = VisibleManager.from_queryset(AgentTurnQuerySet)()
    all_objects = models.Manager.from_queryset(AgentTurnQuerySet)()

    class Meta:
        verbose_name = _("agent turn")
        verbose_name_plural = _("agent turns")
        ordering = ["-started_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["running", "waiting", "succeeded", "failed"]),
                name="agents_agentturn_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return gettext("%(agent)s turn %(number)s (%(status)s)") % {
            "agent": self.agent_key,
            "number": self.pk,
            "status": self.get_status_display().lower(),
        }

    @property
    def failed_transiently(self) -> bool:
        """A failure that may pass on its own (rate limit, outage, time): worth a retry."""
        return self.status == self.Status.FAILED and self.error_kind in self.TRANSIENT_KINDS

    @property
    def latency_ms(self) -> int | None:
        if self.finished_at is None:
            return None
        return int((self.finished_at - self.started_at).total_seconds() * 1000)


class TreePlace(models.Model):
    """A running child's place in its execution tree (`children.max_concurrent`): a row
    that lapses unless the process running the child renews it, so the places of a
    process killed mid-tree stop counting one lease later (`agents.runtime.tree`)."""

    root = models.ForeignKey(
        AgentTurn, on_delete=models.CASCADE, related_name="tree_places", verbose_name=_("root turn")
    )
    process = models.CharField(
        max_length=100, help_text=_("The process holding the place (host:pid)."), verbose_name=_("process")
    )
    lease_until = models.DateTimeField(
        help_text=_("The place stops counting after this unless its process renews it."),
        verbose_name=_("lease until"),
    )

    class Meta:
        verbose_name = _("execution tree place")
        verbose_name_plural = _("execution tree places")

    def __str__(self) -> str:
        return f"place in tree {self.root_id} ({self.process})"


class DebugLog(SandboxedModel):
    """One model call of a turn, as sent and as answered: secrets redacted, bodies
    bounded. Kept when the agent or turn's subject is deleted.

    An `incremental` log stores what its call added, so a turn's logs grow with its
    calls, not with their square: `messages` holds the messages new since the call
    before (the first call: the user's message), and `system_prompt` and
    `tools_offered` are blank when they are those of the call before. The debug page
    puts each call's conversation back together (`agents.selectors.debug_log_history`).
    """

    turn = models.ForeignKey(AgentTurn, on_delete=models.CASCADE, related_name="debug_logs")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="debug_logs")
    agent_key = models.CharField(max_length=50)
    sequence = models.PositiveIntegerField()
    provider_name = models.CharField(max_length=20)
    model = models.CharField(max_length=100)
    system_prompt = models.TextField(blank=True)
    messages = models.JSONField(default=list)
    tools_offered = models.JSONField(default=list)
    parameters = models.JSONField(default=dict)
    response = models.JSONField(default=dict)
    tool_calls = models.JSONField(
        default=list, help_text=_("Requested calls and what became of each (ran, dry run, refused).")
    )
    incremental = models.BooleanField(
        default=False, help_text=_("Stores what this call added to the conversation, not the whole of it.")
    )
    dropped_exchanges = models.PositiveIntegerField(
        default=0, help_text=_("Earlier tool exchanges left out of this call to fit runtime_policy.context.")
    )
    finish_reason = models.CharField(max_length=30, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_input_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    prefix_hash = models.CharField(max_length=64)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = VisibleManager.from_queryset(SandboxQuerySet)()
    all_objects = models.Manager.from_queryset(SandboxQuerySet)()

    class Meta:
        verbose_name = _("debug log")
        verbose_name_plural = _("debug logs")
        ordering = ["turn", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "sequence"], name="agents_debuglog_unique_sequence"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_key} call {self.sequence} of turn {self.turn_id}"
