"""Queries and milliseconds per page of the review desk, for a growing queue, then for
the largest prompt the policy allows.

Prints one line per queue size: the queue (changelist) and a stale proposal's review
page. The query counts must not grow with the queue (tests pin them exactly). Then the
queue at 10 000 pending, and a proposal on an agent whose snapshot is as large as
`AIHUMMER_MAX_SNAPSHOT_CHARS` allows: how long proposing it takes (the agent's row is
locked meanwhile) and how long its review page takes, with paragraphs (a line diff
helps) and with one-line sections (it cannot).
"""

from __future__ import annotations

import random
import time

from _django import page_cost, throwaway_database
from django.test import Client
from django.urls import reverse


def main() -> None:
    from agents.services import agent_create, prompt_version_propose
    from aihummer.actors import Actor
    from aihummer.models import Membership, User, Workspace

    operator = Actor.for_operator()
    workspace = Workspace.objects.create(slug="bench", name="Bench")
    bob = User.objects.create_user("bob", password="x")
    alice = User.objects.create_user("alice", password="x")
    Membership.objects.create(user=bob, workspace=workspace, role="reviewer")
    Membership.objects.create(user=alice, workspace=workspace, role="editor")
    agents = [
        agent_create(
            workspace=workspace,
            actor=operator,
            key=f"agent-{i}",
            name=f"Agent {i}",
            snapshot={"identity": {"name": f"A{i}"}, "sections": [{"key": "s", "body": "text"}]},
        )
        for i in range(5)
    ]
    client = Client()
    client.force_login(bob)
    made = 0
    print(f"{'pending':>8} {'queue q':>8} {'queue ms':>9} {'review q':>9} {'review ms':>10}")
    for target in (5, 50, 200):
        while made < target:
            prompt_version_propose(
                agent=agents[made % 5],
                changes={"sections": [{"key": "s", "body": f"text {made}"}]},
                actor=Actor.for_user(alice),
            )
            made += 1
        stale = prompt_version_propose(
            agent=agents[0], changes={"onboarding": f"hi {made}"}, actor=Actor.for_user(alice)
        )
        live = prompt_version_propose(
            agent=agents[0], changes={"onboarding": f"live {made}"}, actor=operator, mode="live"
        )
        assert live.status == "approved"
        made += 1
        queue = page_cost(client, reverse("admin:agents_promptversion_changelist"))
        review = page_cost(client, reverse("admin:agents_promptversion_review", args=[stale.pk]))
        print(f"{made:>8} {queue[0]:>8} {queue[1]:>9.1f} {review[0]:>9} {review[1]:>10.1f}")
    _fill_queue(agents, alice, 10_000 - made)
    queue = page_cost(client, reverse("admin:agents_promptversion_changelist"))
    print(f"{10_000:>8} {queue[0]:>8} {queue[1]:>9.1f}")
    print()
    print(f"{'largest prompt':<34} {'chars':>8} {'propose ms':>11} {'review q':>9} {'review ms':>10}")
    for label, line_words in (("paragraphs, 1 word in 8 lines", 12), ("one-line sections, 1 word in 100", 0)):
        _agent, version, chars, propose_ms = _largest_proposal(workspace, operator, alice, label, line_words)
        review = page_cost(client, reverse("admin:agents_promptversion_review", args=[version.pk]))
        print(f"{label:<34} {chars:>8} {propose_ms:>11.1f} {review[0]:>9} {review[1]:>10.1f}")


def _fill_queue(agents: list, alice: object, count: int) -> None:
    """Pending rows written in bulk (the queue's reads are measured, not the proposing)."""
    from agents.models import PromptVersion

    template = PromptVersion.objects.filter(status="pending").order_by("pk").first()
    last = {a.pk: PromptVersion.all_objects.filter(agent=a).order_by("-number").first().number for a in agents}
    rows = []
    for i in range(count):
        agent = agents[i % len(agents)]
        last[agent.pk] += 1
        rows.append(
            PromptVersion(
                workspace_id=agent.workspace_id,
                agent=agent,
                number=last[agent.pk],
                snapshot=template.snapshot,
                content_hash=f"{i:064d}",
                source="admin:alice",
                reason=f"bulk {i}",
                proposed_by=alice,
                proposer_identity=template.proposer_identity,
                base_version_id=template.base_version_id,
                diff_stats=template.diff_stats,
            )
        )
    PromptVersion.objects.bulk_create(rows, batch_size=1000)


WORDS = [
    "the",
    "agent",
    "answers",
    "in",
    "French",
    "with",
    "sources",
    "and",
    "never",
    "invents",
    "numbers",
    "or",
    "names",
    "when",
    "unsure",
]


def _text(rng: random.Random, chars: int, line_words: int) -> str:
    words, size = [], 0
    while size < chars:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    if not line_words:
        return " ".join(words)[:chars]
    lines = [" ".join(words[i : i + line_words]) for i in range(0, len(words), line_words)]
    return "\n".join(lines)[:chars]


def _edited(rng: random.Random, text: str, line_words: int) -> str:
    if line_words:
        lines = text.split("\n")
        return "\n".join(f"{line} revised" if i % 8 == 0 else line for i, line in enumerate(lines))
    words = text.split(" ")
    return " ".join("REVISED" if i % 100 == 0 else w for i, w in enumerate(words))


def _largest_proposal(workspace, operator, alice, label: str, line_words: int) -> tuple:
    from django.conf import settings

    from agents.services import agent_create, prompt_version_propose
    from aihummer.actors import Actor

    rng = random.Random(label)
    per_section = settings.AIHUMMER_MAX_TEXT_CHARS - 500
    count = min(settings.AIHUMMER_MAX_SECTIONS, (settings.AIHUMMER_MAX_SNAPSHOT_CHARS - 5_000) // (per_section + 200))
    sections = [
        {"key": f"s{i}", "title": f"Section {i}", "body": _text(rng, per_section, line_words)} for i in range(count)
    ]
    agent = agent_create(
        workspace=workspace,
        actor=operator,
        key=f"large-{line_words}",
        name="Large",
        snapshot={"identity": {"name": "Large"}, "sections": sections},
    )
    edited = [{**s, "body": _edited(rng, s["body"], line_words)} for s in sections]
    started = time.perf_counter()
    version = prompt_version_propose(agent=agent, changes={"sections": edited}, actor=Actor.for_user(alice))
    propose_ms = (time.perf_counter() - started) * 1000
    return agent, version, sum(len(s["body"]) for s in edited), propose_ms


if __name__ == "__main__":
    with throwaway_database():
        main()
