"""`enqueue`: inline without a broker, through Redis to a real worker with one."""

import pytest
from celery import shared_task
from django.db import transaction

from aihummer.models import Workspace
from aihummer.tasks import enqueue
from aihummer.tests.waiting import published_tasks, wait_until


@shared_task(name="aihummer.tests.workspace_create_for_test")
def workspace_create_for_test(slug: str) -> None:
    Workspace.objects.create(slug=slug, name=slug)


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_enqueue_runs_inline_after_commit(settings):
    settings.CELERY_BROKER_URL = ""

    with transaction.atomic():
        enqueue(workspace_create_for_test, "inline")
        assert not Workspace.objects.filter(slug="inline").exists()  # not before commit

    assert Workspace.objects.filter(slug="inline").exists()


@pytest.mark.django_db(transaction=True)
def test_with_a_broker_enqueue_reaches_a_real_worker_after_commit(worker_on_redis):
    with published_tasks() as sent, transaction.atomic():
        enqueue(workspace_create_for_test, "via-worker")
        assert sent == []  # not before commit

    assert sent == [("aihummer.tests.workspace_create_for_test", ("via-worker",))]
    wait_until(lambda: Workspace.objects.filter(slug="via-worker").exists(), what="the worker's row")


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_transaction_sends_nothing(settings):
    settings.CELERY_BROKER_URL = ""

    def enqueue_then_fail() -> None:
        with transaction.atomic():
            enqueue(workspace_create_for_test, "never")
            raise RuntimeError("rollback")

    with pytest.raises(RuntimeError):
        enqueue_then_fail()

    assert not Workspace.objects.filter(slug="never").exists()
