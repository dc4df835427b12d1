"""Milliseconds and SQL statements per conversation message (`conversation_send` on
the offline echo provider) at 10, 100 and 1 000 messages of stored history, next to a
plain turn without a conversation (`agent_turn_run`): the cost of finding the
conversation, reading its window and recording both messages must not grow with the
stored history beyond the window (`context.max_history_messages`, default 200).

Then the compaction's cost: an explicit context (`context.max_tokens` 2 000, no
reserve), the same messages, split into those that compacted (and wrote a memory note
first, or not) and those that did not; the model calls of the echo provider cost ~0 ms,
so the figures are AiHummer's own (reads, prompts, writes), to which a real model adds
one call's latency per batch.

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/conversations.py`
"""

from __future__ import annotations

import statistics
import time

from _django import StatementCounter, bench_agent, bench_workspace, throwaway_database

MESSAGES = 30
HISTORIES = (10, 100, 1_000)


def main() -> None:
    from agents.models import Conversation
    from agents.policy import parse_runtime_policy
    from agents.runtime import agent_turn_run, conversation_send
    from agents.runtime.conversations import conversation_window
    from aihummer.actors import Actor
    from aihummer.models import Membership, User
    from aihummer.tests.factories import store_history

    workspace, operator = bench_workspace()
    agent = bench_agent(workspace, operator)
    policy = parse_runtime_policy(agent.runtime_policy)
    print(
        f"workload: {MESSAGES} messages of ~40 characters each, echo provider, max_history_messages "
        f"{policy.context.max_history_messages}; steady state (the last message's statements)"
    )
    print(
        f"{'stored history':<22} {'median ms':>10} {'p90 ms':>8} {'stmts':>6} {'commits':>8} {'sent':>6} "
        f"{'vs plain':>9}"
    )
    plain_actor = Actor.for_user(_person(workspace, "plain"))
    plain = _measure(lambda n: agent_turn_run(agent=agent, message=f"plain message {n}", actor=plain_actor))
    print(f"{'plain turn (none)':<22} {plain[0]:>10.1f} {plain[1]:>8.1f} {plain[2]:>6} {plain[3]:>8} {0:>6} {1:>9.2f}")
    for size in HISTORIES:
        person = _person(workspace, f"p{size}")
        actor = Actor.for_user(person)
        conversation_send(agent=agent, actor=actor, message="first", channel="api")
        conversation = Conversation.objects.get(peer=f"user:{person.pk}")
        store_history(conversation, size - 2, "an older message of the conversation, number {}".format)
        median, p90, statements, commits = _measure(
            lambda n, actor=actor: conversation_send(
                agent=agent, actor=actor, message=f"a message of about forty chars {n}", channel="api"
            )
        )
        conversation.refresh_from_db()
        sent = len(conversation_window(conversation, policy, agent).messages)
        print(
            f"{size:>14} messages {median:>10.1f} {p90:>8.1f} {statements:>6} {commits:>8} {sent:>6} "
            f"{median / plain[0]:>9.2f}"
        )
    _compaction(workspace, operator)
    Membership.objects.all().delete()
    User.objects.all().delete()


def _compaction(workspace, operator) -> None:
    from django.db.models import Count

    from agents.models import ConversationNote
    from agents.runtime import conversation_send
    from aihummer.actors import Actor

    policy = {"context": {"max_tokens": 2_000, "reserve_tokens": 0}, "memory_flush": {"soft_threshold_tokens": 200}}
    agent = bench_agent(workspace, operator, key="compacting", runtime_policy=policy)
    actor = Actor.for_user(_person(workspace, "compacting"))
    kinds: dict[str, list[tuple[float, int, int]]] = {"none": [], "summary": [], "note + summary": [], "note": []}
    for n in range(200):
        before = dict(ConversationNote.objects.values_list("kind").annotate(count=Count("pk")).order_by())
        with StatementCounter() as counter:
            started = time.perf_counter()
            reply = conversation_send(agent=agent, actor=actor, message=f"message {n}: " + "x" * 180, channel="api")
            elapsed = (time.perf_counter() - started) * 1000
        assert reply.turn.status == "succeeded", reply.turn.error
        after = dict(ConversationNote.objects.values_list("kind").annotate(count=Count("pk")).order_by())
        summaries = after.get("summary", 0) - before.get("summary", 0)
        notes = after.get("memory", 0) - before.get("memory", 0)
        kind = ("note + summary" if notes else "summary") if summaries else ("note" if notes else "none")
        kinds[kind].append((elapsed, counter.statements, summaries + notes))
    print()
    print(f"compaction: {policy}, 200 messages of ~190 characters, echo provider")
    print(f"{'messages that':<22} {'count':>6} {'median ms':>10} {'stmts':>6} {'calls':>6} {'vs none':>8}")
    base = statistics.median(e for e, _, _ in kinds["none"])
    for kind, rows in kinds.items():
        if not rows:
            continue
        median = statistics.median(e for e, _, _ in rows)
        statements = statistics.median(s for _, s, _ in rows)
        calls = statistics.median(c for _, _, c in rows)
        print(f"{kind:<22} {len(rows):>6} {median:>10.1f} {statements:>6.0f} {calls:>6.0f} {median / base:>8.2f}")


def _person(workspace, name):
    from aihummer.models import Membership, User

    user = User.objects.create_user(name, password="x")
    Membership.objects.create(user=user, workspace=workspace, role="editor")
    return user


def _measure(send) -> tuple[float, float, int, int]:
    timings, counts = [], (0, 0)
    for n in range(MESSAGES):
        with StatementCounter() as counter:
            started = time.perf_counter()
            result = send(n)
            timings.append((time.perf_counter() - started) * 1000)
        turn = getattr(result, "turn", result)
        assert turn.status == "succeeded", turn.error
        counts = (counter.statements, counter.commits)
    timings.sort()
    return statistics.median(timings), timings[int(len(timings) * 0.9)], *counts


if __name__ == "__main__":
    with throwaway_database():
        main()
