import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from agents.models import Agent, AgentSection, AgentSkill, Preset, PromptVersion
from agents.services import (
    agent_create,
    agent_delete,
    agent_dependents,
    agent_update,
    skill_as_snapshot_entry,
    skill_create,
    version_go_live,
    version_record,
)
from agents.snapshot import content_hash, normalize_snapshot
from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError
from aihummer.tests.factories import make_echo_preset

WRITER = {
    "identity": {"name": "Camille", "role": "Writer", "persona": "Curious.", "language": "fr", "goals": ["Draft"]},
    "sections": [
        {"key": "method", "title": "Method", "body": "Plan first."},
        {"key": "sources", "title": "Sources", "body": "Never invent."},
        {"key": "format", "title": "Format", "body": "Title, lead, body."},
    ],
    "onboarding": "Ask who reads.",
    "skills": [{"key": "house-style", "title": "House style", "body": "Short sentences.", "shared": True}],
    "runtime_policy": {"max_iterations": 32},
    "allowed_tool_names": ["search"],
}
NOT_EDITABLE = "Not editable here: what an agent is told changes through a proposal."


def counts() -> tuple[int, int, int, int]:
    """Every row and history record an agent write could leave behind."""
    return (
        Agent.all_objects.count(),
        Agent.history.count(),
        PromptVersion.all_objects.count(),
        PromptVersion.history.count(),
    )


@pytest.fixture
def as_ada(ada) -> Actor:
    return Actor.for_user(ada)


@pytest.fixture
def echo(workspace, as_ada) -> Preset:
    """The workspace's default preset."""
    return make_echo_preset(workspace, by=as_ada)


@pytest.fixture
def writer(workspace, as_ada) -> Agent:
    return agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer", snapshot=WRITER)


def sandbox_agent(workspace, actor: Actor, key: str = "sb_writer", **kwargs: object) -> Agent:
    return agent_create(workspace=workspace, actor=actor, key=key, name="Sandbox writer", is_sandbox=True, **kwargs)


# --- agent_create ---------------------------------------------------------------------
def test_create_records_version_one_approved_and_live(workspace, ada, as_ada):
    agent = agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer", snapshot=WRITER)

    agent = Agent.objects.select_related("live_version").get(pk=agent.pk)
    version = agent.live_version
    assert version.number == 1
    assert version.status == PromptVersion.Status.APPROVED
    assert version.source == "admin:ada"
    assert version.proposed_by == ada and version.reviewed_by == ada
    assert version.reviewed_at is not None
    assert version.snapshot == normalize_snapshot(WRITER)
    assert version.content_hash == content_hash(normalize_snapshot(WRITER)) == content_hash(version.snapshot)
    assert list(agent.versions.values_list("number", flat=True)) == [1]


def test_create_projects_the_snapshot_onto_the_profile_rows(workspace, as_ada):
    agent = agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer", snapshot=WRITER)

    snapshot = Agent.objects.get(pk=agent.pk).live_version.snapshot
    agent.refresh_from_db()
    assert (agent.identity_name, agent.role, agent.persona, agent.language, agent.goals) == (
        "Camille",
        "Writer",
        "Curious.",
        "fr",
        ["Draft"],
    )
    assert (agent.system_prompt, agent.onboarding, agent.allowed_tool_names) == (None, "Ask who reads.", ["search"])
    assert agent.runtime_policy == snapshot["runtime_policy"]
    assert agent.runtime_policy["max_iterations"] == 32
    assert [
        {"key": s.key, "title": s.title, "body": s.body, "position": s.position, "enabled": s.enabled}
        for s in agent.sections.order_by("position")
    ] == snapshot["sections"]
    assert [
        {"key": s.key, "title": s.title, "body": s.body, "shared": s.shared} for s in agent.skills.order_by("position")
    ] == snapshot["skills"]


def test_create_stamps_history_with_the_actor_and_the_reason(workspace, ada, as_ada):
    agent = agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer", snapshot=WRITER)

    records = agent.history.order_by("history_date")
    assert [(r.history_type, r.history_change_reason, r.history_user) for r in records] == [
        ("+", "admin:ada: created", ada),
        ("~", "admin:ada: version 1 live", ada),
    ]
    assert [r.history_change_reason for r in PromptVersion.history.filter(agent_id=agent.pk)] == ["admin:ada: approved"]


