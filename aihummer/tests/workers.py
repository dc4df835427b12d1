"""Celery workers in subprocesses for tests that kill them (SIGKILL) and start others,
on the test's own database and broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.db import connection


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class Workers:
    """Celery workers in subprocesses (threads pool), each in its own process group."""

    def __init__(self, broker_url: str, tmp_path: Path) -> None:
        self.broker_url, self.tmp_path, self.processes = broker_url, tmp_path, []

    def start(self, *, lease: int, beat: bool = False, **extra_env: str) -> subprocess.Popen:
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": self.broker_url,
            "AIHUMMER_VAULT_KEYS": ",".join(settings.AIHUMMER_VAULT_KEYS),
            "AIHUMMER_STEP_LEASE_SEC": str(lease),
            "AIHUMMER_REVIVE_INTERVAL_SEC": "0.5",
            "AIHUMMER_PROVIDER_MAX_RETRIES": "0",
            # Fewer connections than threads: a turn gives its connection back while the
            # model answers, and the heartbeat between beats.
            "DATABASE_POOL_MAX_SIZE": "3",
            **extra_env,
        }
        command = [sys.executable, "-m", "celery", "-A", "aihummer", "worker", "--pool", "threads", "-c", "4"]
        command += ["--loglevel", "WARNING", "--without-gossip", "--without-mingle"]
        if beat:
            command += ["-B", "-s", str(self.tmp_path / "beat-schedule")]
        log = (self.tmp_path / f"worker-{len(self.processes)}.log").open("w")
        process = subprocess.Popen(
            command, cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
