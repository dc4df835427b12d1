"""Agents and what they are told: credentials, presets, shared skills, agents with
their G3 profile projection, and the immutable prompt versions behind it."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import NamedTuple

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import DurationField, ExpressionWrapper, F, OuterRef, Q, Subquery, Value, Window
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, JSONObject, Now, RowNumber
from django.utils import timezone

from agents.destinations import destination_host, host_matches, validate_host_patterns
from agents.evidence import ASSERTION_FIELDS, Assertions, parse_assertions
from agents.policy import ChildrenPolicy
from aihummer.history import ConfigurationHistory
from aihummer.models import KEY_VALIDATOR, TimeStampedModel, Workspace
from sandbox.models import SandboxedModel, SandboxQuerySet, VisibleManager


class Credential(TimeStampedModel):
    """A secret (an API key for a provider), encrypted at rest and never shown again."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="credentials")
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR])
    name = models.CharField(max_length=200, blank=True)
    ciphertext = models.TextField(editable=False)
    fingerprint = models.CharField(max_length=8, editable=False)
    # Where the secret may be sent: host names, `*.example.com` for its subdomains;
    # empty: any host. Checked when a preset points the credential somewhere and again
    # on every call that sends it (`preset_api_key`).
    allowed_hosts = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_host_patterns],
        help_text="Hosts this secret may be sent to (api.openai.com, *.openai.azure.com); empty: any host.",
    )

    # The ciphertext stays out of history: old ciphertexts would outlive key rotation.
    history = ConfigurationHistory(excluded_fields=["ciphertext"])

    class Meta:
        ordering = ["workspace__slug", "key"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "key"], name="agents_credential_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.key} (set, {self.fingerprint})"

    def __repr__(self) -> str:
        return f"<Credential {self.key}: set, fingerprint {self.fingerprint}>"

    def may_be_sent_to(self, host: str) -> bool:
        return not self.allowed_hosts or host_matches(host, self.allowed_hosts)


class PresetQuerySet(SandboxQuerySet):
    def active(self) -> PresetQuerySet:
        return self.filter(is_active=True)


