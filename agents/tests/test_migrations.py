"""Data migrations, run forward on a database holding rows of the state before them.

The test database starts again from no table at all, migrates forward to the oldest
state a test needs, then forward through each migration under test: rows are made at the
state just before it, what it left is read right after it, and each test checks what its
migration left. One journey for all: a journey over the desk's French-names migrations
(hundreds of field renames, each re-rendering the related models) costs a minute or more
on this machine. Each stage has its own workspace; its reads name its own rows.

The journey goes through the original migrations (a database made from nothing goes
through the squashes that replace them: aihummer/migrations/0001_squashed_0002.py), and
from the middle of them to the end the way `migrate` does. At its end, the schema the
originals leave is the one the squashes left on the test database."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from agents.models import Agent
from agents.policy import default_runtime_policy, validate_runtime_policy
from agents.policy_upgrades import DOCUMENT_DEFAULTS
from agents.snapshot import content_hash
from agents.tests.helpers import first_release, stored_snapshot

BEFORE_POLICY = ("agents", "0006_versions_belong_to_their_agent")
POLICY_MIGRATION = ("agents", "0007_runtime_policy_in_the_documents_names")
BEFORE_SPAWN = ("agents", "0014_approval_requests")
SPAWN_MIGRATION = ("agents", "0015_spawn_agent_ids_and_interaction_rights")
BEFORE_PRESET = ("agents", "0016_desk_french_names")
PRESET_MIGRATION = ("agents", "0017_preset_in_the_snapshot")
SQUASHES = [
    ("aihummer", "0001_squashed_0002"),
    ("agents", "0001_squashed_0010"),
    ("aihummer", "0003_squashed_0012"),
    ("agents", "0011_squashed_0028"),
    ("workflows", "0001_squashed_0007"),
]
OUR_APPS = {"aihummer", "agents", "workflows", "sandbox"}

# The schema as PostgreSQL describes it, every row sorted: what both ways must leave alike.
SCHEMA = {
    "tables": "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public'",
    "columns": """
        SELECT table_name, column_name, data_type, udt_name, character_maximum_length, numeric_precision,
               numeric_scale, datetime_precision, is_nullable, column_default, is_identity, identity_generation
        FROM information_schema.columns WHERE table_schema = 'public'""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid), condeferrable, condeferred
        FROM pg_constraint WHERE connamespace = 'public'::regnamespace""",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
    "triggers": "SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal",
    "functions": "SELECT proname, pg_get_functiondef(oid) FROM pg_proc WHERE pronamespace = 'public'::regnamespace",
}

# The tests read what the journey saw; marked so that pytest-django makes the test database.
pytestmark = pytest.mark.django_db


def issue_28(**blocks: dict) -> dict:
    """A policy as issue 28 stored it (children.allowed_agents, an empty interaction block)."""
    policy = json.loads(json.dumps(DOCUMENT_DEFAULTS))
    for block, fields in blocks.items():
        policy[block].update(fields)
    return policy


def schema() -> dict[str, list[tuple]]:
    with connection.cursor() as cursor:
        described = {}
        for part, query in SCHEMA.items():
            cursor.execute(query)
            described[part] = sorted(cursor.fetchall(), key=repr)
    return described


class Journey:
    """The agents app's original migrations, stepped through on the test database."""

    def __init__(self, start: tuple[str, str]) -> None:
        """From no table at all, forward to the state unapplying the agents app's later
        migrations would leave: every migration but those and what depends on them.
        Unapplying them instead costs three times as much (Django renders every
        operation of the whole plan to go back)."""
        with connection.cursor() as cursor:
            cursor.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        self.executor = MigrationExecutor(connection)  # its recorder sees no table yet
        # On an empty database the loader would put the squashes in the originals' place.
        self.executor.loader = MigrationLoader(connection, replace_migrations=False)
        graph = self.executor.loader.graph
        later = {
            node
            for child in graph.node_map[start].children
            if child.key[0] == "agents"
            for node in graph.backwards_plan(child.key)
        }
        everything = self.executor.migration_plan(self.originals_ends(), clean_start=True)
        plan = [(migration, False) for migration, _ in everything if (migration.app_label, migration.name) not in later]
        # The state of what is applied, its models rendered, carried from step to step:
        # each step would otherwise render every model twice more (its own start, and
        # the models handed back).
        self.state = self.executor.migrate([start], plan=plan)

    def to(self, target: tuple[str, str]):
        """Migrates the agents app to `target` (forward or back); the models of the
        database there, until the next step."""
        self.executor.loader.build_graph()
        self.state = self.executor.migrate([target], state=self.state)
        return self.state.apps

    def originals_ends(self) -> list[tuple[str, str]]:
        """The last original migration of each app (the squashes stand beside them)."""
        loader = self.executor.loader
        return [node for node in loader.graph.leaf_nodes() if node not in loader.replacements]

    def to_the_end(self) -> list[tuple[str, str]]:
        """As `migrate` does from here: a group of originals partly applied is migrated
        through its originals. The migrations it applied."""
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        executor.migrate(executor.loader.graph.leaf_nodes(), plan=plan, state=self.state)
        return [(migration.app_label, migration.name) for migration, _ in plan]


