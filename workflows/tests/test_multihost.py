"""Issue 34: the engine across hosts. A database host (a throw-away PostgreSQL cluster
and Redis), a web host (the recipe's web tier and beat) and two worker hosts, each a
network namespace the test makes, joined by a bridge of its own. A fan-out's parallel
steps run on both workers; then one worker's host is torn down mid-run (its processes
killed, its namespace deleted) and the run completes on the other, through lease
expiry and the beat's sweep.

The database host starts with a copy of the test's migrated database, so the release
run from the web host (check, migrate, collectstatic across the network) finds nothing
to apply, as every release after the first (migrating an empty PostgreSQL database is
what makes every run's template database, aihummer/tests/databases.py). One web
process: what is spread over hosts here is the workers.

Where the machine refuses namespaces, that variant skips saying why, and the same
scenario runs as separate processes on loopback (which it also does everywhere, so the
fallback never rots), on the test's own database: there the release would be
aihummer/tests/test_deploy.py's, which runs it on that database from this host."""

from __future__ import annotations

import os

import pytest
from django.db import connection

from aihummer.tests.hosts import LoopbackHosts, NamespaceHosts, namespaces_refused
from aihummer.tests.ports import free_port
from aihummer.tests.recipe import Recipe, http, production_environ, wait_until
from workflows.tests.fake_openai import FakeOpenAI

WIDTH = 4  # parallel steps: two per worker (2 threads each, prefetch 1)
MODEL_DELAY = 1.5  # seconds per model call: time to see four steps running at once


def own_database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def hosts(request, redis_url):
    if request.param == "netns":
        refused = namespaces_refused()
        if refused:
            pytest.skip(f"network namespaces refused on this machine ({refused}); the loopback variant runs instead")
        made = NamespaceHosts(tag=str(os.getpid() % 10_000), subnet=20 + os.getpid() % 200)
    else:
        import redis

        redis.Redis.from_url(redis_url).flushdb()
        made = LoopbackHosts(own_database_url(), redis_url)
    try:
        yield made
    finally:
        made.close()


def steps_by_status(run: dict) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for step in run["steps"]:
        grouped.setdefault(step["status"], []).append(step)
    return grouped


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("hosts", ["netns", "loopback"], indirect=True)
def test_a_run_spreads_over_two_worker_hosts_and_survives_losing_one(hosts, tmp_path) -> None:
    database_url, broker_url = hosts.start_database(copy_of=own_database_url())
    web_address, port = hosts.add("web"), free_port()
    hosts.add("w1")
    hosts.add("w2")
    with FakeOpenAI(delay=MODEL_DELAY, host=hosts.gateway) as model:
        recipe = Recipe(
            tmp_path / "logs",
            production_environ(
                database_url=database_url,
                broker_url=broker_url,
                allowed_hosts=web_address,
                HOST=web_address,
                PORT=str(port),
                STATIC_ROOT=str(tmp_path / "static"),
                PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "web-metrics"),
                AIHUMMER_BEAT_SCHEDULE_FILE=str(tmp_path / "beat" / "schedule"),
                WEB_CONCURRENCY="1",
                AIHUMMER_WORKER_CONCURRENCY="2",
                AIHUMMER_STEP_LEASE_SEC="3",
                AIHUMMER_REVIVE_INTERVAL_SEC="0.5",
                AIHUMMER_PROVIDER_MAX_RETRIES="0",
            ),
        )
        base, web = f"http://{web_address}:{port}", hosts.netns("web")
        try:
            if web:  # on loopback: test_deploy's release, on the same database from the same host
                recipe.run("release", netns=web)
            seed = f"from workflows.tests.multihost_seed import seed; seed({model.base_url!r}, {WIDTH})"
            key = recipe.run_python(f"import django; django.setup(); {seed}", netns=web).strip().splitlines()[-1]
            api = {"Authorization": f"Bearer {key}"}
            recipe.start("web", "web", netns=web)
            recipe.start("beat", "beat", netns=web)
            for worker in ("w1", "w2"):
                recipe.start(worker, "worker", netns=hosts.netns(worker), AIHUMMER_WORKER_NAME=f"{worker}-{port}@%h")
            wait_until(
                lambda: http(f"{base}/healthz")[0] == 200, timeout=120, what="web", diagnostics=recipe.diagnostics
            )
            for worker in ("w1", "w2"):
                recipe.run("worker-ready", "90", netns=hosts.netns(worker), AIHUMMER_WORKER_NAME=f"{worker}-{port}@%h")

            def start_run() -> str:
                status, body = http(
                    f"{base}/v1/admin/workflows/fan/runs", method="POST", body={"message": "go"}, headers=api
                )
                assert status == 202, body
                return body["id"]

            def run_of(run_id: str) -> dict:
                return http(f"{base}/v1/admin/runs/{run_id}", headers=api)[1]

            def finished(run_id: str) -> dict | None:
                body = run_of(run_id)
                return body if body["status"] in ("completed", "failed", "cancelled") else None

            # 1. A fan-out: its parallel steps run on both worker hosts.
            first = start_run()
            first_run = wait_until(
                lambda: finished(first), timeout=60, what="the first run", diagnostics=recipe.diagnostics
            )

            # 2. Another: once all four branches run (two on each host), w2's host goes.
            second = start_run()
            wait_until(
                lambda: len(steps_by_status(run_of(second)).get("running", [])) == WIDTH,
                timeout=60,
                what="four branches running at once",
                diagnostics=recipe.diagnostics,
            )
            if hosts.netns("w2"):
                hosts.tear_down("w2")  # every process of the host killed, its namespace and link deleted
            else:
                recipe.kill("w2")
            second_run = wait_until(
                lambda: finished(second), timeout=90, what="the run after losing w2", diagnostics=recipe.diagnostics
            )
        finally:
            recipe.stop()

    assert first_run["status"] == "completed", first_run
    for worker in ("w1", "w2"):
        ran = [
            line
            for line in recipe.json_lines(worker)
            if line.get("run_id") == first and "succeeded" in line.get("message", "")
        ]
        assert len(ran) >= 2, (worker, recipe.log(worker)[-3000:])
    assert second_run["status"] == "completed", second_run
    attempts = sorted(step["attempts"] for step in second_run["steps"])
    assert attempts == [1] * (WIDTH - 1) + [2, 2], "w2's two branches ran again on w1, the rest once"
    assert second_run["outputs"], second_run
    lost = [
        line
        for line in recipe.json_lines("w1")
        if line.get("run_id") == second and "succeeded" in line.get("message", "")
    ]
    assert len(lost) >= 3, "w1 ran its own branches, w2's two again, and the join"
