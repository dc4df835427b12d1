"""Issue 10: a key id is canonical ASCII digits, or the key is refused as invalid (401)."""

import pytest
from django.urls import reverse

from aihummer.actors import Actor
from aihummer.services import api_key_authenticate, api_key_create


@pytest.fixture
def first_key(workspace, ada):
    api_key, raw_key = api_key_create(workspace=workspace, name="ci", scopes="read", actor=Actor.for_user(ada))
    return api_key, raw_key


@pytest.mark.parametrize(
    "header",
    [
        "Bearer ahk_¹_x",
        "Bearer ahk_\u0661_x",
        "Bearer ahk_-1_x",
        "Bearer ahk_ 1_x",
        "Bearer ahk_99999999999999999999999_x",
        "Bearer ahk_1\x00_x",
    ],
)
def test_non_canonical_key_ids_are_unauthorized_not_a_crash(client, db, header):
    response = client.get(reverse("v1:me"), HTTP_AUTHORIZATION=header)

    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid or revoked API key."


def test_a_zero_padded_id_does_not_name_another_key(first_key):
    api_key, raw_key = first_key
    _, key_id, secret = raw_key.split("_", 2)

    assert api_key_authenticate(raw_key) == api_key
    assert api_key_authenticate(f"ahk_0{key_id}_{secret}") is None
    assert api_key_authenticate(f"ahk_+{key_id}_{secret}") is None
    assert api_key_authenticate(f"ahk_{key_id}.0_{secret}") is None