def version(old, agent, number: int, status: str, snapshot: dict) -> object:
    return old.get_model("agents", "PromptVersion").objects.create(
        workspace=agent.workspace,
        agent=agent,
        number=number,
        status=status,
        snapshot=snapshot,
        content_hash=content_hash(snapshot),
        source="admin:ada",
        proposer_identity="user:1",
        reviewed_at=None if status == "pending" else "2026-01-01T00:00:00Z",
    )


def read(apps, versions: dict[str, object]) -> dict[str, object]:
    """The versions as the migration left them (later ones add columns the model has now)."""
    PromptVersion = apps.get_model("agents", "PromptVersion")
    return {name: PromptVersion.objects.get(pk=row.pk) for name, row in versions.items()}


def policies_stage(journey: Journey) -> dict:
    old = journey.to(BEFORE_POLICY)
    chosen = first_release(session={"idle_minutes": 30}, pruning={"keep_last_tool_results": 5})
    replaced = first_release(max_iterations=7)
    with transaction.atomic():
        workspace = old.get_model("aihummer", "Workspace").objects.create(slug="policies", name="Policies")
        agent = old.get_model("agents", "Agent").objects.create(
            workspace=workspace, key="writer", name="Writer", runtime_policy=chosen
        )
        versions = {
            "replaced": version(old, agent, 1, "approved", stored_snapshot(replaced)),
            "live": version(old, agent, 2, "approved", stored_snapshot(chosen)),
            "pending": version(old, agent, 3, "pending", stored_snapshot(first_release(max_iterations=9))),
            "rejected": version(old, agent, 4, "rejected", stored_snapshot(chosen)),
        }
        agent.live_version = versions["live"]
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
    after = journey.to(POLICY_MIGRATION)
    return {
        "chosen": chosen,
        "replaced": replaced,
        "rejected_hash_before": versions["rejected"].content_hash,
        "versions": read(after, versions),
        "agent_policy": Agent.objects.get(pk=agent.pk).runtime_policy,
        "history_policy": Agent.history.get(history_id=history.history_id).runtime_policy,
    }


def spawn_stage(journey: Journey) -> dict:
    old = journey.to(BEFORE_SPAWN)
    chosen = issue_28(children={"allowed_agents": ["critic"], "max_depth": 3})
    anyone = issue_28()
    with transaction.atomic():
        workspace = old.get_model("aihummer", "Workspace").objects.create(slug="spawn", name="Spawn")
        agent = old.get_model("agents", "Agent").objects.create(
            workspace=workspace, key="writer", name="Writer", runtime_policy=chosen
        )
        versions = {
            "anyone": version(old, agent, 1, "approved", stored_snapshot(anyone)),
            "live": version(old, agent, 2, "approved", stored_snapshot(chosen)),
            "pending": version(old, agent, 3, "pending", stored_snapshot(anyone)),
        }
        agent.live_version = versions["live"]
        agent.save()
    after = journey.to(SPAWN_MIGRATION)
    return {
        "anyone": anyone,
        "versions": read(after, versions),
        "agent_policy": Agent.objects.get(pk=agent.pk).runtime_policy,
    }


def preset_stage(journey: Journey) -> dict:
    old = journey.to(BEFORE_PRESET)
    snapshot = stored_snapshot({})
    with transaction.atomic():
        workspace = old.get_model("aihummer", "Workspace").objects.create(slug="preset", name="Preset")
        preset = old.get_model("agents", "Preset").objects.create(
            workspace=workspace, key="main", name="Main", provider_name="echo", model="echo-1"
        )
        writer = old.get_model("agents", "Agent").objects.create(
            workspace=workspace, key="writer", name="Writer", preset=preset
        )
        plain = old.get_model("agents", "Agent").objects.create(workspace=workspace, key="plain", name="Plain")
        versions = {
            "writer": version(old, writer, 1, "approved", snapshot),
            "plain": version(old, plain, 1, "pending", snapshot),
        }
        writer.live_version = versions["writer"]
        writer.save()
    after = read(journey.to(PRESET_MIGRATION), versions)
    back = read(journey.to(BEFORE_PRESET), versions)
    return {"after": after, "back": back}


