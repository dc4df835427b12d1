"""Single sign-on without a browser: the claim mapping, the person and roles a
login applies, and bearer access tokens on the API.

Bad tokens are produced, not mocked: tokens are signed with RSA keys generated here
and published through a real JWKS endpoint (pytest-httpserver); the end-to-end flow
against the real provider is in test_sso_browser.py.
"""

import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation

from aihummer.actors import Actor
from aihummer.env import parse_group_roles
from aihummer.models import Membership, OidcIdentity, User, Workspace
from aihummer.services import api_key_create, membership_set
from aihummer.sso.backend import OidcBackend
from aihummer.sso.claims import claim_strings, claim_value, roles_from_groups
from aihummer.sso.services import oidc_user_sync
from aihummer.sso.tokens import _jwks_client
from aihummer.tests.sso_helpers import AUDIENCE, CLIENT_ID, ISSUER, KEY, claims_for, sign

OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


# --- the claim mapping ------------------------------------------------------------------
def test_named_groups_grant_roles_and_the_highest_role_per_workspace_wins():
    groups = ["aihummer:acme:viewer", "aihummer:acme:reviewer", "aihummer:globex:editor", "staff"]

    assert roles_from_groups(groups, {}) == {"acme": "reviewer", "globex": "editor"}


def test_mapped_groups_grant_their_roles_beside_named_ones():
    mapping = parse_group_roles('{"3f2a-guid": ["acme:admin", "globex:viewer"], "reviewers": "globex:reviewer"}')

    roles = roles_from_groups(["3f2a-guid", "reviewers", "aihummer:acme:viewer"], mapping)

    assert roles == {"acme": "admin", "globex": "reviewer"}


@pytest.mark.parametrize(
    "group",
    ["aihummer:acme:owner", "aihummer:Acme:viewer", "aihummer::viewer", "aihummer:acme", "other:acme:viewer", ""],
)
def test_groups_that_name_no_valid_workspace_role_grant_nothing(group):
    assert roles_from_groups([group], {}) == {}


def test_claims_are_read_by_dotted_path_and_as_lists_of_strings():
    claims = {"realm_access": {"roles": ["aihummer:acme:editor", 7]}, "cognito:groups": "aihummer:acme:viewer"}

    assert claim_strings(claim_value(claims, "realm_access.roles")) == ["aihummer:acme:editor"]
    assert claim_strings(claim_value(claims, "cognito:groups")) == ["aihummer:acme:viewer"]
    assert claim_value(claims, "groups") is None
    assert claim_strings(None) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1]", 'AIHUMMER_OIDC_GROUP_ROLES must be a JSON object like {"<group>": "<workspace>:<role>"}.'),
        ("{oops", "AIHUMMER_OIDC_GROUP_ROLES must be a JSON object: Expecting property name"),
        (
            '{"ops": "acme:owner"}',
            "AIHUMMER_OIDC_GROUP_ROLES: group 'ops' maps to 'acme:owner'; use '<workspace>:<role>' with a role "
            "among viewer, editor, reviewer, admin.",
        ),
        ('{"ops": []}', "AIHUMMER_OIDC_GROUP_ROLES: group 'ops' must map to '<workspace>:<role>' or a list of them."),
    ],
)
def test_a_bad_group_mapping_stops_the_process_naming_the_group(text, message):
    with pytest.raises(ImproperlyConfigured) as error:
        parse_group_roles(text)

    assert str(error.value).startswith(message)


def test_the_settings_role_names_are_the_membership_roles():
    from aihummer.env import MEMBERSHIP_ROLES

    assert list(MEMBERSHIP_ROLES) == Membership.Role.values


def test_first_login_creates_a_person_keyed_by_subject_and_later_ones_keep_them_in_sync(workspace):
    first = oidc_user_sync(issuer=ISSUER, claims=claims_for(groups=["aihummer:acme:editor"]))
    again = oidc_user_sync(issuer=ISSUER, claims=claims_for(email="u.franklin@example.com", name="U. Franklin"))

    assert again == first
    again.refresh_from_db()
    assert (again.username, again.email, again.get_full_name()) == ("ursula", "u.franklin@example.com", "U. Franklin")
    assert not again.has_usable_password()
    assert OidcIdentity.objects.get(user=again).subject == "u-123"


