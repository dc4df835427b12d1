"""Agents and their G3 profile projection: the agent row, its sections and skills, shared skills."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.models.presets import Preset
from aihummer.history import ConfigurationHistory
from aihummer.models import KEY_VALIDATOR, TimeStampedModel, Workspace
from sandbox.models import SandboxedModel, SandboxQuerySet, VisibleManager


class Skill(TimeStampedModel):
    """A shared skill: a block of instructions several agents can carry (by value)."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="skills", verbose_name=_("workspace")
    )
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR], verbose_name=_("key"))
    title = models.CharField(max_length=200, verbose_name=_("title"))
    body = models.TextField(verbose_name=_("body"))

    history = ConfigurationHistory()

    class Meta:
        verbose_name = _("skill")
        verbose_name_plural = _("skills")
        ordering = ["workspace__slug", "key"]
        constraints = [models.UniqueConstraint(fields=["workspace", "key"], name="agents_skill_unique_key")]

    def __str__(self) -> str:
        return self.key


class Agent(SandboxedModel, TimeStampedModel):
    """An agent. The profile fields below are a projection of its live version's
    snapshot, written only when a version goes live."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="agents", verbose_name=_("workspace")
    )
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR], verbose_name=_("key"))
    name = models.CharField(max_length=200, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    preset = models.ForeignKey(
        Preset,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="agents",
        help_text=_(
            "The live version's preset (its snapshot's `preset`), written when a version goes "
            "live; empty: the workspace's default preset at run time."
        ),
        verbose_name=_("preset"),
    )
    is_active = models.BooleanField(_("enabled"), default=True)
    is_builtin = models.BooleanField(default=False, editable=False, verbose_name=_("is builtin"))
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
    identity_name = models.CharField(max_length=200, blank=True, editable=False, verbose_name=_("identity name"))
    role = models.CharField(max_length=500, blank=True, editable=False, verbose_name=_("role"))
    persona = models.TextField(blank=True, editable=False, verbose_name=_("persona"))
    language = models.CharField(max_length=35, blank=True, editable=False, verbose_name=_("language"))
    goals = models.JSONField(default=list, blank=True, editable=False, verbose_name=_("goals"))
    system_prompt = models.TextField(null=True, blank=True, editable=False, verbose_name=_("system prompt"))
    onboarding = models.TextField(blank=True, editable=False, verbose_name=_("onboarding"))
    allowed_tool_names = models.JSONField(
        default=list, blank=True, editable=False, verbose_name=_("allowed tool names")
    )
    runtime_policy = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text=_("The live version's runtime policy, in the product document's names (agents.policy)."),
        verbose_name=_("runtime policy"),
    )

    objects = VisibleManager.from_queryset(SandboxQuerySet)()
    all_objects = models.Manager.from_queryset(SandboxQuerySet)()
    history = ConfigurationHistory()

    class Meta:
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
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

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sections", verbose_name=_("agent"))
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR], verbose_name=_("key"))
    title = models.CharField(max_length=200, blank=True, verbose_name=_("title"))
    body = models.TextField(blank=True, verbose_name=_("body"))
    position = models.PositiveIntegerField(verbose_name=_("position"))
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))

    history = ConfigurationHistory(sandbox_via="agent")

    class Meta:
        verbose_name = _("agent section")
        verbose_name_plural = _("agent sections")
        ordering = ["agent", "position"]
        constraints = [models.UniqueConstraint(fields=["agent", "key"], name="agents_agentsection_unique_key")]

    def __str__(self) -> str:
        return f"{self.agent.key}/{self.key}"


class AgentSkill(TimeStampedModel):
    """A skill as the live snapshot carries it: copied by value, shared or the agent's own."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="skills", verbose_name=_("agent"))
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR], verbose_name=_("key"))
    title = models.CharField(max_length=200, blank=True, verbose_name=_("title"))
    body = models.TextField(blank=True, verbose_name=_("body"))
    shared = models.BooleanField(default=False, verbose_name=_("shared"))
    position = models.PositiveIntegerField(verbose_name=_("position"))

    history = ConfigurationHistory(sandbox_via="agent")

    class Meta:
        verbose_name = _("agent skill")
        verbose_name_plural = _("agent skills")
        ordering = ["agent", "position"]
        constraints = [models.UniqueConstraint(fields=["agent", "key"], name="agents_agentskill_unique_key")]

    def __str__(self) -> str:
        return f"{self.agent.key}/{self.key}"
