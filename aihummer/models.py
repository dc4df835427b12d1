"""Tenancy and identity: users, workspaces, memberships and API keys."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from aihummer.history_manager import HistoryManager

KEY_VALIDATOR = RegexValidator(r"^[a-z0-9_-]+$", "Use lowercase letters, digits, '_' and '-' only.")
API_KEY_PREFIX = "ahk"
API_KEY_TOUCH_INTERVAL = timedelta(minutes=1)


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        abstract = True


class User(AbstractUser):
    """A person: a local account or one created on first OIDC login."""

    language = models.CharField(
        _("desk language"),
        max_length=8,
        blank=True,
        choices=settings.LANGUAGES,
        help_text=_("The language the desk speaks to this person; blank follows their browser."),
    )

    class Meta(AbstractUser.Meta):
        verbose_name = _("user")
        verbose_name_plural = _("users")
        swappable = "AUTH_USER_MODEL"


class Workspace(TimeStampedModel):
    """A tenant: every configuration row belongs to exactly one workspace."""

    slug = models.SlugField(max_length=50, unique=True, validators=[KEY_VALIDATOR], verbose_name=_("slug"))
    name = models.CharField(max_length=200, verbose_name=_("name"))
    every_change_needs_review = models.BooleanField(
        default=False,
        help_text=_("When set, even members with the publish right propose changes for a second person to approve."),
        verbose_name=_("every change needs review"),
    )
    block_approval_on_regressions = models.BooleanField(
        default=False,
        help_text=_(
            "When set, approving a proposal that fails a test case live passes needs an explicit "
            "confirmation naming those cases."
        ),
        verbose_name=_("block approval on regressions"),
    )
    judge_preset = models.ForeignKey(
        "agents.Preset",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("An OpenAI-compatible preset that scores each proposal (advisory, never blocks). Empty: no judge."),
        verbose_name=_("judge preset"),
    )

    history = HistoricalRecords(history_manager=HistoryManager)

    class Meta:
        verbose_name = _("workspace")
        verbose_name_plural = _("workspaces")
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        preset = self.judge_preset
        if preset is None:
            return
        # Another workspace's preset answers exactly as a missing one.
        if preset.workspace_id != self.pk or preset.is_sandbox:
            raise ValidationError({"judge_preset": "Unknown preset."})
        if preset.provider_name != "openai":
            raise ValidationError(
                {"judge_preset": "The judge needs structured output: choose an OpenAI or compatible preset."}
            )


class MemberRole(models.TextChoices):
    """What a member may do in a workspace (`Membership.Role`); written here, at the
    module's level, so the Membership and Invitation constraints read the same list."""

    VIEWER = "viewer", _("Viewer")
    EDITOR = "editor", _("Editor")
    REVIEWER = "reviewer", _("Reviewer")
    ADMIN = "admin", _("Admin")


class Membership(TimeStampedModel):
    Role = MemberRole

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("user")
    )
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("workspace")
    )
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER, verbose_name=_("role"))
    managed_by_sso = models.BooleanField(
        _("managed by SSO"),
        default=False,
        help_text=_(
            "Granted by the person's groups at the identity provider, and removed with them at their next "
            "login. Memberships granted here are never touched by single sign-on."
        ),
    )

    history = HistoricalRecords(history_manager=HistoryManager)

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        ordering = ["workspace__slug", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["user", "workspace"], name="aihummer_membership_unique_user"),
            models.CheckConstraint(condition=Q(role__in=MemberRole.values), name="aihummer_membership_role_valid"),
        ]

    def __str__(self) -> str:
        return gettext("%(user)s in %(workspace)s (%(role)s)") % {
            "user": self.user,
            "workspace": self.workspace,
            "role": self.get_role_display().lower(),
        }


class Invitation(TimeStampedModel):
    """A place in a workspace kept for whoever signs in with this username or e-mail.

    Inviting never looks the person up: the admin learns nothing about which accounts
    exist, and nobody of another workspace is added without signing in themselves.
    """

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="invitations", verbose_name=_("workspace")
    )
    identifier = models.CharField(
        _("username or e-mail"),
        max_length=254,
        help_text=_("Exactly as the person signs in, or their e-mail address."),
    )
    role = models.CharField(
        max_length=20, choices=Membership.Role.choices, default=Membership.Role.VIEWER, verbose_name=_("role")
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
        verbose_name=_("invited by"),
    )
    accepted_at = models.DateTimeField(null=True, blank=True, editable=False, verbose_name=_("accepted at"))

    history = HistoricalRecords(history_manager=HistoryManager)

    class Meta:
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")
        ordering = ["workspace__slug", "identifier"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "identifier"], name="aihummer_invitation_unique_identifier"),
            models.CheckConstraint(condition=Q(role__in=MemberRole.values), name="aihummer_invitation_role_valid"),
        ]

    def __str__(self) -> str:
        return gettext("%(identifier)s to %(workspace)s (%(role)s)") % {
            "identifier": self.identifier,
            "workspace": self.workspace,
            "role": self.get_role_display().lower(),
        }


