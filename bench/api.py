"""p50/p99 latency of the REST API under uvicorn on loopback: the agents list, one
agent read and a proposal (a section edit), at 1 and 50 concurrent clients.

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/api.py`

The server is uvicorn (`aihummer.asgi:application`, `BENCH_WORKERS` processes, default 1) on a throw-away
database with 40 agents, throttling off and a connection pool of 10, as in production.
Each client is a thread with its own keep-alive connection.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from itertools import count

import requests
from _django import throwaway_database

REQUESTS_PER_CLIENT = {1: 200, 50: 20}
WORKERS = int(os.environ.get("BENCH_WORKERS", "1"))  # uvicorn processes
AGENTS = 40


def seed() -> str:
    from agents.services import agent_create, preset_create
    from aihummer.actors import Actor
    from aihummer.models import Membership, User, Workspace
    from aihummer.services import api_key_create

    operator = Actor.for_operator(name="bench")
    workspace = Workspace.objects.create(slug="bench", name="Bench")
    alice = User.objects.create_user("alice", password="x")
    Membership.objects.create(user=alice, workspace=workspace, role="editor")
    preset_create(
        workspace=workspace,
        actor=operator,
        key="echo",
        name="Echo",
        provider_name="echo",
        model="echo-1",
        is_active=True,
    )
    sections = [{"key": f"s{i}", "title": f"Section {i}", "body": "Some guidance. " * 40} for i in range(8)]
    for index in range(AGENTS):
        agent_create(
            workspace=workspace,
            actor=operator,
            key=f"agent-{index:02d}",
            name=f"Agent {index}",
            snapshot={"identity": {"name": f"Agent {index}"}, "sections": sections},
        )
    return api_key_create(workspace=workspace, name="bench", scopes="read,write", owner=alice, actor=operator)[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(database_name: str, port: int) -> subprocess.Popen:
    from django.db import connection

    url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + database_name
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DATABASE_POOL_MAX_SIZE": "10",
        "AIHUMMER_API_RATE_PER_KEY": "0",
        "AIHUMMER_API_RATE_PER_USER": "0",
        "CELERY_BROKER_URL": "",
        "EMAIL_BACKEND": "django.core.mail.backends.dummy.EmailBackend",
        "LOG_LEVEL": "WARNING",
    }
    connection.close()  # the server opens its own connections
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "uvicorn", "aihummer.asgi:application", "--port", str(port)),
            *("--workers", str(WORKERS), "--log-level", "warning"),
        ],
        env=env,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).ok:
                return server
        except requests.ConnectionError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("uvicorn did not answer within 30 s")


def run(base: str, key: str, clients: int, workload: str) -> list[float]:
    timings: list[float] = []
    lock = threading.Lock()
    sequence = count()

    def client() -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {key}"
        mine = []
        for _ in range(REQUESTS_PER_CLIENT[clients]):
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


def main() -> None:
    from django.db import connection

    key = seed()
    port = free_port()
    server = start_server(connection.settings_dict["NAME"], port)
    base = f"http://127.0.0.1:{port}"
    try:
        run(base, key, 1, "list")  # warm-up: imports, pool, caches
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        print(f"uvicorn workers: {WORKERS}; CPUs: {os.cpu_count()}; load average before: {load}")
        print(f"{'workload':<28} {'clients':>7} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8}")
        for workload, label in (
            ("list", "agents list (40, 1 page)"),
            ("read", "agent read"),
            ("propose", "propose (section edit)"),
        ):
            for clients in (1, 50):
                started = time.perf_counter()
                timings = run(base, key, clients, workload)
                elapsed = time.perf_counter() - started
                p50 = statistics.median(timings)
                p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
                print(
                    f"{label:<28} {clients:>7} {len(timings):>8} {p50:>8.1f} {p99:>8.1f} {len(timings) / elapsed:>8.0f}"
                )
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    with throwaway_database():
        main()