def test_a_local_account_with_the_same_email_or_username_is_another_person(bob):
    user = oidc_user_sync(
        issuer=ISSUER, claims=claims_for(email=bob.email, email_verified=True, preferred_username="bob")
    )

    assert user != bob
    assert user.username == "bob-2"
    assert not bob.oidc_identities.exists()


def test_a_verified_email_links_an_existing_account_only_when_allowed(settings, bob):
    settings.AIHUMMER_OIDC_LINK_VERIFIED_EMAIL = True

    unverified = oidc_user_sync(issuer=ISSUER, claims=claims_for("s-1", email=bob.email, email_verified=False))
    verified = oidc_user_sync(issuer=ISSUER, claims=claims_for("s-2", email=bob.email.upper(), email_verified=True))

    assert unverified != bob
    assert verified == bob
    assert bob.oidc_identities.get().subject == "s-2"


def test_the_same_subject_at_another_issuer_is_another_person(db):
    first = oidc_user_sync(issuer=ISSUER, claims=claims_for())
    second = oidc_user_sync(issuer="https://login.microsoftonline.com/tenant/v2.0", claims=claims_for())

    assert first != second


def memberships(user: User) -> dict[str, tuple[str, bool]]:
    return {m.workspace.slug: (m.role, m.managed_by_sso) for m in user.memberships.select_related("workspace")}


def test_roles_follow_the_groups_at_each_login_and_a_removed_group_removes_the_role(workspace, other_workspace):
    user = oidc_user_sync(issuer=ISSUER, claims=claims_for(groups=["aihummer:acme:reviewer", "aihummer:globex:viewer"]))
    assert memberships(user) == {"acme": ("reviewer", True), "globex": ("viewer", True)}

    oidc_user_sync(issuer=ISSUER, claims=claims_for(groups=["aihummer:acme:editor"]))

    assert memberships(user) == {"acme": ("editor", True)}
    removal = Membership.history.filter(workspace=other_workspace, history_type="-").get()
    assert removal.history_change_reason == "sso:oidc: group removed at the identity provider"

    oidc_user_sync(issuer=ISSUER, claims=claims_for())  # no groups claim at all: no role left

    assert memberships(user) == {}


def test_memberships_granted_by_a_person_are_never_touched_by_sso(workspace, other_workspace, ada, root):
    user = oidc_user_sync(issuer=ISSUER, claims=claims_for(groups=["aihummer:acme:viewer"]))
    membership_set(workspace=workspace, user=user, role="admin", actor=Actor.for_user(ada))
    membership_set(workspace=other_workspace, user=user, role="editor", actor=Actor.for_user(root))

    oidc_user_sync(issuer=ISSUER, claims=claims_for(groups=["aihummer:globex:viewer"]))

    assert memberships(user) == {"acme": ("admin", False), "globex": ("editor", False)}


def test_groups_for_unknown_workspaces_are_skipped(workspace):
    user = oidc_user_sync(issuer=ISSUER, claims=claims_for(groups=["aihummer:nowhere:admin", "aihummer:acme:viewer"]))

    assert memberships(user) == {"acme": ("viewer", True)}
    assert not Workspace.objects.filter(slug="nowhere").exists()


def test_the_id_token_is_checked_for_audience_and_issuer(settings):
    settings.OIDC_OP_ISSUER = ISSUER
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    backend = OidcBackend()
    good = sign({"aud": CLIENT_ID, "iat": int(time.time())})

    assert backend._verify_jws(good, KEY.public_key())["sub"] == "u-123"
    for claims, reason in [({"aud": "another-app"}, "Audience doesn't match"), ({"iss": "https://evil"}, "issuer")]:
        with pytest.raises(SuspiciousOperation, match=reason):
            backend._verify_jws(sign({"aud": CLIENT_ID, "iat": int(time.time())} | claims), KEY.public_key())


def get_me(client, token: str):
    return client.get("/v1/me", headers={"Authorization": f"Bearer {token}"})


