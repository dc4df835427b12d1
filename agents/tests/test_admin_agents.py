import re
from io import StringIO

import pytest
from django.apps import apps
from django.contrib import admin
from django.core.management import call_command
from django.db import connection
from django.db.models import Max
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent, AgentSkill, Preset, PromptVersion, Skill
from agents.services import agent_create, agent_delete
from aihummer.actors import Actor
from aihummer.models import Workspace
from aihummer.tests.factories import make_echo_preset

PROFILE = {
    "identity": {"name": "Camille", "role": "Writer", "persona": "Curious."},
    "sections": [
        {"key": "method", "title": "Method", "body": "Plan first."},
        {"key": "sources", "title": "Sources", "body": "Never invent."},
    ],
}
MISSING_PK = 10**9


def counts() -> tuple[int, int, int]:
    return Agent.all_objects.count(), Agent.history.count(), PromptVersion.all_objects.count()


def agent_url(view: str, *args: object) -> str:
    return reverse(f"admin:agents_agent_{view}", args=args)


def answer(response) -> tuple[int, str | None]:
    """What a client can tell from a response: its status and where it redirects."""
    return response.status_code, response.get("Location")


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def plant_history_id(history_id: int, like) -> None:
    """Give a copy of the historical record `like` the history id `history_id`.

    Agent ids and history ids come from two sequences that both start at 1, so in a
    young database an agent's pk is often some other agent's history id; here that is
    arranged on purpose, whatever ids earlier tests consumed.
    """
    squatter = Agent.history.filter(history_id=history_id).first()
    if squatter is not None and squatter.id == like.id and not squatter.is_sandbox:
        return
    if squatter is not None:
        free = Agent.history.aggregate(top=Max("history_id"))["top"] + 1
        Agent.history.filter(history_id=history_id).update(history_id=free)
    copy = Agent.history.get(history_id=like.history_id)
    copy.history_id = history_id
    copy.save(force_insert=True)


def vacate_history_id(history_id: int) -> None:
    """Move whatever record holds history id `history_id` to a free one."""
    free = Agent.history.aggregate(top=Max("history_id"))["top"] + 1
    Agent.history.filter(history_id=history_id).update(history_id=free)


@pytest.fixture
def as_ada(ada) -> Actor:
    return Actor.for_user(ada)


@pytest.fixture
def writer(workspace, as_ada) -> Agent:
    return agent_create(workspace=workspace, actor=as_ada, key="writer", name="Writer", snapshot=PROFILE)


@pytest.fixture
def planner(other_workspace, root) -> Agent:
    """Globex's agent, made by the superuser."""
    return agent_create(
        workspace=other_workspace,
        actor=Actor.for_user(root),
        key="planner",
        name="Planner",
        snapshot={"identity": {"name": "Paul"}},
    )


@pytest.fixture
def hidden(workspace, alice, as_ada) -> Agent:
    """A sandbox agent an automated client left behind, and the default preset it runs on."""
    make_echo_preset(workspace, by=as_ada)
    return agent_create(
        workspace=workspace,
        actor=Actor.for_user(alice),
        key="sb_reader",
        name="Sandbox reader",
        snapshot={"identity": {"name": "Rita"}},
        is_sandbox=True,
    )


def touch(agent: Agent) -> object:
    """A historical record of `agent` written straight into the history table. Sandbox
    rows keep no history, but a record could predate that rule or come from a script;
    the history views must still hide it."""
    fresh = Agent.all_objects.get(pk=agent.pk)
    historical = Agent.history.model
    values = {f.attname: getattr(fresh, f.attname) for f in Agent._meta.concrete_fields}
    historical.objects.create(**values, history_date=timezone.now(), history_type="~")
    return Agent.history.filter(id=agent.pk).latest("history_date")


# --- the changelist -------------------------------------------------------------------
def test_the_changelist_shows_the_members_agents_only(client, bob, writer, planner, hidden):
    client.force_login(bob)

    response = client.get(agent_url("changelist"))

    assert response.status_code == 200
    assert [agent.key for agent in response.context["cl"].result_list] == ["writer"]
    page = response.content.decode()
    assert agent_url("change", writer.pk) in page
    for unseen in ("sb_reader", "Sandbox reader", "planner"):
        assert unseen not in page


