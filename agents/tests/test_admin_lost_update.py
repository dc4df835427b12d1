"""Issue 25: no lost update in the admin. Each form carries the live version number it
was shown at; a change posted after another version went live is refused, with nothing
recorded — two people, two sessions, the real forms."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import Agent, PromptVersion
from agents.services import agent_create, prompt_version_propose
from agents.tests.helpers import form_data
from aihummer.actors import Actor

pytestmark = pytest.mark.django_db
MOVED = "Agent 'writer' is at live version 2, not 1: re-read it, redo the change on top of it, and send it again."


@pytest.fixture
def agent(workspace, ada, echo_preset) -> Agent:
    return agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="writer",
        name="Writer",
        snapshot={"identity": {"name": "W", "role": "Writes."}, "onboarding": "Hello."},
    )


def session(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page_of(client: Client, url: str) -> dict:
    return form_data(client.get(url).content.decode())


def text(response) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode()))


def put_v2_live_through_the_form(ada) -> None:
    other = session(ada)
    url = reverse("admin:agents_agent_propose", args=[Agent.objects.get().pk])
    data = page_of(other, url) | {"onboarding": "Welcome, read the guide first.", "reason": "v2", "apply_now": "on"}
    assert other.post(url, data).status_code == 302
    assert Agent.objects.get().live_version.number == 2


@pytest.mark.parametrize("apply_now", [False, True])
def test_a_proposal_from_a_form_opened_before_v2_went_live_is_refused(agent, ada, apply_now):
    editor = session(ada)
    url = reverse("admin:agents_agent_propose", args=[agent.pk])
    opened = page_of(editor, url)  # at v1
    put_v2_live_through_the_form(ada)

    edit = opened | {"role": "Writes short texts.", "reason": "one field"} | ({"apply_now": "on"} if apply_now else {})
    response = editor.post(url, edit)

    assert response.status_code == 200
    assert MOVED in text(response)
    assert list(PromptVersion.objects.values_list("number", "status")) == [(2, "approved"), (1, "approved")]
    assert Agent.objects.get().onboarding == "Welcome, read the guide first."


def test_the_form_opened_at_the_live_version_goes_through(agent, ada):
    editor = session(ada)
    url = reverse("admin:agents_agent_propose", args=[agent.pk])

    response = editor.post(url, page_of(editor, url) | {"role": "Writes short texts.", "reason": "one field"})

    assert response.status_code == 302
    assert PromptVersion.objects.get(number=2).base_version.number == 1


def test_a_restore_from_a_versions_page_opened_before_v3_went_live_is_refused(agent, ada):
    prompt_version_propose(agent=agent, changes={"onboarding": "v2"}, actor=Actor.for_user(ada), mode="live")
    editor = session(ada)
    versions = editor.get(reverse("admin:agents_agent_versions", args=[agent.pk])).content.decode()
    restore = re.search(r'<form method="post" action="[^"]*/versions/1/restore/".*?</form>', versions, re.S).group(0)
    prompt_version_propose(agent=agent, changes={"onboarding": "v3"}, actor=Actor.for_user(ada), mode="live")

    response = editor.post(
        reverse("admin:agents_agent_restore", args=[agent.pk, 1]), form_data(restore) | {"apply_now": "1"}, follow=True
    )

    assert "Agent 'writer' is at live version 3, not 2: re-read it" in text(response)
    assert Agent.objects.get().live_version.number == 3


def test_an_agent_change_page_opened_before_v2_went_live_saves_nothing(agent, ada):
    editor = session(ada)
    url = reverse("admin:agents_agent_change", args=[agent.pk])
    opened = page_of(editor, url)
    put_v2_live_through_the_form(ada)

    response = editor.post(url, opened | {"name": "Writer II"})

    assert response.status_code == 200
    assert MOVED in text(response)
    assert Agent.objects.get().name == "Writer"


def test_a_delete_confirmed_on_a_page_opened_before_v2_went_live_deletes_nothing(agent, ada):
    editor = session(ada)
    url = reverse("admin:agents_agent_delete", args=[agent.pk])
    opened = page_of(editor, url)
    assert opened["expected_live"] == "1"
    put_v2_live_through_the_form(ada)

    response = editor.post(url, opened, follow=True)

    assert MOVED in text(response)
    assert Agent.objects.filter(pk=agent.pk).exists()
