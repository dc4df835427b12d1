"""Issue 10: a provider that echoes the key it was called with never puts it on a page,
in a command's output, in a turn's rows, in a try-it result or in the database.

A real local OpenAI-compatible server (pytest-httpserver) answers with the
`Authorization` header it received, reached through the openai SDK; the secret has no
well-known shape, so only redaction by value can find it. The tests commit
(transaction=True) because pg_dump reads from its own connection.
"""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from agents.models import AgentTurn, DebugLog
from agents.runtime import agent_turn_run
from agents.services import agent_create, credential_create, prompt_version_propose
from agents.tests.helpers import pg_dump, tables
from aihummer.actors import Actor
from aihummer.tests.factories import vault_preset
from workflows.tests.fake_openai import chat_completion, tokens

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "zz-local-4f9c2b7e1d"  # no well-known shape: only its value finds it
OTHER_SECRET = "qq-second-credential-77a1"
COMPLETIONS = "/v1/chat/completions"


def echo_header(request: Request) -> Response:
    """Answers with the credentials it saw, in the text and in an extra field."""
    header = request.headers.get("Authorization", "")
    body = {
        **chat_completion(f"You sent {header}; the other is {OTHER_SECRET}.", usage=tokens(5, 7)),
        "echo": {"authorization": header},
    }
    return Response(json.dumps(body), content_type="application/json")


def refuse_with_key(request: Request) -> Response:
    header = request.headers.get("Authorization", "")
    body = {"error": {"message": f"Incorrect API key provided: {header[7:]}", "type": "invalid_request_error"}}
    return Response(json.dumps(body), status=401, content_type="application/json")


@pytest.fixture
def echo_setup(httpserver: HTTPServer, workspace, ada, settings):
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 0
    httpserver.expect_request(COMPLETIONS, method="POST").respond_with_handler(echo_header)
    as_ada = Actor.for_user(ada)
    preset = vault_preset(
        workspace, httpserver.url_for("/v1"), secret=SECRET, credential_key="local", by=as_ada, is_active=True
    )
    credential_create(workspace=workspace, key="second", secret=OTHER_SECRET, actor=as_ada)
    agent = agent_create(
        workspace=workspace, actor=as_ada, key="echoer", name="Echoer", snapshot={"identity": {"name": "E"}}
    )
    return preset, agent


def rows_text(*querysets) -> str:
    return "\n".join(repr(list(queryset.values())) for queryset in querysets)


def assert_no_secret(text: str, where: str) -> None:
    assert SECRET not in text, f"the credential's secret is in {where}"
    assert OTHER_SECRET not in text, f"another credential's secret is in {where}"


def test_an_echoed_key_reaches_no_row_page_output_or_dump(client, echo_setup, workspace, vic):
    _preset, agent = echo_setup
    out = StringIO()

    call_command("run_agent", "acme", "echoer", "hello", stdout=out)
    call_command("run_agent", "acme", "echoer", "hello", "--json", stdout=out)
    turn = agent_turn_run(agent=agent, message="hello", actor=Actor.for_operator())

    assert "You sent Bearer [redacted]; the other is [redacted]." in out.getvalue()
    assert_no_secret(out.getvalue(), "run_agent's output")
    assert turn.answer == "You sent Bearer [redacted]; the other is [redacted]."
    assert_no_secret(rows_text(AgentTurn.all_objects.all(), DebugLog.all_objects.all()), "the turn's rows")
    client.force_login(vic)
    page = client.get(reverse("admin:agents_agentturn_change", args=[turn.pk]))
    assert page.status_code == 200
    assert_no_secret(page.content.decode(), "the turn page")
    dump = tables(pg_dump())
    assert "[redacted]" in dump["agents_agentturn"]  # the dump sees the turns
    assert_no_secret("\n".join(rows for name, rows in dump.items() if name != "agents_credential"), "pg_dump")


def test_check_preset_prints_no_echoed_key(echo_setup):
    out = StringIO()

    call_command("check_preset", "acme", "local", stdout=out)

    assert "answered 'You sent Bearer [redacted]; the other is [redacted].'" in out.getvalue()
    assert_no_secret(out.getvalue(), "check_preset's output")


def test_a_provider_error_quoting_the_key_is_redacted(httpserver: HTTPServer, echo_setup):
    httpserver.clear()
    httpserver.expect_request(COMPLETIONS, method="POST").respond_with_handler(refuse_with_key)
    _preset, agent = echo_setup

    with pytest.raises(CommandError) as failed:
        call_command("check_preset", "acme", "local", stdout=StringIO())
    turn = agent_turn_run(agent=agent, message="hello", actor=Actor.for_operator())

    assert_no_secret(str(failed.value), "check_preset's error")
    assert turn.status == "failed"
    assert_no_secret(rows_text(AgentTurn.all_objects.all(), DebugLog.all_objects.all()), "a failed turn's rows")


def test_the_try_it_result_shows_no_echoed_key(client, echo_setup, alice, bob):
    _preset, agent = echo_setup
    version = prompt_version_propose(agent=agent, changes={"identity": {"role": "R"}}, actor=Actor.for_user(alice))
    client.force_login(bob)

    response = client.post(
        reverse("admin:agents_promptversion_review", args=[version.pk]), {"_try": "1", "message": "hello"}
    )

    page = response.content.decode()
    assert response.status_code == 200
    assert len(re.findall(r"You sent Bearer \[redacted\]", page)) == 2, page[-3000:]
    assert_no_secret(page, "the review page's try-it")
