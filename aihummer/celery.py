"""The Celery application. Workers and beat: `deploy/bin/worker`, `deploy/bin/beat`.

Celery is instrumented through its signals only: logging is the app's (one format, see
`aihummer.logging`), each task runs with its task id (and, for a workflow step, its
run id) in the log context, and is counted and timed (`aihummer.metrics`).
"""

import os
import time

from celery import Celery
from celery.signals import setup_logging, task_postrun, task_prerun, worker_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aihummer.settings")
# Django's system checks run once per release (`deploy/bin/release`, with --deploy), as
# for the web processes; Celery's Django fixup would run them again in every worker and
# beat at start (0.3 s of CPU: the whole URLconf and API loaded). Set it empty to have them.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("aihummer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Tasks whose first argument is a workflow run's id.
RUN_TASKS = frozenset({"workflows.workflow_step_run"})


@worker_init.connect
def refuse_to_start_without_broker(**kwargs: object) -> None:
    # Without this, Celery would quietly try its default amqp://localhost.
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    if not settings.CELERY_BROKER_URL:
        raise ImproperlyConfigured("CELERY_BROKER_URL is empty: a worker needs a broker (e.g. redis://host:6379/0).")


@setup_logging.connect
def use_the_app_logging(**kwargs: object) -> None:
    # Connected, this signal stops Celery from installing its own handlers and format.
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


@task_prerun.connect
def bind_task_context(task_id: str, task: object, args: tuple = (), **kwargs: object) -> None:
    from aihummer import logging as logs

    run_id = args[0] if getattr(task, "name", "") in RUN_TASKS and args else ""
    task.request.log_tokens = logs.bind(task_id=task_id, run_id=run_id, request_id="", workspace="")
    task.request.started_at = time.perf_counter()


@task_postrun.connect
def end_task_context(task: object, state: str | None = None, retval: object = None, **kwargs: object) -> None:
    from aihummer import logging as logs
    from aihummer import metrics

    started = getattr(task.request, "started_at", None)
    metrics.observe_task(task.name, state or "UNKNOWN", time.perf_counter() - started if started else None, retval)
    tokens = getattr(task.request, "log_tokens", None)
    if tokens:
        logs.unbind(tokens)


@worker_ready.connect
def serve_worker_metrics(**kwargs: object) -> None:
    from aihummer import metrics

    metrics.serve_worker_metrics()
