from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.db import models
from django.utils import timezone

from agents.models import Agent, AgentSection, Preset, PromptVersion
from agents.services import agent_create
from aihummer.actors import Actor
from aihummer.tests.factories import make_echo_preset
from sandbox import services
from sandbox.services import sandbox_cleanup

PROFILE = {"identity": {"name": "Camille"}, "sections": [{"key": "method", "title": "Method", "body": "Plan first."}]}


def row_counts() -> dict[str, int]:
    return {
        "agents": Agent.all_objects.count(),
        "presets": Preset.all_objects.count(),
        "versions": PromptVersion.all_objects.count(),
        "sections": AgentSection.objects.count(),
    }


def history_counts() -> dict[str, int]:
    return {
        "agents": Agent.history.count(),
        "presets": Preset.history.count(),
        "versions": PromptVersion.history.count(),
        "sections": AgentSection.history.count(),
    }


@pytest.fixture
def as_alice(alice) -> Actor:
    return Actor.for_user(alice)


@pytest.fixture
def real(workspace, ada) -> dict:
    """The workspace's real rows: a default preset and one agent on it."""
    actor = Actor.for_user(ada)
    echo = make_echo_preset(workspace, by=actor)
    writer = agent_create(workspace=workspace, actor=actor, key="writer", name="Writer", preset=echo, snapshot=PROFILE)
    return {"preset": echo, "agent": writer}


@pytest.fixture
def hidden(workspace, as_alice, real) -> dict:
    """What an automated client leaves: a sandbox preset and two sandbox agents."""
    preset = make_echo_preset(workspace, by=as_alice, key="sb_echo", name="Sandbox echo", is_sandbox=True)
    on_own = agent_create(
        workspace=workspace,
        actor=as_alice,
        key="sb_reader",
        name="Reader",
        preset=preset,
        snapshot=PROFILE,
        is_sandbox=True,
    )
    on_default = agent_create(
        workspace=workspace, actor=as_alice, key="sb_critic", name="Critic", snapshot=PROFILE, is_sandbox=True
    )
    return {"preset": preset, "agents": [on_own, on_default]}


# --- managers -------------------------------------------------------------------------
def test_the_default_manager_hides_sandbox_rows(hidden, real):
    assert list(Agent.objects.values_list("key", flat=True)) == ["writer"]
    assert list(Preset.objects.values_list("key", flat=True)) == ["echo"]
    assert not PromptVersion.objects.filter(agent__in=hidden["agents"]).exists()


def test_all_objects_sees_sandbox_rows(hidden, real):
    assert sorted(Agent.all_objects.values_list("key", flat=True)) == ["sb_critic", "sb_reader", "writer"]
    assert sorted(Preset.all_objects.values_list("key", flat=True)) == ["echo", "sb_echo"]
    assert PromptVersion.all_objects.filter(agent__in=hidden["agents"]).count() == 2
    assert list(Agent.all_objects.sandbox().order_by("key").values_list("key", flat=True)) == ["sb_critic", "sb_reader"]
    assert list(Agent.all_objects.real().values_list("key", flat=True)) == ["writer"]


def test_objects_is_the_default_manager_and_the_base_manager_is_unfiltered(hidden):
    for model in (Agent, Preset, PromptVersion):
        assert model._default_manager is model.objects
        assert model._default_manager.name == "objects"
        assert type(model._base_manager) is models.Manager
    assert Agent._base_manager.filter(pk=hidden["agents"][0].pk).exists()


def test_a_sandbox_agent_is_reached_through_a_foreign_key(hidden):
    agent = hidden["agents"][0]

    version = PromptVersion.all_objects.get(pk=agent.live_version_id)

    assert version.agent.key == "sb_reader"
    assert Agent.all_objects.get(pk=agent.pk).preset.key == "sb_echo"


def test_reverse_relations_hide_sandbox_rows(workspace, hidden, real):
    assert list(workspace.agents.values_list("key", flat=True)) == ["writer"]
    assert list(workspace.presets.values_list("key", flat=True)) == ["echo"]
    assert list(hidden["preset"].agents.all()) == []


