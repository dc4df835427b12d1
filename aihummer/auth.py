"""Authentication of API callers: `Authorization: Bearer <token>`, where the token is
an API key (`ahk_<id>_<secret>`) or, with single sign-on, an access token issued by
the OpenID provider (aihummer/sso/tokens.py)."""

from __future__ import annotations

import time

from django.conf import settings
from rest_framework import authentication, exceptions, status
from rest_framework.request import Request

from aihummer.actors import Actor
from aihummer.models import API_KEY_PREFIX
from aihummer.services import api_key_authenticate
from aihummer.sso.tokens import (
    IdentityProviderUnavailable,
    InvalidBearerToken,
    bearer_tokens_enabled,
    user_from_bearer_token,
)


def bearer(request: Request) -> str | None:
    """What follows `Bearer ` in the Authorization header, None without one. Read as
    text: DRF's helper re-encodes to latin-1 and raises (a 500) on any other character
    a client manages to send."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if isinstance(header, bytes):
        header = header.decode("latin-1")
    scheme, _, credentials = header.partition(" ")
    return credentials if scheme == "Bearer" else None


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Sets `request.user` to the key's owner (or None) and `request.auth` to an Actor."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[object, Actor] | None:
        raw_key = bearer(request)
        if raw_key is None:
            return None
        if bearer_tokens_enabled() and not raw_key.strip().startswith(f"{API_KEY_PREFIX}_"):
            return None  # a provider's access token: OidcBearerAuthentication's
        api_key = api_key_authenticate(raw_key.strip())
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        return (api_key.owner or ApiKeyUser(api_key), Actor.for_api_key(api_key, surface="api"))

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class ApiKeyUser:
    """Stands in for `request.user` when a key has no human owner."""

    is_authenticated = True
    is_active = True
    is_superuser = False
    is_staff = False

    def __init__(self, api_key: object) -> None:
        self.api_key = api_key

    def __str__(self) -> str:
        return f"key:{self.api_key.name}"


class SessionActorAuthentication(authentication.SessionAuthentication):
    """A person's admin session (CSRF enforced on writes), as an Actor on the `api`
    surface. A single sign-on session due for renewal is refused: the admin renews it
    through the provider, but an API call cannot follow that redirect."""

    def authenticate(self, request: Request) -> tuple[object, Actor] | None:
        result = super().authenticate(request)
        if result is None:
            return None
        user, _ = result
        expires = request._request.session.get("oidc_id_token_expiration")
        if settings.OIDC_ENABLED and expires is not None and expires <= time.time():
            raise exceptions.AuthenticationFailed(
                "Your single sign-on session is due for renewal: open the admin once."
            )
        return (user, Actor.for_user(user, surface="api"))


class IdentityProviderDown(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The identity provider's signing keys could not be fetched; try again shortly."
    default_code = "identity_provider_unavailable"


class OidcBearerAuthentication(authentication.BaseAuthentication):
    """Sets `request.user` to the person an OpenID provider's access token stands for
    and `request.auth` to their Actor; their roles are their memberships."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[object, Actor] | None:
        token = bearer(request)
        if token is None or not bearer_tokens_enabled() or token.strip().startswith(f"{API_KEY_PREFIX}_"):
            return None
        token = token.strip()
        try:
            user = user_from_bearer_token(token)
        except InvalidBearerToken as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from exc
        except IdentityProviderUnavailable as exc:
            raise IdentityProviderDown() from exc
        return (user, Actor.for_user(user, surface="api"))

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
