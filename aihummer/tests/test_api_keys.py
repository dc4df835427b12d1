import re
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError
from aihummer.models import ApiKey
from aihummer.services import api_key_authenticate, api_key_create, api_key_revoke


@pytest.fixture
def key_and_secret(workspace, ada, alice):
    return api_key_create(workspace=workspace, name="ci", scopes="write,read", owner=alice, actor=Actor.for_user(ada))


def test_key_has_the_documented_format_and_only_its_digest_is_stored(key_and_secret):
    api_key, raw_key = key_and_secret

    match = re.fullmatch(r"ahk_(\d+)_([A-Za-z0-9_-]{43})", raw_key)
    assert match and int(match.group(1)) == api_key.pk
    stored = ApiKey.objects.get(pk=api_key.pk)
    assert stored.secret_digest == ApiKey.digest(match.group(2))
    assert match.group(2) not in str(ApiKey.objects.filter(pk=api_key.pk).values().get())
    assert stored.scopes == "read,write"


def test_authenticate_accepts_the_key_and_rejects_near_misses(key_and_secret):
    api_key, raw_key = key_and_secret
    other_id = raw_key.replace(f"ahk_{api_key.pk}_", f"ahk_{api_key.pk + 1}_")

    assert api_key_authenticate(raw_key) == api_key
    assert api_key_authenticate(raw_key[:-1] + ("A" if raw_key[-1] != "A" else "B")) is None
    assert api_key_authenticate(other_id) is None
    assert api_key_authenticate("ahk_x_y") is None
    assert api_key_authenticate("") is None


def test_revoked_key_no_longer_authenticates_and_cannot_be_revoked_twice(key_and_secret, ada):
    api_key, raw_key = key_and_secret

    api_key_revoke(api_key=api_key, actor=Actor.for_user(ada))

    assert api_key_authenticate(raw_key) is None
    with pytest.raises(ApplicationError, match="already revoked"):
        api_key_revoke(api_key=api_key, actor=Actor.for_user(ada))


def test_last_used_is_recorded_at_most_once_a_minute_and_not_in_history(key_and_secret):
    api_key, raw_key = key_and_secret
    history_before = api_key.history.count()

    api_key_authenticate(raw_key)
    first_use = ApiKey.objects.get(pk=api_key.pk).last_used_at
    api_key_authenticate(raw_key)
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at == first_use

    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=first_use - timedelta(minutes=2))
    api_key_authenticate(raw_key)
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at > first_use
    assert api_key.history.count() == history_before


def test_only_admins_create_or_revoke_keys(workspace, alice, bob, key_and_secret):
    with pytest.raises(PermissionDenied, match="needs the admin role"):
        api_key_create(workspace=workspace, name="mine", scopes="read", actor=Actor.for_user(bob))
    with pytest.raises(PermissionDenied, match="needs the admin role"):
        api_key_revoke(api_key=key_and_secret[0], actor=Actor.for_user(alice))


@pytest.mark.parametrize(
    ("name", "scopes", "field", "message"),
    [
        ("ci", "read", "__all__", "API key with this Workspace and Name already exists."),
        ("Bad Name", "read", "name", "Use lowercase letters, digits, '_' and '-' only."),
        ("fine", "read,admin", "scopes", "Unknown scope 'admin'; use read, write, publish, vouch."),
        ("fine", "", "scopes", "Give at least one scope: read, write, publish, vouch."),
    ],
)
def test_bad_key_input_is_a_field_error_and_writes_nothing(
    workspace, ada, key_and_secret, name, scopes, field, message
):
    count = ApiKey.objects.count()
    history = ApiKey.history.count()

    with pytest.raises(ValidationError) as invalid:
        api_key_create(workspace=workspace, name=name, scopes=scopes, actor=Actor.for_user(ada))

    assert invalid.value.message_dict[field] == [message]
    assert (ApiKey.objects.count(), ApiKey.history.count()) == (count, history)


def test_owner_must_belong_to_the_workspace(workspace, ada, charlie):
    with pytest.raises(ValidationError) as invalid:
        api_key_create(workspace=workspace, name="x", scopes="read", owner=charlie, actor=Actor.for_user(ada))

    assert invalid.value.message_dict == {"owner": ["charlie is not a member of workspace 'acme'."]}


def test_create_api_key_command_prints_a_working_key_on_its_last_line(workspace, alice, capsys):
    call_command(
        "create_api_key", "--workspace", "acme", "--name", "deploy", "--scopes", "read,write", "--owner", "alice"
    )

    raw_key = capsys.readouterr().out.strip().splitlines()[-1]
    api_key = api_key_authenticate(raw_key)
    assert (api_key.name, api_key.scopes, api_key.owner) == ("deploy", "read,write", alice)


def test_create_api_key_command_explains_bad_input(workspace):
    with pytest.raises(CommandError, match="scopes: Unknown scope 'root'"):
        call_command("create_api_key", "--workspace", "acme", "--name", "x", "--scopes", "root")
    with pytest.raises(CommandError, match="No workspace 'nope'"):
        call_command("create_api_key", "--workspace", "nope", "--name", "x", "--scopes", "read")


def test_history_records_who_created_and_revoked_a_key(key_and_secret, ada):
    api_key, _ = key_and_secret
    api_key_revoke(api_key=api_key, actor=Actor.for_user(ada))

    reasons = list(api_key.history.order_by("history_date").values_list("history_change_reason", "history_user"))

    assert reasons == [("admin:ada: created", ada.pk), ("admin:ada: revoked", ada.pk)]
    assert timezone.now() - ApiKey.objects.get(pk=api_key.pk).revoked_at < timedelta(minutes=1)