def test_a_sandbox_agent_without_preset_runs_on_the_default_of_its_creation(hidden, real):
    assert Agent.all_objects.get(key="sb_critic").preset == real["preset"]


# --- cleanup --------------------------------------------------------------------------
def test_cleanup_deletes_sandbox_agents_and_presets_and_returns_the_counts(workspace, as_alice, hidden, real):
    sandbox_versions = [agent.live_version_id for agent in hidden["agents"]]
    before = row_counts()

    counts = sandbox_cleanup(workspace=workspace, actor=as_alice)

    assert counts == {"workflowrun": 0, "workflow": 0, "agent": 2, "preset": 1}
    assert row_counts() == {
        "agents": before["agents"] - 2,
        "presets": before["presets"] - 1,
        "versions": before["versions"] - 2,
        "sections": before["sections"] - 2,
    }
    assert not Agent.all_objects.sandbox().exists()
    assert not Preset.all_objects.sandbox().exists()
    assert not PromptVersion.all_objects.filter(pk__in=sandbox_versions).exists()


def test_cleanup_leaves_real_rows_alone(workspace, as_alice, hidden, real):
    sandbox_cleanup(workspace=workspace, actor=as_alice)

    writer = Agent.objects.get(key="writer")
    assert writer.pk == real["agent"].pk
    assert writer.live_version.number == 1
    assert list(writer.sections.values_list("body", flat=True)) == ["Plan first."]
    assert Preset.objects.get(key="echo").is_active


def test_cleanup_twice_deletes_nothing_the_second_time(workspace, as_alice, hidden):
    sandbox_cleanup(workspace=workspace, actor=as_alice)
    counts = row_counts()

    second = sandbox_cleanup(workspace=workspace, actor=as_alice)

    assert second == {"workflowrun": 0, "workflow": 0, "agent": 0, "preset": 0}
    assert row_counts() == counts


def test_cleanup_works_in_batches(workspace, as_alice, hidden, monkeypatch):
    monkeypatch.setattr(services, "CLEANUP_BATCH_SIZE", 1)
    agent_create(workspace=workspace, actor=as_alice, key="sb_third", name="Third", snapshot=PROFILE, is_sandbox=True)

    assert sandbox_cleanup(workspace=workspace, actor=as_alice) == {
        "workflowrun": 0,
        "workflow": 0,
        "agent": 3,
        "preset": 1,
    }
    assert not Agent.all_objects.sandbox().exists()


def test_cleanup_touches_only_its_workspace(workspace, other_workspace, as_alice, hidden, charlie):
    as_charlie = Actor.for_user(charlie)
    preset = make_echo_preset(other_workspace, by=as_charlie, key="sb_echo", name="Sandbox echo", is_sandbox=True)
    theirs = agent_create(
        workspace=other_workspace, actor=as_charlie, key="sb_reader", name="R", preset=preset, is_sandbox=True
    )

    assert sandbox_cleanup(workspace=workspace, actor=as_alice) == {
        "workflowrun": 0,
        "workflow": 0,
        "agent": 2,
        "preset": 1,
    }
    assert Agent.all_objects.filter(pk=theirs.pk).exists()
    assert Preset.all_objects.filter(pk=preset.pk).exists()


@pytest.mark.parametrize(
    ("persona", "refusal"),
    [
        ("vic", "vic is a viewer in workspace 'acme'; using sandboxes needs the editor role."),
        ("charlie", "charlie is not a member of workspace 'acme'."),
    ],
)
def test_viewers_and_strangers_may_not_clean_up(workspace, hidden, request, persona, refusal):
    before = row_counts()

    with pytest.raises(PermissionDenied) as refused:
        sandbox_cleanup(workspace=workspace, actor=Actor.for_user(request.getfixturevalue(persona)))

    assert str(refused.value) == refusal
    assert row_counts() == before


def test_a_sandbox_setup_built_and_cleaned_up_leaves_no_history(workspace, as_alice, real):
    before = history_counts()
    agent_create(workspace=workspace, actor=as_alice, key="sb_reader", name="R", snapshot=PROFILE, is_sandbox=True)

    sandbox_cleanup(workspace=workspace, actor=as_alice)

    assert history_counts() == before


