"""What every v1 endpoint does: the error envelope, request ids and their audit,
idempotency keys, If-Match, throttling, body limits, cursor pages, sessions."""

from __future__ import annotations

import itertools

import pytest
from django.core.cache import cache

from agents.models import Agent, PromptVersion
from agents.services import agent_create
from aihummer.actors import Actor
from aihummer.models import ApiAuditEntry, IdempotencyKey, Membership

SECTION = "/v1/admin/agents/redacteur/sections/methode"


def envelope(response) -> dict:
    return response.json()["error"]


# --- the error envelope ---------------------------------------------------------------
def test_no_credentials_is_a_401_in_the_envelope(api_agent, client):
    response = client.get("/v1/admin/agents")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert response.json() == {
        "error": {
            "code": "not_authenticated",
            "message": "Authentication credentials were not provided.",
            "fields": {},
        }
    }


def test_a_wrong_key_is_a_401_in_the_envelope(api_agent, api_as):
    response = api_as("ahk_1_wrong").get("/v1/admin/agents")

    assert response.status_code == 401
    assert envelope(response) == {
        "code": "authentication_failed",
        "message": "Invalid or revoked API key.",
        "fields": {},
    }


def test_a_read_key_proposing_is_a_403_naming_the_scope(api_agent, api_as, make_key, alice):
    response = api_as(make_key("read", owner=alice)).patch(SECTION, {"body": "Court."})

    assert response.status_code == 403
    assert envelope(response) == {
        "code": "permission_denied",
        "message": "API key 'key-0' lacks the 'write' scope needed for proposing changes.",
        "fields": {},
    }
    assert PromptVersion.objects.count() == 1


def test_another_workspaces_agent_answers_like_a_missing_one(api_agent, api_as, make_key, other_workspace, charlie):
    globex = api_as(make_key("read,write,publish", owner=charlie, workspace=other_workspace))

    foreign = globex.get("/v1/admin/agents/redacteur")
    missing = globex.get("/v1/admin/agents/nobody")

    assert foreign.status_code == missing.status_code == 404
    assert envelope(foreign) == {"code": "not_found", "message": "Unknown agent 'redacteur'.", "fields": {}}
    assert envelope(missing)["message"] == "Unknown agent 'nobody'."


@pytest.mark.parametrize("header", ["", "   ", "ACME", "acme/../globex", "a" * 51])
def test_a_malformed_x_workspace_is_a_400_for_keys_and_people(api_agent, alice_api, api_as, alice, header):
    """Issue 24, item 20: the schema's pattern held for people only; a key's request
    ignored an empty or malformed header."""
    for client, url in itertools.product((alice_api, api_as(alice)), ("/v1/admin/agents", "/v1/me")):
        response = client.get(url, headers={"X-Workspace": header})

        assert response.status_code == 400
        assert envelope(response)["fields"] == {
            "X-Workspace": ["Give a workspace slug: 1 to 50 characters among a-z, 0-9, _ and -."]
        }


def test_a_keys_own_workspace_named_in_x_workspace_is_fine(api_agent, alice_api):
    assert alice_api.get("/v1/admin/agents", headers={"X-Workspace": "acme"}).status_code == 200
    assert alice_api.get("/v1/admin/agents", headers={"X-Workspace": "globex"}).status_code == 404


def test_nested_errors_are_keyed_by_their_json_path(api_agent, api_as, make_key, ada):
    body = {
        "key": "Bad Key",
        "name": "Nouveau",
        "sections": [{"key": "ok"}, {"key": "NOPE", "enabled": "peut-être"}],
    }

    response = api_as(make_key("read,write,publish", owner=ada)).post("/v1/admin/agents", body)

    assert response.status_code == 400
    error = envelope(response)
    assert error["code"] == "invalid"
    assert error["fields"] == {
        "key": ["This value does not match the required pattern."],
        "sections[1].key": ["This value does not match the required pattern."],
        "sections[1].enabled": ["Must be a valid boolean."],
    }
    assert error["message"] == "key: This value does not match the required pattern. (and 2 more)"


def test_a_service_refusal_of_state_is_a_409_with_its_class_as_code(api_agent, alice_api):
    response = alice_api.patch(SECTION, {"body": "Un plan en trois points."})

    assert response.status_code == 409
    assert envelope(response) == {
        "code": "identical_to_live",
        "message": "Identical to live version 1; nothing recorded.",
        "fields": {},
    }


