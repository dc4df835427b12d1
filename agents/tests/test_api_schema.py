"""The OpenAPI document: valid for generators, and true to what the API answers.

schemathesis generates requests from `/v1/schema/` (valid and invalid ones) with a
`write` key on a seeded workspace and runs every check it has (the CLI's `--checks
all`): no server error, every answer (status, content type, headers, body) one the
schema documents, schema-valid requests accepted (or refused with a documented 4xx:
`schemathesis.toml` says which and why) and schema-invalid ones refused.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings
from openapi_spec_validator import validate

from agents.models import DebugLog, Skill
from agents.runtime import agent_run_test
from agents.services import credential_create, prompt_version_propose, skill_create
from aihummer.actors import Actor
from aihummer.wsgi import application
from workflows.services import workflow_create, workflow_run_start

# Reads the repository's schemathesis.toml (the run's cwd), as the CLI does.
schema = schemathesis.openapi.from_wsgi("/v1/schema/?format=json", application)


@pytest.fixture
def seeded(api_agent, workspace, ada, alice, make_key):
    """acme with an agent, a pending proposal, a shared skill, a credential, a turn; and
    alice's read,write key. Returns (key, real path parameters by name)."""
    admin = Actor.for_user(ada)
    skill_create(workspace=workspace, key="ton", title="Ton", body="Chaleureux.", actor=admin)
    credential_create(workspace=workspace, key="openai", secret="sk-test-0123456789", actor=admin)
    pending = prompt_version_propose(agent=api_agent, changes={"onboarding": "Bonjour."}, actor=Actor.for_user(alice))
    turn = agent_run_test(agent=api_agent, message="Bonjour", actor=admin)
    definition = {"version": 1, "steps": [{"name": "redaction", "agent_name": "redacteur", "input_mapping": {}}]}
    workflow = workflow_create(workspace=workspace, actor=admin, key="simple", name="Simple", definition=definition)
    run = workflow_run_start(workflow=workflow, actor=admin, message="Bonjour")
    real = {
        "agent_key": "redacteur",
        "number": "1",
        "id": str(pending.pk),
        "turn": str(turn.pk),
        "debug_log": str(DebugLog.objects.get(turn=turn).pk),
        "run": str(run.pk),
    }
    return make_key("read,write", owner=alice), real


@pytest.fixture
def no_connection_closing():
    # Under WSGI in-process, Django would close the test's own connection at each
    # request's end (and lose the test transaction with it).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def real_parameters(path: str, params: dict, real: dict) -> dict:
    """Mostly real rows, so the fuzzer reaches the handlers rather than 404s."""
    by_resource = {
        "/agents/{key}": {"key": "redacteur"},
        "/sections/{key}": {"key": "methode"},
        "/skills/{key}": {"key": "ton"},
        "/presets/{key}": {"key": "echo"},
        "/credentials/{key}": {"key": "openai"},
        "/prompt-versions/{id}": {"id": real["id"]},
        "/turns/{id}": {"id": real["turn"]},
        "/debug-logs/{id}": {"id": real["debug_log"]},
        "/workflows/{key}": {"key": "simple"},
        "/runs/{id}": {"id": real["run"]},
    }
    chosen = dict(params)
    for fragment, values in by_resource.items():
        if fragment in path:
            chosen.update(values)
    for name in ("agent_key", "number"):
        if name in chosen:
            chosen[name] = real[name]
    return chosen


def test_the_schema_is_valid_openapi_3(client, db):
    document = client.get("/v1/schema/?format=json").json()

    validate(document)
    assert document["openapi"].startswith("3.")
    assert set(document["components"]["securitySchemes"]) == {"apiKey", "oidcBearer", "session"}


def test_the_docs_page_serves_its_assets_itself(client, db):
    page = client.get("/v1/docs/").content.decode()

    assert "swagger-ui" in page
    assert "//cdn" not in page and "https://" not in page


