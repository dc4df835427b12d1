"""Single sign-on use cases: the person behind a set of claims, and their roles."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from aihummer.actors import Actor
from aihummer.models import Membership, OidcIdentity, User, Workspace
from aihummer.services import membership_remove, membership_set
from aihummer.sso.claims import claim_strings, claim_value, roles_from_groups

logger = logging.getLogger(__name__)
_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")


def oidc_user_sync(*, issuer: str, claims: Mapping[str, Any]) -> User:
    """The person `claims` describe, created on their first login and kept in sync.

    Found by `(issuer, sub)`, never by e-mail alone: an existing account is linked by
    e-mail only when the provider says the address is verified and
    `AIHUMMER_OIDC_LINK_VERIFIED_EMAIL` allows it. E-mail and name follow the claims,
    and so do the memberships single sign-on manages (an absent roles claim: none).
    """
    subject = str(claims["sub"])
    with transaction.atomic():
        identity = OidcIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
        if identity is None:
            identity = _identity_create(issuer=issuer, subject=subject, claims=claims)
        user = identity.user
        _profile_sync(user, claims)
        identity.last_login_at = timezone.now()
        identity.save(update_fields=["last_login_at", "updated_at"])
        groups = claim_strings(claim_value(claims, settings.AIHUMMER_OIDC_ROLES_CLAIM))
        sso_memberships_apply(user=user, roles=roles_from_groups(groups, settings.AIHUMMER_OIDC_GROUP_ROLES))
    return user


def sso_memberships_apply(*, user: User, roles: Mapping[str, str]) -> None:
    """Make the memberships single sign-on manages for `user` exactly `roles`
    (`{workspace slug: role}`): grant, change and remove them. A membership granted
    by a person (not managed by SSO) is left as it is; unknown workspaces are skipped.
    """
    actor = Actor.for_identity_provider()
    # No savepoint: a failure here fails the whole login, nothing to recover from.
    with transaction.atomic(savepoint=False):
        # One sync per person at a time: two logins at once must not both create.
        User.objects.select_for_update().filter(pk=user.pk).first()
        current = {m.workspace.slug: m for m in Membership.objects.select_related("workspace").filter(user=user)}
        workspaces = {w.slug: w for w in Workspace.objects.filter(slug__in=roles)}
        for slug in sorted(set(roles) - set(workspaces)):
            logger.info("SSO: %s has a role in unknown workspace %r; skipped.", user.get_username(), slug)
        for slug, workspace in workspaces.items():
            membership = current.get(slug)
            if membership is not None and (not membership.managed_by_sso or membership.role == roles[slug]):
                continue  # a person's grant, or already right
            membership_set(
                workspace=workspace,
                user=user,
                role=roles[slug],
                actor=actor,
                managed_by_sso=True,
                reason=f"role {roles[slug]} from the identity provider",
            )
        for slug, membership in current.items():
            if membership.managed_by_sso and slug not in roles:
                membership_remove(membership=membership, actor=actor, reason="group removed at the identity provider")


def _identity_create(*, issuer: str, subject: str, claims: Mapping[str, Any]) -> OidcIdentity:
    linked = _user_linked_by_email(issuer, claims)
    user = linked or _user_create(claims, subject)
    try:
        with transaction.atomic():
            return OidcIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    except IntegrityError:
        # The same person's first login in two tabs at once: the other one won, and
        # the account made for this one is not needed.
        if linked is None:
            user.delete()
        return OidcIdentity.objects.select_related("user").get(issuer=issuer, subject=subject)


def _user_linked_by_email(issuer: str, claims: Mapping[str, Any]) -> User | None:
    email = claims.get("email")
    if not (settings.AIHUMMER_OIDC_LINK_VERIFIED_EMAIL and email and claims.get("email_verified") is True):
        return None
    candidates = list(User.objects.filter(email__iexact=email).exclude(oidc_identities__issuer=issuer)[:2])
    return candidates[0] if len(candidates) == 1 else None


def _user_create(claims: Mapping[str, Any], subject: str) -> User:
    """A new account without a usable password, named after the person's preferred
    username (or e-mail, or subject), made unique with a suffix: a local `bob` and
    the provider's `bob` are two people until someone links them."""
    wanted = claims.get("preferred_username") or claims.get("email") or subject
    base = _USERNAME_UNSAFE.sub("-", str(wanted))[:140] or "sso-user"
    for attempt in range(1, 100):
        username = base if attempt == 1 else f"{base}-{attempt}"
        try:
            with transaction.atomic():
                return User.objects.create_user(username=username, password=None)
        except IntegrityError:
            continue
    raise IntegrityError(f"No free username near {base!r}.")


def _profile_sync(user: User, claims: Mapping[str, Any]) -> None:
    """E-mail and name follow the claims the provider sends; absent ones stay."""
    values = {
        "email": claims.get("email"),
        "first_name": claims.get("given_name"),
        "last_name": claims.get("family_name"),
    }
    if claims.get("name") and not (claims.get("given_name") or claims.get("family_name")):
        values["first_name"], values["last_name"] = str(claims["name"]), ""
    changed = []
    for field, value in values.items():
        if isinstance(value, str):
            value = value[: User._meta.get_field(field).max_length]
            if getattr(user, field) != value:
                setattr(user, field, value)
                changed.append(field)
    if changed:
        user.save(update_fields=changed)
