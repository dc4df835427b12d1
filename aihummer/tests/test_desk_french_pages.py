"""The desk reads fully in French for a French admin (issue 32): the main pages are
rendered as a French admin would see them and none of them may hold a word of the
English desk. The catalogue test (test_i18n) catches a marked string left untranslated;
this one catches a string nobody marked.

The words below are the English desk's own words on these pages (templates, admin
columns, filters, actions, model and field names, Django's admin chrome); each is absent
from the French of the same page. Words spelled alike in both languages (« Agent »,
« Description », « Version », « Message », « Note », « Source »…) are left out, and so is
the data itself (keys, names, prompts), which the test writes in French.
"""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

import pytest
from django.urls import reverse
from django.utils import timezone

from agents.models import (
    AgentToolSettings,
    AgentTurn,
    ApprovalPolicy,
    ApprovalRequest,
    Conversation,
    Credential,
    Preset,
    Skill,
    WorkspaceToolPolicy,
)
from aihummer.actors import Actor
from aihummer.models import ApiAuditEntry, ApiKey, Workspace
from aihummer.tests.factories import make_every_kind

FRENCH = {"accept-language": "fr-FR,fr;q=0.9"}

# Whole words or phrases, matched case-sensitively on the page's visible text (tags,
# scripts, styles and code removed) and on its buttons' labels. Not "created": the
# versions page shows each version's change reason ("admin:ada: created") as recorded.
ENGLISH = [
    "Save",
    "Delete",
    "History",
    "Status",
    "status",
    "Approve",
    "Reject",
    "Created",
    "Updated",
    "Home",
    "Review",
    "review",
    "Pending",
    "pending",
    "Approved",
    "Rejected",
    "Completed",
    "completed",
    "Started",
    "started",
    "Workspace",
    "workspace",
    "Key",
    "Name",
    "Filter",
    "Search",
    "request",
    "Request",
    "requests",
    "Called by",
    "Decide",
    "Outcome",
    "exactly as",
    "Refused by itself",
    "Approving runs",
    "Told to the model",
    "from",
    "ago",
    "age",
    "tool",
    "Tool",
    "Start",
    "Steps",
    "steps",
    "step",
    "Runs",
    "run",
    "Definition",
    "definition",
    "Live",
    "live",
    "Turn",
    "turn",
    "Tokens",
    "tokens",
    "Cost",
    "cost",
    "Duration",
    "Error",
    "error",
    "Credentials",
    "Credential",
    "credential",
    "hosts",
    "Presets",
    "Preset",
    "preset",
    "presets",
    "Provider",
    "provider",
    "model",
    "Model",
    "Skills",
    "Skill",
    "skills",
    "Title",
    "title",
    "body",
    "channel",
    "Channel",
    "peer",
    "Approval policy",
    "approval policy",
    "approvals",
    "Approvals",
    "wait minutes",
    "tier",
    "API keys",
    "Mail",
    "host",
    "port",
    "security",
    "Tell the model",
    "End the turn",
    "private addresses",
    "expiry hours",
    "API key",
    "scopes",
    "Role",
    "role",
    "User",
    "user",
    "Membership",
    "members",
    "Invited by",
    "accepted",
    "managed by SSO",
    "username or e-mail",
    "judge",
    "Method",
    "Path",
    "Person",
    "Actor",
    "Status code",
    "Revoked",
    "revoked",
    "last used",
    "Yes",
    "No",
    "None",
    "All",
    "Any date",
    "Today",
    "Past 7 days",
    "This month",
    "This year",
    "Change",
    "change",
    "View",
    "Add",
    "Show all",
    "Go",
    "selected",
    "Select",
    "of",
    "by",
    "the",
    "and",
    "with",
    "for",
    "to",
    "is",
    "no",
    "not",
    "at",
    "in",
]

# Scripts and styles are no text; <pre>, <code> and <textarea> hold data (a prompt, a
# definition, a call's arguments: their keys are the tools' own names).
_NOT_PROSE = re.compile(r"<(script|style|pre|code|textarea)\b.*?</\1>|<!--.*?-->", re.S)
_INPUT = re.compile(r"<input\b[^>]*>")
_BUTTON_VALUE = re.compile(r'\bvalue="([^"]*)"')
_TAG = re.compile(r"<[^>]+>")
_QUOTED_CODE = re.compile(r"`[^`]*`")  # a help text's `preset`, `user:<id>`: names, not words


def visible_text(html: str) -> str:
    """What a person reads: the text between the tags, and the labels of the buttons."""
    html = _NOT_PROSE.sub(" ", html)
    buttons = [
        value
        for tag in _INPUT.findall(html)
        if re.search(r'type="(submit|button)"', tag)
        for value in _BUTTON_VALUE.findall(tag)
    ]
    return _QUOTED_CODE.sub(" ", unescape(_TAG.sub(" ", html) + " " + " ".join(buttons)))


def english_in(text: str) -> list[str]:
    # A word glued to a colon and more (`user:3`, `api_key:<id>`) is an identifier, not a word.
    return [word for word in ENGLISH if re.search(rf"(?<![\w\u2019'-]){re.escape(word)}(?![\w\u2019'-]|:\S)", text)]


