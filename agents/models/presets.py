"""Model presets: a provider, a model and its parameters, with the credential they use."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from agents.destinations import destination_host
from agents.models.credentials import Credential
from aihummer.history import ConfigurationHistory
from aihummer.models import KEY_VALIDATOR, TimeStampedModel, Workspace
from sandbox.models import SandboxedModel, SandboxQuerySet, VisibleManager


class PresetQuerySet(SandboxQuerySet):
    def active(self) -> PresetQuerySet:
        return self.filter(is_active=True)


class Preset(SandboxedModel, TimeStampedModel):
    """A model configuration; the active preset is the workspace's default."""

    class Provider(models.TextChoices):
        OPENAI = "openai", _("OpenAI or compatible")
        ANTHROPIC = "anthropic", "Anthropic"
        GEMINI = "gemini", "Google Gemini"
        ECHO = "echo", _("Echo (offline)")

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="presets", verbose_name=_("workspace")
    )
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR], verbose_name=_("key"))
    name = models.CharField(max_length=200, verbose_name=_("name"))
    provider_name = models.CharField(_("provider"), max_length=20, choices=Provider.choices)
    base_url = models.URLField(
        blank=True,
        help_text=_("OpenAI-compatible servers only (Ollama, vLLM, LM Studio…); empty: the vendor's API."),
        verbose_name=_("base URL"),
    )
    model = models.CharField(max_length=100, verbose_name=_("model"))
    temperature = models.FloatField(
        default=1.0, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)], verbose_name=_("temperature")
    )
    top_p = models.FloatField(
        default=0.95, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)], verbose_name=_("top p")
    )
    max_output_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("Empty: the model's own maximum."),
        verbose_name=_("max output tokens"),
    )
    timeout_seconds = models.PositiveIntegerField(
        default=60, validators=[MinValueValidator(1), MaxValueValidator(600)], verbose_name=_("timeout seconds")
    )
    streaming_enabled = models.BooleanField(default=False, verbose_name=_("streaming enabled"))
    credential = models.ForeignKey(
        Credential,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="presets",
        help_text=_("The API key."),
        verbose_name=_("credential"),
    )
    is_active = models.BooleanField(
        _("default"), default=False, help_text=_("The workspace's default preset, used by agents without their own.")
    )

    objects = VisibleManager.from_queryset(PresetQuerySet)()
    all_objects = models.Manager.from_queryset(PresetQuerySet)()
    history = ConfigurationHistory()

    class Meta:
        verbose_name = _("preset")
        verbose_name_plural = _("presets")
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
