"""`manage.py check_preset` and the preset_check service behind it: one tiny request
through the runtime's path (vault credential, ModelRequest, adapter) to a local server
that speaks OpenAI's protocol."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command

from agents.models import Preset
from agents.runtime.preset_check import preset_check
from agents.services import preset_create
from aihummer.actors import Actor
from aihummer.tests.factories import vault_preset
from workflows.tests.fake_openai import chat_completion, tokens

SECRET = "sk-check-0123456789abcdefghijklmnop"
PATH = "/v1/chat/completions"


@pytest.fixture
def local_preset(workspace, ada, httpserver) -> Preset:
    return vault_preset(workspace, httpserver.url_for("/v1"), secret=SECRET, by=ada, temperature=0.3)


def completion(text: str) -> dict:
    return chat_completion(text, usage=tokens(21, 1))


def test_check_preset_prints_the_answer_and_tokens(httpserver, local_preset):
    httpserver.expect_request(PATH, method="POST").respond_with_json(completion("OK"))
    out = StringIO()

    call_command("check_preset", "acme", "local", stdout=out)

    assert json.loads(httpserver.log[0][0].get_data()) == {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "This is a connectivity check."},
            {"role": "user", "content": "Reply with OK."},
        ],
        "temperature": 0.3,
        "top_p": 0.95,
        "max_tokens": 16,
    }
    assert httpserver.log[0][0].headers["Authorization"] == f"Bearer {SECRET}"
    printed = out.getvalue()
    assert printed.startswith("OK: local (openai:gpt-4.1) answered 'OK' in ")
    assert printed.endswith(" ms; 21 in (0 cached) / 1 out tokens, finish stop.\n")


def test_check_preset_fails_with_the_mapped_error(httpserver, local_preset):
    error = {"message": f"Incorrect API key provided: {SECRET}.", "type": "invalid_request_error", "code": "x"}
    httpserver.expect_request(PATH).respond_with_json({"error": error}, status=401)

    with pytest.raises(CommandError) as caught:
        call_command("check_preset", "acme", "local", stdout=StringIO())

    message = str(caught.value)
    assert message.startswith("local (openai:gpt-4.1) failed after ")
    assert message.endswith(" ms: auth: Incorrect API key provided: [redacted].")
    assert len(httpserver.log) == 1


def test_check_preset_without_a_credential_is_not_configured(workspace, ada):
    preset = preset_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="bare",
        name="Bare",
        provider_name="anthropic",
        model="claude-haiku-4-5",
    )

    result = preset_check(preset=preset, actor=Actor.for_user(ada))

    assert (result.ok, result.error_kind) == (False, "not_configured")
    assert result.error_message == "Preset 'bare' has no credential: set its API key in the admin."


def test_preset_check_needs_the_run_right(local_preset, vic):
    with pytest.raises(PermissionDenied, match="vic is a viewer in workspace 'acme'"):
        preset_check(preset=local_preset, actor=Actor.for_user(vic))


def test_check_preset_reports_an_adapter_failure_without_a_traceback(httpserver, local_preset, ada, caplog):
    # A choice without a message: the SDK does not validate it, the adapter trips on it.
    body = {**completion("OK"), "choices": [{"index": 0, "message": None, "finish_reason": "stop"}]}
    httpserver.expect_request(PATH).respond_with_json(body)

    result = preset_check(preset=local_preset, actor=Actor.for_user(ada))

    assert (result.ok, result.error_kind) == (False, "internal")
    assert result.error_message == "Internal error in the openai adapter (AttributeError); it was logged."
    assert "Traceback" not in result.error_message
    assert caplog.records[-1].exc_info is not None  # the traceback went to the log


def test_check_preset_command_prints_an_adapter_failure_as_one_line(httpserver, local_preset):
    body = {**completion("OK"), "choices": [{"index": 0, "message": None, "finish_reason": "stop"}]}
    httpserver.expect_request(PATH).respond_with_json(body)

    with pytest.raises(CommandError) as caught:
        call_command("check_preset", "acme", "local", stdout=StringIO())

    assert str(caught.value).endswith(
        " ms: internal: Internal error in the openai adapter (AttributeError); it was logged."
    )