@pytest.fixture
def desk(workspace, ada, alice):
    """A workspace with a row of every kind the desk shows (make_every_kind, and the
    rest: a conversation, the policies, an invitation, an audit entry, a call waiting
    for approval), its texts in French."""
    from agents.runtime import conversation_send
    from agents.services import approval_policy_update
    from agents.services.tool_settings import agent_tool_settings_update, workspace_tool_policy_update
    from aihummer.services import invitation_create

    as_ada = Actor.for_user(ada)
    rows = make_every_kind(
        workspace,
        by=ada,
        proposer=alice,
        prefix="acme",
        identity={"name": "Camille", "role": "Rédactrice", "language": "fr"},
        change={"identity": {"role": "Relectrice"}},
        reason="plus juste",
        message="bonjour",
    )
    agent, turn = rows["agent"], rows["turn"]
    conversation_send(agent=agent, actor=as_ada, message="salut", channel="desk")
    approval_policy_update(workspace=workspace, actor=as_ada, wording_approvals=1)
    workspace_tool_policy_update(workspace=workspace, actor=as_ada, approval_expiry_hours=48)
    agent_tool_settings_update(agent=agent, actor=as_ada, smtp_host="smtp.example.com")
    invitation_create(workspace=workspace, identifier="lea@example.com", role="reviewer", actor=as_ada)
    ApiAuditEntry.objects.create(
        request_id="req-1",
        workspace=workspace,
        actor_source="api:integration",
        method="POST",
        path="/v1/agents",
        status_code=201,
    )
    action = ApprovalRequest.all_objects.create(
        workspace=workspace,
        agent=agent,
        agent_key=agent.key,
        turn=turn,
        tool_name="mail_send",
        call_id="appel-1",
        arguments={"to": ["lea@example.com"], "subject": "Bonjour", "body": "Bonjour Léa"},
        arguments_hash="0" * 64,
        proposer_identity="user:0",
        actor_source="admin:alice",
        expires_at=timezone.now() + timedelta(hours=72),
    )
    return rows | {"action": action}


def desk_pages(desk: dict) -> dict[str, str]:
    def change(model, pk) -> str:
        return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[pk])

    def changelist(model) -> str:
        return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")

    workflow = desk["workflow"]
    return {
        "index": reverse("admin:index"),
        "agent list": reverse("admin:agents_agent_changelist"),
        "agent change": change(desk["agent"], desk["agent"].pk),
        "version review": reverse("admin:agents_promptversion_review", args=[desk["version"].pk]),
        "action review": reverse("admin:agents_approvalrequest_review", args=[desk["action"].pk]),
        "action list": reverse("admin:agents_approvalrequest_changelist"),
        "review list": reverse("admin:agents_review_list"),
        "workflow change": change(workflow, workflow.pk),
        "workflow versions": reverse("admin:workflows_workflow_versions", args=[workflow.pk]),
        "workflow start": reverse("admin:workflows_workflow_start", args=[workflow.pk]),
        "run page": change(desk["run"], desk["run"].pk),
        "turn page": change(AgentTurn, desk["turn"].pk),
        "turn list": changelist(AgentTurn),
        "credential list": changelist(Credential),
        "credential change": change(Credential, desk["credential"].pk),
        "preset list": changelist(Preset),
        "preset change": change(Preset, desk["preset"].pk),
        "skill list": changelist(Skill),
        "skill change": change(Skill, Skill.objects.get().pk),
        "conversation list": changelist(Conversation),
        "conversation change": change(Conversation, Conversation.objects.get().pk),
        "approval policy list": changelist(ApprovalPolicy),
        "approval policy change": change(ApprovalPolicy, ApprovalPolicy.objects.get().pk),
        "api key list": changelist(ApiKey),
        "api key change": change(ApiKey, ApiKey.objects.get().pk),
        "api audit list": changelist(ApiAuditEntry),
        "workspace list": changelist(Workspace),
        "workspace change": change(Workspace, Workspace.objects.get().pk),
        "tool policy list": changelist(WorkspaceToolPolicy),
        "tool policy change": change(WorkspaceToolPolicy, WorkspaceToolPolicy.objects.get().pk),
        "tool settings list": changelist(AgentToolSettings),
        "tool settings change": change(AgentToolSettings, AgentToolSettings.objects.get().pk),
    }


@pytest.mark.django_db
def test_the_main_desk_pages_hold_no_english_word_for_a_french_admin(client, ada, desk) -> None:
    client.force_login(ada)

    found = {}
    for name, url in desk_pages(desk).items():
        response = client.get(url, headers=FRENCH)
        assert response.status_code == 200, (name, url, response.status_code)
        assert response.headers["Content-Language"] == "fr"
        words = english_in(visible_text(response.content.decode()))
        if words:
            found[name] = words

    assert found == {}


@pytest.mark.django_db
def test_the_same_pages_are_english_for_an_english_admin(client, ada, desk) -> None:
    # The word list is the English desk's: most of it is on these pages in English.
    client.force_login(ada)
    text = " ".join(
        visible_text(client.get(url, headers={"accept-language": "en"}).content.decode())
        for url in desk_pages(desk).values()
    )

    assert len(english_in(text)) > len(ENGLISH) * 3 // 4
