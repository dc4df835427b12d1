"""A real OpenID provider for tests: `oidc-provider` (npm) in a Node.js process on
127.0.0.1, installed by bin/ensure-oidc-provider (aihummer/tests/oidc_provider/).

Its people are a JSON file the provider re-reads at every lookup, so a test changes
someone's groups with `provider.set_account(...)` while it runs.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from pathlib import Path

from django.conf import settings

from aihummer.tests.ports import free_port

BIN = Path(settings.BASE_DIR) / "bin" / "ensure-oidc-provider"
SCRIPT = Path(settings.BASE_DIR) / "var" / "oidc-provider" / "provider.mjs"
START_TIMEOUT_SECONDS = 15


class OidcTestProvider:
    client_id = "aihummer-admin"
    client_secret = "test-client-secret-not-for-production"
    audience = "https://aihummer.test/v1"

    def __init__(self, *, workdir: Path, app_url: str) -> None:
        self.accounts_file = workdir / "oidc-accounts.json"
        self.accounts: dict[str, dict] = {}
        self.app_url = app_url.rstrip("/")
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

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
        }
        self.process = subprocess.Popen(
            ["node", str(SCRIPT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        output = []
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if not selector.select(timeout=deadline - time.monotonic()):
                    break
                line = self.process.stdout.readline()
                if not line:
                    break
                output.append(line)
                if line.startswith("ready "):
                    return
        self.stop()
        raise RuntimeError("The OIDC test provider did not start:\n" + "".join(output))

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
            "AUTHENTICATION_BACKENDS": [
                "aihummer.sso.backend.OidcBackend",
                "django.contrib.auth.backends.ModelBackend",
            ],
        }
