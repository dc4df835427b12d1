"""The workflow engine's cost against LangGraph's (PostgreSQL checkpointer), same run.

Linear workflows whose steps each call a model (every step reads the previous step's
answer), on real Celery workers (threads pool) over Redis, the model being either a
local OpenAI-protocol server reached through the OpenAI SDK ("SDK") or the offline
echo provider ("echo"):

- A. engine overhead: the model answers at once; --runs runs one after another;
  ms per step (run wall time / steps, from the run's own timestamps) p50 and p95, and
  the CPU the worker processes (and, apart, their PostgreSQL backends) spent per step;
- B. concurrency: the server answers after --delay s; --concurrency runs started at
  once; wall time (first start to last finish), its ratio to the ideal steps x delay,
  steps per second and worker CPU per step, and where the wall went (the starts'
  spread, a run's wait for its first step, a step's claim to finish, the hand-off);
- the same A and B with --long-steps-step runs (--long-runs of them in B);
- statements and commits per step, counted in this process on a run whose steps it
  runs as a worker does (start included, / steps).

Each for every number of worker processes in --workers. With --peer PYTHON it also runs
../shared/peers/langgraph_bench.py (same workloads, LangGraph + PostgreSQL
checkpointer, durability "async", its default) with that interpreter. The two systems
run in turn, --repeat times (interleaved: ours, the peer, ours, the peer…), and the
table gives the median and [range] of the repetitions, with the machine's load
average before each. Machines are noisy: compare ratios from one invocation, and
prefer CPU ms per step to wall time.

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/workflows.py \\
    --peer ~/.cache/aihummer-peer/bin/python`

`--profile DIR` records py-spy samples of each worker process (threads running Python
only) during the first repetition's phases A and B, folded (one stack per line; `bench/spy_top.py DIR/*.txt`
sums them by function; needs `py-spy` on the PATH or in --py-spy, requirements-dev.txt);
with `--profile-waits` every thread is sampled, waiting ones too (where steps wait).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# This process starts the runs, as a web process would: with a connection pool, as
# production's processes have (DATABASE_POOL_MAX_SIZE, 10). Without one each start
# opened a connection of its own: 400 runs' starts spread over 11.0 s, against 3.8 s.
os.environ.setdefault("DATABASE_POOL_MAX_SIZE", "10")

from _django import StatementCounter, throwaway_database

ROOT = Path(__file__).resolve().parent.parent
PEER_SCRIPT = ROOT.parent / "shared" / "peers" / "langgraph_bench.py"
# The peer's graph length is a module constant: this runs its main() with another.
PEER_WITH_STEPS = (
    "import sys; sys.path.insert(0, sys.argv[1]); import langgraph_bench as bench; "
    "bench.STEPS = int(sys.argv[2]); sys.exit(bench.main(sys.argv[3:]))"
)
STEPS = 3
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100, help="phase A: sequential runs (default 100)")
    parser.add_argument("--concurrency", default="100,400", help="phase B: runs started at once (default 100,400)")
    parser.add_argument("--delay", type=float, default=0.2, help="phase B: server latency in s (default 0.2)")
    parser.add_argument("--workers", default="1,2", help="numbers of worker processes (default 1,2)")
    parser.add_argument("--threads", type=int, default=200, help="threads per worker process (default 200)")
    parser.add_argument("--pool", type=int, default=20, help="database connections per worker process (default 20)")
    parser.add_argument("--long-steps", type=int, default=30, help="steps of the long runs (default 30; 0: none)")
    parser.add_argument("--long-runs", type=int, default=40, help="phase B with long runs: runs at once (default 40)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repetitions of both systems (default 3)")
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    parser.add_argument("--peer", help="a Python with LangGraph (see ../shared/peers/README.md)")
    parser.add_argument("--peer-dsn", default="postgresql://postgres@127.0.0.1:5432/langgraph_peer_bench")
    parser.add_argument("--phases", default="A,B")
    parser.add_argument("--profile", help="a folder for py-spy samples of the workers (phases A and B)")
    parser.add_argument(
        "--profile-waits",
        action="store_true",
        help="with --profile: sample every thread, waiting ones too (where steps wait), not only those running Python",
    )
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy")))
    args = parser.parse_args()
    args.concurrency = [int(x) for x in args.concurrency.split(",") if x]
    args.workers = [int(x) for x in args.workers.split(",") if x]
    args.phases = [x.strip().upper() for x in args.phases.split(",") if x.strip()]
    return args


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of these processes (all their threads), from /proc."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a backend that ended meanwhile
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICK
    return total


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


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
        presets = {
            "sdk": preset_create(
                workspace=workspace,
                actor=self.operator,
                key="fake",
                name="Fake",
                provider_name="openai",
                base_url=self.server.base_url,
                model="fake-model",
                credential=credential,
            ),
            "echo": preset_create(
                workspace=workspace, actor=self.operator, key="echo", name="Echo", provider_name="echo", model="echo-1"
            ),
        }
        self.workflows = {}
        for model, preset in presets.items():
            agent = f"{model}-step"
            agent_create(
                workspace=workspace,
                actor=self.operator,
                key=agent,
                name="Step",
                preset=preset,
                snapshot={"system_prompt": "Go."},
            )
            for steps in {STEPS, args.long_steps} - {0}:
                chain = [{"name": "s1", "agent_name": agent}]
                chain += [
                    {"name": f"s{i}", "agent_name": agent, "input_mapping": {"text": f"$.steps.s{i - 1}.output.answer"}}
                    for i in range(2, steps + 1)
                ]
                self.workflows[(model, steps)] = workflow_create(
                    workspace=workspace,
                    actor=self.operator,
                    key=f"linear-{model}-{steps}",
                    name=f"{steps} steps ({model})",
                    definition={"version": 1, "steps": chain},
                )
        self.processes: list[subprocess.Popen] = []

    def statements_per_step(self, model: str) -> dict:
        """Statements and commits of one run (start included) / steps, here, its steps
        run as a worker runs them (a lone successor in the same task). Before the
        workers start: the first step's task goes to the broker unread (start_workers
        empties it), and this process runs the step."""
        import redis
        from django.conf import settings

        from aihummer.celery import app
        from workflows.execution import workflow_step_run
        from workflows.services import workflow_run_start

        workflow = self.workflows[(model, STEPS)]
        broker, settings.CELERY_BROKER_URL = settings.CELERY_BROKER_URL, self.args.redis
        app.conf.broker_url = self.args.redis
        try:
            for message in ("warm", "count"):
                with StatementCounter() as counter:
                    run = workflow_run_start(workflow=workflow, actor=self.operator, message=message)
                    workflow_step_run(run_id=run.pk, step="s1")
            run.refresh_from_db()
            assert run.status == "completed", run.error
        finally:
            settings.CELERY_BROKER_URL = broker
            redis.Redis.from_url(self.args.redis).flushdb()
        return {"statements": counter.statements / STEPS, "commits": counter.commits / STEPS}

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
            # As in production: with DEBUG on Django also keeps and formats every statement.
            "DEBUG": "false",
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
        for model in ("sdk", "echo"):
            self.wait_all(self.start_many(4 * count, "warm-up", self.workflows[(model, STEPS)]), timeout=60)
        self.warm_pools(count)

    def warm_pools(self, count: int) -> None:
        """Open every connection of the workers' pools (their PostgreSQL backends, their
        prepared statements) before anything is measured, as the peer's pool is opened
        whole (min = max): as many slow runs at once as the pools hold connections. Opened
        during phase B instead, they doubled its CPU per step at 100 runs (9-11 against
        4.7 ms on warm workers)."""
        delay, self.server.delay = self.server.delay, self.args.delay
        try:
            runs = self.start_many(self.args.pool * count, "warm-up", self.workflows[("sdk", STEPS)])
            self.wait_all(runs, timeout=120)
        finally:
            self.server.delay = delay

    def stop_workers(self) -> None:
        for process in self.processes:
            os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        self.processes = []

    def backends(self) -> list[int]:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return [row[0] for row in cursor.fetchall()]

    def cpu(self) -> tuple[float, float]:
        """CPU seconds so far of the worker processes and of the database's backends."""
        return cpu_seconds([p.pid for p in self.processes]), cpu_seconds(self.backends())

    def start_many(self, count: int, message: str, workflow: object) -> list:
        from django.db import connection

        from workflows.services import workflow_run_start

        def start(_: int) -> object:
            try:
                return workflow_run_start(workflow=workflow, actor=self.operator, message=message).pk
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

    def phase_a(self, model: str, steps: int, runs: int, profile: str | None = None) -> dict:
        from workflows.models import WorkflowRun
        from workflows.services import workflow_run_start

        self.server.delay = 0.0
        per_step, finished = [], []
        spies = self.spy(profile, f"A-{len(self.processes)}w-{model}-{steps}") if profile else []
        cpu0, pg0 = self.cpu()
        for _ in range(runs):
            run = workflow_run_start(workflow=self.workflows[(model, steps)], actor=self.operator, message="a")
            # Timed from the run's own timestamps: polling more often would only take
            # CPU from the worker and PostgreSQL (two shared cores).
            while not WorkflowRun.objects.filter(pk=run.pk, status__in=WorkflowRun.FINISHED).exists():
                time.sleep(0.01)
            run.refresh_from_db()
            assert run.status == "completed", run.error
            per_step.append((run.finished_at - run.created_at).total_seconds() * 1000 / steps)
            finished.append(run)
        cpu1, pg1 = self.cpu()
        self.unspy(spies)
        return {
            "step_ms_p50": statistics.median(per_step),
            "step_ms_p95": percentile(per_step, 0.95),
            "cpu_ms_per_step": (cpu1 - cpu0) * 1000 / (runs * steps),
            "pg_cpu_ms_per_step": (pg1 - pg0) * 1000 / (runs * steps),
            **self.where_a_went(finished),
        }

    def phase_b(self, runs: int, steps: int, profile: str | None = None) -> dict:
        self.server.delay = self.args.delay
        spies = self.spy(profile, f"B-{len(self.processes)}w-{runs}x{steps}") if profile else []
        cpu0, pg0 = self.cpu()
        finished = self.wait_all(self.start_many(runs, "b", self.workflows[("sdk", steps)]), timeout=900)
        cpu1, pg1 = self.cpu()
        self.unspy(spies)
        wall = (max(r.finished_at for r in finished) - min(r.created_at for r in finished)).total_seconds()
        return {
            "wall_s": wall,
            "ratio": wall / (steps * self.args.delay),
            "steps_per_s": runs * steps / wall,
            "cpu_ms_per_step": (cpu1 - cpu0) * 1000 / (runs * steps),
            "pg_cpu_ms_per_step": (pg1 - pg0) * 1000 / (runs * steps),
            **self.where_b_went(finished),
        }

    def where_a_went(self, runs: list) -> dict:
        """Where a sequential run's wall time went (ms, p50): from its creation to its
        first step's claim (the start's commit and the broker hop), a step's claim to
        finish, and the hand-off to the next step (in the same worker)."""
        went = self.where_b_went(runs)
        return {
            "first_wait_ms_p50": went["first_wait_ms_p50"],
            "claim_to_finish_ms_p50": went["step_ms_p50"],
            "handoff_ms_p50": went["handoff_ms_p50"],
        }

    def where_b_went(self, runs: list) -> dict:
        """Where phase B's wall time went, from the rows' timestamps (ms, p50): the
        starts' spread (first to last run created), a run's wait for its first step, a
        step's own time (claim to finish, the model's delay included) and the hand-off
        from a step's finish to the next one's claim."""
        from workflows.models import StepRun

        created = {run.pk: run.created_at for run in runs}
        by_run: dict = {}
        for run_id, started, ended in StepRun.objects.filter(run_id__in=list(created)).values_list(
            "run_id", "started_at", "finished_at"
        ):
            by_run.setdefault(run_id, []).append((started, ended))
        waits, own, handoffs = [], [], []
        for run_id, steps in by_run.items():
            steps.sort()
            waits.append((steps[0][0] - created[run_id]).total_seconds() * 1000)
            own += [(ended - started).total_seconds() * 1000 for started, ended in steps]
            handoffs += [(b[0] - a[1]).total_seconds() * 1000 for a, b in itertools.pairwise(steps)]
        return {
            "starts_ms": (max(created.values()) - min(created.values())).total_seconds() * 1000,
            "first_wait_ms_p50": statistics.median(waits),
            "step_ms_p50": statistics.median(own),
            "handoff_ms_p50": statistics.median(handoffs) if handoffs else 0.0,
        }

    def spy(self, folder: str, name: str) -> list[subprocess.Popen]:
        """py-spy on each worker process, its samples folded (`name-i.txt`: one stack per
        line with its count; `bench/spy_top.py` sums them by function; flamegraph.pl or
        speedscope draw them)."""
        Path(folder).mkdir(parents=True, exist_ok=True)
        spies = []
        for i, p in enumerate(self.processes):
            command = [self.args.py_spy, "record", "--pid", str(p.pid), "--rate", "200", "--format", "raw"]
            # --gil: only threads running Python (holding the GIL), so waits on sockets
            # (the database, the model server, the broker) are left out: CPU, not wall.
            # --idle (--profile-waits): every thread, waiting or not: wall, not CPU.
            command += [
                "--idle" if self.args.profile_waits else "--gil",
                "--nonblocking",
                "-o",
                f"{folder}/{name}-{i}.txt",
            ]
            spies.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return spies

    def unspy(self, spies: list[subprocess.Popen]) -> None:
        for spy in spies:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)


