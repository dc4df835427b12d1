"""Tool settings in the admin (issue 30): an admin sets an agent's SMTP account with a
password typed once (write-only: to the vault, never on a page again), picks the
password's credential among the agent's workspace's only, and sets the workspace's
tool policy; an editor may not. Through Django's test client, on PostgreSQL."""

from __future__ import annotations

import re

import pytest

from agents.models import AgentToolSettings, Credential, WorkspaceToolPolicy
from agents.services import credential_create
from aihummer.actors import Actor
from aihummer.tests.factories import make_agent

pytestmark = pytest.mark.django_db

PASSWORD = "smtp-Admin-Pw-77x-never-shown"
ADD = "/admin/agents/agenttoolsettings/add/"
FORM = {
    "extra_approval_tools": "",
    "on_reject": "continue",
    "smtp_host": "127.0.0.1",
    "smtp_port": "2525",
    "smtp_security": "none",
    "smtp_user": "agent@acme.test",
    "mail_from": "agent@acme.test",
    "http_allowed_hosts": "api.example.com",
    "http_timeout_seconds": "10",
    "http_max_response_bytes": "100000",
}


def picker(page: str) -> list[str]:
    """The credentials the SMTP password's picker offers (their ids)."""
    select = re.search(r'<select name="smtp_password".*?</select>', page, re.S)
    return re.findall(r'<option value="(\d+)"', select[0])


@pytest.fixture
def mailer(workspace, ada, echo_preset):
    return make_agent(workspace, "mailer", "You write mails.", by=ada, allowed_tool_names=["mail_send"])


@pytest.fixture
def foreign_credential(other_workspace, root):
    return credential_create(
        workspace=other_workspace, key="theirs", secret="their-secret-1", actor=Actor.for_user(root)
    )


def test_an_admin_types_the_smtp_password_once_and_it_goes_to_the_vault(client, ada, mailer) -> None:
    client.force_login(ada)

    saved = client.post(ADD, FORM | {"agent": mailer.pk, "smtp_password": "", "smtp_password_secret": PASSWORD})

    assert saved.status_code == 302, saved.content.decode()[:2000]
    row = AgentToolSettings.objects.get(agent=mailer)
    assert (row.smtp_host, row.smtp_port, row.http_allowed_hosts) == ("127.0.0.1", 2525, ["api.example.com"])
    assert row.smtp_password == Credential.objects.get(workspace=mailer.workspace, key="smtp-mailer")
    page = client.get(f"/admin/agents/agenttoolsettings/{row.pk}/change/").content.decode()
    listing = client.get("/admin/agents/agenttoolsettings/").content.decode()
    assert PASSWORD not in page and PASSWORD not in listing
    assert "set · smtp-mailer" in listing


def test_the_credential_picker_offers_the_agents_workspace_only(client, ada, mailer, foreign_credential) -> None:
    own = credential_create(
        workspace=mailer.workspace, key="smtp-own", secret="own-secret-1", actor=Actor.for_user(ada)
    )
    client.force_login(ada)

    page = client.get(ADD).content.decode()
    refused = client.post(ADD, FORM | {"agent": mailer.pk, "smtp_password": foreign_credential.pk})

    assert picker(page) == [str(own.pk)]
    assert refused.status_code == 200
    assert "Select a valid choice" in refused.content.decode()
    assert not AgentToolSettings.objects.exists()
    saved = client.post(ADD, FORM | {"agent": mailer.pk, "smtp_password": own.pk})
    assert saved.status_code == 302
    row = AgentToolSettings.objects.get()
    change = client.get(f"/admin/agents/agenttoolsettings/{row.pk}/change/").content.decode()
    assert picker(change) == [str(own.pk)]


def test_an_admin_sets_the_workspace_policy_and_an_editor_may_not(client, ada, alice, workspace) -> None:
    form = {"workspace": workspace.pk, "approval_tools": "mail_send", "approval_expiry_hours": "24"}
    client.force_login(alice)
    assert client.post("/admin/agents/workspacetoolpolicy/add/", form).status_code == 403

    client.force_login(ada)
    saved = client.post("/admin/agents/workspacetoolpolicy/add/", form)

    assert saved.status_code == 302
    policy = WorkspaceToolPolicy.objects.get(workspace=workspace)
    assert (policy.approval_tools, policy.approval_expiry_hours, policy.allow_private_addresses) == (
        ["mail_send"],
        24,
        False,
    )
