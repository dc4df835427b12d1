"""How work leaves the request: one helper decides between a worker and inline."""

from __future__ import annotations

import time

from celery import Task
from django.conf import settings
from django.db import transaction


def enqueue(task: Task, *args: object, **kwargs: object) -> None:
    """Run `task(*args, **kwargs)` once the current transaction commits.

    With `CELERY_BROKER_URL` set, it goes to the broker for a worker; without one (the
    embedded default) it runs inline in this process. Never eager mode, and never a
    silent attempt to reach a broker nobody configured.
    """
    if settings.CELERY_BROKER_URL:
        task.delay_on_commit(*args, **kwargs)
    else:
        transaction.on_commit(lambda: task(*args, **kwargs))


def enqueue_in(seconds: float, task: Task, *args: object) -> None:
    """Like `enqueue`, `seconds` later (a retry's backoff). Inline, it waits that long."""
    if settings.CELERY_BROKER_URL:
        transaction.on_commit(lambda: task.apply_async(args, countdown=seconds))
    else:
        transaction.on_commit(lambda: (time.sleep(seconds), task(*args)))
