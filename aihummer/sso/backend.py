"""The Django authentication backend of the admin's OpenID Connect login."""

from __future__ import annotations

from typing import Any

import jwt
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from aihummer.models import User
from aihummer.sso.services import oidc_user_sync


class OidcBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's code flow, with three changes:

    - the ID token's audience and issuer are checked (the library checks neither);
    - the person is found by `(iss, sub)` through `oidc_user_sync`, never by e-mail;
    - claims come from the ID token, merged with the userinfo endpoint's answer when
      `OIDC_OP_USER_ENDPOINT` is set (an access token audienced to the API cannot
      be used there, and many providers put groups in the ID token only).
    """

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:
        if not settings.OIDC_ENABLED:
            return None
        return super().authenticate(request, **kwargs)

    def _verify_jws(self, payload: str, key: Any) -> dict[str, Any]:
        algorithm = self.OIDC_RP_SIGN_ALGO
        if jwt.get_unverified_header(payload).get("alg") != algorithm:
            raise SuspiciousOperation(f"The ID token is not signed with {algorithm}.")
        try:
            return jwt.decode(
                payload,
                key,
                algorithms=[algorithm],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.OIDC_OP_ISSUER,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.InvalidTokenError as exc:
            raise SuspiciousOperation(f"ID token rejected: {exc}") from exc

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            userinfo = super().get_userinfo(access_token, id_token, payload)
            # OpenID Connect Core 5.3.2: a userinfo answer about someone else is discarded.
            if str(userinfo.get("sub")) != str(payload["sub"]):
                raise SuspiciousOperation("The userinfo endpoint answered for another subject.")
            claims.update(userinfo)
        return claims

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("sub"))

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> User:
        claims = self.get_userinfo(access_token, id_token, payload)
        if not self.verify_claims(claims):
            raise SuspiciousOperation("The provider sent no subject (sub) claim.")
        return oidc_user_sync(issuer=payload["iss"], claims=claims)
