"""Issue 10: reasons and review notes are bounded (and storable) on every surface, and
mails quote an excerpt, never a megabyte."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.models import PromptVersion
from agents.services import agent_create, prompt_version_approve, prompt_version_propose, prompt_version_reject
from aihummer.actors import Actor


@pytest.fixture
def agent(workspace, ada):
    return agent_create(workspace=workspace, actor=Actor.for_user(ada), key="writer", name="Writer")


def propose(agent, user, reason: str) -> PromptVersion:
    return prompt_version_propose(
        agent=agent, changes={"identity": {"role": "R"}}, actor=Actor.for_user(user), reason=reason
    )


def test_a_megabyte_reason_is_a_field_error_and_records_nothing(agent, alice):
    with pytest.raises(ValidationError) as refused:
        propose(agent, alice, "x" * 1_000_000)

    assert refused.value.message_dict == {"reason": ["Reason is 1000000 characters long; at most 2000."]}
    assert PromptVersion.objects.filter(agent=agent).count() == 1


def test_a_reason_holding_nul_is_a_field_error(agent, alice):
    with pytest.raises(ValidationError) as refused:
        propose(agent, alice, "why\x00")

    assert refused.value.message_dict == {
        "reason": ["Reason contains a NUL character (\\u0000), which cannot be stored."]
    }


@pytest.mark.parametrize("decide", ["approve", "reject"])
def test_a_long_review_note_is_a_field_error(agent, alice, bob, decide):
    version = propose(agent, alice, "short")
    call = prompt_version_approve if decide == "approve" else prompt_version_reject

    with pytest.raises(ValidationError) as refused:
        call(version=version, actor=Actor.for_user(bob), note="n" * 2001)

    assert refused.value.message_dict == {"note": ["Note is 2001 characters long; at most 2000."]}
    assert PromptVersion.objects.get(pk=version.pk).status == "pending"


def test_mails_quote_an_excerpt_of_the_reason_and_the_note(
    agent, alice, bob, mailoutbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        version = propose(agent, alice, "r" * 2000)
    with django_capture_on_commit_callbacks(execute=True):
        prompt_version_reject(version=version, actor=Actor.for_user(bob), note="n" * 2000)

    proposed, decided = mailoutbox[0], mailoutbox[-1]
    assert f"Reason: {'r' * 300}… (2000 characters; read it all on the review page)" in proposed.body
    assert f"Note: {'n' * 300}… (2000 characters; read it all on the review page)" in decided.body
    assert len(proposed.body) < 1000 and len(decided.body) < 1000
