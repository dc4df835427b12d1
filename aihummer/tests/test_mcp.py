"""The MCP server's two transports, driven by the official MCP client: stdio (spawning
`manage.py mcp`) and streamable HTTP (a live uvicorn serving `aihummer.asgi:application`).

The servers are other processes on the test database, so rows are committed
(`transaction=True`). One uvicorn serves the whole module; the stdio tests spawn one
process each. Every session is bounded in time (`with_client`).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.conf import settings
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import Implementation

from agents.mcp import PENDING_MESSAGE
from agents.models import Agent, Preset, PromptVersion
from agents.selectors import prompt_version_queue
from agents.services import prompt_version_approve
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.services import api_key_revoke
from aihummer.tests.factories import echo_sp, make_agent, make_echo_preset, make_key
from aihummer.tests.mcp_helpers import error, http_client, in_thread, live_uvicorn, ok, server_env, with_client

pytestmark = pytest.mark.django_db(transaction=True)

OLD_PROMPT = "Tu es un rédacteur soigneux."
NEW_PROMPT = "Tu es un rédacteur soigneux. Trois phrases au plus."
TOOL_COUNT = 22


# --- helpers ------------------------------------------------------------------------------------


@pytest.fixture
def writer(workspace: Workspace, ada: User) -> Agent:
    make_echo_preset(workspace, by=ada)
    return make_agent(workspace, "writer", OLD_PROMPT, by=ada)


@pytest.fixture
def write_key(workspace: Workspace, alice: User) -> str:
    return make_key(workspace, "ci-bot", "read,write", owner=alice)[1]


# --- stdio ---------------------------------------------------------------------------------------
def stdio_params(raw_key: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp"],
        cwd=str(settings.BASE_DIR),
        env=server_env(AIHUMMER_API_KEY=raw_key),
    )


def test_over_stdio_a_proposal_waits_for_bob_then_goes_live(writer: Agent, write_key: str, bob: User) -> None:
    v1 = writer.live_version

    def approve(version_id: int) -> None:
        prompt_version_approve(version=PromptVersion.objects.get(pk=version_id), actor=Actor.for_user(bob))

    async def work(client: Client) -> dict:
        seen = {"tools": len((await client.list_tools()).tools)}
        seen["before"] = await client.call_tool("run_agent_test", {"agentKey": "writer", "input": "Bonjour"})
        seen["proposed"] = await client.call_tool(
            "update_agent_system_prompt", {"agentId": "writer", "systemPrompt": NEW_PROMPT, "reason": "Plus court"}
        )
        seen["queue"] = await in_thread(lambda: list(prompt_version_queue(actor=Actor.for_user(bob)).pending()))
        seen["during"] = await client.call_tool("run_agent_test", {"agentKey": "writer", "input": "Bonjour"})
        await in_thread(lambda: approve(seen["proposed"].structured_content["versionId"]))
        seen["after"] = await client.call_tool("run_agent_test", {"agentKey": "writer", "input": "Bonjour"})
        return seen

    client = Client(stdio_params(write_key), client_info=Implementation(name="stdio-test", version="1"))
    seen = with_client(client, work)

    assert seen["tools"] == TOOL_COUNT
    proposed = ok(seen["proposed"])
    assert proposed["message"] == PENDING_MESSAGE
    [queued] = seen["queue"]
    assert (queued.pk, queued.source, queued.reason) == (proposed["versionId"], "mcp:ci-bot/stdio-test", "Plus court")
    old_answer = f"[echo echo-1] Bonjour #sp={echo_sp(v1)}"
    assert ok(seen["before"])["answer"] == ok(seen["during"])["answer"] == old_answer
    version = PromptVersion.objects.get(pk=proposed["versionId"])
    assert (version.status, version.reviewed_by) == ("approved", bob)
    assert ok(seen["after"])["answer"] == f"[echo echo-1] Bonjour #sp={echo_sp(version)}" != old_answer


def test_over_stdio_a_revoked_key_is_refused_before_serving(workspace: Workspace) -> None:
    api_key, raw_key = make_key(workspace, "gone", "read")
    api_key_revoke(api_key=api_key, actor=Actor.for_operator())

    with tempfile.TemporaryFile("w+") as errlog:
        with pytest.raises(Exception):  # noqa: B017, PT011  (the client only sees a closed pipe)
            with_client(Client(stdio_client(stdio_params(raw_key), errlog=errlog)), lambda client: client.list_tools())
        errlog.seek(0)
        assert "AIHUMMER_API_KEY is not a live API key: it is unknown, malformed or revoked." in errlog.read()


# --- streamable HTTP ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """`uvicorn aihummer.asgi:application` on a free port, for the whole module."""
    with django_db_blocker.unblock():
        env = server_env()
    with live_uvicorn(env) as url:
        yield url


def test_over_http_tools_are_listed_and_a_proposal_carries_the_clients_name(
    base_url: str, writer: Agent, write_key: str, bob: User
) -> None:
    async def propose(client: Client, prompt: str) -> tuple:
        tools = (await client.list_tools()).tools
        return tools, await client.call_tool(
            "update_agent_system_prompt", {"agentId": "writer", "systemPrompt": prompt}
        )

    tools, modern = with_client(http_client(base_url, write_key), lambda c: propose(c, NEW_PROMPT))
    _, legacy = with_client(
        http_client(base_url, write_key, name="legacy-client", mode="legacy"), lambda c: propose(c, NEW_PROMPT + "!")
    )

    assert len(tools) == TOOL_COUNT
    assert tools[0].input_schema["type"] == "object"
    assert ok(modern)["message"] == ok(legacy)["message"] == PENDING_MESSAGE
    queue = prompt_version_queue(actor=Actor.for_user(bob)).pending().order_by("number")
    assert [(v.number, v.source) for v in queue] == [(2, "mcp:ci-bot/http-test"), (3, "mcp:ci-bot/legacy-client")]
    writer.refresh_from_db()
    assert writer.live_version.number == 1


def test_over_http_a_missing_unknown_or_revoked_key_is_refused_at_connection(
    base_url: str, workspace: Workspace
) -> None:
    api_key, raw_key = make_key(workspace, "gone", "read")
    api_key_revoke(api_key=api_key, actor=Actor.for_operator())
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}

    answers = [
        httpx2.post(f"{base_url}/mcp", json=initialize, headers={**headers, **auth}, timeout=10)
        for auth in ({}, {"Authorization": "Bearer ahk_1_nope"}, {"Authorization": f"Bearer {raw_key}"})
    ]

    assert [answer.status_code for answer in answers] == [401, 401, 401]
    assert answers[0].json() == {"error": "invalid_token", "error_description": "Send Authorization: Bearer <API key>."}
    assert answers[2].json() == {"error": "invalid_token", "error_description": "Invalid, unknown or revoked API key."}
    assert answers[2].headers["www-authenticate"].startswith('Bearer realm="aihummer", error="invalid_token"')
    with pytest.raises(Exception):  # noqa: B017, PT011  (the SDK reports the 401 in its own way)
        with_client(http_client(base_url, raw_key), lambda client: client.list_tools())


def test_over_http_another_workspaces_key_sees_nothing(
    base_url: str, writer: Agent, other_workspace: Workspace, charlie: User
) -> None:
    _, globex_key = make_key(other_workspace, "globex-bot", "read,write", owner=charlie)

    async def look(client: Client) -> list:
        return [
            await client.call_tool("list_agents", {"includeSandbox": True}),
            await client.call_tool("get_agent", {"agentId": "writer"}),
            await client.call_tool("update_agent_system_prompt", {"agentId": "writer", "systemPrompt": NEW_PROMPT}),
        ]

    listed, read, proposed = with_client(http_client(base_url, globex_key), look)

    assert ok(listed)["count"] == 0
    assert error(read)["error"] == error(proposed)["error"] == "Unknown agent 'writer'."
    assert PromptVersion.objects.count() == 1


def test_over_http_a_session_answers_only_the_key_that_opened_it(
    base_url: str, workspace: Workspace, write_key: str
) -> None:
    other_key = make_key(workspace, "other-bot", "read")[1]
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    opened = httpx2.post(
        f"{base_url}/mcp", json=initialize, headers={**headers, "Authorization": f"Bearer {write_key}"}, timeout=10
    )
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

    hijack = httpx2.post(
        f"{base_url}/mcp",
        json=listing,
        headers={**headers, **session, "Authorization": f"Bearer {other_key}"},
        timeout=10,
    )

    owner = httpx2.post(
        f"{base_url}/mcp",
        json=listing,
        headers={**headers, **session, "Authorization": f"Bearer {write_key}"},
        timeout=10,
    )

    assert opened.status_code == owner.status_code == 200
    assert hijack.status_code == 404


def test_over_http_malformed_requests_are_refused_never_a_500(base_url: str, write_key: str) -> None:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {write_key}",
    }

    def post(body: str, **extra: str) -> int:
        return httpx2.post(f"{base_url}/mcp", content=body, headers={**headers, **extra}, timeout=10).status_code

    assert post("not json") == 400
    assert post("[]") == 400
    assert post('{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}') == 400
    assert post("{}", Host="evil.example.com") == 421  # DNS rebinding: not one of ALLOWED_HOSTS
    assert post("{}", Host="localhost:1@evil") == 421  # not a host with a port, whatever its prefix
    assert post("{}", Host="localhost:abc") == 421
    assert post("{}", Origin="http://evil.example.com") == 403
    assert post("{}", Origin="http://localhost:1@evil") == 403
    assert post("{}", Host="localhost:8123", Origin="http://localhost:9999") == 400  # both fine: the body is not


def test_over_http_everything_else_is_django(base_url: str, db: None) -> None:
    login = httpx2.get(f"{base_url}/admin/login/", timeout=10)

    assert login.status_code == 200
    assert "csrfmiddlewaretoken" in login.text
    assert httpx2.get(f"{base_url}/mcpx", timeout=10).status_code == 404
    assert Preset.objects.count() == 0
