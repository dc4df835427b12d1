"""Issue 10: the workspace page saves unchanged, and inviting reveals nothing about
which accounts exist nor reaches another workspace's people without their sign-in."""

from __future__ import annotations

import html
import re

from django.test import Client
from django.urls import reverse

from aihummer.models import Invitation, Membership, User, Workspace


def form_data(page: str) -> dict[str, str]:
    """What a browser would post back from the page's form, untouched."""
    data: dict[str, str] = {}
    for tag in re.findall(r"<input[^>]*>", page):
        name = re.search(r'name="([^"]+)"', tag)
        kind = re.search(r'type="([^"]+)"', tag)
        if not name or (kind and kind.group(1) in {"submit", "checkbox"} and "checked" not in tag):
            continue
        value = re.search(r'value="([^"]*)"', tag)
        data[name.group(1)] = html.unescape(value.group(1)) if value else ""
    for name, options in re.findall(r'<select name="([^"]+)"[^>]*>(.*?)</select>', page, re.S):
        selected = re.search(r'<option value="([^"]*)"[^>]*selected', options)
        data[name] = selected.group(1) if selected else ""
    return data


def invite(client: Client, workspace: Workspace, identifier: str, role: str = "viewer") -> str:
    url = reverse("admin:aihummer_workspace_change", args=[workspace.pk])
    data = form_data(client.get(url).content.decode())
    data |= {"invitations-TOTAL_FORMS": "1", "invitations-0-identifier": identifier, "invitations-0-role": role}
    response = client.post(url, data, follow=True)
    assert response.status_code == 200
    return " ".join(str(m) for m in response.context["messages"])


def test_the_workspace_page_saves_unchanged(client, workspace, ada, alice, bob):
    client.force_login(ada)
    url = reverse("admin:aihummer_workspace_change", args=[workspace.pk])
    page = client.get(url).content.decode()
    assert f'value="{alice.pk}"' not in re.sub(r'name="memberships-\d+-(id|user)"[^>]*', "", page)

    response = client.post(url, form_data(page))

    assert response.status_code == 302, response.content.decode()[-3000:]
    assert dict(workspace.memberships.values_list("user__username", "role")) == {
        "ada": "admin",
        "alice": "editor",
        "bob": "reviewer",
    }


def test_an_admin_changes_a_role_through_the_page(client, workspace, ada, alice):
    client.force_login(ada)
    url = reverse("admin:aihummer_workspace_change", args=[workspace.pk])
    data = form_data(client.get(url).content.decode())
    row = next(key for key, value in data.items() if key.endswith("-id") and value == str(alice.memberships.get().pk))

    response = client.post(url, data | {row.replace("-id", "-role"): "reviewer"})

    assert response.status_code == 302
    assert alice.memberships.get().role == "reviewer"
    assert alice.memberships.get().history.first().history_user == ada


def test_inviting_answers_the_same_whether_or_not_the_account_exists(client, workspace, ada, charlie):
    client.force_login(ada)

    existing = invite(client, workspace, "charlie")
    missing = invite(client, workspace, "nobody-by-that-name")

    assert existing.replace("charlie", "X") == missing.replace("nobody-by-that-name", "X")
    assert "they join as viewer when they next sign in" in existing
    # Nobody of another workspace is added by someone else's decision alone.
    assert not Membership.objects.filter(workspace=workspace, user=charlie).exists()
    assert Invitation.objects.get(identifier="charlie").invited_by == ada


def test_the_invited_person_joins_when_they_sign_in(client, workspace, ada, charlie):
    client.force_login(ada)
    invite(client, workspace, "charlie@example.com", role="editor")
    client.logout()

    response = client.post(reverse("admin:login"), {"username": "charlie", "password": "pw-charlie"})

    assert response.status_code == 302
    assert Membership.objects.get(workspace=workspace, user=charlie).role == "editor"
    assert Invitation.objects.get(identifier="charlie@example.com").accepted_at is not None


def test_a_newcomer_with_only_an_invitation_may_sign_in(client, workspace, ada):
    User.objects.create_user(username="newcomer", password="pw-newcomer-1")
    client.force_login(ada)
    invite(client, workspace, "newcomer")
    client.logout()

    response = client.post(reverse("admin:login"), {"username": "newcomer", "password": "pw-newcomer-1"})

    assert response.status_code == 302
    assert client.get(reverse("admin:index")).status_code == 200


def test_only_workspace_admins_see_and_write_invitations(client, workspace, ada, bob):
    client.force_login(ada)
    invite(client, workspace, "someone")
    client.force_login(bob)

    page = client.get(reverse("admin:aihummer_workspace_change", args=[workspace.pk])).content.decode()

    assert "someone" not in page
