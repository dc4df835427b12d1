"""How work leaves the request: one helper decides between a worker and inline."""

from __future__ import annotations

import logging
import time

from celery import Task
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

# Without a broker, work after the commit runs in the request: a few quick attempts,
# then it is logged and dropped. A decision already committed is never failed by it.
INLINE_ATTEMPTS = 3
INLINE_BACKOFF_SECONDS = 0.2


def enqueue(task: Task | str, *args: object, **kwargs: object) -> None:
    """Run `task(*args, **kwargs)` once the current transaction commits. `task` may be
    its registered name: a service that enqueues the task that calls it back then
    imports no tasks module (no import cycle between services and tasks).

    With `CELERY_BROKER_URL` set, it goes to the broker for a worker (which retries
    what the task declares retryable); without one (the embedded default) it runs
    inline in this process. Never eager mode, and never a silent attempt to reach a
    broker nobody configured. Either way, a failure after the commit is logged and
    retried, never raised into the request that committed.
    """
    task = registered(task)
    if settings.CELERY_BROKER_URL:
        transaction.on_commit(lambda: _send(task, args, kwargs))
    else:
        transaction.on_commit(lambda: _run_inline(task, args, kwargs))


def registered(task: Task | str) -> Task:
    """The task itself, or the one registered under that name (each app's `tasks`
    module is imported when the app is ready); an unknown name is a KeyError at once."""
    if isinstance(task, str):
        from aihummer.celery import app

        return app.tasks[task]
    return task


def _send(task: Task, args: tuple, kwargs: dict, countdown: float | None = None) -> None:
    try:
        # kombu retries the publish itself (retry=True) before giving up.
        task.apply_async(args, kwargs, retry=True, countdown=countdown)
    except Exception:
        logger.exception("Could not send task %s to the broker; the committed change stands.", task.name)


def _run_inline(task: Task, args: tuple, kwargs: dict) -> None:
    for attempt in range(1, INLINE_ATTEMPTS + 1):
        try:
            task(*args, **kwargs)
            return
        except Exception as exc:
            if attempt == INLINE_ATTEMPTS:
                logger.exception(
                    "Task %s failed %d times after the commit; giving up (the committed change stands).",
                    task.name,
                    attempt,
                )
                return
            logger.warning("Task %s failed (attempt %d of %d): %s", task.name, attempt, INLINE_ATTEMPTS, exc)
            time.sleep(INLINE_BACKOFF_SECONDS * attempt)


def enqueue_in(seconds: float, task: Task | str, *args: object) -> None:
    """Like `enqueue`, `seconds` later (a retry's backoff). Inline, it waits that long."""
    task = registered(task)
    if settings.CELERY_BROKER_URL:
        transaction.on_commit(lambda: _send(task, args, {}, countdown=seconds))
    else:
        transaction.on_commit(lambda: (time.sleep(seconds), _run_inline(task, args, {})))
