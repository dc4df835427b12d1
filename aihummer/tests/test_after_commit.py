"""Issue 10: work after the commit (notifications) is logged and retried; it never
fails the request whose change already committed."""

from __future__ import annotations

import logging

import pytest
from celery import shared_task
from django.db import transaction

from aihummer.models import Workspace
from aihummer.tasks import enqueue

pytestmark = pytest.mark.django_db(transaction=True)
ATTEMPTS: list[str] = []


@shared_task(name="aihummer.tests.always_fails")
def always_fails(label: str) -> None:
    ATTEMPTS.append(label)
    raise ConnectionRefusedError("mail server down")


@shared_task(name="aihummer.tests.fails_twice")
def fails_twice(label: str) -> None:
    ATTEMPTS.append(label)
    if len(ATTEMPTS) < 3:
        raise ConnectionRefusedError("mail server down")
    Workspace.objects.create(slug=label, name=label)


@pytest.fixture(autouse=True)
def no_attempts_yet():
    ATTEMPTS.clear()


def test_inline_work_that_keeps_failing_is_logged_and_never_raised(settings, caplog):
    settings.CELERY_BROKER_URL = ""

    with transaction.atomic():
        Workspace.objects.create(slug="kept", name="Kept")
        enqueue(always_fails, "x")

    assert Workspace.objects.filter(slug="kept").exists()
    assert ATTEMPTS == ["x", "x", "x"]
    gave_up = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in gave_up] == [
        "Task aihummer.tests.always_fails failed 3 times after the commit; giving up (the committed change stands)."
    ]


def test_inline_work_is_retried_until_it_succeeds(settings):
    settings.CELERY_BROKER_URL = ""

    with transaction.atomic():
        enqueue(fails_twice, "third-time")

    assert ATTEMPTS == ["third-time"] * 3
    assert Workspace.objects.filter(slug="third-time").exists()
