"""Single sign-on end to end, against a real OpenID provider (npm `oidc-provider`)
and headless Chromium: a reviewer group's member logs into the admin through the
provider, decides a proposal, calls the API with the access token the provider
issued, has their session renewed silently, logs out of both, loses the group at
the provider and finds the role gone at their next login."""

import re
import time
from importlib import import_module

import jwt
import pytest
import requests
from django.conf import settings as django_settings
from playwright.sync_api import Browser, BrowserContext, Page, expect

from agents.models import PromptVersion
from agents.services import agent_create, prompt_version_propose
from aihummer.actors import Actor
from aihummer.models import Membership, OidcIdentity
from aihummer.tests.factories import make_echo_preset
from aihummer.tests.sso_provider import OidcTestProvider

TIMEOUT_MS = 10_000
URSULA = {
    "email": "ursula@example.com",
    "email_verified": True,
    "name": "Ursula Franklin",
    "preferred_username": "ursula",
    "groups": ["staff", "aihummer:acme:reviewer"],
}


@pytest.fixture
def provider(tmp_path, live_server, settings):
    provider = OidcTestProvider(workdir=tmp_path, app_url=live_server.url)
    provider.set_account("ursula", **URSULA)
    provider.start()
    for name, value in provider.django_settings().items():
        setattr(settings, name, value)
    # Test only: keep the access token in the session so the test can call the API
    # with the very token the provider issued during the browser login.
    settings.OIDC_STORE_ACCESS_TOKEN = True
    yield provider
    provider.stop()


def new_context(browser: Browser, base_url: str) -> BrowserContext:
    context = browser.new_context(base_url=base_url)
    context.set_default_timeout(TIMEOUT_MS)
    # Offline machine: the provider's pages import a web font; never wait for it.
    context.route(re.compile(r"^https?://(?!127\.0\.0\.1|localhost)"), lambda route: route.abort())
    return context


def sign_in_at_provider(page: Page, login: str) -> None:
    """The provider's development login (any password) and consent pages."""
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any password")
    page.click("button[type=submit]")
    expect(page.locator("input[name=prompt][value=consent]")).to_be_attached()
    page.click("button[type=submit]")


def session_of(context: BrowserContext):
    key = next(cookie["value"] for cookie in context.cookies() if cookie["name"] == "sessionid")
    return import_module(django_settings.SESSION_ENGINE).SessionStore(session_key=key)


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_signs_in_through_the_provider_and_loses_the_role_with_the_group(
    live_server, browser, provider, workspace, alice
):
    started = time.monotonic()
    operator = Actor.for_operator()
    make_echo_preset(workspace, by=operator)
    agent = agent_create(
        workspace=workspace, actor=operator, key="first", name="First", snapshot={"identity": {"name": "Ada"}}
    )
    proposal = prompt_version_propose(
        agent=agent, changes={"identity": {"name": "Camille"}}, actor=Actor.for_user(alice), reason="un nom"
    )
    context = new_context(browser, live_server.url)
    page = context.new_page()

    # login page → provider login and consent → back in the admin, the queue shows
    page.goto("/admin/")
    page.click("#aih-sso-button")
    expect(page).to_have_url(re.compile(rf"^{re.escape(provider.issuer)}/interaction/"))
    sign_in_at_provider(page, "ursula")
    expect(page.locator(".aih-queue-count")).to_have_text("1")
    assert page.url == f"{live_server.url}/admin/"

    # renewed before the provider's ID token (600 s) expires, not after the default 900 s
    id_token = session_of(context)["oidc_id_token"]
    id_token_expires = jwt.decode(id_token, options={"verify_signature": False})["exp"]
    assert session_of(context)["oidc_id_token_expiration"] == pytest.approx(id_token_expires - 60, abs=1)

    identity = OidcIdentity.objects.select_related("user").get(issuer=provider.issuer, subject="ursula")
    ursula = identity.user
    assert (ursula.username, ursula.email, ursula.first_name) == ("ursula", "ursula@example.com", "Ursula Franklin")
    assert not ursula.has_usable_password()
    membership = Membership.objects.get(user=ursula)
    assert (membership.workspace, membership.role, membership.managed_by_sso) == (workspace, "reviewer", True)

    # the decision is recorded with the SSO user, an ordinary user
    page.click("#aih-review-queue")
    page.click("text=first v2")
    page.click("input[name=_approve]")
    expect(page.locator(".messagelist")).to_contain_text(re.compile("first v2 approved", re.IGNORECASE))
    proposal.refresh_from_db()
    assert (proposal.status, proposal.reviewed_by) == (PromptVersion.Status.APPROVED, ursula)

    # the access token the provider issued (a JWT for the API's audience) works on /v1/
    access_token = session_of(context)["oidc_access_token"]
    response = requests.get(f"{live_server.url}/v1/me", headers={"Authorization": f"Bearer {access_token}"}, timeout=10)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "source": "api:ursula",
        "username": "ursula",
        "email": "ursula@example.com",
        "memberships": [{"workspace": "acme", "role": "reviewer"}],
    }

    # when the ID token is due for renewal, the next page goes through the provider
    # without a prompt and comes back; the claims are applied again
    renamed = {**URSULA, "name": "Ursula M. Franklin"}
    provider.set_account("ursula", **renamed)
    session = session_of(context)
    session["oidc_id_token_expiration"] = 0
    session.save()
    page.goto("/admin/")
    expect(page.locator(".aih-queue-count")).to_have_text("0")
    assert session_of(context)["oidc_id_token_expiration"] > time.time()
    ursula.refresh_from_db()
    assert ursula.first_name == "Ursula M. Franklin"

    # logging out ends the provider's session too (RP-initiated logout)
    page.click("#logout-form button[type=submit]")
    expect(page).to_have_url(re.compile(rf"^{re.escape(provider.issuer)}/session/end"))
    page.click("button[name=logout]")
    expect(page.locator("#aih-sso-button")).to_be_visible()
    assert page.url.startswith(f"{live_server.url}/admin/login/")

    # the group is removed at the provider; the next login asks for credentials again
    # (the provider's session is gone) and lands on a clear page, not an empty admin
    provider.set_account("ursula", **{**renamed, "groups": ["staff"], "email": "ursula.f@example.com"})
    page.click("#aih-sso-button")
    sign_in_at_provider(page, "ursula")
    expect(page.locator("#aih-sso-no-role")).to_contain_text(
        "You signed in as Ursula M. Franklin, but none of your groups at the identity provider gives you a role"
    )
    assert not Membership.objects.filter(user=ursula).exists()
    ursula.refresh_from_db()
    assert ursula.email == "ursula.f@example.com"
    assert OidcIdentity.objects.filter(user=ursula).count() == 1
    page.goto("/admin/")
    expect(page.locator("#aih-sso-button")).to_be_visible()

    # the API follows the same person's roles: the token still verifies, no role left
    response = requests.get(f"{live_server.url}/v1/me", headers={"Authorization": f"Bearer {access_token}"}, timeout=10)
    assert response.json()["memberships"] == []
    context.close()
    assert time.monotonic() - started < 60
