import pytest

from aihummer.actors import Actor
from aihummer.services import api_key_create, api_key_revoke


@pytest.fixture
def key(workspace, ada, alice):
    return api_key_create(workspace=workspace, name="ci", scopes="read", owner=alice, actor=Actor.for_user(ada))


def test_a_key_authenticates_the_api(client, key):
    _, raw_key = key

    response = client.get("/v1/me", headers={"Authorization": f"Bearer {raw_key}"})

    assert response.status_code == 200
    assert response.json() == {
        "source": "api:ci",
        "workspace": "acme",
        "key": "ci",
        "scopes": ["read"],
        "owner": "alice",
    }


@pytest.mark.parametrize("header", ["", "Bearer ahk_1_nope", "Bearer nonsense", "Basic Zm9vOmJhcg=="])
def test_missing_or_wrong_keys_are_401(client, key, header):
    response = client.get("/v1/me", headers={"Authorization": header} if header else {})

    assert response.status_code == 401


def test_a_revoked_key_is_401(client, key, ada):
    api_key, raw_key = key
    api_key_revoke(api_key=api_key, actor=Actor.for_user(ada))

    response = client.get("/v1/me", headers={"Authorization": f"Bearer {raw_key}"})

    assert response.status_code == 401
    assert response.json() == {
        "error": {"code": "authentication_failed", "message": "Invalid or revoked API key.", "fields": {}}
    }
