"""Session renewal before the ID token expires (mozilla-django-oidc's SessionRefresh)."""

from __future__ import annotations

import functools

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin


class SessionRefresh(MiddlewareMixin):
    """After `OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS`, a page load of an SSO session goes
    through the provider again without a prompt (`prompt=none`): the login renews
    and the person's groups are applied again, or the session ends when the provider
    no longer knows them. Local-account sessions are never touched.

    The library's middleware does the work, made at the first request with OIDC on:
    its module loads the library's backend, PyJWT and cryptography (35 ms), which every
    process that builds the middleware list or runs the system checks would pay for.
    """

    def __init__(self, get_response: object) -> None:
        super().__init__(get_response)
        self.refresh: MiddlewareMixin | None = None

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        if not settings.OIDC_ENABLED:
            return None
        if self.refresh is None:
            self.refresh = library_session_refresh()(self.get_response)
        return self.refresh.process_request(request)


@functools.cache
def library_session_refresh() -> type[MiddlewareMixin]:
    """mozilla-django-oidc's SessionRefresh reading its settings at each request, not
    once at start-up, so it can always be installed and does nothing until OIDC is on."""
    from mozilla_django_oidc.middleware import SessionRefresh as BaseSessionRefresh

    class LibrarySessionRefresh(BaseSessionRefresh):
        def __init__(self, get_response: object) -> None:
            # Skip the library's __init__ (it copies settings); keep MiddlewareMixin's.
            super(BaseSessionRefresh, self).__init__(get_response)

        def __getattr__(self, name: str) -> object:
            # The library's OIDC_* attributes (endpoint, client id, scopes, ...).
            if name.startswith("OIDC_"):
                defaults = {"OIDC_STATE_SIZE": 32, "OIDC_NONCE_SIZE": 32, "OIDC_USE_NONCE": True}
                defaults["OIDC_EXEMPT_URLS"] = []
                defaults["OIDC_AUTHENTICATION_CALLBACK_URL"] = "oidc_authentication_callback"
                return getattr(settings, name, defaults.get(name))
            raise AttributeError(name)

        def is_refreshable_url(self, request: HttpRequest) -> bool:
            return settings.OIDC_ENABLED and super().is_refreshable_url(request)

    return LibrarySessionRefresh
