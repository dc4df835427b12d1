"""Session renewal before the ID token expires (mozilla-django-oidc's SessionRefresh)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from mozilla_django_oidc.middleware import SessionRefresh as BaseSessionRefresh


class SessionRefresh(BaseSessionRefresh):
    """After `OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS`, a page load of an SSO session goes
    through the provider again without a prompt (`prompt=none`): the login renews
    and the person's groups are applied again, or the session ends when the provider
    no longer knows them. Local-account sessions are never touched.

    The library reads its settings once at start-up; this reads them at each request,
    so the middleware can always be installed and does nothing until OIDC is on.
    """

    def __init__(self, get_response: object) -> None:
        # Skip the library's __init__ (it copies settings); keep MiddlewareMixin's.
        super(BaseSessionRefresh, self).__init__(get_response)

    def __getattr__(self, name: str) -> object:
        # The library's OIDC_* attributes (endpoint, client id, scopes, ...).
        if name.startswith("OIDC_"):
            defaults = {"OIDC_STATE_SIZE": 32, "OIDC_NONCE_SIZE": 32, "OIDC_USE_NONCE": True, "OIDC_EXEMPT_URLS": []}
            defaults["OIDC_AUTHENTICATION_CALLBACK_URL"] = "oidc_authentication_callback"
            return getattr(settings, name, defaults.get(name))
        raise AttributeError(name)

    def is_refreshable_url(self, request: HttpRequest) -> bool:
        return settings.OIDC_ENABLED and super().is_refreshable_url(request)