@schema.parametrize()
@hypothesis_settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@pytest.mark.django_db
def test_the_api_matches_its_schema_and_never_fails(case, seeded, no_connection_closing):
    raw_key, real = seeded
    if case.path_parameters:
        case.path_parameters = real_parameters(case.path, case.path_parameters, real)
    # The fuzzer's own X-Workspace would only ever be a 404; the key names its workspace.
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() not in {"x-workspace", "authorization"}}
    case.headers = headers
    case.call_and_validate(headers={"Authorization": f"Bearer {raw_key}"})
    assert Skill.objects.filter(key="ton").exists()


def test_the_project_config_is_the_one_schemathesis_reads():
    checks = schema.config.checks_config_for(operation=None, phase=None)

    assert schema.config.generation.allow_x00 is False
    assert "422" in checks.positive_data_acceptance.expected_statuses
    assert "400" not in checks.positive_data_acceptance.expected_statuses


def test_every_request_body_refuses_what_it_does_not_name(client, db):
    document = client.get("/v1/schema/?format=json").json()
    components = document["components"]["schemas"]
    bodies = [name for name in components if name.endswith("Request")]

    assert len(bodies) >= 20
    assert [name for name in bodies if components[name].get("additionalProperties") is not False] == []
    assert components["PatchedSectionUpdateRequest"]["anyOf"] == [
        {"required": ["title"]},
        {"required": ["body"]},
        {"required": ["enabled"]},
    ]
    assert components["AgentSkillCreateRequest"]["oneOf"] == [{"required": ["shared_skill"]}, {"required": ["key"]}]


def test_the_runtime_policy_is_published_with_the_documents_bounds(client, db):
    document = client.get("/v1/schema/?format=json").json()
    put = document["paths"]["/v1/admin/agents/{key}/runtime-policy"]["put"]
    policy = put["requestBody"]["content"]["application/json"]["schema"]
    created = document["components"]["schemas"]["AgentCreateRequest"]["properties"]["runtime_policy"]

    assert policy["additionalProperties"] is False
    assert policy["properties"]["children"]["properties"]["max_depth"] | {"description": ""} == {
        "default": None,
        "description": "",
        "maximum": 4,
        "minimum": 0,
        "nullable": True,
        "title": "Max Depth",
        "type": "integer",
    }
    assert policy["properties"]["version"]["enum"] == [1]
    assert policy["properties"]["session"]["properties"]["idle_reset_minutes"]["nullable"] is True
    assert "$ref" not in str(policy) and "const" not in str(policy)
    assert created["properties"] == policy["properties"]


def test_every_operation_has_a_summary_one_resource_tag_and_no_trailing_slash(client, db):
    document = client.get("/v1/schema/?format=json").json()
    operations = [(path, method, op) for path, item in document["paths"].items() for method, op in item.items()]

    assert [path for path, _, _ in operations if path.endswith("/")] == []
    assert [(path, method) for path, method, op in operations if not op.get("summary")] == []
    assert [(path, method) for path, method, op in operations if len(op["tags"]) != 1] == []
    tags = {path: op["tags"][0] for path, method, op in operations if method == "get"}
    assert tags["/v1/admin/agents"] == "agents"
    assert tags["/v1/admin/agents/{agent_key}/sections"] == "agent sections"
    assert tags["/v1/admin/prompt-versions"] == "prompt versions"
    assert tags["/v1/me"] == "me"
    summaries = {(path, method): op["summary"] for path, method, op in operations}
    assert summaries[("/v1/admin/agents", "get")] == "List agents"
    assert summaries[("/v1/admin/agents/{key}/runtime-policy", "put")] == (
        "The runtime policy, every default filled in"
    )


def test_the_old_me_route_redirects_for_good(client, db):
    response = client.get("/v1/me/?x=1")

    assert (response.status_code, response["Location"]) == (301, "/v1/me?x=1")