def test_an_unknown_route_under_v1_answers_in_the_envelope(client, db):
    response = client.get("/v1/admin/nothing-here")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_a_form_body_is_a_415(api_agent, alice_api):
    response = alice_api.patch(SECTION, "body=x", content_type="application/x-www-form-urlencoded")

    assert response.status_code == 415
    assert envelope(response)["code"] == "unsupported_media_type"


def test_a_body_over_the_limit_is_a_413_before_anything_runs(api_agent, alice_api, settings):
    settings.AIHUMMER_API_MAX_BODY_BYTES = 1024

    response = alice_api.patch(SECTION, {"body": "x" * 2000})

    assert response.status_code == 413
    assert envelope(response) == {
        "code": "payload_too_large",
        "message": "The request body is over 1024 bytes.",
        "fields": {},
    }


def test_malformed_json_is_a_400(api_agent, alice_api):
    response = alice_api.patch(SECTION, "{nope", content_type="application/json")

    assert response.status_code == 400
    assert envelope(response)["code"] == "parse_error"


# --- request ids and the audit --------------------------------------------------------
def test_a_request_id_is_generated_and_echoed(api_agent, alice_api):
    response = alice_api.get("/v1/admin/agents")

    assert len(response["X-Request-Id"]) == 32


def test_a_clients_request_id_is_echoed_and_recorded_with_the_write(api_agent, alice_api):
    response = alice_api.patch(SECTION, {"body": "Court."}, headers={"X-Request-Id": "ci-run-42"})

    assert response.status_code == 202
    assert response["X-Request-Id"] == "ci-run-42"
    entry = ApiAuditEntry.objects.get()
    assert (entry.request_id, entry.actor_source, entry.person.username, entry.method, entry.path) == (
        "ci-run-42",
        "api:key-0",
        "alice",
        "PATCH",
        SECTION,
    )
    assert (entry.workspace.slug, entry.status_code) == ("acme", 202)


def test_refused_writes_are_audited_too_and_reads_are_not(api_agent, api_as, make_key):
    reader = api_as(make_key("read"))

    reader.get("/v1/admin/agents")
    reader.patch(SECTION, {"body": "Court."}, headers={"X-Request-Id": "<script>"})

    entry = ApiAuditEntry.objects.get()
    assert entry.status_code == 403
    assert entry.request_id != "<script>"  # an unsafe id is replaced by a generated one
    assert len(entry.request_id) == 32


# --- idempotency keys -----------------------------------------------------------------
def test_a_post_retried_with_its_idempotency_key_is_applied_once(api_agent, alice_api):
    body = {"key": "ton", "title": "Ton", "body": "Chaleureux."}
    headers = {"Idempotency-Key": "sync-2026-11-30"}

    first = alice_api.post("/v1/admin/agents/redacteur/sections", body, headers=headers)
    again = alice_api.post("/v1/admin/agents/redacteur/sections", body, headers=headers)

    assert first.status_code == again.status_code == 202
    assert again.json() == first.json()
    assert again["Location"] == first["Location"]
    assert again["Idempotent-Replayed"] == "true"
    assert PromptVersion.objects.count() == 2


def test_an_idempotency_key_reused_for_another_body_is_a_422(api_agent, alice_api):
    headers = {"Idempotency-Key": "k1"}
    alice_api.post("/v1/admin/agents/redacteur/sections", {"key": "ton", "body": "A."}, headers=headers)

    response = alice_api.post("/v1/admin/agents/redacteur/sections", {"key": "ton", "body": "B."}, headers=headers)

    assert response.status_code == 422
    assert envelope(response) == {
        "code": "idempotency_key_reused",
        "message": "Idempotency-Key 'k1' was used for a different request; use a new key for a new request.",
        "fields": {},
    }


def test_a_refused_post_keeps_no_idempotency_record_so_a_corrected_retry_runs(api_agent, alice_api):
    headers = {"Idempotency-Key": "k2"}
    refused = alice_api.post("/v1/admin/agents/redacteur/sections", {"key": "methode"}, headers=headers)

    retried = alice_api.post("/v1/admin/agents/redacteur/sections", {"key": "ton", "body": "A."}, headers=headers)

    assert (refused.status_code, retried.status_code) == (422, 202)
    assert IdempotencyKey.objects.get().status_code == 202


