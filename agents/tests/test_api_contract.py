"""The REST contract the schema states: a body names only its fields, a 400 when the
request breaks the schema, a 422 when the schema allows it but a rule refuses it
(issue 24, item 20). Nothing is written either way."""

from __future__ import annotations

import pytest

from agents.models import Agent, PromptVersion

SECTION = "/v1/admin/agents/redacteur/sections/methode"


def error_of(response) -> tuple[int, str, dict]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["fields"]


def test_a_misspelt_field_is_a_400_naming_it_not_a_change_that_did_nothing(api_agent, alice_api):
    response = alice_api.patch(SECTION, {"titel": "Méthode"})

    status, code, fields = error_of(response)
    assert (status, code, list(fields)) == (400, "invalid", ["titel"])
    assert fields["titel"] == ["Unknown field; the fields are: reason, mode, title, body, enabled."]
    assert not PromptVersion.objects.filter(status="pending").exists()


def test_an_unknown_field_deep_in_a_body_is_named_by_its_path(api_agent, api_as, make_key, ada):
    publisher = api_as(make_key("read,write,publish", owner=ada))
    body = {"key": "x", "name": "X", "sections": [{"key": "a"}, {"key": "b", "titel": "B"}], "profile": {"rôle": "r"}}

    status, code, fields = error_of(publisher.post("/v1/admin/agents", body))

    assert (status, code, sorted(fields)) == (400, "invalid", ["profile.rôle", "sections[1].titel"])
    assert not Agent.objects.filter(key="x").exists()


@pytest.mark.parametrize("body", [None, {}, {"reason": "rien"}])
def test_a_patch_that_names_nothing_to_change_is_a_400(api_agent, alice_api, body):
    response = alice_api.patch(SECTION, body) if body is not None else alice_api.generic("PATCH", SECTION)

    assert error_of(response) == (
        400,
        "invalid",
        {"non_field_errors": ["Name at least one of: title, body, enabled."]},
    )


def test_a_reference_to_a_missing_row_is_a_422_refused(api_agent, api_as, make_key, ada):
    publisher = api_as(make_key("read,write,publish", owner=ada))

    created = publisher.post("/v1/admin/agents", {"key": "x", "name": "X", "preset": "nope"})
    moved = publisher.patch("/v1/admin/agents/redacteur", {"preset": "nope"})

    assert error_of(created) == (422, "refused", {"preset": ["Unknown preset 'nope'."]})
    assert error_of(moved) == (422, "refused", {"preset": ["Unknown preset 'nope'."]})
    assert Agent.objects.get(key="redacteur").preset is None  # the workspace default, as before


def test_a_policy_past_its_published_bound_is_a_400_and_a_rule_across_fields_a_422(api_agent, alice_api):
    url = "/v1/admin/agents/redacteur/runtime-policy"

    bound = alice_api.put(url, {"children": {"max_depth": 5}})
    across = alice_api.put(url, {"pruning": {"soft_trim_ratio": 0.9, "hard_clear_ratio": 0.2}})

    assert error_of(bound) == (400, "invalid", {"children.max_depth": ["must be at most 4 (got 5)"]})
    status, code, fields = error_of(across)
    assert (status, code, list(fields)) == (422, "refused", ["pruning"])
    assert not PromptVersion.objects.filter(status="pending").exists()


@pytest.mark.parametrize(
    ("base_url", "answer"),
    [
        ("not a url", (400, "invalid", {"base_url": ["This value does not match the required pattern."]})),
        (
            "ftp://files.example.com",
            (400, "invalid", {"base_url": ["This value does not match the required pattern."]}),
        ),
        # The schema's pattern admits it; Django's URLValidator (a one-letter TLD) does not.
        (
            "https://models.example.a",
            (422, "refused", {"base_url": ["Enter a valid URL.", "Only the openai provider takes a base URL."]}),
        ),
    ],
)
def test_a_preset_url_the_schema_refuses_is_a_400_and_one_only_the_model_refuses_a_422(
    echo_preset, ada_api, base_url, answer
):
    response = ada_api.patch("/v1/admin/presets/echo", {"base_url": base_url})

    assert error_of(response) == answer
    assert echo_preset.__class__.objects.get(pk=echo_preset.pk).base_url == echo_preset.base_url
