"""The OpenID Connect routes under /oidc/: start a login, come back from the
provider, log out of both. They answer 404 until OIDC is configured."""

from __future__ import annotations

import logging
import time
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib import auth, messages
from django.contrib.auth import BACKEND_SESSION_KEY
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render, resolve_url
from django.urls import reverse
from mozilla_django_oidc import views as oidc_views

from aihummer.actors import may_use_admin

logger = logging.getLogger(__name__)
# A session is renewed this long before its ID token expires, but never sooner than
# MIN_RENEWAL_SECONDS after a login.
RENEWAL_MARGIN_SECONDS = 60
MIN_RENEWAL_SECONDS = 30


def is_sso_session(request: HttpRequest) -> bool:
    return request.session.get(BACKEND_SESSION_KEY) == "aihummer.sso.backend.OidcBackend"


def provider_logout_url(request: HttpRequest) -> str:
    """Where logging out leads: the provider's end-session endpoint (RP-initiated
    logout), which comes back to the admin's login page; that page itself when the
    provider offers no such endpoint."""
    login_url = request.build_absolute_uri(reverse("admin:login"))
    if not settings.OIDC_OP_LOGOUT_ENDPOINT:
        return login_url
    params = {"client_id": settings.OIDC_RP_CLIENT_ID, "post_logout_redirect_uri": login_url}
    if request.session.get("oidc_id_token"):
        params["id_token_hint"] = request.session["oidc_id_token"]
    return f"{settings.OIDC_OP_LOGOUT_ENDPOINT}?{urlencode(params)}"


class OidcEnabledMixin:
    def dispatch(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if not settings.OIDC_ENABLED:
            raise Http404("Single sign-on is not configured.")
        return super().dispatch(request, *args, **kwargs)


class OidcLoginView(OidcEnabledMixin, oidc_views.OIDCAuthenticationRequestView):
    """Sends the browser to the provider's login page."""


class OidcLogoutView(OidcEnabledMixin, oidc_views.OIDCLogoutView):
    """Ends the Django session, then the provider's (POST only, as the admin's)."""

    @property
    def redirect_url(self) -> str:
        return reverse("admin:login")


class OidcCallbackView(OidcEnabledMixin, oidc_views.OIDCAuthenticationCallbackView):
    """Back from the provider: log in, or say clearly why not."""

    @property
    def failure_url(self) -> str:
        # The library uses the setting as a plain URL; it is a URL name here.
        return resolve_url(settings.LOGIN_REDIRECT_URL_FAILURE)

    def get(self, request: HttpRequest) -> HttpResponse:
        # Read before the library consumes the state: an error naming a state this
        # browser was given is the provider's; any other could be a crafted link.
        self.state_was_issued = request.GET.get("state") in request.session.get("oidc_states", {})
        try:
            return super().get(request)
        except (SuspiciousOperation, requests.RequestException) as exc:
            # A forged or stale callback, a token that does not verify, a provider
            # that does not answer: the person starts again, the log says why.
            logger.warning("SSO login failed: %s", exc)
            return self.login_failure()

    def login_success(self) -> HttpResponse:
        if not may_use_admin(self.user):
            return self.no_role()
        response = super().login_success()
        self.renew_before_the_id_token_expires()
        return response

    def renew_before_the_id_token_expires(self) -> None:
        """The library renews after OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS whatever the
        token says; renew earlier when the ID token itself expires sooner (with a
        margin, and never so soon that every page would go to the provider)."""
        import jwt  # at each login only: PyJWT loads cryptography (35 ms)

        session = self.request.session
        token = session.get("oidc_id_token")
        expires = jwt.decode(token, options={"verify_signature": False}).get("exp") if token else None
        if isinstance(expires, int | float):
            renew_at = max(time.time() + MIN_RENEWAL_SECONDS, expires - RENEWAL_MARGIN_SECONDS)
            session["oidc_id_token_expiration"] = min(session["oidc_id_token_expiration"], renew_at)

    def login_failure(self) -> HttpResponse:
        messages.error(self.request, f"Single sign-on did not complete: {self.failure_reason()}")
        return super().login_failure()

    def failure_reason(self) -> str:
        error = self.request.GET.get("error")
        user = getattr(self, "user", None)
        if error and self.state_was_issued:
            if error in {"login_required", "consent_required", "interaction_required"}:
                return "your session at the identity provider has ended; log in again."
            if error == "access_denied":
                return "access was refused at the identity provider."
            return f"the identity provider answered “{self.request.GET.get('error_description') or error}”."
        if user is not None and not user.is_active:
            return "this account is disabled."
        return "try again, or ask an administrator."

    def no_role(self) -> HttpResponse:
        """A clear page, not an empty admin: signed in at the provider, but no group
        gives a role here. A session being renewed ends."""
        logout_url = provider_logout_url(self.request)
        auth.logout(self.request)
        context = {
            "title": "No access to AiHummer",
            "person": self.user.get_full_name() or self.user.email or self.user.get_username(),
            "claim": settings.AIHUMMER_OIDC_ROLES_CLAIM,
            "logout_url": logout_url if settings.OIDC_OP_LOGOUT_ENDPOINT else "",
        }
        return render(self.request, "admin/sso_no_role.html", context, status=403)


def protected_resource_metadata(request: HttpRequest) -> HttpResponse:
    """RFC 9728 metadata of the MCP server as an OAuth protected resource, at
    `/.well-known/oauth-protected-resource` and its `/mcp` path-suffixed form: which
    resource it is (the audience its tokens must carry) and which authorization server
    issues them. 404 while /mcp takes no access tokens (`OIDC_MCP_AUDIENCE` unset)."""
    from aihummer.sso.tokens import mcp_tokens_enabled

    if not mcp_tokens_enabled():
        raise Http404("/mcp takes API keys only: no OAuth protected-resource metadata.")
    document = {
        "resource": settings.OIDC_MCP_AUDIENCE,
        "authorization_servers": [settings.OIDC_OP_ISSUER],
        "bearer_methods_supported": ["header"],
        # What a client must ask for, and what /mcp checks every token carries.
        **({"scopes_supported": settings.OIDC_MCP_SCOPES} if settings.OIDC_MCP_SCOPES else {}),
        "resource_name": "AiHummer MCP server",
        "resource_documentation": request.build_absolute_uri("/v1/docs/"),
    }
    response = JsonResponse(document)
    response["Cache-Control"] = "public, max-age=300"
    # A browser-based MCP client discovers it from another origin.
    response["Access-Control-Allow-Origin"] = "*"
    return response