def test_idempotency_keys_belong_to_their_caller(api_agent, api_as, make_key, alice):
    headers = {"Idempotency-Key": "same"}
    body = {"key": "ton", "body": "A."}
    api_as(make_key("read,write", owner=alice)).post("/v1/admin/agents/redacteur/sections", body, headers=headers)

    other = api_as(make_key("read,write")).post("/v1/admin/agents/redacteur/sections", body, headers=headers)

    assert "Idempotent-Replayed" not in other
    assert other.status_code == 202
    assert PromptVersion.objects.count() == 3


def test_a_session_post_with_an_idempotency_key_passes_csrf_and_replays(api_agent, api_as, alice):
    """Issue 24, item 8: the body was read for its hash after the CSRF check had parsed
    it (`RawPostDataException`, a 500)."""
    client = api_as(alice, enforce_csrf_checks=True)
    secret = "k" * 32  # a CSRF secret, sent as the cookie and as the header
    client.cookies["csrftoken"] = secret
    headers = {"Idempotency-Key": "session-1", "X-CSRFToken": secret}
    body = {"key": "ton", "title": "Ton", "body": "Chaleureux."}

    first = client.post("/v1/admin/agents/redacteur/sections", body, headers=headers)
    again = client.post("/v1/admin/agents/redacteur/sections", body, headers=headers)

    assert (first.status_code, again.status_code) == (202, 202)
    assert again["Idempotent-Replayed"] == "true"
    assert PromptVersion.objects.count() == 2


def test_the_same_key_and_body_for_another_workspace_is_no_replay(api_agent, api_as, alice, ada, other_workspace):
    """Issue 24, item 8: the hash ignored X-Workspace, so globex got acme's answer."""
    Membership.objects.create(user=alice, workspace=other_workspace, role="editor")
    agent_create(workspace=other_workspace, actor=Actor.for_operator(name="t"), key="redacteur", name="R")
    client = api_as(alice)
    body = {"key": "ton", "title": "Ton", "body": "Chaleureux."}
    url = "/v1/admin/agents/redacteur/sections"

    acme = client.post(url, body, headers={"Idempotency-Key": "k", "X-Workspace": "acme"})
    globex = client.post(url, body, headers={"Idempotency-Key": "k", "X-Workspace": "globex"})

    assert acme.status_code == 202
    assert (globex.status_code, envelope(globex)["code"]) == (422, "idempotency_key_reused")
    assert "Idempotent-Replayed" not in globex


def test_a_claimed_key_whose_request_is_still_running_is_a_409(api_agent, alice_api):
    body = {"key": "ton", "body": "A."}
    IdempotencyKey.objects.create(owner=f"api_key:{_key_id(alice_api)}", key="busy", request_hash="x")

    response = alice_api.post("/v1/admin/agents/redacteur/sections", body, headers={"Idempotency-Key": "busy"})

    assert response.status_code == 409
    assert envelope(response)["code"] == "idempotency_key_in_progress"


def _key_id(client) -> int:
    return int(client._credentials["HTTP_AUTHORIZATION"].split("_")[1])


# --- If-Match -------------------------------------------------------------------------
def test_a_change_based_on_an_old_live_version_is_a_412(api_agent, alice_api, ada):
    from agents.services import prompt_version_propose

    prompt_version_propose(agent=api_agent, changes={"onboarding": "Bonjour."}, actor=Actor.for_user(ada), mode="live")

    response = alice_api.patch(SECTION, {"body": "Court."}, headers={"If-Match": '"1"'})

    assert response.status_code == 412
    assert envelope(response) == {
        "code": "version_mismatch",
        "message": "Agent 'redacteur' is at live version 2, not 1: re-read it, redo the change on top of it, "
        "and send it again.",
        "fields": {},
        "live_version": 2,
    }
    assert PromptVersion.objects.filter(status="pending").count() == 0


@pytest.mark.parametrize("header", ['"1"', "1", 'W/"1"', "*"])
def test_if_match_on_the_live_version_goes_through(api_agent, alice_api, header):
    response = alice_api.patch(SECTION, {"body": "Court."}, headers={"If-Match": header})

    assert response.status_code == 202


def test_a_malformed_if_match_is_a_400(api_agent, alice_api):
    response = alice_api.patch(SECTION, {"body": "Court."}, headers={"If-Match": "v-one"})

    assert response.status_code == 400
    assert envelope(response)["fields"] == {
        "If-Match": ['Give the live version number the change is based on, e.g. If-Match: "3".']
    }


