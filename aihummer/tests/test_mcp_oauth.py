"""Signing in to /mcp with OAuth (issue 31), end to end: a live uvicorn, the real
OpenID provider the SSO tests run (npm `oidc-provider`), and the official MCP Python
SDK's OAuth client, which discovers everything from the 401 (RFC 9728 metadata, then
the provider's), signs the person in, gets a token for the /mcp resource (RFC 8707)
and calls tools as that person — with a pre-registered client, or one the SDK registers
itself (RFC 7591 dynamic registration, open at the provider). Tokens for another
audience, without the published scope, or expired, are refused; API keys keep working
beside OAuth."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx2
import jwt
import pytest
from django.core.exceptions import PermissionDenied
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.types import Implementation

from agents.models import Agent, PromptVersion
from agents.services import prompt_version_approve
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.sso.services import oidc_user_sync
from aihummer.tests.factories import make_agent, make_echo_preset, make_key
from aihummer.tests.mcp_helpers import http_client, live_uvicorn, node_tools, ok, server_env, with_client
from aihummer.tests.ports import free_port
from aihummer.tests.sso_provider import OidcTestProvider

pytestmark = pytest.mark.django_db(transaction=True)

URSULA = {"email": "ursula@example.com", "email_verified": True, "name": "Ursula", "groups": ["aihummer:acme:reviewer"]}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Stack:
    """The provider, the app (uvicorn) and the person, as one test sees them."""

    def __init__(self, provider: OidcTestProvider, url: str, ursula: User) -> None:
        self.provider, self.url, self.ursula = provider, url, ursula

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    def post_initialize(self, token: str | None) -> httpx2.Response:
        headers = MCP_HEADERS | ({"Authorization": f"Bearer {token}"} if token else {})
        return httpx2.post(self.mcp_url, json=INITIALIZE, headers=headers, timeout=10)


def start_servers(workdir: Path, *, token_ttl: int = 600, leeway: int = 30) -> Iterator[tuple[OidcTestProvider, str]]:
    """The provider, where ursula has an account, and the app on it: (provider, app URL)."""
    port = free_port()
    provider = OidcTestProvider(workdir=workdir, app_url=f"http://127.0.0.1:{port}", mcp_token_ttl=token_ttl)
    provider.set_account("ursula", **URSULA)
    provider.start()
    try:
        environment = server_env(**provider.environment(), OIDC_CLOCK_LEEWAY_SECONDS=str(leeway))
        with live_uvicorn(environment, port=port) as url:
            yield provider, url
    finally:
        provider.stop()


def stack_on(provider: OidcTestProvider, url: str) -> Stack:
    # Her first admin login through the provider, as single sign-on records it (acme exists).
    return Stack(provider, url, oidc_user_sync(issuer=provider.issuer, claims={"sub": "ursula", **URSULA}))


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory, django_db_setup: None) -> Iterator[tuple[OidcTestProvider, str]]:
    """Started once for the module (two processes, about 3 s of CPU): each test makes its
    rows and signs in afresh, and the transactional teardown empties the database the
    app reads; the provider keeps only its grants and the clients that registered."""
    yield from start_servers(tmp_path_factory.mktemp("oidc"))


@pytest.fixture
def stack(servers: tuple[OidcTestProvider, str], workspace: Workspace) -> Stack:
    return stack_on(*servers)


@pytest.fixture
def writer(workspace: Workspace, ada: User) -> Agent:
    make_echo_preset(workspace, by=ada)
    return make_agent(workspace, "writer", "Écris.", by=ada)


class MemoryStorage(TokenStorage):
    """The client's storage: the pre-registered client, and the tokens it gets."""

    def __init__(self, client_info: OAuthClientInformationFull | None) -> None:
        self.client_info, self.tokens = client_info, None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def oauth_client(stack: Stack, login: str, seen: dict[str, Any], *, pre_registered: bool = True) -> Client:
    """The official client with the SDK's OAuth support; the person's browser is
    `provider.sign_in` (login and consent), run when the SDK hands over the URL. Not
    `pre_registered`: its storage holds no client, so the SDK registers one at the
    provider's registration endpoint first (RFC 7591)."""
    provider = stack.provider
    metadata = OAuthClientMetadata(
        redirect_uris=[provider.mcp_redirect_uri],
        token_endpoint_auth_method="client_secret_post",
        grant_types=["authorization_code"],
        client_name="oauth-test",
    )
    registered = None
    if pre_registered:
        registered = OAuthClientInformationFull(
            **metadata.model_dump(exclude_none=True),
            client_id=provider.mcp_client_id,
            client_secret=provider.mcp_client_secret,
        )

    async def redirect(url: str) -> None:
        seen["authorization_url"] = url
        seen["callback"] = await anyio.to_thread.run_sync(provider.sign_in, url, login)

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(**seen["callback"])

    auth = OAuthClientProvider(
        server_url=stack.mcp_url,
        client_metadata=metadata,
        storage=MemoryStorage(registered),
        redirect_handler=redirect,
        callback_handler=callback,
    )
    seen["storage"] = auth.context.storage
    transport = streamable_http_client(stack.mcp_url, http_client=httpx2.AsyncClient(auth=auth, timeout=30))
    return Client(transport, client_info=Implementation(name="oauth-test", version="1"))


