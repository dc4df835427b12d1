"""Runs per second with 1, 2 and 4 worker processes, each on a host of its own, and a
step's worker CPU with tracing off and on.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/multihost.py \\
        [--workers 1,2,4] [--runs 60] [--width 3] [--loopback]

Hosts are network namespaces (as root; `--loopback`, or a machine that refuses them,
runs every process on 127.0.0.1): a database host with a throw-away PostgreSQL and
Redis, a web host (release, seeding), and one host per worker process, each started
with the recipe's `deploy/bin/worker` (threads pool, 4 threads). The workload is
`--runs` runs of a fan-out (`--width` parallel steps, then a join) on the offline echo
provider, dispatched together: the machine's 2 cores are shared by every process, so
the ratios show the engine's own scaling, not the hardware's. Wall time is the
database's: first run created to last run finished. CPU per step is the worker
processes' user+system time over the steps they ran.

Tracing: the same workload on one worker with an OTLP endpoint (a local stand-in
collector), against the same without; and what each tracing hook costs when off.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
from pathlib import Path

import _django  # noqa: F401  (Django set up on DATABASE_URL)
from _django import throwaway_database

from aihummer import telemetry
from aihummer.tests.hosts import LoopbackHosts, NamespaceHosts, namespaces_refused
from aihummer.tests.otlp_receiver import OtlpReceiver
from aihummer.tests.recipe import Recipe, production_environ

SETUP = "import django; django.setup();"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def finished_runs(database_url: str) -> tuple[int, float | None]:
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://"), autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FILTER (WHERE status IN ('completed', 'failed')),"
            " extract(epoch FROM max(finished_at) - min(created_at)) FROM workflows_workflowrun"
        ).fetchone()
        return row[0], float(row[1]) if row[1] is not None else None


def clear_runs(recipe: Recipe, netns: str | None) -> None:
    recipe.run_python(
        f"{SETUP} from workflows.models import WorkflowRun; WorkflowRun.all_objects.all().delete()", netns=netns
    )


def batch(recipe: Recipe, hosts, workers: int, runs: int, width: int, database_url: str, **env: str) -> dict:
    """One measurement: `workers` worker processes on hosts of their own, `runs` runs."""
    web = hosts.netns("web")
    clear_runs(recipe, web)
    names = [f"w{index}" for index in range(1, workers + 1)]
    for name in names:
        if name not in hosts.hosts:
            hosts.add(name)
        recipe.start(name, "worker", netns=hosts.netns(name), AIHUMMER_WORKER_NAME=f"{name}-bench@%h", **env)
    for name in names:
        recipe.run("worker-ready", "120", netns=hosts.netns(name), AIHUMMER_WORKER_NAME=f"{name}-bench@%h")
    pids = [recipe.processes[name].pid for name in names]
    before = sum(cpu_seconds(pid) for pid in pids)
    recipe.run_python(f"{SETUP} from workflows.tests.multihost_seed import start_runs; start_runs({runs})", netns=web)
    deadline = time.monotonic() + 600
    while (done := finished_runs(database_url))[0] < runs:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {done[0]} of {runs} runs finished in 600 s:\n{recipe.diagnostics()}")
        time.sleep(0.2)
    cpu = sum(cpu_seconds(pid) for pid in pids) - before
    for name in names:
        recipe.stop_one(name)
    wall = done[1]
    steps = runs * (width + 1)
    return {"wall": wall, "runs_per_s": runs / wall, "cpu_ms_per_step": cpu * 1000 / steps}


def hook_cost_ns() -> dict[str, float]:
    """What each tracing hook costs with tracing off: CPU ns per call (best of 5)."""
    assert not telemetry.enabled()
    calls = {
        "model_call (enter/done/exit)": "with model_call(p, r) as c: c.done(r)",
        "step_span (enter/exit)": "with step_span(run_id=1, step='s', agent_key='a', attempt=1): pass",
        "run_finished": "run_finished(1)",
        "request_span (enter/done/exit)": "with request_span(r) as s: s.done('x', 200)",
    }
    scope = {name: getattr(telemetry, name) for name in ("model_call", "step_span", "run_finished", "request_span")}
    scope |= {"p": object(), "r": object()}
    number = 200_000
    return {
        label: min(timeit.repeat(code, globals=scope, number=number, repeat=5, timer=time.process_time)) / number * 1e9
        for label, code in calls.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--loopback", action="store_true", help="every process on 127.0.0.1 (no namespaces)")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    refused = None if args.loopback else namespaces_refused()
    if args.loopback or refused:
        if refused:
            print(f"network namespaces refused ({refused}): every process on loopback")
        from django.db import connection

        db = connection.settings_dict
        hosts = LoopbackHosts(
            f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
            os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14"),
        )
        from django.db import connection as own

        own.close()
    else:
        hosts = NamespaceHosts(tag=str(os.getpid() % 10_000), subnet=20 + os.getpid() % 200)
    logs = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-multihost-{os.getpid()}"
    recipe = None
    try:
        database_url, broker_url = hosts.start_database()
        hosts.add("web")
        recipe = Recipe(
            logs,
            production_environ(
                database_url=database_url,
                broker_url=broker_url,
                STATIC_ROOT=str(logs / "static"),
                AIHUMMER_LOG_JSON="0",
                LOG_LEVEL="WARNING",
                AIHUMMER_WORKER_CONCURRENCY="4",
            ),
        )
        web = hosts.netns("web")
        recipe.run("release", netns=web)
        recipe.run_python(
            f"{SETUP} from workflows.tests.multihost_seed import seed; seed('echo', {args.width})", netns=web
        )
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        kind = "loopback" if isinstance(hosts, LoopbackHosts) else "network namespaces"
        print(f"hosts: {kind}; CPUs: {os.cpu_count()}; load average before: {load}")
        print(f"workload: {args.runs} runs x ({args.width} parallel echo steps + join), dispatched together")
        print(f"{'worker processes':>16} {'wall s':>8} {'runs/s':>8} {'x 1 worker':>10} {'CPU ms/step':>12}")
        first = None
        for count in counts:
            figures = batch(recipe, hosts, count, args.runs, args.width, database_url)
            first = first or figures["runs_per_s"]
            print(
                f"{count:>16} {figures['wall']:>8.2f} {figures['runs_per_s']:>8.1f}"
                f" {figures['runs_per_s'] / first:>10.2f} {figures['cpu_ms_per_step']:>12.2f}"
            )
        with OtlpReceiver(host=hosts.gateway) as collector:
            print(f"{'tracing (1 worker)':>18} {'wall s':>8} {'runs/s':>8} {'CPU ms/step':>12}")
            for label, env in (("off", {}), ("on", {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint})):
                figures = batch(recipe, hosts, 1, args.runs, args.width, database_url, **env)
                rate, cpu = figures["runs_per_s"], figures["cpu_ms_per_step"]
                print(f"{label:>18} {figures['wall']:>8.2f} {rate:>8.1f} {cpu:>12.2f}")
            print(f"spans received with tracing on: {len(collector.spans)}")
        print("tracing hooks with tracing off (this process), CPU ns per call:")
        for label, ns in hook_cost_ns().items():
            print(f"  {label:<32} {ns:>7.0f}")
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        print(f"load average after: {load}")
    finally:
        if recipe is not None:
            recipe.stop()
        hosts.close()


if __name__ == "__main__":
    if os.geteuid() != 0 and "--loopback" not in sys.argv:
        sys.argv.append("--loopback")
    with throwaway_database():
        main()
