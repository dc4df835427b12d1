"""Credentials: the vault behind them, the credential_* services, key rotation and the
write-only credential admin."""

from __future__ import annotations

import re

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured, PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from agents import vault
from agents.models import Credential, Preset
from agents.services import credential_create, credential_delete, credential_update, preset_create
from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError
from aihummer.models import User, Workspace

SECRET = "sk-test-4f1c0ffee-credential"
NEW_SECRET = "sk-test-replacement-9d2a"


def make_credential(workspace: Workspace, user: User, key: str = "openai", secret: str = SECRET) -> Credential:
    return credential_create(workspace=workspace, key=key, secret=secret, name="OpenAI", actor=Actor.for_user(user))


def counts() -> tuple[int, int]:
    """Rows and historical records: what a refusal must leave alone."""
    return Credential.objects.count(), Credential.history.count()


def stored(credential: Credential) -> Credential:
    return Credential.objects.get(pk=credential.pk)


def new_vault_key() -> str:
    return Fernet.generate_key().decode()


@pytest.fixture
def credential(workspace: Workspace, ada: User) -> Credential:
    return make_credential(workspace, ada)


# --- storing --------------------------------------------------------------------------
def test_create_stores_a_ciphertext_that_decrypts_to_the_secret(credential):
    row = stored(credential)

    assert SECRET not in row.ciphertext
    assert vault.decrypt(row.ciphertext) == SECRET
    assert row.fingerprint == vault.fingerprint(SECRET)
    assert re.fullmatch(r"[0-9a-f]{8}", row.fingerprint)


def test_two_encryptions_of_one_secret_differ_but_share_a_fingerprint(workspace, ada, credential):
    twin = make_credential(workspace, ada, key="twin")

    assert stored(twin).ciphertext != stored(credential).ciphertext
    assert stored(twin).fingerprint == stored(credential).fingerprint


def test_str_and_repr_show_set_and_the_fingerprint_never_the_secret(credential):
    row = stored(credential)

    assert str(row) == f"openai (set, {row.fingerprint})"
    assert repr(row) == f"<Credential openai: set, fingerprint {row.fingerprint}>"
    assert SECRET not in str(row) + repr(row)


def test_history_keeps_the_fingerprint_but_not_the_ciphertext(ada, credential):
    record = stored(credential).history.get()

    assert "ciphertext" not in {field.name for field in Credential.history.model._meta.get_fields()}
    assert (record.fingerprint, record.history_user, record.history_change_reason) == (
        credential.fingerprint,
        ada,
        "admin:ada: created",
    )


def test_update_with_a_new_secret_changes_the_fingerprint(ada, credential):
    old_fingerprint = credential.fingerprint

    credential_update(credential=credential, secret=NEW_SECRET, actor=Actor.for_user(ada))

    row = stored(credential)
    assert vault.decrypt(row.ciphertext) == NEW_SECRET
    assert row.fingerprint == vault.fingerprint(NEW_SECRET) != old_fingerprint
    record = row.history.latest("history_id")
    assert (record.fingerprint, record.history_user, record.history_change_reason) == (
        row.fingerprint,
        ada,
        "admin:ada: secret replaced",
    )


def test_renaming_keeps_the_secret(ada, credential):
    ciphertext = stored(credential).ciphertext

    credential_update(credential=credential, name="OpenAI (prod)", actor=Actor.for_user(ada))

    row = stored(credential)
    assert (row.name, row.ciphertext, row.fingerprint) == ("OpenAI (prod)", ciphertext, credential.fingerprint)
    assert row.history.latest("history_id").history_change_reason == "admin:ada: renamed"


def test_an_update_that_changes_nothing_writes_nothing(ada, credential):
    before = counts()

    credential_update(credential=credential, name="OpenAI", secret="", actor=Actor.for_user(ada))

    assert counts() == before


@pytest.mark.parametrize("secret", ["", "   \n"])
def test_an_empty_secret_is_refused(workspace, ada, secret):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_credential(workspace, ada, secret=secret)

    assert refused.value.message_dict == {"secret": ["Give the secret; it cannot be empty."]}
    assert counts() == before


def test_a_blank_replacement_secret_is_refused(ada, credential):
    ciphertext = stored(credential).ciphertext
    before = counts()

    with pytest.raises(ValidationError) as refused:
        credential_update(credential=credential, secret="   ", actor=Actor.for_user(ada))

    assert refused.value.message_dict == {"secret": ["Give the secret; it cannot be empty."]}
    assert counts() == before
    assert stored(credential).ciphertext == ciphertext


def test_a_secret_longer_than_ten_thousand_characters_is_refused(workspace, ada):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_credential(workspace, ada, secret="x" * 10_001)

    assert refused.value.message_dict == {"secret": ["At most 10000 characters."]}
    assert counts() == before


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("Bad Key", "Use lowercase letters, digits, '_' and '-' only."),
        ("openai", "A credential with key 'openai' already exists in workspace 'acme'."),
    ],
)
def test_a_bad_or_taken_key_is_a_field_error(workspace, ada, credential, key, message):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_credential(workspace, ada, key=key)

    assert refused.value.message_dict == {"key": [message]}
    assert counts() == before