class Preset(SandboxedModel, TimeStampedModel):
    """A model configuration; the active preset is the workspace's default."""

    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI or compatible"
        ANTHROPIC = "anthropic", "Anthropic"
        GEMINI = "gemini", "Google Gemini"
        ECHO = "echo", "Echo (offline)"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="presets")
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR])
    name = models.CharField(max_length=200)
    provider_name = models.CharField("provider", max_length=20, choices=Provider.choices)
    base_url = models.URLField(
        blank=True, help_text="OpenAI-compatible servers only (Ollama, vLLM, LM Studio…); empty: the vendor's API."
    )
    model = models.CharField(max_length=100)
    temperature = models.FloatField(default=1.0, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)])
    top_p = models.FloatField(default=0.95, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    max_output_tokens = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)], help_text="Empty: the model's own maximum."
    )
    timeout_seconds = models.PositiveIntegerField(default=60, validators=[MinValueValidator(1), MaxValueValidator(600)])
    streaming_enabled = models.BooleanField(default=False)
    credential = models.ForeignKey(
        Credential, null=True, blank=True, on_delete=models.PROTECT, related_name="presets", help_text="The API key."
    )
    is_active = models.BooleanField(
        "default", default=False, help_text="The workspace's default preset, used by agents without their own."
    )

    objects = VisibleManager.from_queryset(PresetQuerySet)()
    all_objects = models.Manager.from_queryset(PresetQuerySet)()
    history = ConfigurationHistory()

    class Meta:
        ordering = ["workspace__slug", "key"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "key"], name="agents_preset_unique_key"),
            models.UniqueConstraint(
                fields=["workspace"], condition=Q(is_active=True), name="agents_preset_one_active_per_workspace"
            ),
            models.CheckConstraint(
                condition=~Q(is_sandbox=True, is_active=True), name="agents_preset_sandbox_never_active"
            ),
            models.CheckConstraint(
                condition=Q(provider_name__in=["openai", "anthropic", "gemini", "echo"]),
                name="agents_preset_provider_valid",
            ),
            models.CheckConstraint(
                condition=Q(temperature__gte=0, temperature__lte=2), name="agents_preset_temperature_range"
            ),
            models.CheckConstraint(condition=Q(top_p__gte=0, top_p__lte=1), name="agents_preset_top_p_range"),
            models.CheckConstraint(
                condition=Q(timeout_seconds__gte=1, timeout_seconds__lte=600), name="agents_preset_timeout_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.provider_name}:{self.model})"

    @property
    def destination_host(self) -> str:
        """The host a call through this preset goes to (and its credential with it)."""
        return destination_host(self.provider_name, self.base_url)

    def clean(self) -> None:
        from agents.catalog import validate_model

        if self.provider_name in self.Provider.values and self.model:
            info = validate_model(self.provider_name, self.model, base_url=self.base_url)
            if info and self.max_output_tokens and self.max_output_tokens > info.max_output_tokens:
                raise ValidationError(
                    {"max_output_tokens": f"{self.model} answers with at most {info.max_output_tokens} tokens."}
                )
        if self.is_sandbox and self.is_active:
            raise ValidationError({"is_active": "A sandbox preset is never the workspace's default."})


class Skill(TimeStampedModel):
    """A shared skill: a block of instructions several agents can carry (by value)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="skills")
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR])
    title = models.CharField(max_length=200)
    body = models.TextField()

    history = ConfigurationHistory()

    class Meta:
        ordering = ["workspace__slug", "key"]
        constraints = [models.UniqueConstraint(fields=["workspace", "key"], name="agents_skill_unique_key")]

    def __str__(self) -> str:
        return self.key


class Agent(SandboxedModel, TimeStampedModel):
    """An agent. The profile fields below are a projection of its live version's
    snapshot, written only when a version goes live."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="agents")
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR])
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    preset = models.ForeignKey(
        Preset,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="agents",
        help_text="Empty: the workspace's default preset at run time.",
    )
    is_active = models.BooleanField("enabled", default=True)
    is_builtin = models.BooleanField(default=False, editable=False)
    live_version = models.OneToOneField(
        "PromptVersion",
        null=True,
        blank=True,
        # RESTRICT, not PROTECT: deleting the agent may delete its live version with it.
        on_delete=models.RESTRICT,
        related_name="live_for",
        editable=False,
    )

    # Projection of the live snapshot (agents.snapshot); never edited directly.
    identity_name = models.CharField(max_length=200, blank=True, editable=False)
    role = models.CharField(max_length=500, blank=True, editable=False)
    persona = models.TextField(blank=True, editable=False)
    language = models.CharField(max_length=35, blank=True, editable=False)
    goals = models.JSONField(default=list, blank=True, editable=False)
    system_prompt = models.TextField(null=True, blank=True, editable=False)
    onboarding = models.TextField(blank=True, editable=False)
    allowed_tool_names = models.JSONField(default=list, blank=True, editable=False)
    runtime_policy = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="The live version's runtime policy, in the product document's names (agents.policy).",
    )

    objects = VisibleManager.from_queryset(SandboxQuerySet)()
    all_objects = models.Manager.from_queryset(SandboxQuerySet)()
    history = ConfigurationHistory()

    class Meta:
        ordering = ["workspace__slug", "key"]
        constraints = [models.UniqueConstraint(fields=["workspace", "key"], name="agents_agent_unique_key")]

    def __str__(self) -> str:
        return self.key

    # "No live version yet" is one fact every reader handles: an agent created where
    # every change needs a second person waits for its version 1 to be approved, with
    # `live_version` None. Readers use these two, never `live_version.<field>`.
    @property
    def live_number(self) -> int | None:
        """The live version's number; None while version 1 waits for review."""
        return self.live_version.number if self.live_version_id else None

    @property
    def live_snapshot(self) -> dict | None:
        """What the agent is told now (the live snapshot); None while version 1 waits."""
        return self.live_version.snapshot if self.live_version_id else None


