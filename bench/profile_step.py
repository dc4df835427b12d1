"""Where a step's CPU goes: cProfile of --runs inline runs of a 3-step linear workflow
(no broker: each step is called in this process, claim to finish), on the echo provider
or through the OpenAI SDK to a local server. Prints the top functions by own and by
cumulative time, and CPU ms per step; `--plain` only that, unprofiled (a steadier
before/after figure than wall time on a shared machine). With `DATABASE_POOL_MAX_SIZE`
set, the step takes the workers' path (statements prepared on the server). DEBUG is off
unless the environment sets it, as on the workers.

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/profile_step.py --model echo`
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

# As the workers run (bench/workflows.py starts them so): with DEBUG on, every statement
# is also formatted for the query log, a quarter of what this would measure.
os.environ.setdefault("DEBUG", "false")

from _django import throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--model", choices=("echo", "sdk"), default="echo")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument(
        "--plain", action="store_true", help="no profiler: only the CPU ms per step (for before/after comparisons)"
    )
    parser.add_argument("--dump", help="also write the profile here (pstats: callers, snakeviz)")
    args = parser.parse_args()
    with throwaway_database():
        from agents.services import agent_create
        from aihummer.actors import Actor
        from aihummer.models import Workspace
        from aihummer.tests.factories import make_echo_preset, vault_preset
        from workflows.services import workflow_create, workflow_run_start
        from workflows.tests.fake_openai import FakeOpenAI

        operator = Actor.for_operator(name="bench")
        workspace = Workspace.objects.create(slug="bench", name="Bench")
        with FakeOpenAI() as server:
            if args.model == "sdk":
                preset = vault_preset(
                    workspace,
                    server.base_url,
                    secret="sk-bench-01234567",
                    key="fake",
                    credential_key="k",
                    model="fake-model",
                    by=operator,
                )
            else:
                preset = make_echo_preset(workspace, by=operator, is_active=False)
            agent_create(workspace=workspace, actor=operator, key="step", name="Step", preset=preset)
            steps = [{"name": "s1", "agent_name": "step"}] + [
                {"name": f"s{i}", "agent_name": "step", "input_mapping": {"text": f"$.steps.s{i - 1}.output.answer"}}
                for i in (2, 3)
            ]
            workflow = workflow_create(
                workspace=workspace, actor=operator, key="w", name="w", definition={"version": 1, "steps": steps}
            )
            for _ in range(5):
                workflow_run_start(workflow=workflow, actor=operator, message="warm")
            profile = cProfile.Profile(time.process_time)  # CPU, not waits
            cpu = time.process_time()
            if not args.plain:
                profile.enable()
            for _ in range(args.runs):
                workflow_run_start(workflow=workflow, actor=operator, message="go")
            profile.disable()
            cpu = time.process_time() - cpu
    how = "not profiled" if args.plain else "profiled"
    print(f"{args.model}: {cpu * 1000 / (3 * args.runs):.2f} CPU ms per step ({how}, run start included)\n")
    if args.plain:
        return
    stats = pstats.Stats(profile)
    if args.dump:
        stats.dump_stats(args.dump)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top * 2)


if __name__ == "__main__":
    main()