# --- throttling -----------------------------------------------------------------------
def test_a_key_over_its_rate_is_a_429_with_retry_after(api_agent, alice_api, settings):
    cache.clear()
    settings.AIHUMMER_API_RATE_PER_KEY = 2

    statuses = [alice_api.get("/v1/admin/agents").status_code for _ in range(3)]

    assert statuses == [200, 200, 429]
    response = alice_api.get("/v1/admin/agents")
    assert 1 <= int(response["Retry-After"]) <= 60
    assert envelope(response)["code"] == "throttled"


def test_a_persons_rate_counts_all_their_keys_and_sessions(api_agent, api_as, make_key, alice, settings):
    cache.clear()
    settings.AIHUMMER_API_RATE_PER_USER = 2
    first, second = api_as(make_key("read", owner=alice)), api_as(make_key("read", owner=alice))

    statuses = [c.get("/v1/admin/agents").status_code for c in (first, second, api_as(alice))]

    assert statuses == [200, 200, 429]


# --- cursor pages ---------------------------------------------------------------------
def test_cursor_pages_neither_skip_nor_repeat_while_rows_are_added(api_agent, alice_api, workspace, ada):
    for key in ("b1", "b2", "b3", "b4"):
        agent_create(workspace=workspace, actor=Actor.for_user(ada), key=key, name=key)

    first = alice_api.get("/v1/admin/agents?limit=2").json()
    for key in ("a0", "b15", "zz"):  # before, inside and after the pages already served
        agent_create(workspace=workspace, actor=Actor.for_user(ada), key=key, name=key)
    second = alice_api.get(first["next"]).json()
    third = alice_api.get(second["next"]).json()

    keys = [[row["key"] for row in page["results"]] for page in (first, second, third)]
    assert keys == [["b1", "b2"], ["b3", "b4"], ["redacteur", "zz"]]


def test_ordering_is_validated(api_agent, alice_api):
    assert alice_api.get("/v1/admin/agents?ordering=-name").status_code == 200

    response = alice_api.get("/v1/admin/agents?ordering=secret")

    assert response.status_code == 400
    assert envelope(response)["fields"] == {
        "ordering": ["Order by one of: key, name, created_at, updated_at (prefix - to reverse)."]
    }


@pytest.mark.parametrize("limit", ["", "0", "201", "-1", "1.5", "false", "\u0661", "0001", "9" * 5000])
def test_a_limit_outside_the_schemas_bounds_is_a_400(api_agent, alice_api, limit):
    response = alice_api.get("/v1/admin/agents", {"limit": limit})

    assert (response.status_code, envelope(response)["fields"]) == (
        400,
        {"limit": ["Give a whole number from 1 to 200."]},
    )


def test_limit_sets_the_page_size_and_the_schema_says_its_bounds(api_agent, alice_api, client):
    assert len(alice_api.get("/v1/admin/agents", {"limit": "1"}).json()["results"]) == 1
    agents = client.get("/v1/schema/?format=json").json()["paths"]["/v1/admin/agents"]["get"]
    limit = next(p for p in agents["parameters"] if p["name"] == "limit")
    assert limit["schema"] == {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}


def test_an_empty_ordering_or_if_match_is_malformed_not_absent(api_agent, alice_api):
    ordering = alice_api.get("/v1/admin/agents", {"ordering": ""})
    if_match = alice_api.patch(SECTION, {"body": "Court."}, headers={"If-Match": ""})

    assert (ordering.status_code, list(envelope(ordering)["fields"])) == (400, ["ordering"])
    assert (if_match.status_code, list(envelope(if_match)["fields"])) == (400, ["If-Match"])


def test_a_forged_cursor_is_a_422(api_agent, alice_api):
    response = alice_api.get("/v1/admin/agents?cursor=bm9wZQ")

    assert response.status_code == 422
    assert envelope(response)["fields"] == {"cursor": ["Invalid cursor: follow the next or previous link of a page."]}


LISTS = [
    "/v1/admin/agents",
    "/v1/admin/agents?ordering=-created_at",
    "/v1/admin/prompt-versions",
    "/v1/admin/agents/redacteur/versions",
    "/v1/admin/turns",
    "/v1/admin/presets",
    "/v1/admin/skills",
    "/v1/admin/credentials",
    "/v1/admin/workflows",
]
# Positions no row of any ordering has (text the database cannot hold), and positions
# that are no value of a number or a date (the lists ordered by pk, number or time).
UNSTORABLE_POSITIONS = ["p=a\x00b", "o=1&p=\ud800"]
NOT_A_NUMBER_OR_DATE = ["p=abc", "p=2026-13-45 25:61:00+00:00", "p=" + "9" * 30, "r=1&p=1.5"]