class AgentSection(TimeStampedModel):
    """One named, ordered block of an agent's profile (projection of the live snapshot)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sections")
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR])
    title = models.CharField(max_length=200, blank=True)
    body = models.TextField(blank=True)
    position = models.PositiveIntegerField()
    enabled = models.BooleanField(default=True)

    history = ConfigurationHistory(sandbox_via="agent")

    class Meta:
        ordering = ["agent", "position"]
        constraints = [models.UniqueConstraint(fields=["agent", "key"], name="agents_agentsection_unique_key")]

    def __str__(self) -> str:
        return f"{self.agent.key}/{self.key}"


class AgentSkill(TimeStampedModel):
    """A skill as the live snapshot carries it: copied by value, shared or the agent's own."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="skills")
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR])
    title = models.CharField(max_length=200, blank=True)
    body = models.TextField(blank=True)
    shared = models.BooleanField(default=False)
    position = models.PositiveIntegerField()

    history = ConfigurationHistory(sandbox_via="agent")

    class Meta:
        ordering = ["agent", "position"]
        constraints = [models.UniqueConstraint(fields=["agent", "key"], name="agents_agentskill_unique_key")]

    def __str__(self) -> str:
        return f"{self.agent.key}/{self.key}"


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
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        WITHDRAWN = "withdrawn", "Withdrawn"

    class Tier(models.TextChoices):
        WORDING = "wording", "Wording"
        IDENTITY = "identity", "Identity"
        POWER = "power", "Power"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="prompt_versions")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    snapshot = models.JSONField()
    content_hash = models.CharField(max_length=64)
    source = models.CharField(max_length=200, help_text="Who proposed it, through what: admin:alice, mcp:ci/claude…")
    reason = models.TextField(blank=True)
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Four eyes compares this: the proposing person, or the key when no person owns it.
    proposer_identity = models.CharField(max_length=120)
    base_version = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="Live when proposed."
    )
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)
    # Computed once against base_version when recorded (the snapshot never changes),
    # so the queue shows sizes without loading two snapshots per row.
    diff_stats = models.JSONField(default=dict, editable=False)
    # The risk tier of the change against base_version (agents.tiers), computed when
    # recorded, and the diff lines that put it there: [{"tier", "line"}, ...].
    tier = models.CharField(max_length=20, choices=Tier.choices, default=Tier.WORDING, editable=False)
    tier_reasons = models.JSONField(default=list, editable=False)
    # Scheduled go-live: every required approval is in, and beat puts it live then
    # (still pending until it does). `go_live_problem`: why beat left it pending.
    go_live_at = models.DateTimeField(null=True, blank=True, editable=False)
    go_live_problem = models.TextField(blank=True, editable=False)
    # A stale proposal rebased onto a newer live version: the new pending one.
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )

    objects = VisibleManager.from_queryset(PromptVersionQuerySet)()
    all_objects = models.Manager.from_queryset(PromptVersionQuerySet)()
    # The snapshot never changes, so history records only the decision fields.
    history = ConfigurationHistory(excluded_fields=["snapshot"])

    class Meta:
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


