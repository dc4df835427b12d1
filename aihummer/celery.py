"""The Celery application. Workers: `celery -A aihummer worker --pool threads`."""

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aihummer.settings")

app = Celery("aihummer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def refuse_to_start_without_broker(**kwargs: object) -> None:
    # Without this, Celery would quietly try its default amqp://localhost.
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    if not settings.CELERY_BROKER_URL:
        raise ImproperlyConfigured("CELERY_BROKER_URL is empty: a worker needs a broker (e.g. redis://host:6379/0).")