@pytest.fixture(scope="module")
def journey(django_db_setup, django_db_blocker) -> Iterator[dict[str, dict]]:
    """What each migration under test left, read once, and the schema before the journey
    (the squashes') and after it (the originals'); the database is back at the latest
    state and empty afterwards, as a transactional test leaves it."""
    with django_db_blocker.unblock():
        seen = {"squashed": schema()}
        steps = Journey(BEFORE_POLICY)
        try:
            seen |= {
                "policies": policies_stage(steps),
                "spawn": spawn_stage(steps),
                "preset": preset_stage(steps),
            }
        finally:
            seen["to_the_end"] = steps.to_the_end()
        try:
            seen["originals"] = schema()
            # As a deployed database has it: every original recorded, no squash yet.
            for app, name in SQUASHES:
                MigrationRecorder(connection).migration_qs.filter(app=app, name=name).delete()
            executor = MigrationExecutor(connection)
            seen["left_to_apply"] = executor.migration_plan(executor.loader.graph.leaf_nodes())
            executor.migrate(executor.loader.graph.leaf_nodes())
            seen["recorded"] = MigrationRecorder(connection).applied_migrations()
            yield seen
        finally:
            call_command("flush", verbosity=0, interactive=False)


def test_stored_policies_move_to_the_documents_names_and_history_stays(journey):
    seen = journey["policies"]
    versions = seen["versions"]
    expected = issue_28(session={"idle_reset_minutes": 30}, pruning={"keep_last_assistants": 5})
    assert versions["live"].snapshot["runtime_policy"] == expected
    assert versions["live"].content_hash == content_hash(versions["live"].snapshot)
    assert seen["agent_policy"] == expected
    assert versions["pending"].snapshot["runtime_policy"] == issue_28() | {"max_iterations": 9}
    # History: versions no longer live or never decided pending, and history rows, keep their names.
    assert versions["replaced"].snapshot["runtime_policy"] == seen["replaced"]
    assert versions["rejected"].snapshot["runtime_policy"] == seen["chosen"]
    assert versions["rejected"].content_hash == seen["rejected_hash_before"]
    assert seen["history_policy"] == seen["replaced"]


def test_allowed_agents_move_to_spawn_agent_ids_and_history_stays(journey):
    seen = journey["spawn"]
    versions = seen["versions"]
    expected = validate_runtime_policy(
        {"children": {"max_depth": 3, "timeout_seconds": 600}, "interaction": {"spawn_agent_ids": ["critic"]}}
    )
    assert versions["live"].snapshot["runtime_policy"] == expected
    assert versions["live"].content_hash == content_hash(versions["live"].snapshot)
    assert seen["agent_policy"] == expected
    # An empty list meant any agent: null. The old explicit limits stay numbers.
    assert versions["pending"].snapshot["runtime_policy"] == default_runtime_policy() | {
        "children": default_runtime_policy()["children"] | {"max_depth": 1, "timeout_seconds": 600}
    }
    assert versions["anyone"].snapshot["runtime_policy"] == seen["anyone"]  # history keeps its names


def test_every_version_names_its_agents_preset_after_the_migration(journey):
    """Issue 33: the preset an agent runs with became part of its versions' snapshots."""
    after, back = journey["preset"]["after"], journey["preset"]["back"]
    assert [after[name].snapshot["preset"] for name in ("writer", "plain")] == ["main", None]
    assert all(row.content_hash == content_hash(row.snapshot) for row in after.values())
    assert "preset" not in back["writer"].snapshot  # and back again


def test_a_database_made_from_nothing_goes_through_the_squashes():
    graph = MigrationLoader(None, ignore_no_migrations=True).graph  # nothing applied
    plan = {node for end in graph.leaf_nodes() for node in graph.forwards_plan(end) if node[0] in OUR_APPS}
    assert sorted(plan) == sorted(SQUASHES)


def test_the_originals_leave_the_schema_the_squashes_leave(journey):
    squashed, originals = journey["squashed"], journey["originals"]
    assert {part: len(rows) for part, rows in squashed.items()} == {part: len(rows) for part, rows in originals.items()}
    for part in SCHEMA:
        assert squashed[part] == originals[part], part
    assert len(originals["triggers"]) == 2  # agents 0006's, kept by the squash


def test_a_database_part_way_through_goes_on_through_the_originals(journey):
    """Stopped after agents 0016 (the preset stage went back there): the rest of the
    agents group's originals. Then, with the originals recorded and not the squashes (a
    deployed database), nothing to apply, and the squashes recorded as applied."""
    assert journey["to_the_end"] == [
        ("agents", name)
        for name in (
            "0017_preset_in_the_snapshot",
            "0018_desk_french_model_names",
            "0019_turn_tree_root_and_running",
            "0020_desk_french_field_names",
            "0021_conversation_handoff",
            "0022_turn_tree_roots_of_earlier_turns",
            "0023_desk_french_action_requests",
            "0024_tree_places_that_lapse",
            "0025_approval_outcome_unknown",
            "0026_desk_french_desk_names",
            "0027_approval_resume_attempts",
            "0028_desk_french_tool_settings",
        )
    ]
    assert journey["left_to_apply"] == []
    assert all(squash in journey["recorded"] for squash in SQUASHES)
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # exits when models and migrations differ