DEFAULT_ARCHIVE_AFTER_MINUTES = ChildrenPolicy().archive_after_minutes


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
        RUNNING = "running", "Running"
        WAITING = "waiting", "Waiting for a person"  # a guarded tool call (agents.approval_models)
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class ErrorKind(models.TextChoices):
        """Why a turn failed, from the provider's exception types (`ProviderError.kind`,
        the same names) or the turn's own rules; retries decide on it, never on text."""

        NONE = "", "—"
        RATE_LIMIT = "rate_limit", "Rate limited"
        UNAVAILABLE = "unavailable", "Provider unavailable"
        TIMEOUT = "timeout", "Timed out"
        DEADLINE = "deadline", "Out of the turn's time"  # its deadline (a step's timeout_seconds) passed
        BAD_REQUEST = "bad_request", "Invalid request"
        AUTH = "auth", "Authentication"
        QUOTA = "quota", "Quota exhausted"
        INVALID_RESPONSE = "invalid_response", "Invalid response"
        NOT_CONFIGURED = "not_configured", "Not configured"
        INTERNAL = "internal", "Internal error"
        REFUSED = "refused", "Refused by the turn's rules"  # disabled agent, limits, context budget

    # Failures that may pass on their own: worth another attempt.
    TRANSIENT_KINDS = frozenset({ErrorKind.RATE_LIMIT, ErrorKind.UNAVAILABLE, ErrorKind.TIMEOUT, ErrorKind.DEADLINE})

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="agent_turns")
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="turns")
    agent_key = models.CharField(max_length=50)
    version = models.ForeignKey(PromptVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="turns")
    version_number = models.PositiveIntegerField(null=True, blank=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    depth = models.PositiveSmallIntegerField(default=0)
    actor_source = models.CharField(max_length=200)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    dry_run = models.BooleanField(default=False, help_text="Side-effect tools were recorded, not executed.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING)
    provider_name = models.CharField(max_length=20, blank=True)
    model = models.CharField(max_length=100, blank=True)
    message = models.TextField()
    answer = models.TextField(blank=True)
    error = models.TextField(blank=True)
    error_kind = models.CharField(max_length=20, choices=ErrorKind.choices, blank=True, default=ErrorKind.NONE)
    model_calls = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_input_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    prefix_hash = models.CharField(max_length=64, blank=True)
    # When the turn began (not when its row was written: a plain turn's row is written
    # once, with its outcome).
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = VisibleManager.from_queryset(AgentTurnQuerySet)()
    all_objects = models.Manager.from_queryset(AgentTurnQuerySet)()

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["running", "waiting", "succeeded", "failed"]),
                name="agents_agentturn_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.agent_key} turn {self.pk} ({self.status})"

    @property
    def failed_transiently(self) -> bool:
        """A failure that may pass on its own (rate limit, outage, time): worth a retry."""
        return self.status == self.Status.FAILED and self.error_kind in self.TRANSIENT_KINDS

    @property
    def latency_ms(self) -> int | None:
        if self.finished_at is None:
            return None
        return int((self.finished_at - self.started_at).total_seconds() * 1000)


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
        default=list, help_text="Requested calls and what became of each (ran, dry run, refused)."
    )
    incremental = models.BooleanField(
        default=False, help_text="Stores what this call added to the conversation, not the whole of it."
    )
    dropped_exchanges = models.PositiveIntegerField(
        default=0, help_text="Earlier tool exchanges left out of this call to fit runtime_policy.context."
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
        ordering = ["turn", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "sequence"], name="agents_debuglog_unique_sequence"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_key} call {self.sequence} of turn {self.turn_id}"


# --- conversations ---------------------------------------------------------------------
class ConversationQuerySet(SandboxQuerySet):
    def listed(self) -> ConversationQuerySet:
        """The default list: every conversation but those its agent's
        `runtime_policy.session` takes out of it (kept, only not listed): silent for
        more than `index_prune_after_days`, or beyond the `index_max_entries` most
        recent of that agent. The rank is counted among the rows of this queryset, so
        call it on a workspace's rows before narrowing them further."""
        session = KeyTransform("session", "agent__runtime_policy")
        prune_days = Cast(KeyTextTransform("index_prune_after_days", session), models.IntegerField())
        max_entries = Coalesce(
            Cast(KeyTextTransform("index_max_entries", session), models.IntegerField()), Value(2**31 - 1)
        )
        listed_until = ExpressionWrapper(
            Coalesce("last_message_at", "created_at")
            + ExpressionWrapper(Value(timedelta(days=1)) * prune_days, output_field=DurationField()),
            output_field=models.DateTimeField(),
        )
        recent = Window(
            RowNumber(),
            partition_by=[F("agent_id")],
            order_by=[F("last_message_at").desc(nulls_last=True), F("pk").desc()],
        )
        within_entries = self.annotate(rank=recent, max_entries=max_entries).filter(rank__lte=F("max_entries"))
        return self.alias(listed_until=listed_until).filter(
            Q(listed_until__isnull=True) | Q(listed_until__gt=Now()), pk__in=within_entries.values("pk")
        )


