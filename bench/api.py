"""p50/p99 latency of the REST API on loopback: the agents list, one agent read and a
proposal (a section edit), at 1 and 50 concurrent clients, against the production
recipe's web tier (`deploy/bin/web`: gunicorn managing uvicorn workers) and, for
comparison, plain uvicorn.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/api.py \
        [--server recipe|uvicorn] [--processes 1,2,4]

Each configuration is a server started afresh in production mode (DEBUG off, a broker
configured, nothing enqueued) on a throw-away database with 40 agents, throttling off
and a connection pool of 10, as in production. Each client is a thread with its own
keep-alive connection; clients and server share this machine's cores.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from itertools import count
from pathlib import Path

import requests
from _django import BENCH_SECTIONS, bench_workspace, throwaway_database

from aihummer.tests.ports import free_port

REQUESTS_PER_CLIENT = {1: 200, 50: 20}
AGENTS = 40
ROOT = Path(__file__).resolve().parent.parent
BENCH_SECRET = "k7Hq2vXw9LmP4rTz8YcN1bFgJ6sDaE3uQoWiR5tVyZx0MnBh-_bench-only"
BENCH_VAULT = "mW3oV0n7bq2Jr8Qf5yL1tZc9xK4sHd6uGa0EpRiN2Tw="


def seed() -> str:
    from agents.services import agent_create
    from aihummer.models import Membership, User
    from aihummer.services import api_key_create

    workspace, operator = bench_workspace()
    alice = User.objects.create_user("alice", password="x")
    Membership.objects.create(user=alice, workspace=workspace, role="editor")
    for index in range(AGENTS):
        agent_create(
            workspace=workspace,
            actor=operator,
            key=f"agent-{index:02d}",
            name=f"Agent {index}",
            snapshot={"identity": {"name": f"Agent {index}"}, "sections": BENCH_SECTIONS},
        )
    return api_key_create(workspace=workspace, name="bench", scopes="read,write", owner=alice, actor=operator)[1]


def start_server(database_name: str, port: int, server: str, processes: int) -> subprocess.Popen:
    from django.db import connection

    url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + database_name
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AIHUMMER_", "DJANGO_"))},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIHUMMER_ENV": "production",
        "SECRET_KEY": BENCH_SECRET,
        "AIHUMMER_VAULT_KEYS": BENCH_VAULT,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "DATABASE_URL": url,
        "DATABASE_POOL_MAX_SIZE": "10",
        # Proposals enqueue their notifications here; no worker reads them: name a Redis
        # database of your own, and empty it afterwards.
        "CELERY_BROKER_URL": os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/15"),
        "AIHUMMER_API_RATE_PER_KEY": "0",
        "AIHUMMER_API_RATE_PER_USER": "0",
        "EMAIL_BACKEND": "django.core.mail.backends.dummy.EmailBackend",
        "LOG_LEVEL": "WARNING",
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "WEB_CONCURRENCY": str(processes),
    }
    connection.close()  # the server opens its own connections
    if server == "recipe":
        command = [str(ROOT / "deploy" / "bin" / "web")]
    else:
        command = [sys.executable, "-m", "uvicorn", "aihummer.asgi:application", "--port", str(port)]
        command += ["--workers", str(processes), "--log-level", "warning", "--no-access-log"]
    process = subprocess.Popen(command, env=env, cwd=ROOT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).ok:
                return process
        except requests.RequestException:  # not listening yet, or still importing
            time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    raise SystemExit(f"{server} did not answer within 120 s")


def run(base: str, key: str, clients: int, workload: str) -> list[float]:
    timings: list[float] = []
    lock = threading.Lock()
    sequence = count()

    def client() -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {key}"
        mine = []
        for _ in range(REQUESTS_PER_CLIENT.get(clients, 20)):
            n = next(sequence)
            started = time.perf_counter()
            if workload == "list":
                response = session.get(f"{base}/v1/admin/agents?limit=50")
            elif workload == "read":
                response = session.get(f"{base}/v1/admin/agents/agent-{n % AGENTS:02d}")
            else:
                agent = f"agent-{n % AGENTS:02d}"
                response = session.patch(f"{base}/v1/admin/agents/{agent}/sections/s0", json={"body": f"Edit {n}."})
            mine.append((time.perf_counter() - started) * 1000)
            expected = 202 if workload == "propose" else 200
            assert response.status_code == expected, (response.status_code, response.text[:200])
        with lock:
            timings.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(timings)


WORKLOADS = (("list", "agents list (40, 1 page)"), ("read", "agent read"), ("propose", "propose (section edit)"))


def measure(key: str, server: str, processes: int) -> dict[tuple[str, int], tuple[float, float, float]]:
    """(workload, clients) -> (p50 ms, p99 ms, requests/s) for one server configuration."""
    from django.db import connection

    port = free_port()
    process = start_server(connection.settings_dict["NAME"], port, server, processes)
    base = f"http://127.0.0.1:{port}"
    figures = {}
    try:
        run(base, key, 8, "list")  # warm-up: every process imports, fills its pool and caches
        for workload, _ in WORKLOADS:
            for clients in (1, 50):
                started = time.perf_counter()
                timings = run(base, key, clients, workload)
                elapsed = time.perf_counter() - started
                p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
                figures[workload, clients] = (statistics.median(timings), p99, len(timings) / elapsed)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=["recipe", "uvicorn"], action="append", help="default: both")
    parser.add_argument("--processes", default="1,2,4", help="web processes per configuration (default 1,2,4)")
    args = parser.parse_args()
    servers = args.server or ["uvicorn", "recipe"]
    key = seed()
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"CPUs: {os.cpu_count()}; load average before: {load}")
    header = f"{'server':<10} {'procs':>5} {'workload':<26} {'clients':>7} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>7}"
    print(header + f" {'x 1-client rate':>15} {'p99 / 1-client p50':>18}")
    for server in servers:
        for processes in [int(n) for n in args.processes.split(",")]:
            figures = measure(key, server, processes)
            for workload, label in WORKLOADS:
                single_p50, _, single_rate = figures[workload, 1]
                for clients in (1, 50):
                    p50, p99, rate = figures[workload, clients]
                    print(
                        f"{server:<10} {processes:>5} {label:<26} {clients:>7} {p50:>8.1f} {p99:>8.1f} {rate:>7.0f}"
                        f" {rate / single_rate:>15.1f} {p99 / single_p50:>18.1f}"
                    )
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"load average after: {load}")


if __name__ == "__main__":
    with throwaway_database():
        main()
