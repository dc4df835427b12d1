"""Issue 34: /healthz says the process answers; /readyz checks the database, the broker
and the cache, and names the one that fails."""

from __future__ import annotations

import pytest

from aihummer.tests.ports import free_port


def test_healthz_answers_without_touching_the_database(client, db, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")

    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_readyz_is_ready_when_every_dependency_answers(client, db, settings, redis_url):
    settings.CELERY_BROKER_URL = redis_url

    response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok"
    assert {name: check["status"] for name, check in body["checks"].items()} == {
        "database": "ok",
        "broker": "ok",
        "cache": "ok",
    }


def test_readyz_skips_the_broker_in_development_without_one(client, db, settings):
    settings.CELERY_BROKER_URL = ""

    assert client.get("/readyz").json()["checks"]["broker"]["status"] == "skipped"


@pytest.mark.parametrize("scheme", ["redis", "amqp"])
def test_readyz_fails_when_the_broker_is_down(client, db, settings, scheme):
    settings.CELERY_BROKER_URL = f"{scheme}://guest:guest@127.0.0.1:{free_port()}/0"

    response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "unavailable"
    assert body["checks"]["broker"]["status"] == "error"
    assert "Connection refused" in body["checks"]["broker"]["error"]
    assert "guest:guest" not in response.content.decode()
    assert body["checks"]["database"]["status"] == "ok"


def test_readyz_fails_when_the_cache_is_down(client, db, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }

    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json()["checks"]["cache"]["status"] == "error"
