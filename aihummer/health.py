"""Probes for load balancers and orchestrators.

- `/healthz`: liveness. The process answers; nothing else is checked, so a database
  outage makes every web process unready (below), not restarted in a loop.
- `/readyz`: readiness. The database, the broker and the cache each answer within a
  short timeout; 503 naming the one that does not.

Workers have no HTTP port: their readiness is Celery's own `inspect ping`
(`deploy/bin/worker-ready`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse

# Long enough for a healthy broker across a network, short enough for a probe's timeout.
BROKER_TIMEOUT_SECONDS = 2.0
MAX_ERROR_CHARS = 200


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers."""
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: `{"status": "ok"|"unavailable", "checks": {name: {"status", "ms", "error"?}}}`."""
    checks = {name: _timed(check) for name, check in CHECKS.items()}
    ready = all(check["status"] != "error" for check in checks.values())
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)


def _timed(check: Callable[[], str]) -> dict:
    started = time.perf_counter()
    try:
        result = {"status": check()}
    except Exception as exc:  # a probe reports any failure; it never raises one
        result = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]}
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def check_broker() -> str:
    if not settings.CELERY_BROKER_URL:
        return "skipped"  # development: tasks run inline (production refuses this)
    from kombu import Connection

    with Connection(settings.CELERY_BROKER_URL, connect_timeout=BROKER_TIMEOUT_SECONDS) as broker:
        broker.ensure_connection(max_retries=0, timeout=BROKER_TIMEOUT_SECONDS)
    return "ok"


def check_cache() -> str:
    key = "aihummer:readyz"
    cache.set(key, "1", timeout=10)
    if cache.get(key) != "1":
        raise RuntimeError("the cache did not keep a value for a second")
    return "ok"


CHECKS: dict[str, Callable[[], str]] = {"database": check_database, "broker": check_broker, "cache": check_cache}
