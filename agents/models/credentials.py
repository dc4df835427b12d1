"""Credentials: secrets encrypted in the vault, written once and never shown."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.destinations import host_matches, validate_host_patterns
from aihummer.history import ConfigurationHistory
from aihummer.models import KEY_VALIDATOR, TimeStampedModel, Workspace


class Credential(TimeStampedModel):
    """A secret (an API key for a provider), encrypted at rest and never shown again."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="credentials", verbose_name=_("workspace")
    )
    key = models.CharField(max_length=50, validators=[KEY_VALIDATOR], verbose_name=_("key"))
    name = models.CharField(max_length=200, blank=True, verbose_name=_("name"))
    ciphertext = models.TextField(editable=False, verbose_name=_("ciphertext"))
    fingerprint = models.CharField(max_length=8, editable=False, verbose_name=_("fingerprint"))
    # Where the secret may be sent: host names, `*.example.com` for its subdomains;
    # empty: any host. Checked when a preset points the credential somewhere and again
    # on every call that sends it (`preset_api_key`).
    allowed_hosts = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_host_patterns],
        help_text=_("Hosts this secret may be sent to (api.openai.com, *.openai.azure.com); empty: any host."),
        verbose_name=_("allowed hosts"),
    )

    # The ciphertext stays out of history: old ciphertexts would outlive key rotation.
    history = ConfigurationHistory(excluded_fields=["ciphertext"])

    class Meta:
        verbose_name = _("credential")
        verbose_name_plural = _("credentials")
        ordering = ["workspace__slug", "key"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "key"], name="agents_credential_unique_key"),
        ]

    def __str__(self) -> str:
        return gettext("%(key)s (set, %(fingerprint)s)") % {"key": self.key, "fingerprint": self.fingerprint}

    def __repr__(self) -> str:
        return f"<Credential {self.key}: set, fingerprint {self.fingerprint}>"

    def may_be_sent_to(self, host: str) -> bool:
        return not self.allowed_hosts or host_matches(host, self.allowed_hosts)