class Conversation(SandboxedModel, TimeStampedModel):
    """A conversation of one peer with one agent: on one channel
    (`runtime_policy.session.scope = per-channel-peer`) or on every channel (`per-peer`,
    `channel` blank). An execution record: no history; its messages are never edited.
    A pause longer than `session.idle_reset_minutes` opens a new context: requests
    carry the messages from `context_start` on, the older ones stay."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="conversations")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="conversations")
    peer = models.CharField(
        max_length=100, help_text="The verified peer: `user:<id>` (a person, or a key's owner) or `api_key:<id>`."
    )
    channel = models.CharField(
        max_length=50, blank=True, help_text="api, mcp, admin or the client's name for it; blank: every channel."
    )
    message_count = models.PositiveIntegerField(default=0)
    context_start = models.PositiveIntegerField(
        default=1, help_text="Sequence of the first message of the current context (after an idle reset)."
    )
    last_message_at = models.DateTimeField(null=True, blank=True)
    compacted_through = models.PositiveIntegerField(
        default=0,
        help_text="Sequence of the last message folded into the conversation's summary (an explicit "
        "runtime_policy.context compacts older messages); requests carry the messages after it.",
    )

    objects = VisibleManager.from_queryset(ConversationQuerySet)()
    all_objects = models.Manager.from_queryset(ConversationQuerySet)()

    class Meta:
        ordering = ["-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "peer", "channel"], name="agents_conversation_unique_peer_channel"
            ),
            models.CheckConstraint(
                condition=Q(peer__regex=r"^(user|api_key|operator|run):[^\s]{1,80}$"),
                name="agents_conversation_peer_valid",
            ),
            models.CheckConstraint(
                condition=Q(channel__regex=r"^([a-z0-9_-]{1,50})?$"), name="agents_conversation_channel_valid"
            ),
            models.CheckConstraint(
                condition=Q(context_start__gte=1, context_start__lte=F("message_count") + 1),
                name="agents_conversation_context_within_messages",
            ),
            models.CheckConstraint(
                condition=Q(compacted_through__lte=F("message_count")),
                name="agents_conversation_compacted_within_messages",
            ),
        ]

    def __str__(self) -> str:
        where = f" on {self.channel}" if self.channel else ""
        return f"conversation {self.pk} of {self.peer} with {self.agent_id}{where}"


class ConversationMessage(SandboxedModel):
    """One message of a conversation, numbered from 1: the user's, or the agent's
    answer with the turn and the prompt version that produced it. Never edited."""

    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    sequence = models.PositiveIntegerField()
    role = models.CharField(max_length=20, choices=Role.choices)
    channel = models.CharField(max_length=50, help_text="The channel the message came through.")
    text = models.TextField()
    turn = models.ForeignKey(AgentTurn, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    version_number = models.PositiveIntegerField(
        null=True, blank=True, help_text="The prompt version the turn ran (assistant messages)."
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = VisibleManager.from_queryset(SandboxQuerySet)()
    all_objects = models.Manager.from_queryset(SandboxQuerySet)()

    class Meta:
        ordering = ["conversation", "sequence"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "sequence"], name="agents_conversationmessage_unique_sequence"
            ),
            models.CheckConstraint(condition=Q(sequence__gte=1), name="agents_conversationmessage_sequence_valid"),
            models.CheckConstraint(
                condition=Q(role__in=["user", "assistant"]), name="agents_conversationmessage_role_valid"
            ),
            models.CheckConstraint(
                condition=Q(role="user") | Q(version_number__isnull=False),
                name="agents_conversationmessage_answer_has_version",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} message {self.sequence} of conversation {self.conversation_id}"


class ConversationNote(SandboxedModel):
    """What a conversation wrote about itself, never edited: a **summary** of its
    messages `first_sequence`..`last_sequence` (compaction: each summary also folds the
    one before it, so the newest holds everything compacted), or a **memory** note on
    goals, decisions and open points written before a compaction (`memory_flush`),
    `last_sequence` being the newest message it saw. With the model call's cost."""

    class Kind(models.TextChoices):
        SUMMARY = "summary", "Summary"
        MEMORY = "memory", "Memory note"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="notes")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    first_sequence = models.PositiveIntegerField()
    last_sequence = models.PositiveIntegerField()
    text = models.TextField()
    provider_name = models.CharField(max_length=50, blank=True)
    model = models.CharField(max_length=200, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    objects = VisibleManager.from_queryset(SandboxQuerySet)()
    all_objects = models.Manager.from_queryset(SandboxQuerySet)()

    class Meta:
        ordering = ["conversation", "pk"]
        indexes = [models.Index(fields=["conversation", "kind", "-last_sequence"], name="agents_note_latest")]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["summary", "memory"]), name="agents_conversationnote_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(first_sequence__gte=1, first_sequence__lte=F("last_sequence")),
                name="agents_conversationnote_sequences_valid",
            ),
        ]

    def __str__(self) -> str:
        where = f"messages {self.first_sequence}-{self.last_sequence}"
        return f"{self.kind} of {where} of conversation {self.conversation_id}"