def test_without_a_snapshot_the_agent_is_told_its_name(workspace, as_ada):
    agent = agent_create(workspace=workspace, actor=as_ada, key="helper", name="Helper")

    snapshot = agent.live_version.snapshot
    assert snapshot == normalize_snapshot({"identity": {"name": "Helper"}})
    assert agent.identity_name == "Helper"


@pytest.mark.parametrize(
    "snapshot",
    [
        {},
        {"identity": {"language": "fr", "goals": ["Draft"]}},
        {"sections": [{"key": "off", "body": "Hidden.", "enabled": False}, {"key": "blank", "body": "  "}]},
    ],
)
def test_create_refuses_a_snapshot_that_tells_the_agent_nothing(workspace, as_ada, snapshot):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        agent_create(workspace=workspace, actor=as_ada, key="mute", name="Mute", snapshot=snapshot)

    assert refused.value.message_dict == {
        "snapshot": ["The agent would be told nothing: give an identity, sections or a prompt."]
    }
    assert counts() == before


def test_create_refuses_an_invalid_snapshot_with_its_path(workspace, as_ada):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer", snapshot={"tools": []})

    assert refused.value.message_dict == {"tools": ["$.tools: unknown field"]}
    assert counts() == before


@pytest.mark.parametrize(
    ("persona", "message"),
    [
        ("alice", "alice is an editor in workspace 'acme'; publishing changes directly needs the admin role."),
        ("bob", "bob is a reviewer in workspace 'acme'; publishing changes directly needs the admin role."),
        ("vic", "vic is a viewer in workspace 'acme'; publishing changes directly needs the admin role."),
        ("charlie", "charlie is not a member of workspace 'acme'."),
    ],
)
def test_only_the_publish_role_creates_real_agents(request, workspace, persona, message):
    user = request.getfixturevalue(persona)
    before = counts()

    with pytest.raises(PermissionDenied) as refused:
        agent_create(workspace=workspace, actor=Actor.for_user(user), key="writer", name="Writer")

    assert str(refused.value) == message
    assert counts() == before


def test_editors_create_sandbox_agents(workspace, alice, echo):
    agent = sandbox_agent(workspace, Actor.for_user(alice))

    assert agent.is_sandbox
    assert agent.live_version.number == 1
    assert agent.live_version.is_sandbox
    assert agent.live_version.source == "admin:alice"


def test_viewers_create_no_sandbox_agent(workspace, vic, echo):
    before = counts()

    with pytest.raises(PermissionDenied) as refused:
        sandbox_agent(workspace, Actor.for_user(vic))

    assert str(refused.value) == "vic is a viewer in workspace 'acme'; using sandboxes needs the editor role."
    assert counts() == before


def test_a_sandbox_agent_leaves_no_agent_or_version_history(workspace, alice, echo):
    before = counts()

    sandbox_agent(workspace, Actor.for_user(alice), snapshot=WRITER)

    agents, agent_history, versions, version_history = counts()
    assert (agents, versions) == (before[0] + 1, before[2] + 1)
    assert (agent_history, version_history) == (before[1], before[3])


def test_a_preset_of_another_workspace_is_an_unknown_preset(workspace, other_workspace, as_ada, root):
    theirs = make_echo_preset(other_workspace, by=root, key="theirs", is_active=False)
    before = counts()

    with pytest.raises(ValidationError) as refused:
        agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer", preset=theirs)

    assert refused.value.message_dict == {"preset": ["Unknown preset."]}
    assert counts() == before


def test_a_real_agent_may_not_use_a_sandbox_preset(workspace, alice, as_ada):
    sandbox_preset = make_echo_preset(workspace, by=alice, key="sb_echo", name="Sandbox echo", is_sandbox=True)
    before = counts()

    with pytest.raises(ValidationError) as refused:
        agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer", preset=sandbox_preset)

    assert refused.value.message_dict == {"preset": ["A real row cannot use the sandbox preset 'sb_echo'."]}
    assert counts() == before


def test_a_sandbox_agent_stores_the_default_preset_of_its_creation(workspace, alice, as_ada, echo):
    agent = sandbox_agent(workspace, Actor.for_user(alice))
    other = make_echo_preset(workspace, by=as_ada, key="echo-2", name="Echo 2")

    agent = Agent.all_objects.get(pk=agent.pk)
    assert agent.preset == echo
    assert Preset.objects.get(is_active=True) == other


