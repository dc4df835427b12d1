"""Fixtures shared by the agents tests (the personas live in the root conftest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from agents.models import Agent, Preset
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import api_client, make_agent, make_echo_preset, vault_preset

PRICED_ECHO = {
    "name": "echo-paid",
    "label": "Echo, priced",
    "context_window": 200_000,
    "max_output_tokens": 8_000,
    "streaming": False,
    "tools": True,
    "vision": False,
    "input_per_mtok": "3.00",
    "output_per_mtok": "15.00",
    "cached_input_per_mtok": "0.30",
}


@pytest.fixture
def delegator(workspace: Workspace, ada: User, writer: Agent) -> Agent:
    """`editor`, whose runtime policy lets it delegate to `writer` (the test module's own
    fixture): a dependent of it."""
    return make_agent(
        workspace,
        "editor",
        by=ada,
        identity={"name": "Hugo"},
        runtime_policy={"interaction": {"spawn_agent_ids": ["writer"]}},
    )


@pytest.fixture
def echo_preset(workspace: Workspace, ada: User) -> Preset:
    """The workspace's default preset: the offline echo provider."""
    return make_echo_preset(workspace, by=ada)


@pytest.fixture
def paid_echo(settings: Settings, tmp_path: Path, workspace: Workspace, ada: User) -> Preset:
    """An echo model with list prices (a catalog extension), so costs are not all zero."""
    extra = tmp_path / "catalog-extra.json"
    extra.write_text(json.dumps({"schema": 1, "providers": {"echo": {"models": [PRICED_ECHO]}}}))
    settings.AIHUMMER_MODEL_CATALOG_EXTRA = str(extra)
    return make_echo_preset(workspace, by=ada, key="paid", model="echo-paid", is_active=False)


# --- REST API -------------------------------------------------------------------------
API_SNAPSHOT = {
    "identity": {"name": "Camille", "role": "Rédactrice", "language": "fr"},
    "sections": [
        {"key": "methode", "title": "Méthode", "body": "Un plan en trois points."},
        {"key": "sources", "title": "Sources", "body": "Aucun chiffre inventé."},
    ],
}


@pytest.fixture
def api_agent(workspace: Workspace, ada: User, echo_preset: Preset):
    """Agent `redacteur` of acme, version 1 live, two sections."""
    from agents.services import agent_create

    return agent_create(
        workspace=workspace, actor=Actor.for_user(ada), key="redacteur", name="Rédacteur", snapshot=API_SNAPSHOT
    )


@pytest.fixture
def make_key(workspace: Workspace, ada: User):
    """`make_key("read,write", owner=alice)` → the raw `ahk_…` key of a new acme key."""
    from aihummer.services import api_key_create

    counter = iter(range(1000))

    def make(scopes: str, *, owner: User | None = None, workspace: Workspace = workspace) -> str:
        admin = ada if workspace.slug == "acme" else None
        actor = Actor.for_user(admin) if admin else Actor.for_operator(name="tests")
        return api_key_create(
            workspace=workspace, name=f"key-{next(counter)}", scopes=scopes, owner=owner, actor=actor
        )[1]

    return make


@pytest.fixture
def api_as():
    """`api_as(raw_key)` or `api_as(user)`: a DRF test client speaking JSON as that caller."""
    return api_client


@pytest.fixture
def alice_api(api_as, make_key, alice):
    """alice's read,write key (an editor's script)."""
    return api_as(make_key("read,write", owner=alice))


# --- a local OpenAI-protocol server ----------------------------------------------------
@pytest.fixture
def openai_server():
    """A local OpenAI-protocol server that records every request's body
    (`workflows.tests.fake_openai`); tests set `reply`, `delay` or `chunk_delay` on it."""
    from workflows.tests.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def local_preset(workspace: Workspace, ada: User, openai_server) -> Preset:
    """The workspace's default preset: `gpt-4.1` on the local server, its key in the vault."""
    return vault_preset(workspace, openai_server.base_url, secret="sk-local-0123456789", by=ada, is_active=True)


@pytest.fixture
def ada_api(api_as, make_key, ada):
    """ada's publish key (an admin's deployment script)."""
    return api_as(make_key("read,write,publish", owner=ada))


# --- approvals of tool calls (issue 30) --------------------------------------------------
@pytest.fixture
def caller(workspace, ada, echo_preset):
    """Agent `caller` of acme, which may call http_request on 127.0.0.1 (loopback
    allowed explicitly for the test), with the workspace's default approvals."""
    from agents.services.tool_settings import agent_tool_settings_update, workspace_tool_policy_update
    from aihummer.tests.factories import make_agent

    agent = make_agent(workspace, "caller", "You call APIs.", by=ada, allowed_tool_names=["http_request"])
    workspace_tool_policy_update(workspace=workspace, actor=Actor.for_user(ada), allow_private_addresses=True)
    agent_tool_settings_update(agent=agent, actor=Actor.for_user(ada), http_allowed_hosts=["127.0.0.1", "localhost"])
    return agent