def test_a_person_signs_in_from_the_401_and_proposes_as_themselves(stack: Stack, writer: Agent) -> None:
    # The 401 says where to learn how to sign in; the metadata names the provider.
    refused = stack.post_initialize(None)
    metadata_url = f"{stack.url}/.well-known/oauth-protected-resource/mcp"
    assert refused.status_code == 401
    assert f'resource_metadata="{metadata_url}"' in refused.headers["www-authenticate"]
    document = httpx2.get(metadata_url, timeout=10).json()
    assert document["resource"] == stack.mcp_url
    assert document["authorization_servers"] == [stack.provider.issuer]
    assert document["scopes_supported"] == ["mcp"]
    assert httpx2.get(f"{stack.url}/.well-known/oauth-protected-resource", timeout=10).json() == document

    seen: dict[str, Any] = {}

    async def work(client: Client) -> tuple:
        await client.list_tools()
        read = await client.call_tool("get_agent", {"agentId": "writer"})
        proposed = await client.call_tool(
            "update_agent_system_prompt", {"agentId": "writer", "systemPrompt": "Écris court.", "reason": "Bref"}
        )
        return read, proposed

    read, proposed = with_client(oauth_client(stack, "ursula", seen), work)

    assert seen["authorization_url"].startswith(f"{stack.provider.issuer}/auth?")
    assert "resource=http%3A%2F%2F127.0.0.1" in seen["authorization_url"]
    assert seen["authorization_url"].endswith("&scope=mcp")  # the SDK asks what the metadata publishes
    claims = jwt.decode(seen["storage"].tokens.access_token, options={"verify_signature": False})
    assert (claims["aud"], claims["sub"], claims["iss"]) == (stack.mcp_url, "ursula", stack.provider.issuer)
    assert claims["scope"] == "mcp"
    assert ok(read)["agentId"] == "writer"
    body = ok(proposed)
    version = PromptVersion.objects.get(pk=body["versionId"])
    source = f"mcp:{stack.ursula.get_username()}"
    assert (version.status, version.proposed_by, version.source) == ("pending", stack.ursula, source)
    assert body["reviewUrl"] == f"{stack.url}/admin/agents/promptversion/{version.pk}/review/"
    # A reviewer, but this is her own proposal: four eyes hold over MCP too.
    with pytest.raises(PermissionDenied):
        prompt_version_approve(version=version, actor=Actor.for_user(stack.ursula))


def test_a_client_without_a_registration_registers_itself_then_signs_in(stack: Stack, writer: Agent) -> None:
    seen: dict[str, Any] = {}

    async def work(client: Client) -> Any:
        return await client.call_tool("get_agent", {"agentId": "writer"})

    read = with_client(oauth_client(stack, "ursula", seen, pre_registered=False), work)

    registered = seen["storage"].client_info
    assert registered is not None and registered.client_id not in ("", stack.provider.mcp_client_id)
    assert registered.client_secret  # client_secret_post, as the client asked
    assert f"client_id={registered.client_id}" in seen["authorization_url"]
    claims = jwt.decode(seen["storage"].tokens.access_token, options={"verify_signature": False})
    assert (claims["client_id"], claims["aud"], claims["scope"]) == (registered.client_id, stack.mcp_url, "mcp")
    assert ok(read)["agentId"] == "writer"


