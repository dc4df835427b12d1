"""Milliseconds per agent turn on the offline echo provider (the runtime's own cost:
rendering, tool loop, debug logs), plain and with tool calls.

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/agent_turns.py`
"""

from __future__ import annotations

import json
import statistics
import time

from _django import throwaway_database

TURNS = 30


def main() -> None:
    from agents.runtime import agent_turn_run
    from agents.services import agent_create, preset_create
    from aihummer.actors import Actor
    from aihummer.models import Membership, User, Workspace

    operator = Actor.for_operator()
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
    agent = agent_create(
        workspace=workspace,
        actor=operator,
        key="bench",
        name="Bench",
        snapshot={"identity": {"name": "Bench"}, "sections": sections, "allowed_tool_names": ["propose_persona_edit"]},
    )
    actor = Actor.for_user(alice)
    args = json.dumps({"persona": "Calm.", "reason": "bench"})
    cases = {
        "plain turn (1 model call)": "Bonjour",
        "3 tool calls (2 model calls)": "\n".join([f"@call propose_persona_edit {args}"] * 3),
    }
    print(f"{'case':<32} {'median ms':>10} {'p90 ms':>8} {'turns/s':>8}")
    for label, message in cases.items():
        timings = []
        for _ in range(TURNS):
            started = time.perf_counter()
            turn = agent_turn_run(agent=agent, message=message, actor=actor)
            timings.append((time.perf_counter() - started) * 1000)
            assert turn.status == "succeeded", turn.error
        timings.sort()
        median = statistics.median(timings)
        print(f"{label:<32} {median:>10.1f} {timings[int(len(timings) * 0.9)]:>8.1f} {1000 / median:>8.1f}")


if __name__ == "__main__":
    with throwaway_database():
        main()