def test_an_access_token_authenticates_its_person_with_their_roles(client, oidc, ursula, django_assert_num_queries):
    token = sign({})

    with django_assert_num_queries(2):  # the identity with its user, the memberships
        response = get_me(client, token)

    assert response.status_code == 200
    assert response.json() == {
        "source": "api:ursula",
        "username": "ursula",
        "email": "ursula@example.com",
        "memberships": [{"workspace": "acme", "role": "reviewer"}],
    }


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (lambda: sign({"exp": int(time.time()) - 3600}), "The token has expired."),
        (
            lambda: sign({"aud": "https://another-api.example.com"}),
            f"The token is not meant for this API (audience {AUDIENCE}).",
        ),
        (lambda: sign({"iss": "https://evil.example.com"}), f"The token was not issued by {ISSUER}."),
        (lambda: sign({}, key=OTHER_KEY), "The token's signature does not verify."),
        (
            lambda: sign({"sub": "someone-else"}).rpartition(".")[0] + "." + sign({}).rpartition(".")[2],
            "The token's signature does not verify.",
        ),
        (lambda: sign({}, kid="unknown"), 'Invalid token: Unable to find a signing key that matches: "unknown"'),
        (
            lambda: jwt.encode(
                {"sub": "u-123"}, "a-shared-secret-of-at-least-32-bytes!", algorithm="HS256", headers={"kid": "k1"}
            ),
            "The token must be signed with one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512.",
        ),
        (
            lambda: sign({"sub": "never-signed-in"}),
            "No AiHummer account has signed in with this identity yet; sign in to the admin once.",
        ),
        (lambda: "not-a-jwt", "Invalid token: Not enough segments"),
    ],
    ids=[
        "expired",
        "other-audience",
        "other-issuer",
        "unknown-key",
        "tampered",
        "unknown-kid",
        "hs256",
        "stranger",
        "garbage",
    ],
)
def test_bad_access_tokens_are_401_saying_why(client, oidc, ursula, token, message):
    response = get_me(client, token())

    assert response.status_code == 401
    assert response.json() == {"error": {"code": "authentication_failed", "message": message, "fields": {}}}
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_a_disabled_person_is_refused_even_with_a_valid_token(client, oidc, ursula):
    ursula.is_active = False
    ursula.save(update_fields=["is_active"])

    response = get_me(client, sign({}))

    assert (response.status_code, response.json()["error"]["message"]) == (401, "This account is disabled.")


def test_api_keys_keep_working_beside_access_tokens(client, oidc, ursula, workspace, ada):
    _, raw_key = api_key_create(workspace=workspace, name="ci", scopes="read", actor=Actor.for_user(ada))

    assert get_me(client, raw_key).json()["source"] == "api:ci"
    assert get_me(client, "ahk_1_wrong").json()["error"]["message"] == "Invalid or revoked API key."


def test_an_unreachable_key_set_is_503_not_401(client, oidc, settings, ursula):
    settings.OIDC_OP_JWKS_ENDPOINT = "http://127.0.0.1:9/jwks"
    _jwks_client.cache_clear()

    response = get_me(client, sign({}))

    assert response.status_code == 503
    assert response.json()["error"] == {
        "code": "identity_provider_unavailable",
        "message": "The identity provider's signing keys could not be fetched; try again shortly.",
        "fields": {},
    }


def test_without_oidc_a_token_is_just_a_wrong_api_key(client, ursula):
    response = get_me(client, sign({}))

    assert (response.status_code, response.json()["error"]["message"]) == (401, "Invalid or revoked API key.")


# --- the login page, the routes and the settings ----------------------------------------
@pytest.fixture
def sso_on(settings) -> None:
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_OP_ISSUER = ISSUER
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{ISSUER}/auth"
    settings.AUTHENTICATION_BACKENDS = ["aihummer.sso.backend.OidcBackend", "django.contrib.auth.backends.ModelBackend"]


def test_the_login_page_offers_sso_only_when_configured(client, db, settings):
    assert "Log in with SSO" not in client.get("/admin/login/").content.decode()
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404

    settings.OIDC_ENABLED = True
    page = client.get("/admin/login/?next=/admin/agents/").content.decode()

    assert 'href="/oidc/authenticate/?next=/admin/agents/"' in page
    assert 'name="password"' in page


def test_sso_login_starts_at_the_provider_with_state_nonce_and_pkce(client, db, sso_on):
    response = client.get("/oidc/authenticate/?next=/admin/agents/")

    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith(f"{ISSUER}/auth?response_type=code&scope=openid+email+profile&client_id={CLIENT_ID}")
    assert "redirect_uri=http%3A%2F%2Ftestserver%2Foidc%2Fcallback%2F" in location
    assert all(f"&{name}=" in location for name in ("state", "nonce", "code_challenge"))
    assert client.session["oidc_login_next"] == "/admin/agents/"


