"""A real OpenID provider for tests: `oidc-provider` (npm) in a Node.js process on
127.0.0.1, installed by bin/ensure-oidc-provider (aihummer/tests/oidc_provider/).

Its people are a JSON file the provider re-reads at every lookup, so a test changes
someone's groups with `provider.set_account(...)` while it runs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import selectors
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import requests
from django.conf import settings

from aihummer.tests.ports import free_port

BIN = Path(settings.BASE_DIR) / "bin" / "ensure-oidc-provider"
SCRIPT = Path(settings.BASE_DIR) / "var" / "oidc-provider" / "provider.mjs"
START_TIMEOUT_SECONDS = 60  # a bound for a loaded machine (it starts in about 1 s idle)
SIGN_IN_MAX_HOPS = 12


class OidcTestProvider:
    client_id = "aihummer-admin"
    client_secret = "test-client-secret-not-for-production"
    audience = "https://aihummer.test/v1"

    mcp_client_id = "mcp-test-client"
    mcp_client_secret = "mcp-test-client-secret"
    mcp_redirect_uri = "http://127.0.0.1:1/oauth/callback"  # never reached: the test reads the redirect

    def __init__(self, *, workdir: Path, app_url: str, mcp_token_ttl: int = 600) -> None:
        self.mcp_token_ttl = mcp_token_ttl
        self.accounts_file = workdir / "oidc-accounts.json"
        self.accounts: dict[str, dict] = {}
        self.app_url = app_url.rstrip("/")
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    @property
    def mcp_audience(self) -> str:
        """The /mcp resource of the app (RFC 8707): the audience of its access tokens."""
        return f"{self.app_url}/mcp"

    def set_account(self, sub: str, **claims: object) -> None:
        """Create or replace a person at the provider (their claims, `groups` included)."""
        self.accounts[sub] = claims
        self.accounts_file.write_text(json.dumps(self.accounts))

    def start(self) -> None:
        subprocess.run([str(BIN)], check=True, capture_output=True, timeout=300)
        self.accounts_file.write_text(json.dumps(self.accounts))
        env = {
            **os.environ,
            "PORT": str(self.port),
            "CLIENT_ID": self.client_id,
            "CLIENT_SECRET": self.client_secret,
            "REDIRECT_URI": f"{self.app_url}/oidc/callback/",
            "POST_LOGOUT_REDIRECT_URI": f"{self.app_url}/admin/login/",
            "API_AUDIENCE": self.audience,
            "ACCOUNTS_FILE": str(self.accounts_file),
            "MCP_AUDIENCE": self.mcp_audience,
            "MCP_CLIENT_ID": self.mcp_client_id,
            "MCP_CLIENT_SECRET": self.mcp_client_secret,
            "MCP_REDIRECT_URI": self.mcp_redirect_uri,
            "MCP_TOKEN_TTL": str(self.mcp_token_ttl),
        }
        self.process = subprocess.Popen(
            ["node", str(SCRIPT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        # Read the pipe's raw bytes: a buffered readline() may pull "ready" into Python's
        # buffer along with an earlier line, and select() on the descriptor then waits
        # for bytes that already arrived (lines coalesce when the machine is loaded).
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        descriptor = self.process.stdout.fileno()
        received = b""
        with selectors.DefaultSelector() as selector:
            selector.register(descriptor, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if not selector.select(timeout=deadline - time.monotonic()):
                    break
                chunk = os.read(descriptor, 65536)
                if not chunk:
                    break
                received += chunk
                if any(line.startswith(b"ready ") for line in received.splitlines()):
                    return
        self.stop()
        raise RuntimeError("The OIDC test provider did not start:\n" + received.decode(errors="replace"))

    def environment(self) -> dict[str, str]:
        """`django_settings()` as a server process's environment variables."""
        names = [name for name in self.django_settings() if name not in ("OIDC_ENABLED", "AUTHENTICATION_BACKENDS")]
        return {name: str(self.django_settings()[name]) for name in names}

    def sign_in(self, authorization_url: str, login: str) -> dict[str, str]:
        """What a person does in a browser: follow `authorization_url` through the
        provider's development login (any password) and consent pages; the query the
        provider redirects back with (`code`, `state`, `iss`)."""
        session = requests.Session()
        response = session.get(authorization_url, allow_redirects=False, timeout=10)
        for _ in range(SIGN_IN_MAX_HOPS):
            if location := response.headers.get("location"):
                target = urljoin(response.url, location)
                if target.startswith(self.mcp_redirect_uri):
                    return {name: values[0] for name, values in parse_qs(urlsplit(target).query).items()}
                response = session.get(target, allow_redirects=False, timeout=10)
                continue
            form = re.search(r'<form[^>]*action="([^"]+)"', response.text)
            if form is None:
                raise RuntimeError(f"The provider answered {response.status_code}: {response.text[:500]}")
            fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', response.text))
            if 'name="login"' in response.text:
                fields |= {"login": login, "password": "any password"}
            response = session.post(urljoin(response.url, form[1]), data=fields, allow_redirects=False, timeout=10)
        raise RuntimeError("The provider never redirected back.")

    def access_token(self, login: str, *, resource: str, scope: str = "mcp") -> str:
        """An access token for `resource`, by the authorization code flow (PKCE) of the
        MCP client, as any OAuth client would get it, asking for `scope` (the /mcp
        resource grants `mcp`; `openid` alone gives a token without it)."""
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        query = {
            "response_type": "code",
            "client_id": self.mcp_client_id,
            "redirect_uri": self.mcp_redirect_uri,
            "state": secrets.token_urlsafe(16),
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": resource,
            "scope": scope,
        }
        callback = self.sign_in(f"{self.issuer}/auth?{urlencode(query)}", login)
        response = requests.post(
            f"{self.issuer}/token",
            data={
                "grant_type": "authorization_code",
                "code": callback["code"],
                "redirect_uri": self.mcp_redirect_uri,
                "code_verifier": verifier,
                "client_id": self.mcp_client_id,
                "client_secret": self.mcp_client_secret,
                "resource": resource,
            },
            timeout=10,
        )
        response.raise_for_status()
        return response.json()["access_token"]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def django_settings(self) -> dict[str, object]:
        """The settings a deployment would set from its environment, for this provider."""
        return {
            "OIDC_ENABLED": True,
            "OIDC_RP_CLIENT_ID": self.client_id,
            "OIDC_RP_CLIENT_SECRET": self.client_secret,
            "OIDC_OP_ISSUER": self.issuer,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.issuer}/auth",
            "OIDC_OP_TOKEN_ENDPOINT": f"{self.issuer}/token",
            "OIDC_OP_USER_ENDPOINT": "",
            "OIDC_OP_JWKS_ENDPOINT": f"{self.issuer}/jwks",
            "OIDC_OP_LOGOUT_ENDPOINT": f"{self.issuer}/session/end",
            "OIDC_RP_SIGN_ALGO": "RS256",
            "OIDC_RP_SCOPES": "openid email profile groups",
            "OIDC_API_AUDIENCE": self.audience,
            "OIDC_MCP_AUDIENCE": self.mcp_audience,
            "AUTHENTICATION_BACKENDS": [
                "aihummer.sso.backend.OidcBackend",
                "django.contrib.auth.backends.ModelBackend",
            ],
        }
