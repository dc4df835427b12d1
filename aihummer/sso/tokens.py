"""Bearer access tokens from the OpenID provider, for the API and for /mcp.

`user_from_bearer_token()` is the one entry point: it checks the token's signature
against the provider's published keys (JWKS), its issuer, audience (`OIDC_API_AUDIENCE`
for the API, `OIDC_MCP_AUDIENCE` — the canonical URL of /mcp, RFC 8707 — for the MCP
server) and expiry, then finds the person by `(issuer, sub)`. Their roles are the
memberships single sign-on applied at their last login.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings

from aihummer.models import OidcIdentity, User

if TYPE_CHECKING:
    import jwt

# PyJWT (and the cryptography it loads, 35 ms) is imported where a token is read: the
# API's authentication and /mcp load this module in every web process, worker checks
# and MCP server, and most of them never see a provider's token.

# Public-key signatures only, whatever the ID token uses: the key comes from the
# provider's JWKS, and PyJWT refuses a key whose type does not fit the algorithm.
ACCESS_TOKEN_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]
# Keys are fetched once and kept this long; a token signed with a new key id makes
# PyJWKClient fetch the set again (at most once a minute), so a key rotation at the
# provider needs no restart.
JWKS_CACHE_SECONDS = 300
JWKS_REFRESH_SECONDS = 60
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"


class InvalidBearerToken(Exception):
    """The token is not one this server accepts; the message says why."""


class InsufficientScope(Exception):
    """A valid token that lacks a scope /mcp requires (`missing`): answered 403 with
    the scopes to ask for (RFC 6750 §3.1)."""

    def __init__(self, missing: list[str]) -> None:
        super().__init__(f"The token lacks the scope {' '.join(missing)}: sign in again asking for it.")
        self.missing = missing


class IdentityProviderUnavailable(Exception):
    """The provider's keys could not be fetched: nobody is at fault but the network."""


def bearer_tokens_enabled() -> bool:
    return bool(settings.OIDC_ENABLED and settings.OIDC_API_AUDIENCE)


def mcp_tokens_enabled() -> bool:
    """Whether /mcp accepts the provider's access tokens (and publishes its OAuth
    protected-resource metadata)."""
    return bool(settings.OIDC_ENABLED and settings.OIDC_MCP_AUDIENCE)


@functools.cache
def _jwks_client(url: str) -> jwt.PyJWKClient:
    import jwt

    # cooldown_duration: made-up key ids make PyJWT fetch the set again at most this
    # often, so nobody can make this server hammer the provider.
    return jwt.PyJWKClient(
        url,
        cache_keys=True,
        lifespan=JWKS_CACHE_SECONDS,
        timeout=settings.OIDC_TIMEOUT,
        cooldown_duration=JWKS_REFRESH_SECONDS,
    )


def signing_key(token: str) -> Any:
    """The provider's public key that signed `token` (by its `kid`)."""
    import jwt

    try:
        return _jwks_client(settings.OIDC_OP_JWKS_ENDPOINT).get_signing_key_from_jwt(token).key
    except jwt.PyJWKClientConnectionError as exc:
        raise IdentityProviderUnavailable("The identity provider's signing keys could not be fetched.") from exc
    except jwt.PyJWKClientError as exc:
        raise InvalidBearerToken(f"Invalid token: {exc}") from exc
    except jwt.DecodeError as exc:
        raise InvalidBearerToken(f"Invalid token: {exc}") from exc


def access_token_claims(token: str, *, audience: str, meant_for: str = "API") -> dict[str, Any]:
    """The claims of a valid access token for `audience`; `InvalidBearerToken` says
    what is wrong."""
    import jwt

    key = signing_key(token)
    try:
        return jwt.decode(
            token,
            key,
            algorithms=ACCESS_TOKEN_ALGORITHMS,
            audience=audience,
            issuer=settings.OIDC_OP_ISSUER,
            leeway=settings.OIDC_CLOCK_LEEWAY_SECONDS,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise InvalidBearerToken("The token has expired.") from exc
    except jwt.InvalidAudienceError as exc:
        raise InvalidBearerToken(f"The token is not meant for this {meant_for} (audience {audience}).") from exc
    except jwt.InvalidIssuerError as exc:
        raise InvalidBearerToken(f"The token was not issued by {settings.OIDC_OP_ISSUER}.") from exc
    except jwt.InvalidSignatureError as exc:
        raise InvalidBearerToken("The token's signature does not verify.") from exc
    except jwt.InvalidAlgorithmError as exc:
        raise InvalidBearerToken(f"The token must be signed with one of {', '.join(ACCESS_TOKEN_ALGORITHMS)}.") from exc
    except jwt.InvalidTokenError as exc:
        raise InvalidBearerToken(f"Invalid token: {exc}") from exc


def granted_scopes(claims: dict[str, Any]) -> set[str]:
    """The scopes an access token grants: RFC 9068's space-separated `scope`, or the
    `scp` claim some providers use instead (a list or a string)."""
    granted = claims.get("scope", claims.get("scp", ""))
    if isinstance(granted, str):
        return set(granted.split())
    return {item for item in granted if isinstance(item, str)} if isinstance(granted, list) else set()


def user_from_bearer_token(token: str, *, for_mcp: bool = False) -> User:
    """The active person a provider-issued access token stands for: a token for the
    API, or with `for_mcp` one for the MCP server (each refuses the other's).

    Raises `InvalidBearerToken` (answer 401), `InsufficientScope` (403: a token for
    /mcp without one of `OIDC_MCP_SCOPES`) or `IdentityProviderUnavailable` (503).
    """
    if not (mcp_tokens_enabled() if for_mcp else bearer_tokens_enabled()):
        raise InvalidBearerToken("Access tokens from the identity provider are not accepted here.")
    if for_mcp:
        claims = access_token_claims(token, audience=settings.OIDC_MCP_AUDIENCE, meant_for="MCP server")
        if missing := [scope for scope in settings.OIDC_MCP_SCOPES if scope not in granted_scopes(claims)]:
            raise InsufficientScope(missing)
    else:
        claims = access_token_claims(token, audience=settings.OIDC_API_AUDIENCE)
    identity = (
        OidcIdentity.objects.select_related("user")
        .filter(issuer=settings.OIDC_OP_ISSUER, subject=str(claims["sub"]))
        .first()
    )
    if identity is None:
        raise InvalidBearerToken("No AiHummer account has signed in with this identity yet; sign in to the admin once.")
    if not identity.user.is_active:
        raise InvalidBearerToken("This account is disabled.")
    return identity.user


def resource_metadata_url() -> str:
    """Where a 401 on /mcp points clients (`resource_metadata`): the path-suffixed
    well-known URL of the resource (RFC 9728 §3.1)."""
    parts = urlsplit(settings.OIDC_MCP_AUDIENCE)
    return f"{parts.scheme}://{parts.netloc}{PROTECTED_RESOURCE_PATH}{parts.path.rstrip('/')}"