def test_a_sandbox_agent_s_sections_leave_no_history(workspace, as_alice, real):
    before = AgentSection.history.count()

    agent_create(workspace=workspace, actor=as_alice, key="sb_reader", name="R", snapshot=PROFILE, is_sandbox=True)

    assert AgentSection.history.count() == before


# --- the command ----------------------------------------------------------------------
def test_the_command_prints_the_counts(hidden):
    out = StringIO()

    call_command("sandbox_cleanup", "--workspace", "acme", stdout=out)
    call_command("sandbox_cleanup", "--workspace", "acme", stdout=out)

    assert out.getvalue().splitlines() == [
        "Deleted from 'acme': 0 workflow run(s), 0 workflow(s), 2 agent(s), 1 preset(s).",
        "Deleted from 'acme': 0 workflow run(s), 0 workflow(s), 0 agent(s), 0 preset(s).",
    ]
    assert not Agent.all_objects.sandbox().exists()


def test_the_command_refuses_an_unknown_workspace(db):
    with pytest.raises(CommandError, match=r"^No workspace 'nowhere'\.$"):
        call_command("sandbox_cleanup", "--workspace", "nowhere")


# --- the sweep (beat) and the command by age -----------------------------------------------
def age(model, key: str, hours: float) -> None:
    model.all_objects.filter(key=key).update(created_at=timezone.now() - timedelta(hours=hours))


def test_the_sweep_deletes_old_sandbox_rows_only(workspace, other_workspace, as_alice, hidden, real, charlie):
    theirs = make_echo_preset(other_workspace, by=charlie, key="sb_old", name="Old", is_sandbox=True)
    age(Preset, "sb_old", 30)
    age(Agent, "sb_critic", 30)
    age(Preset, "sb_echo", 30)  # still used by the young sb_reader: kept with it
    age(Agent, "writer", 30)  # real: never swept
    age(Preset, "echo", 30)

    report = services.sandbox_sweep(older_than=timedelta(hours=24))

    assert report == {
        "acme": {"workflowrun": 0, "workflow": 0, "agent": 1, "preset": 0},
        "globex": {"workflowrun": 0, "workflow": 0, "agent": 0, "preset": 1},
    }
    assert sorted(Agent.all_objects.values_list("key", flat=True)) == ["sb_reader", "writer"]
    assert sorted(Preset.all_objects.values_list("key", flat=True)) == ["echo", "sb_echo"]
    assert not Preset.all_objects.filter(pk=theirs.pk).exists()


def test_the_sweep_reads_its_ttl_from_settings(settings, hidden, real):
    settings.AIHUMMER_SANDBOX_TTL = 3600
    age(Agent, "sb_reader", 2)
    age(Preset, "sb_echo", 2)  # unused once sb_reader is gone

    assert services.sandbox_sweep() == {"acme": {"workflowrun": 0, "workflow": 0, "agent": 1, "preset": 1}}
    assert Agent.all_objects.filter(key="sb_critic").exists()


def test_the_command_sweeps_by_age_and_says_so(hidden, real):
    age(Agent, "sb_reader", 2)
    out = StringIO()

    call_command("sandbox_cleanup", "--older-than", "90m", stdout=out)
    call_command("sandbox_cleanup", "--workspace", "acme", "--older-than", "PT0S", stdout=out)
    call_command("sandbox_cleanup", stdout=out)

    assert out.getvalue().splitlines() == [
        "Deleted from 'acme': 0 workflow run(s), 0 workflow(s), 1 agent(s), 0 preset(s).",
        "Deleted from 'acme': 0 workflow run(s), 0 workflow(s), 1 agent(s), 1 preset(s).",
        "No sandbox rows.",
    ]


@pytest.mark.parametrize("text", ["soon", "-5m", "10 parsecs"])
def test_the_command_refuses_a_bad_duration(db, text):
    with pytest.raises(CommandError, match=r"--older-than"):
        call_command("sandbox_cleanup", "--older-than", text)