# --- evidence: saved test cases, their runs on proposals, the judge -----------------------
class AgentTestCase(TimeStampedModel):
    """A saved check of an agent: a message (or structured input) in, assertions on the
    answer out. Every active case runs on each proposal, on the candidate and on live."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="test_cases")
    name = models.CharField(max_length=200)
    message = models.TextField(blank=True, help_text="What the agent is asked.")
    input = models.JSONField(
        null=True, blank=True, help_text="Instead of a message: a JSON object, sent to the agent as JSON text."
    )
    contains = models.JSONField(default=list, blank=True, help_text="Strings the answer must contain.")
    not_contains = models.JSONField(default=list, blank=True, help_text="Strings the answer must not contain.")
    case_insensitive = models.BooleanField(default=False, help_text="contains, not_contains and regex ignore case.")
    regex = models.CharField(max_length=500, blank=True, help_text="A regular expression found in the answer.")
    min_length = models.PositiveIntegerField(null=True, blank=True, help_text="Characters.")
    max_length = models.PositiveIntegerField(null=True, blank=True, help_text="Characters.")
    max_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tokens of the whole turn, input and output."
    )
    max_cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    is_active = models.BooleanField("active", default=True)

    history = ConfigurationHistory(sandbox_via="agent")

    class Meta:
        ordering = ["agent", "name"]
        verbose_name = "test case"
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
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Trigger(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        CASES_CHANGED = "cases_changed", "Cases changed"
        REQUESTED = "requested", "Requested"

    class JudgeStatus(models.TextChoices):
        NONE = "none", "No judge"
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        UNAVAILABLE = "unavailable", "Unavailable"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="evidence_runs")
    version = models.ForeignKey("PromptVersion", on_delete=models.CASCADE, related_name="evidence_runs")
    trigger = models.CharField(max_length=20, choices=Trigger.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    live_version = models.ForeignKey(
        "PromptVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="Compared with."
    )
    cases_total = models.PositiveIntegerField(default=0)
    candidate_passed = models.PositiveIntegerField(default=0)
    live_passed = models.PositiveIntegerField(default=0)
    regressions = models.PositiveIntegerField(default=0, help_text="Cases that pass on live and not on the candidate.")
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
            return "Running the test cases…"
        if self.status == self.Status.FAILED:
            return f"The test cases could not run: {self.error}"
        if not self.cases_total:
            return "No test cases."
        total = self.cases_total
        line = f"{self.candidate_passed}/{total} pass on candidate, {self.live_passed}/{total} on live"
        if self.regressions:
            return f"{line}: {self.regressions} regression{'s' if self.regressions != 1 else ''}"
        return f"{line}: no regression"


class CaseResult(models.Model):
    """One case on one side of an evidence run: each assertion's outcome, the answer,
    its tokens and cost, and the turn that produced it. Kept with the version."""

    class Side(models.TextChoices):
        LIVE = "live", "Live"
        CANDIDATE = "candidate", "Candidate"

    class Status(models.TextChoices):
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        ERROR = "error", "Error"

    run = models.ForeignKey(EvidenceRun, on_delete=models.CASCADE, related_name="results")
    case = models.ForeignKey(AgentTestCase, null=True, blank=True, on_delete=models.SET_NULL, related_name="results")
    case_name = models.CharField(max_length=200)
    side = models.CharField(max_length=20, choices=Side.choices)
    version = models.ForeignKey(
        "PromptVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="What answered."
    )
    version_number = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices)
    checks = models.JSONField(default=list, blank=True)
    answer = models.TextField(blank=True)
    error = models.TextField(blank=True)
    tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    turn = models.ForeignKey(AgentTurn, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
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


# --- approval policy: how much review each tier of change needs ----------------------
TIER_FIELDS = ("approvals", "consensus", "wait_minutes")


class ApprovalPolicy(TimeStampedModel):
    """A workspace's approval policy, per risk tier (`agents.tiers`): how many distinct
    people must approve, whether one rejection ends the proposal (consensus), and the
    least time between the proposal and its going live. A workspace without one has
    the default: one approval, consensus, no wait, for every tier."""

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, related_name="approval_policy")
    wording_approvals = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(3)]
    )
    wording_consensus = models.BooleanField(default=True, help_text="One rejection rejects the proposal.")
    wording_wait_minutes = models.PositiveIntegerField(
        default=0, validators=[MaxValueValidator(30 * 24 * 60)], help_text="Least minutes from proposal to live."
    )
    identity_approvals = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(3)]
    )
    identity_consensus = models.BooleanField(default=True, help_text="One rejection rejects the proposal.")
    identity_wait_minutes = models.PositiveIntegerField(
        default=0, validators=[MaxValueValidator(30 * 24 * 60)], help_text="Least minutes from proposal to live."
    )
    power_approvals = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(3)]
    )
    power_consensus = models.BooleanField(default=True, help_text="One rejection rejects the proposal.")
    power_wait_minutes = models.PositiveIntegerField(
        default=0, validators=[MaxValueValidator(30 * 24 * 60)], help_text="Least minutes from proposal to live."
    )

    TIERS = ("wording", "identity", "power")

    history = ConfigurationHistory()

    class Meta:
        verbose_name = "approval policy"
        verbose_name_plural = "approval policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(wording_approvals__gte=1, wording_approvals__lte=3)
                & Q(identity_approvals__gte=1, identity_approvals__lte=3)
                & Q(power_approvals__gte=1, power_approvals__lte=3),
                name="agents_approvalpolicy_approvals_range",
            ),
            models.CheckConstraint(
                condition=Q(wording_wait_minutes__lte=43_200)
                & Q(identity_wait_minutes__lte=43_200)
                & Q(power_wait_minutes__lte=43_200),
                name="agents_approvalpolicy_wait_range",
            ),
        ]

    def __str__(self) -> str:
        return f"approval policy of {self.workspace}"

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
        APPROVE = "approve", "Approved"
        REJECT = "reject", "Rejected"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey(PromptVersion, on_delete=models.CASCADE, related_name="decisions")
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


# Issue 30's models live in their own module; imported here, they are this app's.
from agents.approval_models import AgentToolSettings, ApprovalRequest, WorkspaceToolPolicy  # noqa: E402, F401