def test_the_changelist_shows_no_sandbox_agent_even_to_the_superuser(client, root, writer, planner, hidden):
    client.force_login(root)

    response = client.get(agent_url("changelist"))

    assert sorted(agent.key for agent in response.context["cl"].result_list) == ["planner", "writer"]


def test_the_changelist_costs_the_same_queries_for_one_agent_or_five(client, workspace, bob, as_ada, writer):
    client.force_login(bob)
    client.get(agent_url("changelist"))
    with CaptureQueriesContext(connection) as one:
        client.get(agent_url("changelist"))
    for index in range(4):
        agent_create(workspace=workspace, actor=as_ada, key=f"agent-{index}", name=f"Agent {index}")

    with CaptureQueriesContext(connection) as five:
        response = client.get(agent_url("changelist"))

    assert len(response.context["cl"].result_list) == 5
    assert len(five) == len(one)


# --- hidden rows answer as missing ones -----------------------------------------------
def test_a_sandbox_agent_s_pages_answer_like_a_missing_agent(client, bob, hidden):
    client.force_login(bob)

    for view in ("change", "history", "delete"):
        assert answer(client.get(agent_url(view, hidden.pk))) == answer(client.get(agent_url(view, MISSING_PK)))
    assert answer(client.get(agent_url("history", hidden.pk)))[0] == 404


def test_a_sandbox_agent_s_historical_record_answers_like_a_missing_one(client, bob, hidden):
    record = touch(hidden)
    assert record.is_sandbox
    client.force_login(bob)

    seen = client.get(agent_url("simple_history", hidden.pk, record.history_id))
    missing = client.get(agent_url("simple_history", MISSING_PK, record.history_id))

    assert answer(seen) == answer(missing) == (404, None)
    assert answer(client.get(agent_url("history", hidden.pk))) == (404, None)


def test_another_workspace_s_agent_answers_like_a_missing_one(client, charlie, writer):
    client.force_login(charlie)
    record = writer.history.earliest("history_date")

    for view in ("change", "history", "delete"):
        assert answer(client.get(agent_url(view, writer.pk))) == answer(client.get(agent_url(view, MISSING_PK)))
    assert answer(client.get(agent_url("history", writer.pk)))[0] == 404
    assert answer(client.get(agent_url("simple_history", writer.pk, record.history_id))) == (404, None)


def test_a_sandbox_agent_s_history_stays_hidden_when_its_pk_is_another_record_s_history_id(client, bob, writer, hidden):
    record = touch(hidden)
    plant_history_id(hidden.pk, like=writer.history.earliest("history_date"))
    client.force_login(bob)

    history = client.get(agent_url("history", hidden.pk))
    form = client.get(agent_url("simple_history", hidden.pk, record.history_id))

    assert "Sandbox reader" not in history.content.decode() + form.content.decode()
    assert answer(history) == answer(form) == (404, None)


def test_another_workspace_s_agent_history_answers_404_when_its_pk_is_a_visible_history_id(
    client, charlie, writer, planner
):
    plant_history_id(writer.pk, like=planner.history.earliest("history_date"))
    record = Agent.history.filter(id=writer.pk).earliest("history_date")
    client.force_login(charlie)

    assert answer(client.get(agent_url("history", writer.pk))) == (404, None)
    assert answer(client.get(agent_url("simple_history", writer.pk, record.history_id))) == (404, None)


def test_the_history_of_a_deleted_agent_stays_visible_to_its_workspace(client, bob, as_ada, writer):
    pk = writer.pk
    agent_delete(agent=writer, actor=as_ada)
    vacate_history_id(pk)
    client.force_login(bob)

    response = client.get(agent_url("history", pk))

    assert response.status_code == 200
    assert "admin:ada: deleted" in response.content.decode()


def test_members_see_their_agent_s_history(client, bob, writer):
    client.force_login(bob)
    record = writer.history.earliest("history_date")

    history = client.get(agent_url("history", writer.pk))
    form = client.get(agent_url("simple_history", writer.pk, record.history_id))

    assert history.status_code == 200 and "admin:ada: version 1 live" in history.content.decode()
    assert form.status_code == 200


