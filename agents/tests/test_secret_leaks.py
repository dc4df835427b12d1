"""A secret given to the vault is never seen again: not in the database in clear (a real
`pg_dump`), not in history, not in a log line, not in any admin page.

Each check first proves it can see: a marker planted in an ordinary row must show up
where the secret must not, so an empty dump or a silent logger cannot pass the test.
The tests commit (transaction=True) because pg_dump reads from its own connection.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from agents import vault
from agents.models import Credential, Preset
from agents.services import agent_create, credential_update
from agents.tests.helpers import pg_dump, tables
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import vault_preset

pytestmark = pytest.mark.django_db(transaction=True)


def historical(dump: str) -> dict[str, str]:
    return {name: rows for name, rows in tables(dump).items() if "historical" in name}


def plant_marker(workspace: Workspace, user: User) -> str:
    """A known string in an ordinary, non-vault row (and so in its history too)."""
    marker = f"leak-canary-{uuid.uuid4().hex}"
    agent_create(workspace=workspace, actor=Actor.for_user(user), key="canary", name="Canary", description=marker)
    return marker


@pytest.fixture
def sql_logged(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every log record at DEBUG, every SQL statement with its parameters among them."""
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="django")
    forced = connection.force_debug_cursor
    connection.force_debug_cursor = True
    try:
        yield caplog
    finally:
        connection.force_debug_cursor = forced


@dataclass
class Exercise:
    """What the scenario did: the secrets it gave, and the admin pages it saw."""

    credential: Credential
    preset: Preset
    secrets: list[str]
    pages: dict[str, str] = field(default_factory=dict)


def new_secret() -> str:
    return f"sk-leak-test-{uuid.uuid4().hex}"


def visit(client: Client, url: str, pages: dict[str, str], **post: str) -> None:
    response = client.post(url, post, follow=True) if post else client.get(url)
    assert response.status_code == 200, url
    pages[f"{'POST' if post else 'GET'} {url}"] = response.content.decode()


def exercise(client: Client, workspace: Workspace, ada: User) -> Exercise:
    """Give secrets through the services and the admin, use one, and look at every
    page that shows the credential or the preset using it."""
    created, replaced, typed_in_admin, refused = new_secret(), new_secret(), new_secret(), new_secret()
    actor = Actor.for_user(ada)
    preset = vault_preset(
        workspace, secret=created, key="gpt", name="GPT", credential_key="openai", model="gpt-4o", by=actor
    )
    credential = preset.credential
    credential_update(credential=credential, secret=replaced, actor=actor)
    run = Exercise(credential=credential, preset=preset, secrets=[created, replaced, typed_in_admin, refused])
    client.force_login(ada)

    change = reverse("admin:agents_credential_change", args=[credential.pk])
    visit(client, change, run.pages, name="OpenAI", secret=typed_in_admin)
    add = reverse("admin:agents_credential_add")
    visit(client, add, run.pages, workspace=str(workspace.pk), key="Bad Key", name="x", secret=refused)
    # The admin really replaced the secret, and really refused the bad key.
    assert vault.decrypt(Credential.objects.get(pk=credential.pk).ciphertext) == typed_in_admin
    assert Credential.objects.count() == 1
    for model, obj in (("credential", credential), ("preset", preset)):
        visit(client, reverse(f"admin:agents_{model}_changelist"), run.pages)
        visit(client, reverse(f"admin:agents_{model}_change", args=[obj.pk]), run.pages)
        visit(client, reverse(f"admin:agents_{model}_history", args=[obj.pk]), run.pages)
        for record in type(obj).history.filter(id=obj.pk):
            visit(client, reverse(f"admin:agents_{model}_simple_history", args=[obj.pk, record.pk]), run.pages)
    visit(client, reverse("admin:agents_preset_add"), run.pages)
    return run


def test_pg_dump_of_the_test_database_shows_a_planted_marker(workspace, ada):
    marker = plant_marker(workspace, ada)

    rows = tables(pg_dump())

    assert marker in rows["agents_agent"]
    assert marker in rows["agents_historicalagent"]


def test_no_secret_reaches_the_database_in_clear_nor_its_history(client: Client, workspace, ada):
    marker = plant_marker(workspace, ada)
    run = exercise(client, workspace, ada)
    ciphertext, fingerprint = Credential.objects.values_list("ciphertext", "fingerprint").get(pk=run.credential.pk)

    dump = pg_dump()

    assert marker in dump and marker in historical(dump)["agents_historicalagent"]
    assert ciphertext in tables(dump)["agents_credential"]
    assert fingerprint in historical(dump)["agents_historicalcredential"]
    for secret in run.secrets:
        assert secret not in dump
        assert all(secret not in rows for rows in historical(dump).values())
    # Only the current ciphertext exists: replaced ones left no copy (history excludes the column).
    assert dump.count(ciphertext) == 1


def test_no_secret_reaches_a_log_line(client: Client, workspace, ada, sql_logged):
    marker = plant_marker(workspace, ada)

    run = exercise(client, workspace, ada)

    log = sql_logged.text
    ciphertext = Credential.objects.values_list("ciphertext", flat=True).get(pk=run.credential.pk)
    # The SQL log saw the marker's insert and the credential's writes, parameters included...
    assert marker in log and ciphertext in log
    # ...and never a secret.
    for secret in run.secrets:
        assert secret not in log


def test_no_secret_reaches_an_admin_page(client: Client, workspace, ada):
    run = exercise(client, workspace, ada)

    fingerprint = Credential.objects.values_list("fingerprint", flat=True).get(pk=run.credential.pk)
    change = reverse("admin:agents_credential_change", args=[run.credential.pk])
    assert f"set · {fingerprint}" in run.pages[f"GET {change}"]
    assert len(run.pages) >= 12
    for url, page in run.pages.items():
        for secret in run.secrets:
            assert secret not in page, url


def crash_while_saving(workspace: Workspace, ada: User, settings: object) -> tuple[str, str]:
    """Post a new secret to the credential add form while the vault cannot encrypt, so
    the request fails with an unexpected exception; returns the secret and the page."""
    secret = new_secret()
    settings.AIHUMMER_VAULT_KEYS = []
    client = Client(raise_request_exception=False)
    client.force_login(ada)
    data = {"workspace": workspace.pk, "key": "crash", "name": "Crash", "secret": secret}
    response = client.post(reverse("admin:agents_credential_add"), data)
    assert response.status_code == 500
    assert not Credential.objects.filter(key="crash").exists()
    return secret, response.content.decode()


def test_a_crash_while_saving_a_secret_logs_no_secret(workspace, ada, settings, sql_logged):
    secret, _ = crash_while_saving(workspace, ada, settings)

    assert "Internal Server Error: /admin/agents/credential/add/" in sql_logged.text
    assert secret not in sql_logged.text


def test_a_crash_while_saving_a_secret_shows_no_secret_on_the_debug_page(workspace, ada, settings):
    settings.DEBUG = True

    secret, page = crash_while_saving(workspace, ada, settings)

    assert "AIHUMMER_VAULT_KEYS is empty" in page
    assert secret not in page


def test_a_crash_while_saving_a_secret_mails_no_secret_to_the_admins(workspace, ada, settings, mailoutbox):
    settings.ADMINS = [("Ops", "ops@example.com")]

    secret, _ = crash_while_saving(workspace, ada, settings)

    (report,) = mailoutbox
    assert "AIHUMMER_VAULT_KEYS is empty" in report.body
    assert secret not in report.body