def test_a_real_agent_without_preset_keeps_none_and_follows_the_default(workspace, as_ada, echo):
    agent = agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer")

    assert Agent.objects.get(pk=agent.pk).preset is None


def test_a_sandbox_agent_needs_a_default_preset_when_given_none(workspace, alice):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        sandbox_agent(workspace, Actor.for_user(alice))

    assert refused.value.message_dict == {"preset": ["This workspace has no default preset; give one."]}
    assert counts() == before


# --- keys -----------------------------------------------------------------------------
def test_a_taken_real_key_is_refused(workspace, as_ada, writer):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        agent_create(workspace=workspace, actor=as_ada, key="writer", name="Other writer")

    [message] = refused.value.message_dict["key"]
    assert message.endswith(" agent with key 'writer' already exists in workspace 'acme'.")
    assert counts() == before


def test_a_taken_real_key_is_refused_in_good_english(workspace, as_ada, writer):
    with pytest.raises(ValidationError) as refused:
        agent_create(workspace=workspace, actor=as_ada, key="writer", name="Other writer")

    assert refused.value.message_dict == {"key": ["An agent with key 'writer' already exists in workspace 'acme'."]}


def test_the_same_key_is_free_in_another_workspace(other_workspace, root, writer):
    theirs = agent_create(workspace=other_workspace, actor=Actor.for_user(root), key="writer", name="Writer")

    assert Agent.objects.filter(key="writer").count() == 2
    assert theirs.workspace == other_workspace


def test_a_sandbox_key_may_not_be_shadowed_by_a_real_agent(workspace, alice, as_ada, echo):
    hidden = sandbox_agent(workspace, Actor.for_user(alice), key="writer")
    before = counts()

    with pytest.raises(ValidationError) as refused:
        agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer")

    assert refused.value.message_dict == {
        "key": [
            f"Key 'writer' is taken by sandbox agent 'writer' (id {hidden.pk}), left by an automated client. "
            "Remove it with `manage.py sandbox_cleanup --workspace acme`, then retry."
        ]
    }
    assert counts() == before


def test_a_real_key_may_not_be_shadowed_by_a_sandbox_agent(workspace, alice, writer, echo):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        sandbox_agent(workspace, Actor.for_user(alice), key="writer")

    [message] = refused.value.message_dict["key"]
    assert message.endswith(" agent with key 'writer' already exists in workspace 'acme'.")
    assert counts() == before


@pytest.mark.parametrize("key", ["Writer", "my writer", "writer!", "é"])
def test_an_invalid_key_is_refused(workspace, as_ada, key):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        agent_create(workspace=workspace, actor=as_ada, key=key, name="Writer")

    assert refused.value.message_dict == {"key": ["Use lowercase letters, digits, '_' and '-' only."]}
    assert counts() == before


def test_a_key_longer_than_50_is_refused(workspace, as_ada):
    with pytest.raises(ValidationError) as refused:
        agent_create(workspace=workspace, actor=as_ada, key="w" * 51, name="Writer")

    assert refused.value.message_dict == {"key": ["Ensure this value has at most 50 characters (it has 51)."]}


@pytest.mark.parametrize("is_sandbox", [False, True])
def test_the_database_refuses_a_second_key_in_a_workspace(workspace, writer, is_sandbox):
    with pytest.raises(IntegrityError, match="agents_agent_unique_key"), transaction.atomic():
        Agent.all_objects.create(workspace=workspace, key="writer", name="Twin", is_sandbox=is_sandbox)

    assert Agent.all_objects.filter(key="writer").count() == 1


# --- agent_update ---------------------------------------------------------------------
def test_update_changes_name_description_and_enabled(workspace, ada, as_ada, writer):
    agent = agent_update(agent=writer, actor=as_ada, name="Writer 2", description="Drafts notes.", is_active=False)

    agent = Agent.objects.get(pk=agent.pk)
    assert (agent.name, agent.description, agent.is_active) == ("Writer 2", "Drafts notes.", False)
    assert agent.live_version.number == 1
    latest = agent.history.latest("history_date")
    assert (latest.history_change_reason, latest.history_user) == ("admin:ada: updated", ada)


