import re

import pytest
from django.urls import reverse

from aihummer.actors import Actor
from aihummer.models import ApiKey
from aihummer.services import api_key_authenticate, api_key_create


@pytest.fixture
def keys(workspace, other_workspace, ada, root):
    acme, _ = api_key_create(workspace=workspace, name="acme-ci", scopes="read", actor=Actor.for_user(ada))
    globex, _ = api_key_create(workspace=other_workspace, name="globex-ci", scopes="read", actor=Actor.for_user(root))
    return acme, globex


def test_members_log_in_without_being_staff(client, alice):
    assert not alice.is_staff

    response = client.post(reverse("admin:login"), {"username": "alice", "password": "pw-alice"})

    assert response.status_code == 302
    assert client.get(reverse("admin:index")).status_code == 200


def test_people_in_no_workspace_cannot_log_in(client, django_user_model):
    django_user_model.objects.create_user(username="loner", password="pw-loner")

    response = client.post(reverse("admin:login"), {"username": "loner", "password": "pw-loner"})

    assert response.status_code == 200
    assert "This account belongs to no workspace" in response.content.decode()


def test_members_see_only_their_workspace_rows(client, keys, bob, charlie):
    acme, _ = keys
    client.force_login(charlie)

    listing = client.get(reverse("admin:aihummer_apikey_changelist")).content.decode()

    assert "globex-ci" in listing and "acme-ci" not in listing
    # Another workspace's rows answer exactly as missing ones do.
    for view in ("change", "history"):
        hidden = client.get(reverse(f"admin:aihummer_apikey_{view}", args=[acme.pk]))
        missing = client.get(reverse(f"admin:aihummer_apikey_{view}", args=[acme.pk + 1000]))
        assert hidden.status_code == missing.status_code
        assert hidden.status_code in (302, 404)
    record = acme.history.first()
    assert (
        client.get(reverse("admin:aihummer_apikey_simple_history", args=[acme.pk, record.history_id])).status_code
        == 404
    )
    assert client.get(reverse("admin:aihummer_workspace_change", args=[acme.workspace_id])).status_code == 302


def test_superuser_sees_every_workspace(client, keys, root):
    client.force_login(root)

    listing = client.get(reverse("admin:aihummer_apikey_changelist")).content.decode()

    assert "globex-ci" in listing and "acme-ci" in listing


def test_admin_creates_a_key_and_sees_it_once(client, workspace, ada):
    client.force_login(ada)

    response = client.post(
        reverse("admin:aihummer_apikey_add"),
        {"workspace": workspace.pk, "name": "deploy", "owner": "", "scopes": ["read", "write"]},
    )

    # Issue 10: the key is in this response's body, never in a (signed, readable) cookie.
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    page = response.content.decode()
    raw_key = re.search(r'<code id="raw-api-key">(ahk_[^<]+)</code>', page).group(1)
    assert "Copy this key now; it will not be shown again." in page
    assert api_key_authenticate(raw_key).name == "deploy"
    assert all(raw_key not in morsel.value for morsel in response.cookies.values())
    assert all(raw_key not in str(m) for m in client.get(reverse("admin:index")).context["messages"])
    api_key = ApiKey.objects.get(name="deploy")
    assert api_key.scopes == "read,write"
    page = client.get(reverse("admin:aihummer_apikey_change", args=[api_key.pk])).content.decode()
    assert raw_key not in page and api_key.secret_digest not in page


def test_reviewers_cannot_create_or_revoke_keys(client, keys, bob):
    acme, _ = keys
    client.force_login(bob)

    assert client.get(reverse("admin:aihummer_apikey_add")).status_code == 403
    client.post(
        reverse("admin:aihummer_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [acme.pk]},
    )
    assert not ApiKey.objects.get(pk=acme.pk).is_revoked


def test_admin_revokes_keys_with_the_action(client, keys, ada):
    acme, _ = keys
    client.force_login(ada)

    client.post(reverse("admin:aihummer_apikey_changelist"), {"action": "revoke_keys", "_selected_action": [acme.pk]})

    assert ApiKey.objects.get(pk=acme.pk).is_revoked


def test_an_owner_from_another_workspace_is_a_form_error_not_a_crash(client, workspace, ada, charlie):
    client.force_login(ada)

    response = client.post(
        reverse("admin:aihummer_apikey_add"),
        {"workspace": workspace.pk, "name": "deploy", "owner": "charlie", "scopes": ["read"]},
    )

    assert response.status_code == 200
    assert "charlie is not a member of workspace &#x27;acme&#x27;." in response.content.decode()
    assert not ApiKey.objects.filter(name="deploy").exists()


def test_the_index_shows_no_django_groups_no_view_site_and_declares_its_icon(client, root):
    client.force_login(root)

    page = client.get(reverse("admin:index")).content.decode()

    assert "/admin/auth/group/" not in page and "Groups" not in page
    assert "View site" not in page
    assert '<link rel="icon" href="data:image/svg+xml,' in page  # no /favicon.ico request, no 404
    assert client.get("/admin/auth/group/").status_code == 404


def test_a_french_admin_creates_lists_and_revokes_keys_in_french(client, workspace, ada, bob) -> None:
    # Given ada reads the desk in French (her profile)
    ada.language = "fr"
    ada.save(update_fields=["language"])
    client.force_login(ada)

    # When she creates a key, then lists and revokes it
    created = client.post(
        reverse("admin:aihummer_apikey_add"),
        {"workspace": workspace.pk, "name": "deploy", "owner": "bob", "scopes": ["read"]},
    ).content.decode()
    listing = client.get(reverse("admin:aihummer_apikey_changelist")).content.decode()
    api_key = ApiKey.objects.get(name="deploy")
    revoked = client.post(
        reverse("admin:aihummer_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [api_key.pk]},
        follow=True,
    )

    # Then every page speaks French, and none of the English is left
    assert "Copiez cette clé maintenant\u00a0: elle ne sera plus affichée." in created
    assert f"Espace de travail {workspace.slug}, portées read, propriétaire bob." in created
    assert "Voir la clé" in created and "Toutes les clés d\u2019API" in created
    assert "Copy this key" not in created and "See the key" not in created and "owned by" not in created
    assert "Révoquer les clés d\u2019API sélectionnées" in listing and ">actif<" in listing
    assert [str(m).split(" le ")[0] for m in revoked.context["messages"]] == ["1 clé d\u2019API révoquée"]
    assert ">révoquée<" in revoked.content.decode()
    form = client.get(reverse("admin:aihummer_apikey_add")).content.decode()
    assert "Nom d\u2019utilisateur de la personne responsable de cette clé (facultatif)." in form
    bad = client.post(
        reverse("admin:aihummer_apikey_add"),
        {"workspace": workspace.pk, "name": "x", "owner": "nobody", "scopes": ["read"]},
    ).content.decode()
    assert "Aucun utilisateur actif n\u2019a ce nom d\u2019utilisateur." in bad
