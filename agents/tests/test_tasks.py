"""The agents app's task, called directly and through a real worker."""

import time

import pytest
from django.core import mail

from agents.services import agent_create, prompt_version_propose
from agents.tasks import prompt_version_notify_task
from aihummer.actors import Actor

SNAPSHOT = {"identity": {"name": "Camille"}, "sections": [{"key": "s", "body": "Un plan."}]}


def test_the_notify_task_mails_the_reviewers_when_called(workspace, alice, bob, ada, mailoutbox):
    agent = agent_create(workspace=workspace, actor=Actor.for_user(ada), key="a", name="A", snapshot=SNAPSHOT)
    version = prompt_version_propose(agent=agent, changes={"onboarding": "Bonjour"}, actor=Actor.for_user(alice))
    mailoutbox.clear()

    sent = prompt_version_notify_task(version.pk, "proposed")

    assert sent == 2
    assert sorted(m.to[0] for m in mailoutbox) == ["ada@example.com", "bob@example.com"]


@pytest.mark.django_db(transaction=True)
def test_a_proposal_notifies_through_a_real_worker(workspace, alice, bob, ada, worker_on_redis, mailoutbox):
    agent = agent_create(workspace=workspace, actor=Actor.for_user(ada), key="a", name="A", snapshot=SNAPSHOT)

    prompt_version_propose(agent=agent, changes={"onboarding": "Bonjour"}, actor=Actor.for_user(alice))

    deadline = time.monotonic() + 10
    while len(mail.outbox) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(m.to[0] for m in mail.outbox) == ["ada@example.com", "bob@example.com"]
    assert all(m.subject == "[AiHummer] a v2 waits for review" for m in mail.outbox)
