"""Data migrations, run forward on a database holding rows of the state before them."""

from __future__ import annotations

import json

import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from agents.models import Agent
from agents.policy import default_runtime_policy, validate_runtime_policy
from agents.policy_upgrades import DOCUMENT_DEFAULTS
from agents.snapshot import content_hash
from agents.tests.helpers import first_release, stored_snapshot

BEFORE = ("agents", "0006_versions_belong_to_their_agent")
POLICY_MIGRATION = ("agents", "0007_runtime_policy_in_the_documents_names")
BEFORE_SPAWN = ("agents", "0014_approval_requests")
SPAWN_MIGRATION = ("agents", "0015_spawn_agent_ids_and_interaction_rights")


def issue_28(**blocks: dict) -> dict:
    """A policy as issue 28 stored it (children.allowed_agents, an empty interaction block)."""
    policy = json.loads(json.dumps(DOCUMENT_DEFAULTS))
    for block, fields in blocks.items():
        policy[block].update(fields)
    return policy


@pytest.mark.django_db(transaction=True)
def test_stored_policies_move_to_the_documents_names_and_history_stays():
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    others = [node for node in executor.loader.graph.leaf_nodes() if node[0] != "agents"]
    old = executor.loader.project_state([BEFORE, *others]).apps
    chosen = first_release(session={"idle_minutes": 30}, pruning={"keep_last_tool_results": 5})
    replaced = first_release(max_iterations=7)
    with transaction.atomic():
        workspace = old.get_model("aihummer", "Workspace").objects.create(slug="acme", name="Acme")
        agent = old.get_model("agents", "Agent").objects.create(
            workspace=workspace, key="writer", name="Writer", runtime_policy=chosen
        )

        def version(number: int, status: str, policy: dict) -> object:
            snapshot = stored_snapshot(policy)
            return old.get_model("agents", "PromptVersion").objects.create(
                workspace=workspace,
                agent=agent,
                number=number,
                status=status,
                snapshot=snapshot,
                content_hash=content_hash(snapshot),
                source="admin:ada",
                proposer_identity="user:1",
                reviewed_at=None if status == "pending" else "2026-01-01T00:00:00Z",
            )

        v1, v2 = version(1, "approved", replaced), version(2, "approved", chosen)
        v3, v4 = version(3, "pending", first_release(max_iterations=9)), version(4, "rejected", chosen)
        agent.live_version = v2
        agent.save()
        history = old.get_model("agents", "HistoricalAgent").objects.create(
            id=agent.pk,
            workspace=workspace,
            key="writer",
            name="Writer",
            runtime_policy=replaced,
            history_date="2026-01-01T00:00:00Z",
            history_type="~",
            created_at="2026-01-01T00:00:00Z",
            updated_at="2026-01-01T00:00:00Z",
        )

    executor.loader.build_graph()
    executor.migrate([POLICY_MIGRATION])
    # The versions as that migration left them (later ones add columns the model has now).
    PromptVersion = executor.loader.project_state([POLICY_MIGRATION, *others]).apps.get_model("agents", "PromptVersion")

    live = PromptVersion.objects.get(pk=v2.pk)
    expected = issue_28(session={"idle_reset_minutes": 30}, pruning={"keep_last_assistants": 5})
    assert live.snapshot["runtime_policy"] == expected
    assert live.content_hash == content_hash(live.snapshot)
    assert Agent.objects.get().runtime_policy == expected
    assert PromptVersion.objects.get(pk=v3.pk).snapshot["runtime_policy"] == issue_28() | {"max_iterations": 9}
    # History: versions no longer live or never decided pending, and history rows, keep their names.
    assert PromptVersion.objects.get(pk=v1.pk).snapshot["runtime_policy"] == replaced
    assert PromptVersion.objects.get(pk=v4.pk).snapshot["runtime_policy"] == chosen
    assert PromptVersion.objects.get(pk=v4.pk).content_hash == v4.content_hash
    assert Agent.history.get(history_id=history.history_id).runtime_policy == replaced
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_allowed_agents_move_to_spawn_agent_ids_and_history_stays():
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE_SPAWN])
    others = [node for node in executor.loader.graph.leaf_nodes() if node[0] != "agents"]
    old = executor.loader.project_state([BEFORE_SPAWN, *others]).apps
    chosen = issue_28(children={"allowed_agents": ["critic"], "max_depth": 3})
    anyone = issue_28()
    with transaction.atomic():
        workspace = old.get_model("aihummer", "Workspace").objects.create(slug="acme", name="Acme")
        agent = old.get_model("agents", "Agent").objects.create(
            workspace=workspace, key="writer", name="Writer", runtime_policy=chosen
        )

        def version(number: int, status: str, policy: dict) -> object:
            snapshot = stored_snapshot(policy)
            return old.get_model("agents", "PromptVersion").objects.create(
                workspace=workspace,
                agent=agent,
                number=number,
                status=status,
                snapshot=snapshot,
                content_hash=content_hash(snapshot),
                source="admin:ada",
                proposer_identity="user:1",
                reviewed_at=None if status == "pending" else "2026-01-01T00:00:00Z",
            )

        v1, v2, v3 = version(1, "approved", anyone), version(2, "approved", chosen), version(3, "pending", anyone)
        agent.live_version = v2
        agent.save()

    executor.loader.build_graph()
    executor.migrate([SPAWN_MIGRATION])
    PromptVersion = executor.loader.project_state([SPAWN_MIGRATION, *others]).apps.get_model("agents", "PromptVersion")

    expected = validate_runtime_policy(
        {"children": {"max_depth": 3, "timeout_seconds": 600}, "interaction": {"spawn_agent_ids": ["critic"]}}
    )
    live = PromptVersion.objects.get(pk=v2.pk)
    assert live.snapshot["runtime_policy"] == expected
    assert live.content_hash == content_hash(live.snapshot)
    assert Agent.objects.get().runtime_policy == expected
    # An empty list meant any agent: null. The old explicit limits stay numbers.
    assert PromptVersion.objects.get(pk=v3.pk).snapshot["runtime_policy"] == default_runtime_policy() | {
        "children": default_runtime_policy()["children"] | {"max_depth": 1, "timeout_seconds": 600}
    }
    assert PromptVersion.objects.get(pk=v1.pk).snapshot["runtime_policy"] == anyone  # history keeps its names
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
