"""A real Celery worker with Celery's beat embedded (`-B`) for a test: one process on the
test database and the test's own Redis database, stopped (and waited for) when the
block ends. (Beat as a process of its own, as the recipe runs it, is
aihummer/tests/test_deploy.py's.)"""

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
def beat_and_worker(redis_url: str, tmp_path: Path, **environ: str) -> Iterator[subprocess.Popen]:
    """A one-thread worker with beat on an emptied `redis_url`, with `environ` over this
    process's environment (a short interval, say); yields the process (its log: worker.log)."""
    redis.Redis.from_url(redis_url).flushdb()
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": redis_url,
        **environ,
    }
    # One process, not two: each boots Django and Celery (1.5 s of CPU).
    worker = celery(
        *("worker", "--pool", "threads", "--concurrency", "1", "--beat", "--schedule", str(tmp_path / "beat-schedule")),
        env=env,
        log=tmp_path / "worker.log",
    )
    try:
        yield worker
    finally:
        worker.terminate()
        worker.wait(timeout=15)