@pytest.mark.parametrize(
    "fields",
    [
        {"persona": "Grumpy."},
        {"system_prompt": "Obey me."},
        {"runtime_policy": {}},
        {"allowed_tool_names": ["shell"]},
        {"preset": None},  # which model answers is part of a version (test_preset_versions)
        {"live_version": None},
        {"key": "scribe"},
    ],
)
def test_update_refuses_what_is_told_through_proposals(as_ada, writer, fields):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        agent_update(agent=writer, actor=as_ada, name="Renamed", **fields)

    assert refused.value.message_dict == {field: [NOT_EDITABLE] for field in fields}
    assert counts() == before
    assert Agent.objects.get(pk=writer.pk).name == "Writer"


def test_editors_may_not_update_real_agents(alice, writer):
    before = counts()

    with pytest.raises(PermissionDenied) as refused:
        agent_update(agent=writer, actor=Actor.for_user(alice), name="Mine")

    assert (
        str(refused.value)
        == "alice is an editor in workspace 'acme'; publishing changes directly needs the admin role."
    )
    assert counts() == before


# --- agent_delete ---------------------------------------------------------------------
def test_a_builtin_agent_is_never_deleted(workspace, as_ada):
    agent = agent_create(workspace=workspace, actor=as_ada, key="router", name="Router", is_builtin=True)
    before = counts()

    with pytest.raises(ApplicationError) as refused:
        agent_delete(agent=agent, actor=as_ada, force=True)

    assert refused.value.message == "Agent 'router' is built in and cannot be deleted; disable it instead."
    assert counts() == before


def test_an_agent_others_delegate_to_is_kept_unless_forced(as_ada, writer, delegator):
    before = counts()

    with pytest.raises(ApplicationError) as refused:
        agent_delete(agent=writer, actor=as_ada)

    assert (
        refused.value.message
        == "Agent 'writer' is in use: agent 'editor' delegates to it. Delete with force to proceed."
    )
    assert refused.value.extra == {"dependents": ["agent 'editor' delegates to it"]}
    assert counts() == before
    assert agent_dependents(writer) == ["agent 'editor' delegates to it"]


def test_sandbox_delegators_count_as_dependents(workspace, alice, writer, echo):
    sandbox_agent(
        workspace,
        Actor.for_user(alice),
        snapshot={"identity": {"name": "Hugo"}, "runtime_policy": {"interaction": {"spawn_agent_ids": ["writer"]}}},
    )

    assert agent_dependents(writer) == ["agent 'sb_writer' delegates to it (sandbox)"]


def test_forcing_deletes_the_agent_with_its_versions_and_returns_its_dependents(ada, as_ada, writer, delegator):
    pk = writer.pk  # delete() clears the instance's pk
    assert PromptVersion.all_objects.filter(agent_id=pk).count() == 1

    dependents = agent_delete(agent=writer, actor=as_ada, force=True)

    assert dependents == ["agent 'editor' delegates to it"]
    assert not Agent.all_objects.filter(pk=pk).exists()
    assert not PromptVersion.all_objects.filter(agent_id=pk).exists()
    assert not AgentSection.objects.filter(agent_id=pk).exists()
    assert not AgentSkill.objects.filter(agent_id=pk).exists()
    assert Agent.objects.filter(key="editor").exists()
    deleted = Agent.history.filter(id=pk).latest("history_date")
    assert (deleted.history_type, deleted.history_change_reason, deleted.history_user) == (
        "-",
        "admin:ada: deleted",
        ada,
    )


def test_an_agent_nobody_uses_is_deleted_with_no_dependents(as_ada, writer):
    pk = writer.pk

    assert agent_delete(agent=writer, actor=as_ada) == []
    assert not Agent.all_objects.filter(pk=pk).exists()


def test_editors_may_not_delete_real_agents(alice, writer):
    before = counts()

    with pytest.raises(PermissionDenied):
        agent_delete(agent=writer, actor=Actor.for_user(alice))

    assert counts() == before


def test_editors_delete_sandbox_agents(workspace, alice, echo):
    agent = sandbox_agent(workspace, Actor.for_user(alice))
    pk = agent.pk

    agent_delete(agent=agent, actor=Actor.for_user(alice))

    assert not Agent.all_objects.filter(pk=pk).exists()
    assert not PromptVersion.all_objects.filter(agent_id=pk).exists()


