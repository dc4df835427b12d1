"""gunicorn settings of the web tier (`deploy/bin/web`); every value can be set from
the environment. Why gunicorn with uvicorn workers, and how many: deploy/README.md."""

import os

from aihummer.logging import logging_config

bind = [f"{os.environ.get('HOST', '0.0.0.0')}:{os.environ.get('PORT', '8000')}"]  # noqa: S104 (behind the proxy)
worker_class = "uvicorn_worker.UvicornWorker"
# Django's sync views run one at a time per thread and the GIL lets one process use
# one core: throughput comes from processes. Two per core overlaps each process's waits
# on the database (deploy/README.md has the figures).
workers = int(os.environ.get("WEB_CONCURRENCY") or 2 * (os.cpu_count() or 1))
# A worker that stops answering the arbiter this long is killed and replaced.
timeout = int(os.environ.get("WEB_TIMEOUT", "60"))
graceful_timeout = int(os.environ.get("WEB_GRACEFUL_TIMEOUT", "30"))
keepalive = int(os.environ.get("WEB_KEEPALIVE", "5"))
# Recycle a process now and then (staggered): a slow leak never reaches the OOM killer.
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "20000"))
max_requests_jitter = max_requests // 10
# The proxy in front, whose X-Forwarded-* headers are believed.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# gunicorn's runtime control socket (gunicornc) is not used; one per host would clash.
control_socket_disable = True
# Workers' heartbeat files in memory: a slow disk must not look like a hung worker.
_SHM = "/dev/shm"  # noqa: S108 (gunicorn's documented place for them)
worker_tmp_dir = os.environ.get("WEB_WORKER_TMP_DIR") or (_SHM if os.path.isdir(_SHM) else None)

# One log format with the app (aihummer/logging.py); no access log: the app writes one
# line per request, with its id.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "INFO").lower()
logconfig_dict = logging_config(
    json=os.environ.get("AIHUMMER_LOG_JSON", "").strip().lower() in {"1", "true", "yes", "on"},
    level=os.environ.get("LOG_LEVEL", "INFO").upper(),
)


def child_exit(server: object, worker: object) -> None:
    # A dead process's live gauges leave the multiprocess metrics (prometheus-client).
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