# --- rights ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("persona", "message"),
    [
        (
            "alice",
            "alice is an editor in workspace 'acme'; managing members, keys and credentials needs the admin role.",
        ),
        ("bob", "bob is a reviewer in workspace 'acme'; managing members, keys and credentials needs the admin role."),
        ("charlie", "charlie is not a member of workspace 'acme'."),
    ],
)
def test_only_admins_create_credentials(request, workspace, persona, message):
    user = request.getfixturevalue(persona)
    before = counts()

    with pytest.raises(PermissionDenied) as refused:
        make_credential(workspace, user)

    assert str(refused.value) == message
    assert counts() == before


def test_only_admins_replace_or_delete_a_secret(bob, credential):
    ciphertext = stored(credential).ciphertext
    before = counts()

    with pytest.raises(PermissionDenied, match="needs the admin role"):
        credential_update(credential=credential, secret=NEW_SECRET, actor=Actor.for_user(bob))
    with pytest.raises(PermissionDenied, match="needs the admin role"):
        credential_delete(credential=credential, actor=Actor.for_user(bob))

    assert counts() == before
    assert stored(credential).ciphertext == ciphertext


# --- deleting -------------------------------------------------------------------------
def test_delete_is_refused_while_a_preset_uses_it_sandbox_ones_included(workspace, ada, credential):
    for key, is_sandbox in (("main", False), ("sb-probe", True)):
        preset_create(
            workspace=workspace,
            actor=Actor.for_user(ada),
            key=key,
            name=key,
            provider_name="openai",
            model="gpt-4o",
            credential=credential,
            is_sandbox=is_sandbox,
        )
    before = counts()

    with pytest.raises(ApplicationError) as refused:
        credential_delete(credential=credential, actor=Actor.for_user(ada))

    assert refused.value.message == "Credential 'openai' is in use: preset 'main'; preset 'sb-probe'."
    assert counts() == before
    assert Preset.all_objects.filter(credential=credential).count() == 2


def test_an_unused_credential_is_deleted_and_history_records_who(ada, credential):
    pk = credential.pk  # delete() clears the instance's pk

    credential_delete(credential=credential, actor=Actor.for_user(ada))

    assert not Credential.objects.filter(pk=pk).exists()
    record = Credential.history.filter(id=pk).latest("history_id")
    assert (record.history_type, record.history_user, record.history_change_reason) == ("-", ada, "admin:ada: deleted")


# --- rotating the vault keys ----------------------------------------------------------
def test_rotation_re_encrypts_every_secret_under_the_new_key(settings, workspace, ada, capsys):
    old, new = new_vault_key(), new_vault_key()
    settings.AIHUMMER_VAULT_KEYS = [old]
    credential = make_credential(workspace, ada)
    history_before = Credential.history.count()
    settings.AIHUMMER_VAULT_KEYS = [new, old]

    call_command("rotate_vault_keys")

    assert capsys.readouterr().out == "Re-encrypted 1 credential(s) under the first vault key.\n"
    row = stored(credential)
    settings.AIHUMMER_VAULT_KEYS = [new]
    assert vault.decrypt(row.ciphertext) == SECRET
    settings.AIHUMMER_VAULT_KEYS = [old]
    with pytest.raises(vault.VaultError, match="encrypted with a key that is no longer configured"):
        vault.decrypt(row.ciphertext)
    assert row.fingerprint == credential.fingerprint
    assert Credential.history.count() == history_before


def test_rotation_stops_and_changes_nothing_when_a_ciphertext_opens_with_no_key(settings, workspace, ada):
    old, new, forgotten = new_vault_key(), new_vault_key(), new_vault_key()
    settings.AIHUMMER_VAULT_KEYS = [old]
    openable = make_credential(workspace, ada, key="openable")
    settings.AIHUMMER_VAULT_KEYS = [forgotten]
    orphan = make_credential(workspace, ada, key="orphan")
    before = {row.key: row.ciphertext for row in Credential.objects.all()}
    settings.AIHUMMER_VAULT_KEYS = [new, old]

    with pytest.raises(CommandError) as refused:
        call_command("rotate_vault_keys")

    assert str(refused.value) == (
        "This credential was encrypted with a key that is no longer configured. Nothing was changed."
    )
    # `openable` (the lower pk) was re-encrypted before `orphan` failed: rolled back too.
    assert openable.pk < orphan.pk
    assert {row.key: row.ciphertext for row in Credential.objects.all()} == before
    settings.AIHUMMER_VAULT_KEYS = [old]
    assert vault.decrypt(stored(openable).ciphertext) == SECRET


