"""The production recipe's processes for tests: `deploy/bin/*`, started exactly as the
recipe starts them (no second way), each in its own process group with its own log,
optionally inside a network namespace (`ip netns exec`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings

BIN = Path(settings.BASE_DIR) / "deploy" / "bin"
SECRET_KEY = "k7Hq2vXw9LmP4rTz8YcN1bFgJ6sDaE3uQoWiR5tVyZx0MnBh-_recipe"
METRICS_TOKEN = "recipe-metrics-token-0123456789"
# Production refuses the development vault key: a test that gives the recipe's
# processes credentials encrypts them with this one (settings.AIHUMMER_VAULT_KEYS).
VAULT_KEY = "mW3oV0n7bq2Jr8Qf5yL1tZc9xK4sHd6uGa0EpRiN2Tw="


def production_environ(*, database_url: str, broker_url: str, allowed_hosts: str = "127.0.0.1", **extra: str) -> dict:
    """A production environment (`deploy/aihummer.env.example`'s variables) for a test:
    plain HTTP (no proxy in front), JSON logs, metrics with a token, fast recovery."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("AIHUMMER_", "CELERY_", "DJANGO_", "OTEL_"))}
    return (
        inherited
        | {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIHUMMER_ENV": "production",
            "SECRET_KEY": SECRET_KEY,
            "AIHUMMER_VAULT_KEYS": VAULT_KEY,
            "ALLOWED_HOSTS": allowed_hosts,
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": broker_url,
            "DATABASE_POOL_MAX_SIZE": "4",
            "SECURE_SSL_REDIRECT": "false",
            "SESSION_COOKIE_SECURE": "false",
            "CSRF_COOKIE_SECURE": "false",
            "SECURE_HSTS_SECONDS": "0",
            "AIHUMMER_LOG_JSON": "1",
            "AIHUMMER_METRICS_TOKEN": METRICS_TOKEN,
            "AIHUMMER_REVIVE_INTERVAL_SEC": "1",
            "AIHUMMER_API_RATE_PER_KEY": "0",
            "AIHUMMER_API_RATE_PER_USER": "0",
            "WEB_CONCURRENCY": "2",
            "AIHUMMER_WORKER_CONCURRENCY": "4",
        }
        | extra
    )


class Recipe:
    """Processes of deploy/bin/*; `stop()` ends every one it started (by process group)."""

    def __init__(self, logs: Path, environ: dict) -> None:
        self.logs, self.environ = logs, environ
        self.processes: dict[str, subprocess.Popen] = {}
        logs.mkdir(parents=True, exist_ok=True)

    def command(self, role: str, *args: str, netns: str | None = None) -> list[str]:
        command = [str(BIN / role), *args]
        return ["ip", "netns", "exec", netns, *command] if netns else command

    def run(self, role: str, *args: str, timeout: float = 300, netns: str | None = None, **env: str) -> str:
        """Run a one-shot command of the recipe (release, worker-ready); its output."""
        return self._run(self.command(role, *args, netns=netns), timeout, env)

    def run_python(self, code: str, *, timeout: float = 300, netns: str | None = None) -> str:
        """`python -c code` in the recipe's environment (e.g. rows a test needs); its stdout."""
        command = ["python", "-c", code]
        env = {"DJANGO_SETTINGS_MODULE": "aihummer.settings"}
        return self._run(["ip", "netns", "exec", netns, *command] if netns else command, timeout, env)

    def _run(self, command: list[str], timeout: float, env: dict) -> str:
        result = subprocess.run(
            command,
            env=self.environ | env,
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            raise AssertionError(f"{command[-1]} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def start(self, name: str, role: str, *args: str, netns: str | None = None, **env: str) -> subprocess.Popen:
        log = (self.logs / f"{name}.log").open("w")
        process = subprocess.Popen(
            self.command(role, *args, netns=netns),
            env=self.environ | env,
            cwd=settings.BASE_DIR,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text()

    def json_lines(self, name: str) -> list[dict]:
        lines = []
        for line in self.log(name).splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                lines.append({"unparsed": line})
        return lines

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop_one(self, name: str) -> None:
        """Stop one process as its supervisor would (SIGTERM: a worker's warm shutdown)."""
        process = self.processes.pop(name)
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.processes.clear()

    def diagnostics(self) -> str:
        return "\n".join(f"--- {path.name}\n{path.read_text()[-3000:]}" for path in sorted(self.logs.glob("*.log")))


def http(url: str, *, method: str = "GET", body: dict | None = None, headers: dict | None = None) -> tuple[int, dict]:
    """(status, headers and parsed JSON or text) of one request; never raises on 4xx/5xx."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, {"text": raw.decode(errors="replace")}


def wait_until(condition: object, *, timeout: float, what: str, diagnostics: object = None) -> object:
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = condition()
        except OSError:
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            details = f"\n{diagnostics()}" if diagnostics else ""
            raise AssertionError(f"Gave up after {timeout:g} s waiting for {what}.{details}")
        time.sleep(0.2)