def cursor_for(position: str) -> str:
    import base64

    return base64.b64encode(position.encode("utf-8", "surrogatepass")).decode()


@pytest.mark.parametrize("url", LISTS)
def test_a_cursor_with_a_forged_position_is_a_422(api_agent, ada, api_as, url):
    """Issue 24, item 9: a well-formed cursor whose position is no value of the ordering
    field (`cD1hYmM=` is `p=abc`) reached the query: a 500. A 422: the schema cannot
    tell our cursors from other strings."""
    client = api_as(ada)
    ordered_by_text = "ordering" not in url and not any(part in url for part in ("versions", "turns"))
    positions = UNSTORABLE_POSITIONS + ([] if ordered_by_text else NOT_A_NUMBER_OR_DATE)
    joiner = "&" if "?" in url else "?"

    answers = [client.get(f"{url}{joiner}cursor={cursor_for(position)}") for position in positions]

    assert [response.status_code for response in answers] == [422] * len(positions)
    assert all(
        envelope(response)["fields"] == {"cursor": ["Invalid cursor: follow the next or previous link of a page."]}
        for response in answers
    )


@pytest.mark.parametrize("zero", [0x0660, 0x0966, 0xFF10])  # Arabic-Indic, Devanagari, fullwidth digits
def test_ids_in_urls_are_ascii_digits_only(api_agent, alice_api, ada, zero):
    """Issue 24, item 15: `\\d` in the id patterns let `/prompt-versions/١٢` be version 12."""
    from agents.runtime import agent_turn_run
    from agents.services import prompt_version_propose

    proposal = prompt_version_propose(agent=api_agent, changes={"onboarding": "Salut."}, actor=Actor.for_user(ada))
    turn = agent_turn_run(agent=api_agent, message="Bonjour", actor=Actor.for_user(ada))
    log = turn.debug_logs.get()
    other_digits = str.maketrans("0123456789", "".join(chr(zero + digit) for digit in range(10)))
    urls = [
        f"/v1/admin/prompt-versions/{proposal.pk}",
        f"/v1/admin/agents/redacteur/versions/{proposal.number}",
        f"/v1/admin/turns/{turn.pk}",
        f"/v1/admin/debug-logs/{log.pk}",
    ]

    ascii_answers = [alice_api.get(url).status_code for url in urls]
    aliased = [alice_api.get(url.translate(other_digits)).status_code for url in urls]

    assert ascii_answers == [200, 200, 200, 200]
    assert aliased == [404, 404, 404, 404]


# --- sessions -------------------------------------------------------------------------
def test_a_session_write_needs_the_csrf_token(api_agent, api_as, alice):
    client = api_as(alice, enforce_csrf_checks=True)

    response = client.patch(SECTION, {"body": "Court."})

    assert response.status_code == 403
    assert envelope(response)["message"].startswith("CSRF Failed")
    assert Agent.objects.get().live_version.number == 1


def test_a_session_proposes_as_the_person_on_the_api_surface(api_agent, api_as, alice):
    response = api_as(alice).patch(SECTION, {"body": "Court."})

    assert response.status_code == 202
    assert response.json()["source"] == "api:alice"


def test_a_person_in_several_workspaces_names_one(api_agent, api_as, alice, other_workspace):
    Membership.objects.create(user=alice, workspace=other_workspace, role="viewer")
    client = api_as(alice)

    unnamed = client.get("/v1/admin/agents")
    named = client.get("/v1/admin/agents", headers={"X-Workspace": "acme"})
    foreign = client.get("/v1/admin/agents", headers={"X-Workspace": "initech"})

    assert unnamed.status_code == 400
    assert envelope(unnamed)["fields"] == {
        "X-Workspace": ["Name the workspace in the X-Workspace header (you may use several)."]
    }
    assert [a["key"] for a in named.json()["results"]] == ["redacteur"]
    assert foreign.status_code == 404
    assert envelope(foreign)["message"] == "Unknown workspace 'initech'."


# --- bodies the database could not store ----------------------------------------------
def test_json_nested_past_the_recursion_limit_is_a_400(api_agent, alice_api):
    body = "[" * 50_000 + "]" * 50_000

    response = alice_api.generic("PATCH", SECTION, body, content_type="application/json")

    assert response.status_code == 400
    assert envelope(response)["message"] == "JSON parse error - $: nested deeper than 32 levels."


