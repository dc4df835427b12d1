"""Presets: the preset_* services, the database's invariants behind them, and the
preset admin (changelist, sandbox invisibility, the add form, the agent autocomplete)."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from agents.models import Agent, Credential, Preset
from agents.services import (
    agent_create,
    credential_create,
    preset_activate,
    preset_create,
    preset_delete,
    preset_update,
)
from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError
from aihummer.models import User, Workspace

GEMINI_MODELS = "gemini-2.5-flash, gemini-2.5-pro, gemini-2.5-flash-lite, gemini-2.0-flash"
OLLAMA_URL = "http://localhost:11434/v1"


def make_preset(workspace: Workspace, user: User, key: str, **fields: object) -> Preset:
    values = {"name": key.title(), "provider_name": "echo", "model": "echo-1", **fields}
    return preset_create(workspace=workspace, actor=Actor.for_user(user), key=key, **values)


def counts() -> tuple[int, int]:
    """Rows (sandbox included) and historical records: what a refusal must leave alone."""
    return Preset.all_objects.count(), Preset.history.count()


def orm_preset(workspace: Workspace, key: str, **fields: object) -> Preset:
    """A preset written straight through the ORM, past every service check."""
    values = {"name": key, "provider_name": "echo", "model": "echo-1", **fields}
    with transaction.atomic():
        return Preset.all_objects.create(workspace=workspace, key=key, **values)


@pytest.fixture
def main(workspace: Workspace, ada: User) -> Preset:
    return make_preset(workspace, ada, "main", is_active=True)


@pytest.fixture
def sandbox_preset(workspace: Workspace, ada: User) -> Preset:
    return make_preset(workspace, ada, "sb-probe", is_sandbox=True)


@pytest.fixture
def globex_preset(other_workspace: Workspace, root: User) -> Preset:
    return make_preset(other_workspace, root, "globex-main")


# --- creating -------------------------------------------------------------------------
def test_admin_creates_an_echo_preset_with_the_documented_defaults(workspace, ada):
    preset = make_preset(workspace, ada, "echo")

    stored = Preset.objects.get(pk=preset.pk)
    assert (stored.provider_name, stored.model, stored.base_url) == ("echo", "echo-1", "")
    assert (stored.temperature, stored.top_p, stored.max_output_tokens) == (1.0, 0.95, None)
    assert (stored.timeout_seconds, stored.streaming_enabled, stored.is_active) == (60, False, False)
    record = stored.history.get()
    assert (record.history_type, record.history_user, record.history_change_reason) == ("+", ada, "admin:ada: created")


def test_admin_creates_a_gemini_preset(workspace, ada):
    preset = make_preset(workspace, ada, "flash", provider_name="gemini", model="gemini-2.5-flash", temperature=0.2)

    stored = Preset.objects.get(pk=preset.pk)
    assert (stored.provider_name, stored.model, stored.temperature) == ("gemini", "gemini-2.5-flash", 0.2)
    assert str(stored) == "flash (gemini:gemini-2.5-flash)"


@pytest.mark.parametrize(
    ("provider", "model", "message"),
    [
        ("gemini", "gpt-4o", f"Unknown model 'gpt-4o' for provider 'gemini'; choose one of: {GEMINI_MODELS}."),
        ("echo", "echo-2", "Unknown model 'echo-2' for provider 'echo'; choose one of: echo-1."),
        (
            "openai",
            "llama3.1",
            "Unknown model 'llama3.1' for provider 'openai'; choose one of: gpt-4.1, "
            "gpt-4.1-mini, gpt-4.1-nano, gpt-4o, gpt-4o-mini, o4-mini, gpt-5, gpt-5-mini.",
        ),
    ],
)
def test_an_unknown_model_is_refused_listing_the_providers_models(workspace, ada, provider, model, message):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_preset(workspace, ada, "bad", provider_name=provider, model=model)

    assert refused.value.message_dict == {"model": [message]}
    assert counts() == before


@pytest.mark.parametrize(("provider", "model"), [("anthropic", "claude-sonnet-4-5"), ("gemini", "gemini-2.5-flash")])
def test_only_openai_takes_a_base_url(workspace, ada, provider, model):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_preset(workspace, ada, "local", provider_name=provider, model=model, base_url=OLLAMA_URL)

    assert refused.value.message_dict == {"base_url": ["Only the openai provider takes a base URL."]}
    assert counts() == before


def test_openai_with_a_base_url_accepts_any_model_name(workspace, ada):
    preset = make_preset(workspace, ada, "ollama", provider_name="openai", model="llama3.1:8b", base_url=OLLAMA_URL)

    stored = Preset.objects.get(pk=preset.pk)
    assert (stored.model, stored.base_url) == ("llama3.1:8b", OLLAMA_URL)


def test_an_unknown_field_is_refused(workspace, ada):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_preset(workspace, ada, "main", colour="blue")

    assert refused.value.message_dict == {"colour": ["Unknown preset field."]}
    assert counts() == before


# --- the default preset ---------------------------------------------------------------
def test_creating_with_is_active_makes_it_the_default(main):
    stored = Preset.objects.get(pk=main.pk)

    assert stored.is_active
    assert [r.history_change_reason for r in stored.history.order_by("history_id")] == [
        "admin:ada: created",
        "admin:ada: made default",
    ]


def test_activating_a_second_preset_moves_the_default_and_history_records_who(workspace, ada, main):
    second = make_preset(workspace, ada, "second")

    preset_activate(preset=second, actor=Actor.for_user(ada))

    assert list(Preset.objects.for_workspace(workspace).active().values_list("key", flat=True)) == ["second"]
    moved_from = Preset.history.filter(id=main.pk).latest("history_id")
    moved_to = Preset.history.filter(id=second.pk).latest("history_id")
    assert (moved_from.is_active, moved_from.history_user, moved_from.history_change_reason) == (
        False,
        ada,
        "admin:ada: default moved to second",
    )
    assert (moved_to.is_active, moved_to.history_user, moved_to.history_change_reason) == (
        True,
        ada,
        "admin:ada: made default",
    )


def test_activating_the_default_again_changes_nothing(ada, main):
    before = counts()

    preset_activate(preset=main, actor=Actor.for_user(ada))

    assert counts() == before
    assert Preset.objects.get(pk=main.pk).is_active


def test_a_sandbox_preset_is_never_made_the_default(ada, main, sandbox_preset):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        preset_activate(preset=sandbox_preset, actor=Actor.for_user(ada))

    assert refused.value.message_dict == {"is_active": ["A sandbox preset is never the workspace's default."]}
    assert counts() == before
    assert Preset.objects.get(pk=main.pk).is_active


def test_a_sandbox_preset_cannot_be_created_active(workspace, ada):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_preset(workspace, ada, "sb-default", is_sandbox=True, is_active=True)

    assert refused.value.message_dict == {"is_active": ["A sandbox preset is never the workspace's default."]}
    assert counts() == before


# --- invariants held by the database ----------------------------------------------------
def test_the_database_refuses_two_active_presets_in_one_workspace(workspace):
    orm_preset(workspace, "first", is_active=True)
    before = counts()

    with pytest.raises(IntegrityError, match="agents_preset_one_active_per_workspace"):
        orm_preset(workspace, "second", is_active=True)

    assert counts() == before


def test_the_database_allows_one_active_preset_in_each_workspace(workspace, other_workspace):
    orm_preset(workspace, "main", is_active=True)
    orm_preset(other_workspace, "main", is_active=True)

    assert Preset.objects.active().count() == 2


def test_the_database_refuses_a_duplicate_key_in_a_workspace(workspace):
    orm_preset(workspace, "main")
    before = counts()

    with pytest.raises(IntegrityError, match="agents_preset_unique_key"):
        orm_preset(workspace, "main")

    assert counts() == before


@pytest.mark.parametrize(
    ("fields", "constraint"),
    [
        ({"is_sandbox": True, "is_active": True}, "agents_preset_sandbox_never_active"),
        ({"provider_name": "mistral"}, "agents_preset_provider_valid"),
        ({"temperature": 3.0}, "agents_preset_temperature_range"),
        ({"top_p": 1.5}, "agents_preset_top_p_range"),
        ({"timeout_seconds": 601}, "agents_preset_timeout_range"),
    ],
)
def test_the_database_refuses_a_row_breaking_a_check_constraint(workspace, fields, constraint):
    with pytest.raises(IntegrityError, match=constraint):
        orm_preset(workspace, "bad", **fields)

    assert counts() == (0, 0)


# --- rights ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("persona", "message"),
    [
        ("alice", "alice is an editor in workspace 'acme'; publishing changes directly needs the admin role."),
        ("bob", "bob is a reviewer in workspace 'acme'; publishing changes directly needs the admin role."),
        ("charlie", "charlie is not a member of workspace 'acme'."),
    ],
)
def test_only_admins_create_presets(request, workspace, persona, message):
    user = request.getfixturevalue(persona)
    before = counts()

    with pytest.raises(PermissionDenied) as refused:
        make_preset(workspace, user, "mine")

    assert str(refused.value) == message
    assert counts() == before


def test_a_reviewer_may_not_update_activate_or_delete_a_preset(workspace, ada, bob, main):
    second = make_preset(workspace, ada, "second")
    reviewer = Actor.for_user(bob)
    before = counts()

    for attempt in (
        lambda: preset_update(preset=main, actor=reviewer, temperature=0.5),
        lambda: preset_activate(preset=second, actor=reviewer),
        lambda: preset_delete(preset=second, actor=reviewer),
    ):
        with pytest.raises(PermissionDenied, match="needs the admin role"):
            attempt()

    assert counts() == before
    assert Preset.objects.get(pk=main.pk).temperature == 1.0


def test_an_editor_may_create_a_sandbox_preset_which_keeps_no_history(workspace, alice):
    preset = make_preset(workspace, alice, "sb-editor", is_sandbox=True)

    assert Preset.all_objects.get(pk=preset.pk).is_sandbox
    assert not Preset.objects.filter(pk=preset.pk).exists()
    assert Preset.history.filter(id=preset.pk).count() == 0


def test_a_credential_of_another_workspace_answers_as_an_unknown_one(workspace, other_workspace, ada, root, main):
    foreign = credential_create(
        workspace=other_workspace, key="globex-key", secret="sk-globex", actor=Actor.for_user(root)
    )
    before = counts()

    with pytest.raises(ValidationError) as on_create:
        make_preset(workspace, ada, "borrowed", credential=foreign)
    with pytest.raises(ValidationError) as on_update:
        preset_update(preset=main, actor=Actor.for_user(ada), credential=foreign)

    assert on_create.value.message_dict == on_update.value.message_dict == {"credential": ["Unknown credential."]}
    assert counts() == before
    assert Preset.objects.get(pk=main.pk).credential is None


def test_a_credential_of_the_same_workspace_is_used(workspace, ada):
    credential = credential_create(workspace=workspace, key="openai", secret="sk-acme", actor=Actor.for_user(ada))

    preset = make_preset(workspace, ada, "gpt", provider_name="openai", model="gpt-4o", credential=credential)

    assert Preset.objects.get(pk=preset.pk).credential == credential


# --- deleting -------------------------------------------------------------------------
@pytest.fixture
def scribe(workspace: Workspace, ada: User, main: Preset) -> Agent:
    return agent_create(workspace=workspace, actor=Actor.for_user(ada), key="scribe", name="Scribe", preset=main)


def test_delete_is_refused_while_an_agent_uses_the_preset(ada, main, scribe):
    before = counts()

    with pytest.raises(ApplicationError) as refused:
        preset_delete(preset=main, actor=Actor.for_user(ada))

    assert refused.value.message == "Preset 'main' is in use: agent 'scribe'. Delete with force to detach them."
    assert refused.value.extra == {"dependents": ["agent 'scribe'"]}
    assert counts() == before
    assert Agent.objects.get(pk=scribe.pk).preset == main


def test_delete_lists_sandbox_agents_too(workspace, alice, ada, main, scribe):
    agent_create(workspace=workspace, actor=Actor.for_user(alice), key="sb-bot", name="Bot", is_sandbox=True)

    with pytest.raises(ApplicationError) as refused:
        preset_delete(preset=main, actor=Actor.for_user(ada))

    # A person is told sandbox rows exist, never their names (issue 10).
    assert refused.value.extra == {"dependents": ["agent 'scribe'", "1 sandbox agent"]}


def test_forced_delete_detaches_the_agents(ada, main, scribe):
    main_pk = main.pk  # delete() clears the instance's pk

    dependents = preset_delete(preset=main, actor=Actor.for_user(ada), force=True)

    assert dependents == ["agent 'scribe'"]
    scribe = Agent.objects.select_related("live_version").get(pk=scribe.pk)
    assert scribe.preset is None
    assert not Preset.all_objects.filter(pk=main_pk).exists()
    # The preset is part of a version: the fall-back is a new live version that says why.
    fallback = scribe.live_version
    assert (fallback.number, fallback.snapshot["preset"], fallback.reason, fallback.proposed_by) == (
        2,
        None,
        "preset main deleted: the workspace's default from now on",
        ada,
    )
    assert fallback.base_version.snapshot["preset"] == "main"
    detached = Agent.history.filter(id=scribe.pk).latest("history_id")
    assert (detached.preset_id, detached.history_user, detached.history_change_reason) == (
        None,
        ada,
        "admin:ada: version 2 live",
    )
    deleted = Preset.history.filter(id=main_pk).latest("history_id")
    assert (deleted.history_type, deleted.history_user, deleted.history_change_reason) == (
        "-",
        ada,
        "admin:ada: deleted",
    )


def test_an_unused_preset_is_deleted(workspace, ada):
    spare = make_preset(workspace, ada, "spare")
    spare_pk = spare.pk

    assert preset_delete(preset=spare, actor=Actor.for_user(ada)) == []
    assert not Preset.all_objects.filter(pk=spare_pk).exists()


# --- keys -----------------------------------------------------------------------------
def test_an_invalid_key_is_a_field_error(workspace, ada):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_preset(workspace, ada, "Bad Key")

    assert refused.value.message_dict == {"key": ["Use lowercase letters, digits, '_' and '-' only."]}
    assert counts() == before


def test_a_duplicate_key_is_a_field_error(workspace, ada, main):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_preset(workspace, ada, "main", provider_name="gemini", model="gemini-2.5-pro")

    assert refused.value.message_dict == {"key": ["A preset with key 'main' already exists in workspace 'acme'."]}
    assert counts() == before


def test_a_key_taken_by_a_sandbox_preset_names_it_and_the_cleanup_command(workspace, ada, sandbox_preset):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_preset(workspace, ada, "sb-probe")

    assert refused.value.message_dict == {
        "key": [
            f"Key 'sb-probe' is taken by sandbox preset 'sb-probe' (id {sandbox_preset.pk}), left by an automated "
            "client. Remove it with `manage.py sandbox_cleanup --workspace acme`, then retry."
        ]
    }
    assert counts() == before


def test_a_sandbox_preset_may_not_take_a_real_presets_key(workspace, alice, main):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        make_preset(workspace, alice, "main", is_sandbox=True)

    assert refused.value.message_dict == {"key": ["A preset with key 'main' already exists in workspace 'acme'."]}
    assert counts() == before


def test_the_same_key_in_another_workspace_is_fine(main, globex_preset, other_workspace, root):
    make_preset(other_workspace, root, "main")

    assert Preset.objects.filter(key="main").count() == 2


# --- updating -------------------------------------------------------------------------
def test_update_beyond_the_models_max_output_tokens_is_a_field_error(ada, main):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        preset_update(preset=main, actor=Actor.for_user(ada), max_output_tokens=100_001)

    assert refused.value.message_dict == {"max_output_tokens": ["echo-1 answers with at most 100000 tokens."]}
    assert counts() == before
    assert Preset.objects.get(pk=main.pk).max_output_tokens is None


def test_update_within_the_models_limits_is_saved_with_history(ada, main):
    preset_update(preset=main, actor=Actor.for_user(ada), max_output_tokens=100_000, temperature=0.3)

    stored = Preset.objects.get(pk=main.pk)
    assert (stored.max_output_tokens, stored.temperature, stored.is_active) == (100_000, 0.3, True)
    record = stored.history.latest("history_id")
    assert (record.history_user, record.history_change_reason) == (ada, "admin:ada: updated")


def test_update_refuses_the_default_flag_and_the_key(ada, main):
    before = counts()

    with pytest.raises(ValidationError) as refused:
        preset_update(preset=main, actor=Actor.for_user(ada), is_active=False, key="renamed")

    assert refused.value.message_dict == {
        "is_active": ["Unknown or read-only preset field."],
        "key": ["Unknown or read-only preset field."],
    }
    assert counts() == before


# --- admin ----------------------------------------------------------------------------
def admin_post_data(workspace: Workspace, **overrides: object) -> dict:
    data = {
        "workspace": workspace.pk,
        "key": "flash",
        "name": "Flash",
        "provider_name": "gemini",
        "base_url": "",
        "model": "gemini-2.5-flash",
        "temperature": "0.7",
        "top_p": "0.95",
        "max_output_tokens": "",
        "timeout_seconds": "60",
        "credential": "",
    }
    return {**data, **overrides}


def test_the_changelist_shows_the_members_presets_but_neither_other_workspaces_nor_sandbox_ones(
    client: Client, bob, main, sandbox_preset, globex_preset
):
    client.force_login(bob)

    response = client.get(reverse("admin:agents_preset_changelist"))

    assert response.status_code == 200
    assert [p.key for p in response.context["cl"].result_list] == ["main"]
    page = response.content.decode()
    assert "globex-main" not in page and "sb-probe" not in page


def test_a_sandbox_presets_pages_answer_as_a_missing_ones(client: Client, ada, main, sandbox_preset):
    client.force_login(ada)
    missing_pk = Preset.all_objects.order_by("-pk").first().pk + 1000

    for view in ("change", "history", "delete"):
        hidden = client.get(reverse(f"admin:agents_preset_{view}", args=[sandbox_preset.pk]))
        missing = client.get(reverse(f"admin:agents_preset_{view}", args=[missing_pk]))
        assert hidden.status_code == missing.status_code, view
        assert hidden.status_code in (302, 404), view
        assert "sb-probe" not in hidden.content.decode()


def test_a_reviewer_cannot_open_the_add_form(client: Client, bob):
    client.force_login(bob)

    assert client.get(reverse("admin:agents_preset_add")).status_code == 403


def test_an_admin_adds_a_preset_through_the_form(client: Client, workspace, ada):
    client.force_login(ada)

    response = client.post(reverse("admin:agents_preset_add"), admin_post_data(workspace))

    assert response.status_code == 302, response.content.decode()[:2000]
    preset = Preset.objects.get(workspace=workspace, key="flash")
    assert (preset.provider_name, preset.model, preset.temperature, preset.is_active) == (
        "gemini",
        "gemini-2.5-flash",
        0.7,
        False,
    )
    record = preset.history.get()
    assert (record.history_type, record.history_user, record.history_change_reason) == ("+", ada, "admin:ada: created")


def test_a_bad_model_in_the_admin_form_is_shown_on_its_field(client: Client, workspace, ada):
    client.force_login(ada)
    message = f"Unknown model 'gemini-9' for provider 'gemini'; choose one of: {GEMINI_MODELS}."
    before = counts()

    response = client.post(reverse("admin:agents_preset_add"), admin_post_data(workspace, model="gemini-9"))

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"model": [message]}
    assert escape(message) in response.content.decode()
    assert counts() == before


def test_a_key_taken_by_a_sandbox_preset_is_shown_on_the_admin_forms_key(
    client: Client, workspace, ada, sandbox_preset
):
    client.force_login(ada)
    before = counts()

    response = client.post(reverse("admin:agents_preset_add"), admin_post_data(workspace, key="sb-probe"))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["key"]
    assert "manage.py sandbox_cleanup --workspace acme" in errors["key"][0]
    assert counts() == before


def test_the_agent_forms_preset_autocomplete_offers_the_members_presets_only(
    client: Client, workspace, ada, bob, main, sandbox_preset, globex_preset
):
    second = make_preset(workspace, ada, "second", provider_name="gemini", model="gemini-2.5-pro")
    client.force_login(bob)

    response = client.get(
        reverse("admin:autocomplete"),
        {"app_label": "agents", "model_name": "agent", "field_name": "preset", "term": ""},
    )

    assert response.status_code == 200
    assert response.json()["results"] == [
        {"id": str(main.pk), "text": "main (echo:echo-1)"},
        {"id": str(second.pk), "text": "second (gemini:gemini-2.5-pro)"},
    ]


def test_the_preset_autocomplete_finds_no_sandbox_preset_by_its_key(client: Client, ada, main, sandbox_preset):
    client.force_login(ada)

    response = client.get(
        reverse("admin:autocomplete"),
        {"app_label": "agents", "model_name": "agent", "field_name": "preset", "term": "sb-probe"},
    )

    assert response.status_code == 200
    assert response.json()["results"] == []


def test_the_credential_picker_offers_only_the_admins_workspace_credentials(
    client: Client, workspace, other_workspace, ada, root
):
    mine = credential_create(workspace=workspace, key="openai", secret="sk-acme", actor=Actor.for_user(ada))
    credential_create(workspace=other_workspace, key="globex-key", secret="sk-globex", actor=Actor.for_user(root))
    client.force_login(ada)

    response = client.get(reverse("admin:agents_preset_add"))

    field = response.context["adminform"].form.fields["credential"]
    assert list(field.queryset) == [mine]
    assert Credential.objects.count() == 2


def change_form_data(preset: Preset, **overrides: object) -> dict:
    data = {
        "name": preset.name,
        "provider_name": preset.provider_name,
        "base_url": preset.base_url,
        "model": preset.model,
        "temperature": str(preset.temperature),
        "top_p": str(preset.top_p),
        "max_output_tokens": preset.max_output_tokens or "",
        "timeout_seconds": str(preset.timeout_seconds),
        "credential": preset.credential_id or "",
    }
    return {**data, **overrides}


def test_an_admin_changes_a_preset_through_the_form(client: Client, ada, main):
    client.force_login(ada)

    response = client.post(
        reverse("admin:agents_preset_change", args=[main.pk]), change_form_data(main, temperature="0.4")
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    stored = Preset.objects.get(pk=main.pk)
    assert (stored.temperature, stored.is_active) == (0.4, True)
    record = stored.history.latest("history_id")
    assert (record.history_user, record.history_change_reason) == (ada, "admin:ada: updated")


def test_history_pages_show_old_records_but_never_revert_them(client: Client, ada, main):
    first = main.history.earliest("history_id")
    preset_update(preset=main, actor=Actor.for_user(ada), temperature=0.3)
    client.force_login(ada)
    url = reverse("admin:agents_preset_simple_history", args=[main.pk, first.history_id])

    page = client.get(url)
    response = client.post(url, change_form_data(first.instance))

    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert response.status_code == 403
    assert Preset.objects.get(pk=main.pk).temperature == 0.3


def test_the_delete_page_of_a_used_preset_refuses_with_its_dependents(client: Client, ada, main, scribe):
    client.force_login(ada)

    response = client.post(reverse("admin:agents_preset_delete", args=[main.pk]), {"post": "yes"}, follow=True)

    assert [str(m) for m in response.context["messages"]] == ["Preset 'main' is in use: agent 'scribe'."]
    assert Preset.objects.filter(pk=main.pk).exists()


def test_the_delete_page_deletes_an_unused_preset_through_the_service(client: Client, workspace, ada):
    spare = make_preset(workspace, ada, "spare")
    spare_pk = spare.pk
    client.force_login(ada)

    response = client.post(reverse("admin:agents_preset_delete", args=[spare_pk]), {"post": "yes"})

    assert response.status_code == 302
    assert not Preset.all_objects.filter(pk=spare_pk).exists()
    record = Preset.history.filter(id=spare_pk).latest("history_id")
    assert (record.history_type, record.history_user, record.history_change_reason) == ("-", ada, "admin:ada: deleted")


def test_the_make_default_action_moves_the_default(client: Client, workspace, ada, main):
    second = make_preset(workspace, ada, "second")
    client.force_login(ada)

    client.post(reverse("admin:agents_preset_changelist"), {"action": "make_default", "_selected_action": [second.pk]})

    assert list(Preset.objects.active().values_list("key", flat=True)) == ["second"]


def test_a_reviewer_has_no_make_default_action(client: Client, workspace, ada, bob, main):
    second = make_preset(workspace, ada, "second")
    client.force_login(bob)

    response = client.post(
        reverse("admin:agents_preset_changelist"), {"action": "make_default", "_selected_action": [second.pk]}
    )

    action_form = response.context["action_form"]
    offered = [name for name, _ in action_form.fields["action"].choices] if action_form else []
    assert "make_default" not in offered
    assert list(Preset.objects.active().values_list("key", flat=True)) == ["main"]


def test_the_add_form_refuses_a_workspace_the_admin_does_not_administer(client: Client, other_workspace, ada):
    client.force_login(ada)
    before = counts()

    response = client.post(reverse("admin:agents_preset_add"), admin_post_data(other_workspace))

    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["workspace"]
    assert counts() == before