# --- versions go live -----------------------------------------------------------------
def go_live(agent: Agent, snapshot: dict, actor: Actor) -> PromptVersion:
    with transaction.atomic():
        agent = Agent.all_objects.select_for_update().get(pk=agent.pk)
        version = version_record(
            agent=agent,
            snapshot=normalize_snapshot(snapshot),
            actor=actor,
            status=PromptVersion.Status.APPROVED,
            base_version=agent.live_version,
        )
        version_go_live(agent=agent, version=version, actor=actor)
    return version


def test_going_live_rewrites_sections_row_by_row(ada, as_ada, writer):
    rows = {s.key: s for s in writer.sections.all()}
    history_before = {key: AgentSection.history.filter(id=row.pk).count() for key, row in rows.items()}
    sections = [
        {"key": "method", "title": "Method", "body": "Plan first."},  # unchanged
        {"key": "sources", "title": "Sources", "body": "Cite everything."},  # changed
        {"key": "tone", "title": "Tone", "body": "Warm."},  # added; "format" is gone
    ]

    version = go_live(writer, {**WRITER, "sections": sections}, as_ada)

    writer.refresh_from_db()
    assert writer.live_version == version and version.number == 2
    assert [(s.key, s.body, s.position) for s in writer.sections.order_by("position")] == [
        ("method", "Plan first.", 0),
        ("sources", "Cite everything.", 1),
        ("tone", "Warm.", 2),
    ]
    # The rows that stayed are the same rows; only what changed has a new record.
    assert writer.sections.get(key="method").pk == rows["method"].pk
    assert writer.sections.get(key="sources").pk == rows["sources"].pk
    assert AgentSection.history.filter(id=rows["method"].pk).count() == history_before["method"]
    changed = AgentSection.history.filter(id=rows["sources"].pk).latest("history_date")
    assert (changed.history_type, changed.history_change_reason) == ("~", "admin:ada: updated")
    removed = AgentSection.history.filter(id=rows["format"].pk).latest("history_date")
    assert (removed.history_type, removed.history_change_reason, removed.history_user) == (
        "-",
        "admin:ada: removed",
        ada,
    )
    added = AgentSection.history.get(id=writer.sections.get(key="tone").pk)
    assert (added.history_type, added.history_change_reason) == ("+", "admin:ada: added")


def test_going_live_with_the_same_sections_writes_no_section_history(as_ada, writer):
    before = AgentSection.history.count(), AgentSkill.history.count()

    go_live(writer, {**WRITER, "onboarding": "Say hello."}, as_ada)

    assert (AgentSection.history.count(), AgentSkill.history.count()) == before
    assert Agent.objects.get(pk=writer.pk).onboarding == "Say hello."


def test_reordering_sections_updates_only_their_positions(as_ada, writer):
    reordered = [WRITER["sections"][2], WRITER["sections"][0], WRITER["sections"][1]]

    go_live(writer, {**WRITER, "sections": reordered}, as_ada)

    assert [(s.key, s.position) for s in writer.sections.order_by("position")] == [
        ("format", 0),
        ("method", 1),
        ("sources", 2),
    ]


def test_versions_are_numbered_per_agent(workspace, as_ada, writer):
    other = agent_create(workspace=workspace, actor=as_ada, key="critic", name="Critic")

    second = go_live(writer, {**WRITER, "onboarding": "Say hello."}, as_ada)

    assert second.number == 2 and second.base_version == writer.live_version
    assert other.live_version.number == 1


def test_a_shared_skill_reaches_an_agent_by_value(workspace, alice, as_ada):
    skill = skill_create(
        workspace=workspace,
        key="house-style",
        title="House style",
        body="Short sentences.",
        actor=Actor.for_user(alice),
    )
    agent = agent_create(
        workspace=workspace,
        actor=as_ada,
        key="writer",
        name="Writer",
        snapshot={"identity": {"name": "Camille"}, "skills": [skill_as_snapshot_entry(skill)]},
    )

    carried = agent.skills.get()
    assert (carried.key, carried.title, carried.body, carried.shared) == (
        "house-style",
        "House style",
        "Short sentences.",
        True,
    )
    assert skill.history.get().history_change_reason == "admin:alice: created"


def test_viewers_may_not_create_shared_skills(workspace, vic):
    with pytest.raises(PermissionDenied) as refused:
        skill_create(workspace=workspace, key="s", title="S", body="B", actor=Actor.for_user(vic))

    assert str(refused.value) == "vic is a viewer in workspace 'acme'; proposing changes needs the editor role."
