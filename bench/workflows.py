"""The workflow engine's cost against LangGraph's (PostgreSQL checkpointer), same run.

A 3-step linear workflow whose steps call a local OpenAI-protocol server (each step
reads the previous step's answer), on real Celery workers (threads pool) over Redis:

- A. engine overhead: the server answers at once; --runs runs one after another;
  ms per step (run wall time / 3, from the run's own timestamps) p50 and p95, and SQL
  statements per step (every statement of one run, start included, / 3, counted in
  this process on an inline run);
- B. concurrency: the server answers after --delay s; each of --concurrency runs
  started at once (from 8 threads); wall time (first start to last finish) and its
  ratio to the ideal 3 x delay;

each for every number of worker processes in --workers. With --peer PYTHON it also
runs ../shared/peers/langgraph_bench.py (same workloads, LangGraph + PostgreSQL
checkpointer, durability "async", its default) with that interpreter and prints both
side by side with the ratios. Machines are noisy: compare ratios from one invocation.

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/workflows.py \\
    --peer /work/peer-venv/bin/python`
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _django import throwaway_database

ROOT = Path(__file__).resolve().parent.parent
PEER_SCRIPT = ROOT.parent / "shared" / "peers" / "langgraph_bench.py"
STEPS = 3


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200, help="phase A: sequential runs (default 200)")
    parser.add_argument("--concurrency", default="100,400", help="phase B: runs started at once (default 100,400)")
    parser.add_argument("--delay", type=float, default=0.2, help="phase B: server latency in s (default 0.2)")
    parser.add_argument("--workers", default="1,2", help="numbers of worker processes (default 1,2)")
    parser.add_argument("--threads", type=int, default=200, help="threads per worker process (default 200)")
    parser.add_argument("--pool", type=int, default=20, help="database connections per worker process (default 20)")
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    parser.add_argument("--peer", help="a Python with LangGraph (see ../shared/peers/README.md)")
    parser.add_argument("--peer-dsn", default="postgresql://postgres@127.0.0.1:5432/langgraph_peer_bench")
    parser.add_argument("--phases", default="A,B")
    args = parser.parse_args()
    args.concurrency = [int(x) for x in args.concurrency.split(",") if x]
    args.workers = [int(x) for x in args.workers.split(",") if x]
    args.phases = [x.strip().upper() for x in args.phases.split(",") if x.strip()]
    return args


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- our side -----------------------------------------------------------------------
class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        from agents.services import agent_create, credential_create, preset_create
        from aihummer.actors import Actor
        from aihummer.models import Workspace
        from workflows.services import workflow_create
        from workflows.tests.fake_openai import FakeOpenAI

        self.args = args
        self.server = FakeOpenAI(delay=0.0).__enter__()
        self.operator = Actor.for_operator(name="bench")
        workspace = Workspace.objects.create(slug="bench", name="Bench")
        credential = credential_create(
            workspace=workspace, actor=self.operator, key="fake", secret="sk-bench-0123456789"
        )
        preset = preset_create(
            workspace=workspace,
            actor=self.operator,
            key="fake",
            name="Fake",
            provider_name="openai",
            base_url=self.server.base_url,
            model="fake-model",
            credential=credential,
        )
        echo = preset_create(
            workspace=workspace, actor=self.operator, key="echo", name="Echo", provider_name="echo", model="echo-1"
        )
        self.workflows = {}
        for key, step_preset in (("linear", preset), ("linear-echo", echo)):
            agent = f"{key}-step"
            agent_create(
                workspace=workspace,
                actor=self.operator,
                key=agent,
                name="Step",
                preset=step_preset,
                snapshot={"system_prompt": "Go."},
            )
            steps = [{"name": "s1", "agent_name": agent}]
            steps += [
                {"name": f"s{i}", "agent_name": agent, "input_mapping": {"text": f"$.steps.s{i - 1}.output.answer"}}
                for i in (2, 3)
            ]
            definition = {"version": 1, "steps": steps}
            self.workflows[key] = workflow_create(
                workspace=workspace, actor=self.operator, key=key, name=key, definition=definition
            )
        self.workflow = self.workflows["linear"]
        self.processes: list[subprocess.Popen] = []

    def sql_per_step(self) -> float:
        """Every statement of one inline run (start included) / 3, on this process."""
        from django.conf import settings
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from workflows.services import workflow_run_start

        broker, settings.CELERY_BROKER_URL = settings.CELERY_BROKER_URL, ""
        try:
            workflow_run_start(workflow=self.workflow, actor=self.operator, message="warm")
            with CaptureQueriesContext(connection) as queries:
                run = workflow_run_start(workflow=self.workflow, actor=self.operator, message="count")
            run.refresh_from_db()
            assert run.status == "completed", run.error
        finally:
            settings.CELERY_BROKER_URL = broker
        return len(queries) / STEPS

    def start_workers(self, count: int) -> None:
        import redis
        from django.conf import settings
        from django.db import connection

        from aihummer.celery import app

        redis.Redis.from_url(self.args.redis).flushdb()
        settings.CELERY_BROKER_URL = self.args.redis
        app.close()
        app.conf.broker_url = self.args.redis
        db = connection.settings_dict
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
            "DATABASE_POOL_MAX_SIZE": str(self.args.pool),
            "CELERY_BROKER_URL": self.args.redis,
            "AIHUMMER_VAULT_KEYS": ",".join(settings.AIHUMMER_VAULT_KEYS),
            "LOG_LEVEL": "WARNING",
        }
        for _ in range(count):
            command = [sys.executable, "-m", "celery", "-A", "aihummer", "worker", "--pool", "threads"]
            command += ["-c", str(self.args.threads), "--loglevel", "WARNING", "--without-gossip", "--without-mingle"]
            self.processes.append(
                subprocess.Popen(
                    command,
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        self.wait_all(self.start_many(4 * count, "warm-up"), timeout=60)

    def stop_workers(self) -> None:
        for process in self.processes:
            os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        self.processes = []

    def start_many(self, count: int, message: str) -> list:
        from django.db import connection

        from workflows.services import workflow_run_start

        def start(_: int) -> object:
            try:
                return workflow_run_start(workflow=self.workflow, actor=self.operator, message=message).pk
            finally:
                connection.close()

        with ThreadPoolExecutor(max_workers=8) as pool:
            return list(pool.map(start, range(count)))

    def wait_all(self, run_ids: list, timeout: float) -> list:
        from workflows.models import WorkflowRun

        deadline = time.monotonic() + timeout
        while WorkflowRun.objects.filter(pk__in=run_ids).exclude(status__in=WorkflowRun.FINISHED).exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"runs still unfinished after {timeout:g} s")
            time.sleep(0.02)
        runs = list(WorkflowRun.objects.filter(pk__in=run_ids))
        failed = [run for run in runs if run.status != "completed"]
        if failed:
            raise SystemExit(f"{len(failed)} run(s) did not complete, e.g. {failed[0].pk}: {failed[0].error}")
        return runs

    def phase_a(self, key: str = "linear") -> dict:
        from workflows.models import WorkflowRun
        from workflows.services import workflow_run_start

        self.server.delay = 0.0
        per_step = []
        for _ in range(self.args.runs):
            run = workflow_run_start(workflow=self.workflows[key], actor=self.operator, message="a")
            while not WorkflowRun.objects.filter(pk=run.pk, status__in=WorkflowRun.FINISHED).exists():
                time.sleep(0.001)
            run.refresh_from_db()
            assert run.status == "completed", run.error
            per_step.append((run.finished_at - run.created_at).total_seconds() * 1000 / STEPS)
        return {"step_ms_p50": statistics.median(per_step), "step_ms_p95": percentile(per_step, 0.95)}

    def phase_b(self, runs: int) -> dict:
        self.server.delay = self.args.delay
        finished = self.wait_all(self.start_many(runs, "b"), timeout=300)
        wall = (max(r.finished_at for r in finished) - min(r.created_at for r in finished)).total_seconds()
        return {"wall_s": wall, "ratio": wall / (STEPS * self.args.delay)}


def run_ours(args: argparse.Namespace) -> dict:
    bench = Bench(args)
    results = {"sql_per_step": bench.sql_per_step()}
    try:
        for workers in args.workers:
            bench.start_workers(workers)
            try:
                if "A" in args.phases:
                    results[("A", workers)] = bench.phase_a()
                    print(f"A, {workers} worker(s): {results[('A', workers)]}", flush=True)
                    results[("A-echo", workers)] = bench.phase_a("linear-echo")
                    print(f"A (echo), {workers} worker(s): {results[('A-echo', workers)]}", flush=True)
                if "B" in args.phases:
                    for runs in args.concurrency:
                        results[("B", workers, runs)] = bench.phase_b(runs)
                        print(f"B, {workers} worker(s), {runs} runs: {results[('B', workers, runs)]}", flush=True)
            finally:
                bench.stop_workers()
    finally:
        bench.server.__exit__(None, None, None)
    return results


# --- the peer -----------------------------------------------------------------------
def run_peer(args: argparse.Namespace) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [args.peer, str(PEER_SCRIPT), "--repeat", "1", "--backends", "postgres", "--durability", "async"]
        command += ["--runs", str(args.runs), "--delay", str(args.delay), "--dsn", args.peer_dsn, "--json", out.name]
        command += ["--concurrency", ",".join(map(str, args.concurrency)), "--phases", ",".join(args.phases)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        raw = json.load(open(out.name))  # noqa: SIM115 (read once, closed with the temp file)
    peer = {}
    for item in raw["results"]:
        rep = item["reps"][0]
        # Phase A: the synchronous PostgresSaver, as a sequential caller would use it.
        if item["phase"] == "A" and item["api"] == "sync":
            peer["A"] = {k: rep[k] for k in ("step_ms_p50", "step_ms_p95", "sql_per_step")}
        elif item["phase"] == "B" and item["backend"] == "postgres":
            peer[("B", item["concurrency"])] = {"wall_s": rep["wall_s"], "ratio": rep["ratio"]}
    return peer


# --- the table ----------------------------------------------------------------------
def print_table(args: argparse.Namespace, ours: dict, peer: dict) -> None:
    print()
    print(
        f"3-step linear workflow; Celery threads pool ({args.threads} threads, {args.pool} DB connections per process)"
    )
    if "A" in args.phases:
        print(f"\nA  engine overhead: server answers at once, {args.runs} sequential runs; step = run wall time / 3")
        header = f"{'system':<40}{'step p50 ms':>12}{'step p95 ms':>12}{'SQL/step':>10}{'p50 vs peer':>12}"
        print(header)
        print("-" * len(header))
        rows = [(kind, workers) for kind in ("A", "A-echo") for workers in args.workers]
        for kind, workers in rows:
            a = ours[(kind, workers)]
            versus = f"{a['step_ms_p50'] / peer['A']['step_ms_p50']:.2f}x" if "A" in peer else "-"
            label = f"AiHummer, {workers} worker(s)" + (", echo (no HTTP)" if kind == "A-echo" else "")
            print(
                f"{label:<40}{a['step_ms_p50']:>12.2f}{a['step_ms_p95']:>12.2f}{ours['sql_per_step']:>10.2f}{versus:>12}"
            )
        if "A" in peer:
            a = peer["A"]
            label = "LangGraph + PostgresSaver (async)"
            print(
                f"{label:<40}{a['step_ms_p50']:>12.2f}{a['step_ms_p95']:>12.2f}{a['sql_per_step']:>10.2f}{'1.00x':>12}"
            )
    if "B" in args.phases:
        ideal = STEPS * args.delay
        print(f"\nB  concurrency: server answers after {args.delay:g} s; runs started at once; ideal {ideal:g} s")
        header = f"{'system':<40}{'runs':>6}{'wall s':>9}{'wall/ideal':>12}{'vs peer':>10}"
        print(header)
        print("-" * len(header))
        for runs in args.concurrency:
            for workers in args.workers:
                b = ours[("B", workers, runs)]
                other = peer.get(("B", runs))
                versus = f"{b['wall_s'] / other['wall_s']:.2f}x" if other else "-"
                label = f"AiHummer, {workers} worker process(es)"
                print(f"{label:<40}{runs:>6}{b['wall_s']:>9.2f}{b['ratio']:>12.2f}{versus:>10}")
            if ("B", runs) in peer:
                b = peer[("B", runs)]
                label = "LangGraph + AsyncPostgresSaver"
                print(f"{label:<40}{runs:>6}{b['wall_s']:>9.2f}{b['ratio']:>12.2f}{'1.00x':>10}")


def main() -> None:
    args = parse_args()
    started = time.perf_counter()
    with throwaway_database():
        ours = run_ours(args)
    peer = run_peer(args) if args.peer else {}
    print_table(args, ours, peer)
    print(f"\ntotal script time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
