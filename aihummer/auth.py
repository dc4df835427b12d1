"""Authentication of programs: `Authorization: Bearer ahk_<id>_<secret>`."""

from __future__ import annotations

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from aihummer.actors import Actor
from aihummer.services import api_key_authenticate


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Sets `request.user` to the key's owner (or None) and `request.auth` to an Actor."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[object, Actor] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        scheme, _, raw_key = header.partition(" ")
        if scheme != self.keyword:
            return None
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
    """A person's admin session (CSRF enforced on writes), as an Actor on the `api` surface."""

    def authenticate(self, request: Request) -> tuple[object, Actor] | None:
        result = super().authenticate(request)
        if result is None:
            return None
        user, _ = result
        return (user, Actor.for_user(user, surface="api"))
