"""Seconds per evidence run (every case on the candidate and on live, results stored)
on the offline echo provider, by number of cases and AIHUMMER_EVIDENCE_CONCURRENCY.
Echo answers at once, so this is the runtime's and the database's own cost: with a
real model the turns wait on the network and concurrency matters far more.

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/evidence_runs.py`
"""

from __future__ import annotations

import time

from _django import bench_workspace, throwaway_database

RUNS = 3


def main() -> None:
    from django.conf import settings

    from agents.models import EvidenceRun
    from agents.runtime.evidence import evidence_run_execute
    from agents.services import agent_create, agent_test_case_create, prompt_version_propose

    workspace, operator = bench_workspace()
    print(f"{'cases':>6} {'concurrency':>12} {'turns':>6} {'median s':>9} {'ms/turn':>8}")
    for cases in (5, 20):
        agent = agent_create(workspace=workspace, actor=operator, key=f"a{cases}", name="A")
        for index in range(cases):
            agent_test_case_create(
                agent=agent,
                actor=operator,
                name=f"c{index}",
                message=f"Bonjour {index}",
                assertions={"contains": ["Bon"]},
            )
        # Without a broker the proposal's own run happens inline, here, untimed.
        version = prompt_version_propose(agent=agent, changes={"onboarding": "Bonjour"}, actor=operator)
        for concurrency in (1, 4):
            settings.AIHUMMER_EVIDENCE_CONCURRENCY = concurrency
            timings = []
            for _ in range(RUNS):
                run = EvidenceRun.objects.create(workspace=workspace, version=version, trigger="requested")
                started = time.perf_counter()
                evidence_run_execute(run_id=run.pk)
                timings.append(time.perf_counter() - started)
            median = sorted(timings)[len(timings) // 2]
            print(f"{cases:>6} {concurrency:>12} {2 * cases:>6} {median:>9.2f} {median * 1000 / (2 * cases):>8.1f}")


if __name__ == "__main__":
    with throwaway_database():
        main()
