"""Tenancy use cases: workspaces, memberships, API keys."""

from __future__ import annotations

import hmac
import secrets

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from aihummer.actors import Actor, Verb
from aihummer.exceptions import ApplicationError
from aihummer.history import stamp
from aihummer.models import API_KEY_PREFIX, API_KEY_TOUCH_INTERVAL, ApiKey, Membership, User, Workspace

VALID_SCOPES = [choice.value for choice in ApiKey.Scope]
# Compared against when the key id is unknown, so a miss costs the same as a mismatch.
_DUMMY_DIGEST = ApiKey.digest("not-a-real-secret")


def normalize_scopes(scopes: str | list[str]) -> str:
    """`"write,read"` or `["read", "write"]` → `"read,write"`; unknown scopes refused."""
    items = scopes.split(",") if isinstance(scopes, str) else list(scopes)
    items = [item.strip() for item in items if item.strip()]
    unknown = sorted(set(items) - set(VALID_SCOPES))
    if unknown:
        raise ValidationError(
            {"scopes": f"Unknown scope {', '.join(map(repr, unknown))}; use {', '.join(VALID_SCOPES)}."}
        )
    if not items:
        raise ValidationError({"scopes": f"Give at least one scope: {', '.join(VALID_SCOPES)}."})
    return ",".join(scope for scope in VALID_SCOPES if scope in items)


def workspace_create(*, slug: str, name: str, actor: Actor) -> Workspace:
    """A new tenant; only a superuser or the operator may create one."""
    if not (actor.kind == Actor.OPERATOR or (actor.user is not None and actor.user.is_superuser)):
        raise PermissionDenied("Only a superuser or an operator may create workspaces.")
    workspace = Workspace(slug=slug, name=name)
    workspace.full_clean()
    stamp(workspace, actor=actor, reason="created")
    workspace.save()
    return workspace


def membership_set(
    *, workspace: Workspace, user: User, role: str, actor: Actor, managed_by_sso: bool = False, reason: str = ""
) -> Membership:
    """Give `user` `role` in `workspace` (creating or changing the membership).

    `managed_by_sso` marks a membership single sign-on granted and may take away; a
    role set by anyone else is the workspace's own and SSO leaves it alone.
    """
    actor.require(Verb.MANAGE, workspace)
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(workspace=workspace, user=user).first()
        membership = membership or Membership(workspace=workspace, user=user)
        if membership.pk and membership.role == role and membership.managed_by_sso == managed_by_sso:
            return membership
        membership.role = role
        membership.managed_by_sso = managed_by_sso
        membership.full_clean()
        stamp(membership, actor=actor, reason=reason or f"role {role}")
        membership.save()
    return membership


def membership_remove(*, membership: Membership, actor: Actor, reason: str = "") -> None:
    """End a membership; removing one that is already gone is harmless."""
    actor.require(Verb.MANAGE, membership.workspace)
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(pk=membership.pk).first()
        if membership is None:
            return
        stamp(membership, actor=actor, reason=reason or "removed")
        membership.delete()


def api_key_create(
    *, workspace: Workspace, name: str, scopes: str | list[str], actor: Actor, owner: User | None = None
) -> tuple[ApiKey, str]:
    """A new key and its full text `ahk_<id>_<secret>`, which is never shown again."""
    actor.require(Verb.MANAGE, workspace)
    if owner is not None and not (
        owner.is_superuser or Membership.objects.filter(workspace=workspace, user=owner).exists()
    ):
        raise ValidationError({"owner": f"{owner.get_username()} is not a member of workspace '{workspace.slug}'."})
    secret = secrets.token_urlsafe(32)
    api_key = ApiKey(
        workspace=workspace,
        name=name,
        owner=owner,
        scopes=normalize_scopes(scopes),
        secret_digest=ApiKey.digest(secret),
    )
    api_key.full_clean()
    stamp(api_key, actor=actor, reason="created")
    api_key.save()
    return api_key, f"{API_KEY_PREFIX}_{api_key.pk}_{secret}"


def api_key_revoke(*, api_key: ApiKey, actor: Actor) -> ApiKey:
    """Revoke a key for good; revoking twice is refused so callers notice."""
    actor.require(Verb.MANAGE, api_key.workspace)
    with transaction.atomic():
        api_key = ApiKey.objects.select_for_update().get(pk=api_key.pk)
        # Re-checked under the lock: two admins revoking at once both succeed only once.
        if api_key.is_revoked:
            raise ApplicationError(f"API key '{api_key.name}' is already revoked.")
        api_key.revoked_at = timezone.now()
        stamp(api_key, actor=actor, reason="revoked")
        api_key.save(update_fields=["revoked_at", "updated_at"])
    return api_key


def api_key_authenticate(raw_key: str) -> ApiKey | None:
    """The live key `raw_key` names, or None; records its use at most once a minute."""
    prefix, _, rest = raw_key.partition("_")
    key_id, _, secret = rest.partition("_")
    api_key = None
    if prefix == API_KEY_PREFIX and key_id.isdigit() and secret:
        api_key = ApiKey.objects.select_related("workspace", "owner").filter(pk=int(key_id)).first()
    expected = api_key.secret_digest if api_key else _DUMMY_DIGEST
    matches = hmac.compare_digest(ApiKey.digest(secret), expected)
    if api_key is None or not matches or api_key.is_revoked:
        return None
    if api_key.owner is not None and not api_key.owner.is_active:
        return None
    _api_key_touch(api_key)
    return api_key


def _api_key_touch(api_key: ApiKey) -> None:
    now = timezone.now()
    if not api_key.needs_touch(now):
        return
    # A conditional UPDATE, deliberately outside history: usage is not a change anyone
    # made, and concurrent requests must not each write a row.
    ApiKey.objects.filter(pk=api_key.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - API_KEY_TOUCH_INTERVAL)
    ).update(last_used_at=now)
    api_key.last_used_at = now
