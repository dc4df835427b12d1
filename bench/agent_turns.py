"""Milliseconds, SQL statements and commits per agent turn on the offline echo provider
(the runtime's own cost: rendering, tool loop, debug logs), plain and with tool calls.
Statements made inside tools (the proposals they record) are shown apart: the runtime's
own share is what a workflow step pays on top of its work.

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/agent_turns.py`
"""

from __future__ import annotations

import json
import statistics
import time

from _django import StatementCounter, bench_agent, bench_workspace, throwaway_database

TURNS = 30


def main() -> None:
    from agents.runtime import agent_turn_run
    from aihummer.actors import Actor
    from aihummer.models import Membership, User

    workspace, operator = bench_workspace()
    alice = User.objects.create_user("alice", password="x")
    Membership.objects.create(user=alice, workspace=workspace, role="editor")
    agent = bench_agent(workspace, operator, allowed_tool_names=["propose_persona_edit"])
    actor = Actor.for_user(alice)
    args = json.dumps({"persona": "Calm.", "reason": "bench"})
    cases = {
        "plain turn (1 model call)": "Bonjour",
        "3 tool calls (2 model calls)": "\n".join([f"@call propose_persona_edit {args}"] * 3),
    }
    tool_statements = _count_tool_statements()
    print(
        f"{'case':<32} {'median ms':>10} {'p90 ms':>8} {'turns/s':>8} {'stmts':>6} {'commits':>8} "
        f"{'in tools':>9} {'stmts/call':>11}"
    )
    for label, message in cases.items():
        timings, counts = [], []
        for _ in range(TURNS):
            tool_statements.clear()
            with StatementCounter() as counter:
                started = time.perf_counter()
                turn = agent_turn_run(agent=agent, message=message, actor=actor)
                timings.append((time.perf_counter() - started) * 1000)
            assert turn.status == "succeeded", turn.error
            counts.append((counter.statements, counter.commits, sum(tool_statements), turn.model_calls))
        timings.sort()
        median = statistics.median(timings)
        statements, commits, in_tools, calls = counts[-1]  # steady state: the last turn
        own = (statements - in_tools) / calls
        print(
            f"{label:<32} {median:>10.1f} {timings[int(len(timings) * 0.9)]:>8.1f} {1000 / median:>8.1f} "
            f"{statements:>6} {commits:>8} {in_tools:>9} {own:>11.1f}"
        )


def _count_tool_statements() -> list[int]:
    """Statements each tool run sends (appended per run), by wrapping the tools' `run`."""
    try:
        from agents.runtime.tools import REGISTRY
    except ImportError:
        from agents.tools import REGISTRY
    from django.db import connection

    seen: list[int] = []
    for tool in REGISTRY.values():
        run = tool.run

        def counted(self, context, arguments, _run=run):
            statements = [0]

            def count(execute, sql, params, many, ctx):
                statements[0] += 1
                return execute(sql, params, many, ctx)

            with connection.execute_wrapper(count):
                try:
                    return _run(self, context, arguments)
                finally:
                    seen.append(statements[0])

        tool.run = counted
    return seen


if __name__ == "__main__":
    with throwaway_database():
        main()