@pytest.mark.parametrize(
    ("number", "code", "message"),
    [
        ("1e999", 400, "JSON parse error - 1e999 is out of range: numbers must be finite."),
        ("-1e999", 400, "JSON parse error - -1e999 is out of range: numbers must be finite."),
        ("NaN", 400, "JSON parse error - NaN is not a JSON number: numbers must be finite."),
        ("Infinity", 400, "JSON parse error - Infinity is not a JSON number: numbers must be finite."),
        # Valid JSON, and a free-form object's schema cannot bound it: refused, a 422.
        ("1" + "0" * 5000, 422, "JSON parse error - " + "1" + "0" * 29 + "… is out of range: integers fit in 64 bits."),
    ],
)
def test_numbers_nothing_can_hold_are_refused_never_stored_as_text(api_agent, ada, api_as, number, code, message):
    """Issue 24, item 14: `1e999` is a float infinity to Python; a CharField took it as "inf"."""
    client = api_as(ada)
    writes = [
        ("PATCH", "/v1/admin/agents/redacteur", f'{{"name": {number}, "description": {number}}}'),
        ("PATCH", SECTION, f'{{"body": {number}, "reason": {number}}}'),
        ("POST", "/v1/admin/agents", f'{{"key": "x", "name": {number}}}'),
    ]

    answers = [client.generic(method, url, body, content_type="application/json") for method, url, body in writes]

    assert [(r.status_code, envelope(r)["message"]) for r in answers] == [(code, message)] * 3
    agent = Agent.objects.get(key="redacteur")
    assert (agent.name, agent.description, Agent.objects.count()) == ("Rédacteur", "", 1)


@pytest.mark.parametrize("text", ["a\\u0000b", "\\ud800"])
def test_text_postgresql_cannot_store_is_a_400_at_its_path(api_agent, alice_api, text):
    body = '{"interaction": {"user_ids": ["ok", "' + text + '"]}}'

    response = alice_api.generic(
        "PUT", "/v1/admin/agents/redacteur/runtime-policy", body, content_type="application/json"
    )

    assert response.status_code == 400
    assert envelope(response)["fields"] == {
        "interaction.user_ids[1]": ["NUL characters and lone surrogates are not allowed."]
    }


def test_header_values_are_checked_before_any_query(api_agent, api_as, alice):
    session = api_as(alice)

    workspace = session.get("/v1/admin/agents", headers={"X-Workspace": "ac\x00me"})
    idempotency = session.post(
        "/v1/admin/agents/redacteur/sections", {"key": "ton", "body": "A."}, headers={"Idempotency-Key": "a b"}
    )

    assert (workspace.status_code, list(envelope(workspace)["fields"])) == (400, ["X-Workspace"])
    assert envelope(idempotency)["fields"] == {
        "Idempotency-Key": ["Use 1 to 255 printable ASCII characters, no spaces."]
    }


def test_workspace_admins_read_their_audit_entries_in_the_admin(api_agent, alice_api, client, ada, bob):
    alice_api.patch(SECTION, {"body": "Court."}, headers={"X-Request-Id": "ci-7"})
    entry = ApiAuditEntry.objects.get()

    client.force_login(ada)
    listed = client.get("/admin/aihummer/apiauditentry/")
    one = client.get(f"/admin/aihummer/apiauditentry/{entry.pk}/change/")
    client.force_login(bob)
    refused = client.get("/admin/aihummer/apiauditentry/")

    assert listed.status_code == one.status_code == 200
    assert "ci-7" in listed.content.decode()
    assert refused.status_code == 403


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("path", ["/v1/nope", "/v1/admin/agents/redacteur/nope", "/v1/admin/NOPE"])
def test_an_unknown_api_url_answers_the_error_envelope(api_agent, api_as, make_key, settings, debug, path):
    # With DEBUG on (the embedded default) Django answered its HTML debug page.
    settings.DEBUG = debug
    client = api_as(make_key("read"))

    response = client.get(path)

    assert (response.status_code, response["Content-Type"]) == (404, "application/json")
    assert envelope(response) == {"code": "not_found", "message": f"No endpoint at {path}.", "fields": {}}


def test_outside_the_api_a_missing_page_stays_django_s(client, settings):
    settings.DEBUG = True

    response = client.get("/nope")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
