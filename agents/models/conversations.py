"""Conversations: their messages, and the notes (summaries, memory) compaction writes."""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.db.models import DurationField, ExpressionWrapper, F, Q, Value, Window
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, Now, RowNumber
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.models.profiles import Agent
from agents.models.turns import AgentTurn
from aihummer.models import TimeStampedModel, Workspace
from sandbox.models import SandboxedModel, SandboxQuerySet, VisibleManager


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

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="conversations", verbose_name=_("workspace")
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="conversations", verbose_name=_("agent"))
    peer = models.CharField(
        max_length=100,
        help_text=_(
            "The verified peer: `user:<id>` (a person, or a key's owner), `api_key:<id>`, or "
            "`api_key:<id>/<peer>` (a person that key vouches for, with its vouch scope)."
        ),
        verbose_name=_("peer"),
    )
    channel = models.CharField(
        max_length=50,
        blank=True,
        help_text=_("api, mcp, admin or the client's name for it; blank: every channel."),
        verbose_name=_("channel"),
    )
    message_count = models.PositiveIntegerField(default=0, verbose_name=_("message count"))
    context_start = models.PositiveIntegerField(
        default=1,
        help_text=_("Sequence of the first message of the current context (after an idle reset)."),
        verbose_name=_("context start"),
    )
    last_message_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last message at"))
    compacted_through = models.PositiveIntegerField(
        default=0,
        help_text=_(
            "Sequence of the last message folded into the conversation's summary (an explicit "
            "runtime_policy.context compacts older messages); requests carry the messages after it."
        ),
        verbose_name=_("compacted through"),
    )

    answering_agent = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("The agent the conversation was handed to, which answers from then on; null: `agent`."),
        verbose_name=_("answering agent"),
    )
    inherited_policy = models.JSONField(
        null=True,
        blank=True,
        help_text=_(
            "The runtime policy of the turn that handed the conversation off, copied by value: the "
            "answering agent's turns run under it (null: no hand-off)."
        ),
        verbose_name=_("inherited policy"),
    )

    objects = VisibleManager.from_queryset(ConversationQuerySet)()
    all_objects = models.Manager.from_queryset(ConversationQuerySet)()

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
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
        names = {"number": self.pk, "peer": self.peer, "agent": self.agent_id, "channel": self.channel}
        if self.channel:
            return gettext("conversation %(number)s of %(peer)s with %(agent)s on %(channel)s") % names
        return gettext("conversation %(number)s of %(peer)s with %(agent)s") % names


class ConversationMessage(SandboxedModel):
    """One message of a conversation, numbered from 1: the user's, or the agent's
    answer with the turn and the prompt version that produced it. Never edited."""

    class Role(models.TextChoices):
        USER = "user", _("User")
        ASSISTANT = "assistant", _("Assistant")

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    sequence = models.PositiveIntegerField()
    role = models.CharField(max_length=20, choices=Role.choices)
    channel = models.CharField(max_length=50, help_text="The channel the message came through.")
    text = models.TextField()
    turn = models.ForeignKey(AgentTurn, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    version_number = models.PositiveIntegerField(
        null=True, blank=True, help_text="The prompt version the turn ran (assistant messages)."
    )
    agent_key = models.CharField(
        max_length=50,
        blank=True,
        help_text="The agent that answered (assistant messages): the conversation's, or the one it was handed to.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = VisibleManager.from_queryset(SandboxQuerySet)()
    all_objects = models.Manager.from_queryset(SandboxQuerySet)()

    class Meta:
        verbose_name = _("conversation message")
        verbose_name_plural = _("conversation messages")
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
        verbose_name = _("conversation note")
        verbose_name_plural = _("conversation notes")
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