def test_without_local_accounts_the_password_form_is_gone_and_refused(client, bob, sso_on, settings):
    settings.AIHUMMER_LOCAL_LOGIN = False
    settings.AUTHENTICATION_BACKENDS = ["aihummer.sso.backend.OidcBackend"]

    page = client.get("/admin/login/").content.decode()
    response = client.post("/admin/login/", {"username": "bob", "password": "pw-bob"}, follow=True)

    assert "Log in with SSO" in page
    assert 'name="password"' not in page
    assert "Local accounts are turned off; log in with SSO." in response.content.decode()
    assert "_auth_user_id" not in client.session


def start_login(client) -> str:
    """The state this browser was given for the provider's round trip."""
    location = client.get("/oidc/authenticate/")["Location"]
    return next(part.split("=", 1)[1] for part in location.split("&") if part.startswith("state="))


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ("access_denied", "Single sign-on did not complete: access was refused at the identity provider."),
        (
            "login_required",
            "Single sign-on did not complete: your session at the identity provider has ended; log in again.",
        ),
        ("temporarily_unavailable", "Single sign-on did not complete: the identity provider answered “Try later”."),
    ],
)
def test_a_provider_error_returns_to_the_login_page_saying_why(client, db, sso_on, error, message):
    state = start_login(client)

    response = client.get(f"/oidc/callback/?error={error}&error_description=Try+later&state={state}", follow=True)

    assert response.redirect_chain == [("/admin/login/", 302)]
    assert message in response.content.decode()
    assert state not in client.session["oidc_states"]  # never usable again


def test_a_forged_callback_shows_no_text_of_its_own(client, db, sso_on):
    start_login(client)
    crafted = client.get("/oidc/callback/?error=x&error_description=Call+555-0100&state=forged", follow=True)
    unknown = client.get("/oidc/callback/?code=abc&state=never-issued", follow=True)

    for response in (crafted, unknown):
        assert response.redirect_chain == [("/admin/login/", 302)]
        assert "Single sign-on did not complete: try again, or ask an administrator." in response.content.decode()
    # The crafted text, in any form a page could show it (a bare "555" may be in a CSRF token).
    page = crafted.content.decode()
    assert not any(text in page for text in ("Call 555-0100", "555-0100", "Call+555"))


def test_a_local_session_logs_out_as_before_and_is_never_refreshed(client, bob, sso_on, settings):
    settings.OIDC_OP_LOGOUT_ENDPOINT = f"{ISSUER}/logout"
    client.force_login(bob, backend="django.contrib.auth.backends.ModelBackend")

    assert client.get("/admin/").status_code == 200  # SessionRefresh leaves local sessions alone
    response = client.post("/admin/logout/")

    assert response.status_code == 200
    assert "_auth_user_id" not in client.session


def test_an_sso_session_logs_out_at_the_provider_too(client, bob, sso_on, settings):
    settings.OIDC_OP_LOGOUT_ENDPOINT = f"{ISSUER}/logout"
    client.force_login(bob, backend="aihummer.sso.backend.OidcBackend")
    session = client.session
    session["oidc_id_token"] = "the-id-token"
    session["oidc_id_token_expiration"] = time.time() + 600
    session.save()

    assert client.get("/admin/").status_code == 200
    response = client.post("/admin/logout/")

    assert response.status_code == 302
    assert response["Location"] == (
        f"{ISSUER}/logout?client_id={CLIENT_ID}&post_logout_redirect_uri=http%3A%2F%2Ftestserver%2Fadmin%2Flogin%2F"
        "&id_token_hint=the-id-token"
    )
    assert "_auth_user_id" not in client.session


def test_an_sso_session_due_for_renewal_goes_back_to_the_provider_silently(client, bob, sso_on):
    client.force_login(bob, backend="aihummer.sso.backend.OidcBackend")
    session = client.session
    session["oidc_id_token_expiration"] = time.time() - 1
    session.save()

    page = client.get("/admin/")
    api = client.get("/v1/me")

    assert page.status_code == 302
    assert page["Location"].startswith(f"{ISSUER}/auth?response_type=code")
    assert "prompt=none" in page["Location"]
    assert api.status_code == 401  # the API is never redirected to a login page


