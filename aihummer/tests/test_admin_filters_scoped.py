"""Issue 24, item 4: no changelist names another tenant's rows — in its filters or
anywhere else on the page. Every registered model admin is walked (a new one is
checked without editing this file), as each role of acme, with a row of every kind in
both acme and globex; globex's names all carry the word "globex"."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client

from agents.models import PromptVersion
from aihummer.models import User
from aihummer.tests.factories import make_every_kind


@pytest.fixture
def two_tenants(workspace, other_workspace, vic, alice, bob, ada, charlie, django_capture_on_commit_callbacks):
    from conftest import make_member

    make_every_kind(workspace, by=ada, proposer=alice, prefix="acme")
    other_workspace.name = "Globex Corporation"
    other_workspace.save()
    globex_admin = make_member(other_workspace, "globex-admin", "admin")
    with django_capture_on_commit_callbacks(execute=True):
        make_every_kind(other_workspace, by=globex_admin, proposer=charlie, prefix="globex")
    assert PromptVersion.objects.filter(agent__workspace=other_workspace, status="pending").exists()


def changelists_seen_by(user: User) -> tuple[list[str], list[str]]:
    """The changelists `user` may open, and each one's mentions of globex."""
    client = Client()
    client.force_login(user)
    walked, leaks = [], []
    for model in admin.site._registry:
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        # The queue shows pending proposals only, unless asked for all.
        response = client.get(url + ("?status=all" if model is PromptVersion else ""))
        if response.status_code == 403:
            continue
        assert response.status_code == 200, url
        walked.append(model._meta.model_name)
        page = response.content.decode().lower()
        if "globex" in page:
            at = page.index("globex")
            leaks.append(f"{user}: {url}: …{page[max(at - 200, 0) : at + 50]}…")
    return walked, leaks


def test_no_changelist_names_another_workspaces_rows(two_tenants, vic, alice, bob, ada):
    every_leak = []
    for person in (vic, alice, bob, ada):
        walked, leaks = changelists_seen_by(person)
        every_leak += leaks
        assert {"agent", "preset", "skill", "workflow", "agentturn", "promptversion", "workflowrun"} <= set(walked)

    assert not every_leak, "\n".join(every_leak)
    assert {"credential", "apikey", "apiauditentry"} <= set(changelists_seen_by(ada)[0])
