"""`PUT /v1/admin/agents/{key}/runtime-policy` with the product document's field names:
every bound just inside (applied) and just outside (refused with its JSON path, nothing
recorded)."""

from __future__ import annotations

import pytest

from agents.models import Agent, PromptVersion
from agents.tests.helpers import BOUNDS, ROOMY_CONTEXT, policy_with, value_at

POLICY = "/v1/admin/agents/redacteur/runtime-policy"


@pytest.fixture
def publisher_api(api_as, make_key, ada):
    return api_as(make_key("read,write,publish", owner=ada))


@pytest.mark.parametrize(("path", "edge", "past", "message"), BOUNDS)
def test_each_document_field_is_applied_at_its_edge_and_refused_past_it(
    api_agent, publisher_api, path, edge, past, message
):
    applied = publisher_api.put(f"{POLICY}?mode=live", policy_with(path, edge, ROOMY_CONTEXT))
    refused = publisher_api.put(f"{POLICY}?mode=live", policy_with(path, past, ROOMY_CONTEXT))

    assert applied.status_code == 200, applied.json()
    assert value_at(publisher_api.get(POLICY).json(), path) == edge
    assert value_at(Agent.objects.get().runtime_policy, path) == edge
    assert refused.status_code == 400
    assert refused.json()["error"]["fields"] == {path: [message]}
    assert PromptVersion.objects.count() == 2


def test_the_first_releases_names_are_refused_by_the_api(api_agent, publisher_api):
    response = publisher_api.put(POLICY, {"session": {"idle_minutes": 5}, "pruning": {"max_tool_result_chars": 100}})

    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "pruning.max_tool_result_chars": ["unknown field"],
        "session.idle_minutes": ["unknown field"],
    }


def test_elevated_telegram_users_outside_user_ids_are_a_field_error(api_agent, publisher_api):
    listed = {"user_ids": ["telegram:8", "user:3"], "elevated_telegram_user_ids": ["telegram:8"]}
    applied = publisher_api.put(f"{POLICY}?mode=live", {"interaction": listed})
    refused = publisher_api.put(
        f"{POLICY}?mode=live", {"interaction": {**listed, "elevated_telegram_user_ids": ["telegram:8", "telegram:9"]}}
    )

    assert applied.status_code == 200, applied.json()
    assert Agent.objects.get().runtime_policy["interaction"]["elevated_telegram_user_ids"] == ["telegram:8"]
    assert refused.status_code == 422  # a rule across fields: the service's (agents.api.base)
    assert refused.json()["error"]["fields"] == {
        "interaction": ["elevated_telegram_user_ids must be a subset of user_ids (not in it: telegram:9)"]
    }
    assert PromptVersion.objects.count() == 2
