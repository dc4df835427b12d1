"""Credentials: encrypted API keys (write-only secrets). Rights: MANAGE."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext
from django.views.decorators.debug import sensitive_variables

from agents import vault
from agents.models import Credential, Preset
from aihummer.actors import Actor, Verb
from aihummer.history import stamp
from aihummer.models import Workspace
from aihummer.service_checks import delete_with_dependents, require_key_free, save_checked

MAX_SECRET_CHARS = 10_000


@sensitive_variables("secret")
def _clean_secret(secret: object) -> str:
    if not isinstance(secret, str) or not secret.strip():
        raise ValidationError({"secret": gettext("Give the secret; it cannot be empty.")})
    if len(secret) > MAX_SECRET_CHARS:
        raise ValidationError({"secret": gettext("At most %(count)d characters.") % {"count": MAX_SECRET_CHARS}})
    return secret.strip()


@sensitive_variables("secret")
def credential_create(
    *,
    workspace: Workspace,
    key: str,
    secret: str,
    actor: Actor,
    name: str = "",
    allowed_hosts: list[str] | None = None,
) -> Credential:
    """Encrypt and store a secret; it is never shown again, only its fingerprint.
    `allowed_hosts` limits where presets may send it (empty: anywhere)."""
    actor.require(Verb.MANAGE, workspace)
    secret = _clean_secret(secret)
    require_key_free(Credential, workspace=workspace, key=key, noun="credential", actor=actor)
    credential = Credential(
        workspace=workspace,
        key=key,
        name=name,
        ciphertext=vault.encrypt(secret),
        fingerprint=vault.fingerprint(secret),
        allowed_hosts=allowed_hosts or [],
    )
    save_checked(credential, actor=actor, reason="created", noun="credential")
    return credential


@sensitive_variables("secret")
def credential_update(
    *,
    credential: Credential,
    actor: Actor,
    name: str | None = None,
    secret: str = "",
    allowed_hosts: list[str] | None = None,
) -> Credential:
    """Rename a credential, replace its secret (the old secret is gone for good) and/or
    change the hosts it may be sent to (presets already pointing elsewhere stop sending
    it at their next call)."""
    actor.require(Verb.MANAGE, credential.workspace)
    with transaction.atomic():
        # Compare with the row as stored, not with the caller's copy (an admin form
        # has already written the new name onto it).
        credential = Credential.objects.select_for_update().get(pk=credential.pk)
        return _credential_write(
            credential=credential, actor=actor, name=name, secret=secret, allowed_hosts=allowed_hosts
        )


@sensitive_variables("secret")
def _credential_write(
    *, credential: Credential, actor: Actor, name: str | None, secret: str, allowed_hosts: list[str] | None
) -> Credential:
    fields = ["updated_at"]
    if name is not None and name != credential.name:
        credential.name = name
        fields.append("name")
    if allowed_hosts is not None and allowed_hosts != credential.allowed_hosts:
        credential.allowed_hosts = allowed_hosts
        fields.append("allowed_hosts")
    if secret:
        secret = _clean_secret(secret)
        credential.ciphertext = vault.encrypt(secret)
        credential.fingerprint = vault.fingerprint(secret)
        fields += ["ciphertext", "fingerprint"]
    if len(fields) > 1:
        credential.full_clean(validate_unique=False, validate_constraints=False)
        changes = {"name": "renamed", "allowed_hosts": "allowed hosts changed", "ciphertext": "secret replaced"}
        stamp(credential, actor=actor, reason=", ".join(changes[f] for f in fields if f in changes))
        credential.save(update_fields=fields)
    return credential


def credential_delete(*, credential: Credential, actor: Actor) -> None:
    """Delete an unused credential; one a preset uses is refused, naming the presets."""
    actor.require(Verb.MANAGE, credential.workspace)
    delete_with_dependents(
        credential, actor=actor, noun="credential", dependents=credential_dependents(credential), forced=None
    )


def credential_dependents(credential: Credential) -> list[str]:
    """The presets that send `credential` (sandbox ones too: only managers see this)."""
    keys = Preset.all_objects.filter(credential=credential).order_by("key").values_list("key", flat=True)
    return [gettext("preset '%(preset)s'") % {"preset": key} for key in keys]


def credential_rotate_all() -> int:
    """Re-encrypt every credential under the first vault key; returns how many."""
    rotated = 0
    for credential in Credential.objects.select_for_update().order_by("pk").iterator():
        credential.ciphertext = vault.rotate(credential.ciphertext)
        # Rotation changes no secret: no history record, hence the queryset update.
        Credential.objects.filter(pk=credential.pk).update(ciphertext=credential.ciphertext)
        rotated += 1
    return rotated