def test_the_vault_refuses_to_work_without_keys(settings):
    settings.AIHUMMER_VAULT_KEYS = []

    with pytest.raises(ImproperlyConfigured, match="AIHUMMER_VAULT_KEYS is empty"):
        vault.encrypt(SECRET)


# --- admin ----------------------------------------------------------------------------
SECRET_INPUT = re.compile(r"<input[^>]*name=\"secret\"[^>]*>")


def change_url(credential: Credential) -> str:
    return reverse("admin:agents_credential_change", args=[credential.pk])


def test_the_change_form_never_shows_the_secret_or_its_ciphertext(client: Client, ada, credential):
    client.force_login(ada)

    response = client.get(change_url(credential))

    page = response.content.decode()
    assert response.status_code == 200
    assert SECRET not in page and stored(credential).ciphertext not in page
    assert f"set · {credential.fingerprint}" in page
    (secret_input,) = SECRET_INPUT.findall(page)
    assert 'type="password"' in secret_input and "value=" not in secret_input


def test_the_changelist_shows_set_and_the_fingerprint(client: Client, bob, credential):
    client.force_login(bob)

    page = client.get(reverse("admin:agents_credential_changelist")).content.decode()

    assert f"set · {credential.fingerprint}" in page
    assert SECRET not in page and stored(credential).ciphertext not in page


def test_saving_the_change_form_with_an_empty_secret_keeps_the_old_one(client: Client, ada, credential):
    row = stored(credential)
    client.force_login(ada)

    response = client.post(change_url(credential), {"name": row.name, "secret": ""})

    assert response.status_code == 302, response.content.decode()[:2000]
    after = stored(credential)
    assert (after.ciphertext, after.fingerprint) == (row.ciphertext, row.fingerprint)
    assert vault.decrypt(after.ciphertext) == SECRET


def test_saving_the_change_form_with_a_secret_replaces_it(client: Client, ada, credential):
    client.force_login(ada)

    response = client.post(change_url(credential), {"name": "OpenAI", "secret": NEW_SECRET})

    assert response.status_code == 302, response.content.decode()[:2000]
    after = stored(credential)
    assert vault.decrypt(after.ciphertext) == NEW_SECRET
    assert after.fingerprint == vault.fingerprint(NEW_SECRET)
    assert after.history.latest("history_id").history_user == ada


def test_renaming_through_the_change_form_saves_the_name(client: Client, ada, credential):
    client.force_login(ada)

    response = client.post(change_url(credential), {"name": "OpenAI (prod)", "secret": ""})

    assert response.status_code == 302
    assert stored(credential).name == "OpenAI (prod)"


def test_renaming_and_replacing_the_secret_through_the_change_form_saves_both(client: Client, ada, credential):
    client.force_login(ada)

    client.post(change_url(credential), {"name": "OpenAI (prod)", "secret": NEW_SECRET})

    after = stored(credential)
    assert (after.name, vault.decrypt(after.ciphertext)) == ("OpenAI (prod)", NEW_SECRET)
    assert after.history.latest("history_id").name == after.name


def test_an_admin_adds_a_credential_through_the_form(client: Client, workspace, ada):
    client.force_login(ada)

    response = client.post(
        reverse("admin:agents_credential_add"),
        {"workspace": workspace.pk, "key": "anthropic", "name": "Anthropic", "secret": SECRET},
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    row = Credential.objects.get(workspace=workspace, key="anthropic")
    assert vault.decrypt(row.ciphertext) == SECRET
    assert row.history.get().history_user == ada


def test_the_add_form_refuses_an_empty_secret_on_its_field(client: Client, workspace, ada):
    client.force_login(ada)
    before = counts()

    response = client.post(
        reverse("admin:agents_credential_add"),
        {"workspace": workspace.pk, "key": "anthropic", "name": "Anthropic", "secret": ""},
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"secret": ["Give the secret; it cannot be empty."]}
    assert counts() == before


def test_a_refused_add_form_does_not_echo_the_secret(client: Client, workspace, ada):
    client.force_login(ada)

    response = client.post(
        reverse("admin:agents_credential_add"),
        {"workspace": workspace.pk, "key": "Bad Key", "name": "Anthropic", "secret": SECRET},
    )

    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["key"]
    assert SECRET not in response.content.decode()
    assert Credential.objects.count() == 0


def test_a_reviewer_cannot_open_the_add_form(client: Client, bob):
    client.force_login(bob)

    assert client.get(reverse("admin:agents_credential_add")).status_code == 403


def test_the_add_form_says_its_refusal_in_french_to_a_french_admin(client: Client, workspace, ada):
    ada.language = "fr"
    ada.save(update_fields=["language"])
    client.force_login(ada)

    response = client.post(
        reverse("admin:agents_credential_add"),
        {"workspace": workspace.pk, "key": "anthropic", "name": "Anthropic", "secret": ""},
    )

    assert response.context["adminform"].form.errors == {
        "secret": ["Saisissez le secret\u00a0; il ne peut pas être vide."]
    }