def run_ours(bench: Bench, args: argparse.Namespace, rep: int) -> dict:
    results = {"load": load(), **{("sql", m): bench.statements_per_step(m) for m in ("echo", "sdk")}}
    long = args.long_steps
    for workers in args.workers:
        bench.start_workers(workers)
        try:
            if "A" in args.phases:
                profile = args.profile if rep == 0 else None
                for model in ("sdk", "echo"):
                    results[("A", model, STEPS, workers)] = bench.phase_a(model, STEPS, args.runs, profile)
                    if long:
                        results[("A", model, long, workers)] = bench.phase_a(model, long, max(args.runs // 10, 3))
            if "B" in args.phases:
                profile = args.profile if rep == 0 else None
                for runs in args.concurrency:
                    results[("B", runs, STEPS, workers)] = bench.phase_b(runs, STEPS, profile)
                if long:
                    results[("B", args.long_runs, long, workers)] = bench.phase_b(args.long_runs, long)
        finally:
            bench.stop_workers()
    print(f"[rep {rep + 1}] AiHummer: {results}", flush=True)
    return results


# --- the peer -----------------------------------------------------------------------
def run_peer(args: argparse.Namespace, rep: int) -> dict:
    peer = {"load": load()}
    lengths = [(STEPS, args.runs, args.concurrency)]
    if args.long_steps:
        lengths.append((args.long_steps, max(args.runs // 10, 3), [args.long_runs]))
    for steps, runs, concurrency in lengths:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            command = [args.peer, "-c", PEER_WITH_STEPS, str(PEER_SCRIPT.parent), str(steps)]
            command += ["--repeat", "1", "--backends", "postgres", "--durability", "async"]
            command += ["--runs", str(runs), "--delay", str(args.delay), "--dsn", args.peer_dsn, "--json", out.name]
            command += ["--concurrency", ",".join(map(str, concurrency)), "--phases", ",".join(args.phases)]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            raw = json.load(open(out.name))  # noqa: SIM115 (read once, closed with the temp file)
        for item in raw["results"]:
            r = item["reps"][0]
            # Phase A: the synchronous PostgresSaver, as a sequential caller would use it.
            if item["phase"] == "A" and item["api"] == "sync":
                peer[("A", steps)] = {
                    "step_ms_p50": r["step_ms_p50"],
                    "step_ms_p95": r["step_ms_p95"],
                    "cpu_ms_per_step": r["cpu_ms_per_step"],
                    "pg_cpu_ms_per_step": r.get("pg_cpu_ms_per_step", float("nan")),
                    "statements": r["sql_per_step"],
                    "commits": r.get("xact_per_step", float("nan")),
                }
            elif item["phase"] == "B" and item["backend"] == "postgres":
                n = item["concurrency"] * steps
                peer[("B", item["concurrency"], steps)] = {
                    "wall_s": r["wall_s"],
                    "ratio": r["ratio"],
                    "steps_per_s": r["steps_per_s"],
                    "cpu_ms_per_step": r["cpu_s"] * 1000 / n,
                    "pg_cpu_ms_per_step": r.get("pg_cpu_s", float("nan")) * 1000 / n,
                }
    print(f"[rep {rep + 1}] LangGraph: {peer}", flush=True)
    return peer


# --- the table ----------------------------------------------------------------------
def spread(reps: list[dict], key: object, field: str) -> tuple[float, float, float] | None:
    values = [rep[key][field] for rep in reps if key in rep and field in rep[key]]
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def cell(value: tuple[float, float, float] | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    median, low, high = value
    return f"{median:.{digits}f} [{low:.{digits}f}-{high:.{digits}f}]"


def ratio(ours: tuple | None, theirs: tuple | None) -> str:
    return f"{ours[0] / theirs[0]:.2f}x" if ours and theirs and theirs[0] else "-"


def print_table(args: argparse.Namespace, ours: list[dict], peer: list[dict]) -> None:
    print(
        f"\nLinear workflows; Celery threads pool ({args.threads} threads, {args.pool} DB connections per process);"
        f" median [range] of {len(ours)} interleaved repetitions"
    )
    print("load average (1, 5, 15 min) before each repetition: ours " + "; ".join(r["load"] for r in ours))
    if peer:
        print("                                               peer " + "; ".join(r["load"] for r in peer))
    row = "{:<44}{:>22}{:>22}{:>10}"
    print("\n" + row.format("statements / commits per step (a run)", "AiHummer", "LangGraph", ""))
    for model in ("echo", "sdk"):
        for field in ("statements", "commits"):
            theirs = spread(peer, ("A", STEPS), field)
            print(row.format(f"  {field}, {model}", cell(spread(ours, ("sql", model), field), 2), cell(theirs, 2), ""))
    lengths = [STEPS] + ([args.long_steps] if args.long_steps else [])
    if "A" in args.phases:
        print(f"\nA  engine overhead: the model answers at once, {args.runs} sequential runs ({args.runs // 10} long)")
        print(row.format("", "AiHummer", "LangGraph", "ratio"))
        for steps in lengths:
            for workers in args.workers:
                for model in ("sdk", "echo"):
                    key = ("A", model, steps, workers)
                    for field, label in (
                        ("step_ms_p50", "ms/step p50"),
                        ("step_ms_p95", "ms/step p95"),
                        ("cpu_ms_per_step", "worker CPU ms/step"),
                        ("pg_cpu_ms_per_step", "PostgreSQL CPU ms/step"),
                        ("first_wait_ms_p50", "run created to first claim p50, ms"),
                        ("claim_to_finish_ms_p50", "step claim to finish p50, ms"),
                        ("handoff_ms_p50", "finish to next claim p50, ms"),
                    ):
                        mine, theirs = spread(ours, key, field), spread(peer, ("A", steps), field)
                        name = f"  {steps} steps, {workers}w, {model}: {label}"
                        print(row.format(name, cell(mine, 2), cell(theirs, 2), ratio(mine, theirs)))
    if "B" in args.phases:
        print(f"\nB  concurrency: the server answers after {args.delay:g} s; runs started at once")
        print(row.format("", "AiHummer", "LangGraph", "ratio"))
        cases = [(runs, STEPS) for runs in args.concurrency]
        cases += [(args.long_runs, args.long_steps)] if args.long_steps else []
        for runs, steps in cases:
            for workers in args.workers:
                key = ("B", runs, steps, workers)
                for field, label, digits in (
                    ("wall_s", "wall s", 2),
                    ("ratio", "wall / ideal", 1),
                    ("steps_per_s", "steps per s", 0),
                    ("cpu_ms_per_step", "worker CPU ms/step", 2),
                    ("pg_cpu_ms_per_step", "PostgreSQL CPU ms/step", 2),
                    ("starts_ms", "runs' starts spread over, ms", 0),
                    ("first_wait_ms_p50", "first step's wait p50, ms", 0),
                    ("step_ms_p50", "step claim to finish p50, ms", 0),
                    ("handoff_ms_p50", "finish to next claim p50, ms", 1),
                ):
                    mine, theirs = spread(ours, key, field), spread(peer, ("B", runs, steps), field)
                    name = f"  {runs} x {steps} steps, {workers}w: {label}"
                    versus = ratio(theirs, mine) if field == "steps_per_s" else ratio(mine, theirs)
                    print(row.format(name, cell(mine, digits), cell(theirs, digits), versus))
        print("  (ratio: ours / peer; for steps per s: peer / ours, so above 1 is always ours slower)")


def main() -> None:
    args = parse_args()
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one line per model call otherwise
    started = time.perf_counter()
    ours, peer = [], []
    with throwaway_database():
        bench = Bench(args)
        try:
            for rep in range(args.repeat):
                ours.append(run_ours(bench, args, rep))
                if args.peer:
                    peer.append(run_peer(args, rep))
        finally:
            bench.server.__exit__(None, None, None)
    print_table(args, ours, peer)
    print(f"\ntotal script time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