def run_settings(environ: dict[str, str], *, show: str = ""):
    """Start Django in a fresh process with `environ`; print setting `show`."""
    import os
    import subprocess
    import sys

    from django.conf import settings

    code = "import django; django.setup(); from django.conf import settings; print('started')"
    if show:
        code += f"; print(settings.{show})"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OIDC_", "AIHUMMER_"))} | environ
    return subprocess.run(
        [sys.executable, "-c", code], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, check=False
    )


def test_with_sso_configured_local_accounts_can_be_turned_off():
    environ = {
        "OIDC_RP_CLIENT_ID": "aihummer",
        "OIDC_RP_CLIENT_SECRET": "s3cret",
        "OIDC_OP_ISSUER": ISSUER,
        "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{ISSUER}/auth",
        "OIDC_OP_TOKEN_ENDPOINT": f"{ISSUER}/token",
        "OIDC_OP_JWKS_ENDPOINT": f"{ISSUER}/jwks",
        "AIHUMMER_OIDC_GROUP_ROLES": '{"ops": ["acme:admin", "globex:viewer"]}',
    }

    both = run_settings(environ, show="AUTHENTICATION_BACKENDS")
    sso_only = run_settings(environ | {"AIHUMMER_LOCAL_LOGIN": "false"}, show="AUTHENTICATION_BACKENDS")
    mapping = run_settings(environ, show="AIHUMMER_OIDC_GROUP_ROLES")

    assert both.stdout.splitlines()[-1] == (
        "['aihummer.sso.backend.OidcBackend', 'django.contrib.auth.backends.ModelBackend']"
    ), both.stderr
    assert sso_only.stdout.splitlines()[-1] == "['aihummer.sso.backend.OidcBackend']", sso_only.stderr
    assert mapping.stdout.splitlines()[-1] == "{'ops': [('acme', 'admin'), ('globex', 'viewer')]}"


def test_local_login_cannot_be_turned_off_without_sso():
    result = run_settings({"AIHUMMER_LOCAL_LOGIN": "false"})

    assert result.returncode != 0
    assert "AIHUMMER_LOCAL_LOGIN=false needs single sign-on (OIDC_RP_CLIENT_ID): nobody could log in." in result.stderr


def test_sso_settings_name_what_is_missing():
    result = run_settings(
        {"OIDC_RP_CLIENT_ID": "aihummer", "OIDC_API_AUDIENCE": AUDIENCE, "OIDC_RP_SIGN_ALGO": "HS256"}
    )

    assert result.returncode != 0
    assert (
        "OIDC_RP_CLIENT_ID is set but OIDC_RP_CLIENT_SECRET, OIDC_OP_ISSUER, OIDC_OP_AUTHORIZATION_ENDPOINT, "
        "OIDC_OP_TOKEN_ENDPOINT, OIDC_OP_JWKS_ENDPOINT is not."
    ) in result.stderr


def test_an_sso_managed_role_cannot_be_edited_in_the_admin(workspace):
    from aihummer.admin import MembershipForm

    user = oidc_user_sync(issuer=ISSUER, claims=claims_for(groups=["aihummer:acme:viewer"]))
    membership = user.memberships.get()

    form = MembershipForm(instance=membership, data={"user": "ursula", "role": "admin"})

    assert form.errors == {
        "role": ["This role comes from the person's groups at the identity provider; change the groups there."]
    }


def test_made_up_key_ids_do_not_make_the_server_fetch_the_keys_again(client, oidc, ursula, httpserver):
    for kid in ("made-up-1", "made-up-2", "made-up-3"):
        assert get_me(client, sign({}, kid=kid)).status_code == 401

    assert get_me(client, sign({})).status_code == 200
    assert [request.path for request, _ in httpserver.log] == ["/jwks"]


def test_a_repeat_login_with_unchanged_groups_writes_only_the_login_time(workspace, django_assert_num_queries):
    claims = claims_for(groups=["aihummer:acme:reviewer"])
    oidc_user_sync(issuer=ISSUER, claims=claims)

    # identity and user, login time, lock on the person, their memberships, the workspaces
    # named; and the savepoint of the test's transaction, released
    with django_assert_num_queries(7):
        oidc_user_sync(issuer=ISSUER, claims=claims)


def test_a_token_with_characters_beyond_latin_1_is_401_not_500(client, oidc, ursula):
    response = get_me(client, "eyJ.ünïcödé.€")

    assert response.status_code == 401