def test_a_token_for_another_audience_is_refused(stack: Stack) -> None:
    api_token = stack.provider.access_token("ursula", resource=stack.provider.audience, scope="openid api")

    refused = stack.post_initialize(api_token)

    assert refused.status_code == 401
    assert refused.json() == {
        "error": "invalid_token",
        "error_description": f"The token is not meant for this MCP server (audience {stack.mcp_url}).",
    }
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert stack.post_initialize(stack.provider.access_token("ursula", resource=stack.mcp_url)).status_code == 200


def test_a_token_without_the_published_scope_is_refused_with_the_scope_to_ask_for(stack: Stack) -> None:
    # The provider's token for /mcp, signed in asking `openid` only: valid, for the right
    # audience, but without the `mcp` scope the metadata publishes.
    token = stack.provider.access_token("ursula", resource=stack.mcp_url, scope="openid")
    assert "scope" not in jwt.decode(token, options={"verify_signature": False})

    refused = stack.post_initialize(token)

    reason = "The token lacks the scope mcp: sign in again asking for it."
    assert refused.status_code == 403
    assert refused.json() == {"error": "insufficient_scope", "error_description": reason}
    assert refused.headers["www-authenticate"] == (
        f'Bearer realm="aihummer", error="insufficient_scope", error_description="{reason}", scope="mcp", '
        f'resource_metadata="{stack.url}/.well-known/oauth-protected-resource/mcp"'
    )


def test_an_api_key_keeps_working_beside_oauth(stack: Stack, workspace: Workspace, alice: User) -> None:
    raw_key = make_key(workspace, "ci-bot", "read", owner=alice)[1]

    answer = with_client(http_client(stack.url, raw_key), lambda client: client.call_tool("list_agents", {}))

    assert ok(answer)["count"] == 0


# The server's clock leeway, short here so that the test waits seconds, not half a minute;
# long enough that the first call, right after the token is issued, is inside it.
SHORT_LEEWAY = 5


def test_an_expired_token_is_refused(tmp_path: Path, workspace: Workspace) -> None:
    # Servers of its own: tokens that expire after 1 s.
    for provider, url in start_servers(tmp_path, token_ttl=1, leeway=SHORT_LEEWAY):
        stack = stack_on(provider, url)
        token = stack.provider.access_token("ursula", resource=stack.mcp_url)
        assert stack.post_initialize(token).status_code == 200
        claims = jwt.decode(token, options={"verify_signature": False})
        expiry = claims["exp"]
        assert expiry - claims["iat"] == 1
        # Past its expiry and the clock leeway both servers allow.
        time.sleep(max(0.0, expiry + SHORT_LEEWAY + 1 - time.time()))

        refused = stack.post_initialize(token)

        assert refused.status_code == 401
        assert json.loads(refused.text)["error_description"] == "The token has expired."


def test_the_mcp_inspector_lists_and_calls_a_tool_with_an_oauth_token(stack: Stack, writer: Agent) -> None:
    """The official MCP Inspector's CLI (pinned, on Node 22) over HTTP, with the access
    token the provider issued to the person for /mcp."""
    token = stack.provider.access_token("ursula", resource=stack.mcp_url)
    env = node_tools()
    inspector = ["mcp-inspector", "--cli", stack.mcp_url, "--transport", "http"]
    inspector += ["--header", f"Authorization: Bearer {token}"]

    def run(*arguments: str) -> dict:
        done = subprocess.run([*inspector, *arguments], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return json.loads(done.stdout)

    listed = run("--method", "tools/list")
    called = run("--method", "tools/call", "--tool-name", "get_agent", "--tool-arg", "agentId=writer")

    assert "get_agent" in [tool["name"] for tool in listed["tools"]]
    assert all("outputSchema" in tool for tool in listed["tools"])
    assert called["structuredContent"]["agentId"] == "writer"
    assert json.loads(called["content"][0]["text"]) == called["structuredContent"]