class OidcIdentity(TimeStampedModel):
    """Who a person is at an OpenID provider: the `sub` claim, unique per issuer.

    A person is found by this pair at every login and for every bearer token, never
    by e-mail alone; e-mail and name are copies kept in sync from the claims.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities", verbose_name=_("user")
    )
    issuer = models.CharField(max_length=255, verbose_name=_("issuer"))
    subject = models.CharField(max_length=255, verbose_name=_("subject"))
    last_login_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last login at"))

    class Meta:
        verbose_name = _("OpenID identity")
        verbose_name_plural = _("OpenID identities")
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="aihummer_oidcidentity_unique_subject"),
            models.UniqueConstraint(fields=["user", "issuer"], name="aihummer_oidcidentity_unique_user_issuer"),
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class ApiKey(TimeStampedModel):
    """A program's credential, scoped to one workspace: `ahk_<id>_<secret>`.

    Only the SHA-256 digest of the secret is stored; the full key is shown once.
    """

    class Scope(models.TextChoices):
        READ = "read", _("Read")
        WRITE = "write", _("Write (propose, run, sandbox)")
        PUBLISH = "publish", _("Publish (apply changes directly)")
        VOUCH = "vouch", _("Vouch (name the verified peer of a conversation)")

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="api_keys", verbose_name=_("workspace")
    )
    name = models.CharField(max_length=100, validators=[KEY_VALIDATOR], verbose_name=_("name"))
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="api_keys",
        help_text=_("The person answerable for this key; they may not approve what it proposes."),
        verbose_name=_("owner"),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
        help_text=_("Who created the key; like its owner, they may not approve what it proposes."),
        verbose_name=_("created by"),
    )
    scopes = models.CharField(
        max_length=50, help_text=_("Comma-separated: read, write, publish, vouch."), verbose_name=_("scopes")
    )
    secret_digest = models.CharField(max_length=64, editable=False, verbose_name=_("secret digest"))
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False, verbose_name=_("revoked at"))
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False, verbose_name=_("last used at"))

    # last_used_at changes on use, not by anyone's decision: it stays out of history.
    history = HistoricalRecords(excluded_fields=["last_used_at", "secret_digest"], history_manager=HistoryManager)

    class Meta:
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")
        ordering = ["workspace__slug", "name"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="aihummer_apikey_unique_name"),
            models.CheckConstraint(
                condition=Q(scopes__regex=r"^(read|write|publish|vouch)(,(read|write|publish|vouch))*$"),
                name="aihummer_apikey_scopes_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.workspace})"

    @property
    def scope_set(self) -> frozenset[str]:
        return frozenset(filter(None, self.scopes.split(",")))

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    @staticmethod
    def digest(secret: str) -> str:
        return hashlib.sha256(secret.encode()).hexdigest()

    def needs_touch(self, now: timezone.datetime) -> bool:
        return self.last_used_at is None or now - self.last_used_at >= API_KEY_TOUCH_INTERVAL


class ApiAuditEntry(models.Model):
    """One write through the REST API: who, what, the outcome and the request id that
    ties it to the client's logs and to the history rows it produced."""

    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    request_id = models.CharField(max_length=128, db_index=True, verbose_name=_("request id"))
    workspace = models.ForeignKey(
        Workspace,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="api_audit_entries",
        verbose_name=_("workspace"),
    )
    actor_source = models.CharField(
        max_length=200, help_text=_("api:<key name>, api:<username>…"), verbose_name=_("actor")
    )
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("person"),
    )
    method = models.CharField(max_length=10, verbose_name=_("method"))
    path = models.CharField(max_length=500, verbose_name=_("path"))
    status_code = models.PositiveSmallIntegerField(verbose_name=_("status code"))

    class Meta:
        verbose_name = _("API audit entry")
        verbose_name_plural = _("API audit entries")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.method} {self.path} → {self.status_code} ({self.actor_source}, {self.request_id})"


class IdempotencyKey(models.Model):
    """A POST made with an `Idempotency-Key` header: claimed before the view runs (the
    unique constraint makes a concurrent retry wait its turn), then holding the
    response that a retry is answered with instead of applying the request twice."""

    # Whose key it is: "api_key:<id>" or "user:<id>"; two callers never share keys.
    owner = models.CharField(max_length=60)
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64, help_text=_("SHA-256 of method, path and body."))
    status_code = models.PositiveSmallIntegerField(null=True, blank=True, help_text=_("Empty while the request runs."))
    response_body = models.JSONField(null=True, blank=True)
    location = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="aihummer_idempotencykey_unique_key")]

    def __str__(self) -> str:
        return f"{self.owner} {self.key}"
