"""A real `celery beat` and worker for a test: two processes on the test database and
the test's own Redis database, stopped (and waited for) when the block ends."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import redis
from django.conf import settings
from django.db import connection


def celery(*args: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "celery", "-A", "aihummer", *args, "--loglevel", "INFO"]
    return subprocess.Popen(command, cwd=settings.BASE_DIR, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


@contextlib.contextmanager
def beat_and_worker(redis_url: str, tmp_path: Path, **environ: str) -> Iterator[tuple[subprocess.Popen, ...]]:
    """Beat and a one-thread worker on an emptied `redis_url`, with `environ` over this
    process's environment (a short interval, say); yields (beat, worker)."""
    redis.Redis.from_url(redis_url).flushdb()
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": redis_url,
        **environ,
    }
    worker = celery("worker", "--pool", "threads", "--concurrency", "1", env=env, log=tmp_path / "worker.log")
    beat = celery("beat", "--schedule", str(tmp_path / "beat-schedule"), env=env, log=tmp_path / "beat.log")
    try:
        yield beat, worker
    finally:
        for process in (beat, worker):
            process.terminate()
        for process in (beat, worker):
            process.wait(timeout=15)
