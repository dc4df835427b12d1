"""Issue 10: a failing mail server never turns a recorded proposal or decision into an
error (without a broker the mail is sent inline, after the commit)."""

from __future__ import annotations

import pytest

from agents.models import PromptVersion
from agents.services import agent_create, prompt_version_approve, prompt_version_propose
from aihummer.actors import Actor
from aihummer.tests.ports import free_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def mail_server_down(settings):
    port = free_port()  # nobody listens on it: connection refused
    settings.CELERY_BROKER_URL = ""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port


def test_propose_and_approve_stand_when_the_mail_server_is_down(
    mail_server_down, workspace, ada, alice, bob, echo_preset, caplog
):
    agent = agent_create(workspace=workspace, actor=Actor.for_user(ada), key="writer", name="Writer")

    version = prompt_version_propose(agent=agent, changes={"identity": {"role": "R"}}, actor=Actor.for_user(alice))
    decided = prompt_version_approve(version=version, actor=Actor.for_user(bob))

    assert decided.status == PromptVersion.Status.APPROVED
    assert PromptVersion.objects.get(pk=version.pk).status == PromptVersion.Status.APPROVED
    assert caplog.text.count("Task agents.prompt_version_notify failed 3 times after the commit; giving up") == 2