# --- the change page ------------------------------------------------------------------
def test_the_change_page_shows_the_rendered_prompt(client, bob, writer):
    client.force_login(bob)

    page = client.get(agent_url("change", writer.pk)).content.decode()

    assert "Rendered system prompt (first turn)" in page
    assert "You are Camille.\nRole: Writer" in page
    assert "## Method\nPlan first." in page


def test_the_change_page_shows_the_sections_read_only(client, root, writer):
    client.force_login(root)

    page = client.get(agent_url("change", writer.pk)).content.decode()

    assert 'id="sections-group"' in page
    assert re.search(r'<td class="field-body">\s*<p>Plan first\.</p>', page)
    for editable in ("sections-0-body", "sections-0-title", "sections-0-key", "sections-0-DELETE"):
        assert f'name="{editable}"' not in page


@pytest.mark.parametrize("persona", ["bob", "ada"])
def test_members_see_the_sections_read_only(request, client, writer, persona):
    client.force_login(request.getfixturevalue(persona))

    page = client.get(agent_url("change", writer.pk)).content.decode()

    assert 'id="sections-group"' in page
    assert "<p>Plan first.</p>" in page


def test_prompt_bearing_fields_are_not_editable(client, ada, writer):
    client.force_login(ada)
    before = counts()
    page = client.get(agent_url("change", writer.pk)).content.decode()

    response = client.post(
        agent_url("change", writer.pk),
        {
            "name": "Writer 2",
            "description": "",
            "preset": "",
            "is_active": "on",
            "key": "scribe",
            "persona": "Grumpy.",
            "identity_name": "Mallory",
            "system_prompt": "Obey me.",
            "sections-TOTAL_FORMS": "2",
            "sections-INITIAL_FORMS": "2",
            "sections-0-body": "Obey me.",
            "skills-TOTAL_FORMS": "0",
            "skills-INITIAL_FORMS": "0",
            "test_cases-TOTAL_FORMS": "0",
            "test_cases-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    for field in ("persona", "identity_name", "system_prompt", "key"):
        assert f'name="{field}"' not in page
    agent = Agent.objects.get(pk=writer.pk)
    assert (agent.name, agent.key, agent.persona, agent.identity_name, agent.system_prompt) == (
        "Writer 2",
        "writer",
        "Curious.",
        "Camille",
        None,
    )
    assert agent.sections.get(key="method").body == "Plan first."
    assert agent.live_version.number == 1
    # One history record for the rename, and no new version.
    assert counts() == (before[0], before[1] + 1, before[2])


def test_choosing_another_preset_on_the_agent_page_proposes_it(client, workspace, ada, as_ada, writer):
    fast = make_echo_preset(workspace, by=as_ada, key="fast")
    client.force_login(ada)

    response = client.post(
        agent_url("change", writer.pk),
        {
            "name": "Writer",
            "description": "",
            "preset": fast.pk,
            "is_active": "on",
            "expected_live": "1",
            "sections-TOTAL_FORMS": "0",
            "sections-INITIAL_FORMS": "0",
            "skills-TOTAL_FORMS": "0",
            "skills-INITIAL_FORMS": "0",
            "test_cases-TOTAL_FORMS": "0",
            "test_cases-INITIAL_FORMS": "0",
        },
        follow=True,
    )

    # Another model answers: a power change, waiting for a second person like any other.
    proposal = PromptVersion.objects.get(agent=writer, number=2)
    assert (proposal.status, proposal.snapshot["preset"], proposal.tier) == ("pending", "fast", "power")
    assert Agent.objects.get(pk=writer.pk).preset_id is None
    assert "The preset change is version 2 (pending): it waits for review in the queue." in [
        str(message) for message in response.context["messages"]
    ]


def test_reviewers_only_view_an_agent(client, bob, writer):
    client.force_login(bob)

    page = client.get(agent_url("change", writer.pk)).content.decode()
    response = client.post(agent_url("change", writer.pk), {"name": "Mine", "is_active": "on"})

    assert 'name="_save"' not in page and 'name="name"' not in page
    assert response.status_code == 403
    assert Agent.objects.get(pk=writer.pk).name == "Writer"


# --- adding ---------------------------------------------------------------------------
def test_an_admin_adds_an_agent_with_its_version_one(client, workspace, ada):
    client.force_login(ada)

    response = client.post(
        agent_url("add"),
        {"workspace": workspace.pk, "key": "helper", "name": "Helper", "description": "Helps.", "is_active": "on"},
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    agent = Agent.objects.get(key="helper")
    assert (agent.workspace, agent.name, agent.description, agent.identity_name) == (
        workspace,
        "Helper",
        "Helps.",
        "Helper",
    )
    assert (agent.live_version.number, agent.live_version.status, agent.live_version.source) == (
        1,
        PromptVersion.Status.APPROVED,
        "admin:ada",
    )


def test_a_taken_key_lands_on_the_add_form(client, workspace, ada, writer):
    client.force_login(ada)
    before = counts()

    response = client.post(agent_url("add"), {"workspace": workspace.pk, "key": "writer", "name": "Writer 2"})

    assert response.status_code == 200
    assert response.context["adminform"].form.non_field_errors() == [
        "Agent with this Workspace and Key already exists."
    ]
    assert counts() == before


def test_a_key_taken_by_a_sandbox_agent_lands_on_the_add_form_naming_the_cleanup(client, workspace, ada, hidden):
    client.force_login(ada)
    before = counts()

    response = client.post(agent_url("add"), {"workspace": workspace.pk, "key": "sb_reader", "name": "Reader"})

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["key"] == [
        f"Key 'sb_reader' is taken by sandbox agent 'sb_reader' (id {hidden.pk}), left by an automated client. "
        "Remove it with `manage.py sandbox_cleanup --workspace acme`, then retry."
    ]
    assert counts() == before


@pytest.fixture
def theirs(other_workspace, root) -> Preset:
    """Globex's preset."""
    return make_echo_preset(other_workspace, by=root, key="theirs", is_active=False)


def test_another_workspace_s_preset_is_refused_on_the_add_form(client, workspace, ada, theirs):
    client.force_login(ada)
    before = counts()

    response = client.post(
        agent_url("add"), {"workspace": workspace.pk, "key": "helper", "name": "Helper", "preset": theirs.pk}
    )

    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["preset"]
    assert counts() == before


def test_another_workspace_s_preset_answers_like_a_missing_one_on_the_add_form(client, workspace, ada, theirs):
    client.force_login(ada)
    data = {"workspace": workspace.pk, "key": "helper", "name": "Helper"}

    foreign = client.post(agent_url("add"), {**data, "preset": theirs.pk})
    missing = client.post(agent_url("add"), {**data, "preset": MISSING_PK})

    assert foreign.context["adminform"].form.errors == missing.context["adminform"].form.errors


def test_editors_may_not_add_agents(client, workspace, alice):
    client.force_login(alice)
    before = counts()

    page = client.get(agent_url("add"))
    response = client.post(agent_url("add"), {"workspace": workspace.pk, "key": "helper", "name": "Helper"})

    assert page.status_code == response.status_code == 403
    assert counts() == before


# --- deleting -------------------------------------------------------------------------
def test_a_builtin_agent_cannot_be_deleted_in_the_admin(client, workspace, ada, as_ada):
    router = agent_create(workspace=workspace, actor=as_ada, key="router", name="Router", is_builtin=True)
    client.force_login(ada)
    before = counts()

    shown = client.get(agent_url("delete", router.pk), follow=True)
    posted = client.post(agent_url("delete", router.pk), {"post": "yes"}, follow=True)

    for response in (shown, posted):
        assert response.redirect_chain == [(agent_url("change", router.pk), 302)]
        assert messages_of(response) == ["Agent 'router' is built in and cannot be deleted; disable it instead."]
    assert Agent.objects.filter(pk=router.pk).exists()
    assert counts() == before


def test_an_agent_in_use_cannot_be_deleted_in_the_admin(client, ada, writer, delegator):
    client.force_login(ada)
    before = counts()

    response = client.post(agent_url("delete", writer.pk), {"post": "yes"}, follow=True)

    assert messages_of(response) == ["Agent 'writer' is in use: agent 'editor' delegates to it."]
    assert counts() == before


def test_an_admin_deletes_an_unused_agent(client, ada, writer):
    client.force_login(ada)
    pk = writer.pk

    response = client.post(agent_url("delete", pk), {"post": "yes"})

    assert response.status_code == 302
    assert not Agent.all_objects.filter(pk=pk).exists()
    assert not PromptVersion.all_objects.filter(agent_id=pk).exists()
    assert Agent.history.filter(id=pk).latest("history_date").history_change_reason == "admin:ada: deleted"


# --- prompt versions ------------------------------------------------------------------
@pytest.mark.parametrize("persona", ["vic", "bob", "ada", "root"])
def test_a_prompt_version_is_read_only_for_everyone(request, rf, client, writer, persona):
    user = request.getfixturevalue(persona)
    version = writer.live_version
    url = reverse("admin:agents_promptversion_change", args=[version.pk])
    version_admin = admin.site.get_model_admin(PromptVersion)
    asking = rf.get(url)
    asking.user = user
    client.force_login(user)
    before = PromptVersion.history.count()

    page = client.get(url, follow=True)
    response = client.post(url, {"status": "rejected", "review_note": "no", "reason": "changed"})

    assert not version_admin.has_change_permission(asking, version)
    assert not version_admin.has_delete_permission(asking, version)
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    # Every version has one page, its review page: the change view only points there.
    assert answer(response) == (302, reverse("admin:agents_promptversion_review", args=[version.pk]))
    version.refresh_from_db()
    assert (version.status, version.review_note, version.reason) == (PromptVersion.Status.APPROVED, "", "created")
    assert PromptVersion.history.count() == before


def test_a_sandbox_version_answers_like_a_missing_one(client, bob, hidden):
    client.force_login(bob)

    seen = client.get(reverse("admin:agents_promptversion_change", args=[hidden.live_version_id]))
    missing = client.get(reverse("admin:agents_promptversion_change", args=[MISSING_PK]))

    assert answer(seen) == answer(missing)


def test_prompt_versions_cannot_be_added_or_deleted(client, ada, writer):
    client.force_login(ada)
    assert client.get(reverse("admin:agents_promptversion_add")).status_code == 403

    deleting = client.post(reverse("admin:agents_promptversion_delete", args=[writer.live_version_id]), {"post": "yes"})

    assert deleting.status_code == 403
    assert PromptVersion.objects.filter(pk=writer.live_version_id).exists()


# --- the index and the demo -----------------------------------------------------------
def test_the_admin_index_lists_the_agents_app_for_a_member(client, vic):
    client.force_login(vic)

    page = client.get(reverse("admin:index")).content.decode()

    assert reverse("admin:app_list", args=["agents"]) in page
    assert agent_url("changelist") in page
    assert reverse("admin:agents_promptversion_changelist") in page


def row_counts() -> dict[str, int]:
    return {model._meta.label: model._base_manager.count() for model in apps.get_models()}


def test_seed_demo_yields_three_live_agents_sharing_a_skill(db, settings, tmp_path):
    settings.BASE_DIR = tmp_path

    call_command("seed_demo", stdout=StringIO())

    demo = Workspace.objects.get(slug="demo")
    house_style = Skill.objects.get(workspace=demo, key="style-maison")
    # The agents' own demo (the workflows demo adds its reader, `lecteur`).
    agents = Agent.objects.filter(workspace=demo).exclude(key="lecteur").select_related("live_version").order_by("key")
    assert [agent.key for agent in agents] == ["critique", "redacteur", "support"]
    for agent in agents:
        assert agent.sections.count() == 3
        assert list(agent.skills.values_list("key", "body", "shared")) == [("style-maison", house_style.body, True)]
        first = agent.versions.get(number=1)
        assert (first.status, first.source) == (PromptVersion.Status.APPROVED, "cli:seed_demo")
        assert agent.live_version.status == PromptVersion.Status.APPROVED
    # The demo's proposals stay pending, except the one the admin published on critique.
    assert {agent.key: agent.live_version.number for agent in agents}["redacteur"] == 1
    assert AgentSkill.objects.filter(agent__workspace=demo).count() == 3
    echo = Preset.objects.get(workspace=demo, key="echo")
    assert (echo.is_active, echo.provider_name) == (True, "echo")


def test_seed_demo_twice_changes_no_row_the_second_time(db, settings, tmp_path):
    settings.BASE_DIR = tmp_path
    call_command("seed_demo", stdout=StringIO())
    counts_after_first = row_counts()

    call_command("seed_demo", stdout=StringIO())

    assert row_counts() == counts_after_first
