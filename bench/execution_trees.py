"""Children of one execution tree at the provider: wall time and the most calls held
at once, for a root delegating to 4 leaves whose model calls take 500 ms each, at
`children.max_concurrent` 1, 2 and 4; then a root → 2 mids → 2 leaves each at 2. The
provider is the local OpenAI-protocol server (`workflows.tests.fake_openai`), which
records when each call started and ended; the root's own calls (about 0 ms) are in the
wall time. The count is one `TreePlace` row per running child (`agents.runtime.tree`);
"places after" is how many are left once the tree is done (0: every one given back).

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/execution_trees.py`
"""

from __future__ import annotations

import logging
import time

from _django import bench_workspace, throwaway_database

LEAF = "sleep 0.5"


def main() -> None:
    from agents.models import TreePlace
    from agents.runtime import agent_turn_run
    from agents.runtime.providers import get_provider
    from agents.services import agent_create
    from agents.tests.helpers import delegations, most_at_once, scripted
    from aihummer.tests.factories import vault_preset
    from workflows.tests.fake_openai import FakeOpenAI

    logging.disable(logging.INFO)  # one line per HTTP request otherwise
    get_provider("openai")  # the SDK's first import (about a second) is not a tree's time
    workspace, operator = bench_workspace()
    with FakeOpenAI(reply=scripted) as server:
        preset = vault_preset(
            workspace, server.base_url, secret="sk-bench-0123456789", credential_key="local", by=operator
        )

        def agent(key: str, cap: int, tools: list[str]) -> object:
            policy = {"children": {"max_concurrent": cap, "max_per_parent": 4, "max_depth": 2}}
            snapshot = {"identity": {"name": key}, "allowed_tool_names": tools, "runtime_policy": policy}
            return agent_create(
                workspace=workspace, actor=operator, key=key, name=key, preset=preset, snapshot=snapshot
            )

        agent("leaf", 1, [])
        print(f"{'tree':<32} {'max_concurrent':>14} {'wall s':>7} {'at once':>8} {'places after':>13}")
        four = delegations(*[("leaf", LEAF)] * 4)
        mid = delegations(("leaf", LEAF), ("leaf", LEAF))
        cases = [("root -> 4 leaves", cap, four, False) for cap in (1, 2, 4)]
        cases.append(("root -> 2 mids -> 2 leaves each", 2, delegations(("mid", mid), ("mid", mid)), True))
        for label, cap, message, mids in cases:
            suffix = f"{cap}{'m' if mids else ''}"
            root = agent(f"root{suffix}", cap, ["delegate"])
            if mids:
                agent("mid", cap, ["delegate"])
            for _ in range(2):  # the second run is measured: the first opens the client's connections
                server.calls.clear()
                started = time.monotonic()
                turn = agent_turn_run(agent=root, message=message, actor=operator)
                wall = time.monotonic() - started
            assert turn.status == "succeeded", turn.error
            after = TreePlace.objects.filter(root_id=turn.pk).count()
            print(f"{label:<32} {cap:>14} {wall:>7.2f} {most_at_once(server.calls):>8} {after:>13}")


if __name__ == "__main__":
    with throwaway_database():
        main()
