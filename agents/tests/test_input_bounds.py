"""Issue 10: hostile JSON and text are field errors, never a RecursionError or a
PostgreSQL refusal (a 500)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.html import escape

from agents.policy import validate_runtime_policy
from agents.services import agent_create
from agents.snapshot import normalize_snapshot
from agents.tests.helpers import form_data
from aihummer.actors import Actor
from aihummer.jsonsafe import json_loads


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def test_100000_nested_brackets_are_a_field_error():
    with pytest.raises(ValidationError) as refused:
        json_loads("[" * 100_000, field="runtime_policy")

    assert refused.value.message_dict == {"runtime_policy": ["$: nested deeper than 32 levels."]}


def test_a_deep_policy_value_is_refused_before_validation_recurses():
    with pytest.raises(ValidationError) as refused:
        validate_runtime_policy({"context": nested(100_000)})

    assert refused.value.message_dict["runtime_policy"][0].endswith(": nested deeper than 32 levels.")


@pytest.mark.parametrize(
    ("snapshot", "field", "message"),
    [
        (
            {"sections": [{"key": "a", "body": "x\x00y"}]},
            "sections",
            "$.sections[0].body: contains a NUL character (\\u0000), which cannot be stored.",
        ),
        (
            {"identity": {"name": "W\x00"}},
            "identity",
            "$.identity.name: contains a NUL character (\\u0000), which cannot be stored.",
        ),
        (
            {"identity": {"name": "W"}, "runtime_policy": {"interaction": {"a\x00": 1}}},
            "runtime_policy",
            "$.runtime_policy.interaction: a key contains a NUL character (\\u0000), which cannot be stored.",
        ),
    ],
)
def test_nul_in_a_snapshot_is_a_field_error_naming_the_path(snapshot, field, message):
    with pytest.raises(ValidationError) as refused:
        normalize_snapshot(snapshot)

    assert refused.value.message_dict == {field: [message]}


def test_a_json_string_holding_nul_is_refused_where_it_is_parsed():
    with pytest.raises(ValidationError) as refused:
        json_loads('{"session": {"x": "a\\u0000b"}}', field="runtime_policy")

    assert refused.value.message_dict == {
        "runtime_policy": ["$.session.x: contains a NUL character (\\u0000), which cannot be stored."]
    }


# --- through the admin's propose page -----------------------------------------------------
@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("[" * 100_000, "$: nested deeper than 32 levels."),
        ('{"session": {"note": "a\\u0000b"}}', "$.session.note: contains a NUL character (\\u0000)"),
    ],
)
def test_the_propose_page_answers_hostile_policies_with_a_form_error(client, workspace, ada, alice, policy, message):
    agent = agent_create(workspace=workspace, actor=Actor.for_user(ada), key="writer", name="Writer")
    client.force_login(alice)
    url = reverse("admin:agents_agent_propose", args=[agent.pk])
    data = form_data(client.get(url).content.decode()) | {"runtime_policy": policy, "reason": "try"}

    response = client.post(url, data)

    assert response.status_code == 200
    assert escape(message) in response.content.decode()
