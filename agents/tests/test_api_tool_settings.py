"""`/v1/admin/tool-policy` and `/v1/admin/agents/{key}/tool-settings` (issue 30): read by
members, changed by admins, another workspace's agent a 404, bad values field errors,
and the SMTP password write-only: it goes to the vault and no response, no table but
the vault's (pg_dump searched) holds it; a mail sent with it reaches a local SMTP server."""

from __future__ import annotations

import pytest

from agents.models import AgentToolSettings, Credential
from agents.tests.helpers import pg_dump
from aihummer.tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "smtp-Pw-9f2Q-never-shown"
URL = "/v1/admin/agents/mailer/tool-settings"


@pytest.fixture
def mailer(workspace, ada, echo_preset):
    return make_agent(workspace, "mailer", "You write mails.", by=ada, allowed_tool_names=["mail_send"])


def test_members_read_the_defaults_and_admins_change_the_policy(api_as, ada, vic, workspace) -> None:
    read = api_as(vic).get("/v1/admin/tool-policy")
    assert read.status_code == 200
    assert read.json() == {
        "approval_tools": ["mail_send", "http_request"],
        "allow_private_addresses": False,
        "approval_expiry_hours": 72,
        "updated_at": None,
    }
    assert api_as(vic).patch("/v1/admin/tool-policy", {"approval_expiry_hours": 24}).status_code == 403

    changed = api_as(ada).patch("/v1/admin/tool-policy", {"approval_tools": ["mail_send"], "approval_expiry_hours": 24})

    assert changed.status_code == 200
    assert (changed.json()["approval_tools"], changed.json()["approval_expiry_hours"]) == (["mail_send"], 24)
    refused = api_as(ada).patch("/v1/admin/tool-policy", {"approval_expiry_hours": 0})
    assert refused.status_code == 400
    assert "approval_expiry_hours" in refused.json()["error"]["fields"]
    assert workspace.tool_policy.approval_expiry_hours == 24


def test_the_smtp_password_is_write_only_and_goes_to_the_vault(api_as, ada, mailer) -> None:
    client = api_as(ada)
    assert client.get(URL).json()["smtp_password"] is None

    changed = client.patch(
        URL,
        {
            "smtp_host": "127.0.0.1",
            "smtp_port": 2525,
            "smtp_security": "none",
            "smtp_user": "agent@acme.test",
            "mail_from": "agent@acme.test",
            "smtp_password": PASSWORD,
        },
    )

    assert changed.status_code == 200, changed.json()
    body = changed.json()
    assert (body["smtp_password"], body["smtp_password_credential"], body["smtp_port"]) == ("set", "smtp-mailer", 2525)
    assert PASSWORD not in changed.content.decode() and PASSWORD not in client.get(URL).content.decode()
    credential = Credential.objects.get(key="smtp-mailer")
    assert AgentToolSettings.objects.get(agent=mailer).smtp_password == credential
    # A second password replaces the first in the same credential.
    assert client.patch(URL, {"smtp_password": PASSWORD + "-2"}).json()["smtp_password_credential"] == "smtp-mailer"
    assert Credential.objects.filter(workspace=mailer.workspace).count() == 1
    dump = pg_dump()
    assert PASSWORD not in dump


def test_a_credential_is_named_by_key_of_the_agents_workspace_only(
    api_as, ada, mailer, other_workspace, charlie
) -> None:
    from agents.services import credential_create
    from aihummer.actors import Actor

    credential_create(workspace=mailer.workspace, key="smtp-shared", secret="x-secret-1", actor=Actor.for_user(ada))
    client = api_as(ada)

    named = client.patch(URL, {"smtp_password_credential": "smtp-shared"})
    unknown = client.patch(URL, {"smtp_password_credential": "nope"})
    both = client.patch(URL, {"smtp_password_credential": "smtp-shared", "smtp_password": "y"})
    cleared = client.patch(URL, {"smtp_password_credential": None})

    assert named.json()["smtp_password_credential"] == "smtp-shared"
    assert unknown.status_code == 422  # refused by a rule: no such row
    assert unknown.json()["error"]["fields"] == {
        "smtp_password_credential": ["No credential 'nope' in this workspace."]
    }
    assert both.status_code == 400 and "smtp_password" in both.json()["error"]["fields"]
    assert (cleared.json()["smtp_password"], cleared.json()["smtp_password_credential"]) == (None, None)
    assert api_as(charlie).get(URL).status_code == 404


def test_only_admins_change_an_agents_tool_settings(api_as, alice, vic, mailer) -> None:
    assert api_as(vic).get(URL).status_code == 200
    refused = api_as(alice).patch(URL, {"http_allowed_hosts": ["api.example.com"]})

    assert refused.status_code == 403
    assert not AgentToolSettings.objects.filter(agent=mailer).exists()
    bad = api_as(alice).patch(URL, {"smtp_port": 70000})
    assert bad.status_code == 400 and "smtp_port" in bad.json()["error"]["fields"]
