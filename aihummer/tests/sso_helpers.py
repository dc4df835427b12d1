"""A signed-token identity provider for the tests: its keys, its tokens (`sign`), the
settings that trust it (`oidc`) and a person it vouches for (`ursula`). A pytest plugin
of the root conftest: its fixtures reach every app's tests."""

from __future__ import annotations

import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from aihummer.models import User
from aihummer.sso.services import oidc_user_sync
from aihummer.sso.tokens import _jwks_client

ISSUER = "https://idp.example.com/realms/acme"


AUDIENCE = "https://aihummer.example.com/v1"


CLIENT_ID = "aihummer-admin"


KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


# --- the person and their roles at each login -----------------------------------------
def claims_for(sub: str = "u-123", **extra: object) -> dict:
    return {
        "sub": sub,
        "email": "ursula@example.com",
        "name": "Ursula Franklin",
        "preferred_username": "ursula",
    } | extra


# --- bearer access tokens on the API ----------------------------------------------------
def sign(claims: dict, *, key: rsa.RSAPrivateKey = KEY, kid: str = "k1", algorithm: str = "RS256") -> str:
    now = int(time.time())
    payload = {"iss": ISSUER, "sub": "u-123", "aud": AUDIENCE, "iat": now, "exp": now + 300} | claims
    return jwt.encode(payload, key, algorithm=algorithm, headers={"kid": kid, "typ": "at+jwt"})


@pytest.fixture
def oidc(settings, httpserver):
    """OIDC settings whose JWKS endpoint is a real HTTP server publishing KEY as `k1`."""
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key(), as_dict=True) | {"kid": "k1", "alg": "RS256"}
    httpserver.expect_request("/jwks").respond_with_json({"keys": [jwk]})
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_OP_ISSUER = ISSUER
    settings.OIDC_OP_JWKS_ENDPOINT = httpserver.url_for("/jwks")
    settings.OIDC_API_AUDIENCE = AUDIENCE
    _jwks_client.cache_clear()
    yield
    _jwks_client.cache_clear()


@pytest.fixture
def ursula(workspace) -> User:
    return oidc_user_sync(issuer=ISSUER, claims=claims_for(groups=["aihummer:acme:reviewer"]))
