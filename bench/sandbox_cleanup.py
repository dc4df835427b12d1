"""Seconds to clean up sandbox agents (each with versions, sections and turns) per
batch size, to choose `sandbox.services.CLEANUP_BATCH_SIZE`.

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/sandbox_cleanup.py`
"""

from __future__ import annotations

import time

from _django import bench_workspace, throwaway_database

AGENTS = 400


def main() -> None:
    from agents.services import agent_create
    from sandbox import services
    from sandbox.services import sandbox_cleanup

    workspace, operator = bench_workspace()
    sections = [{"key": f"s{i}", "body": "text"} for i in range(5)]
    print(f"{'batch':>6} {'agents':>7} {'seconds':>8} {'ms/agent':>9} {'longest batch ms':>17}")
    for batch in (50, 200, 1000):
        for i in range(AGENTS):
            agent_create(
                workspace=workspace,
                actor=operator,
                key=f"sb-{batch}-{i}",
                name="x",
                is_sandbox=True,
                snapshot={"identity": {"name": "x"}, "sections": sections},
            )
        services.CLEANUP_BATCH_SIZE = batch
        started = time.perf_counter()
        counts = sandbox_cleanup(workspace=workspace, actor=operator)
        elapsed = time.perf_counter() - started
        assert counts["agent"] == AGENTS, counts
        batches = -(-AGENTS // batch)
        print(
            f"{batch:>6} {AGENTS:>7} {elapsed:>8.2f} {elapsed * 1000 / AGENTS:>9.2f} {elapsed * 1000 / batches:>17.0f}"
        )


if __name__ == "__main__":
    with throwaway_database():
        main()
