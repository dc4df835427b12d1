"""Queries and milliseconds per page of the review desk, for a growing queue.

Prints one line per queue size: the queue (changelist) and a stale proposal's review
page. The query counts must not grow with the queue (tests pin them exactly).
"""

from __future__ import annotations

import time

from _django import throwaway_database
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
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
        queue = _measure(client, reverse("admin:agents_promptversion_changelist"))
        review = _measure(client, reverse("admin:agents_promptversion_review", args=[stale.pk]))
        print(f"{made:>8} {queue[0]:>8} {queue[1]:>9.1f} {review[0]:>9} {review[1]:>10.1f}")


def _measure(client: Client, url: str) -> tuple[int, float]:
    client.get(url)  # warm caches (templates, content types)
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = client.get(url)
        elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, response.status_code
    return len(queries), elapsed


if __name__ == "__main__":
    with throwaway_database():
        main()
