"""The agent runtime, end to end on the offline `echo` provider: one turn renders the
snapshot, calls the model, runs the tools it asks for and records every call as a
DebugLog. Plus redaction as unit tests (request building: test_context.py).

The echo provider answers `[echo <model>] <message> #sp=<8 hex of the system prompt>`
and is scripted through the message (`@call`, `@loop`, `@error`, `@garbage`), so these
tests tell exactly which prompt ran and drive the tool loop without a network.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from pytest_django.fixtures import Settings
from pytest_httpserver import HTTPServer

from agents import catalog
from agents.models import Agent, AgentTurn, DebugLog, Preset, PromptVersion
from agents.rendering import render_prefix, render_system_prompt
from agents.runtime import agent_run_test, agent_turn_run
from agents.runtime.debug import REDACTED, redact_text
from agents.runtime.providers import get_provider
from agents.runtime.providers.base import ProviderError
from agents.runtime.tools import QUEUED
from agents.services import (
    agent_create,
    agent_update,
    credential_create,
    preset_create,
    prompt_version_approve,
    prompt_version_propose,
)
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import WRITER_PROFILE, echo_sp, make_agent, vault_preset
from workflows.tests.fake_openai import chat_completion

PERSONA_CALL = '@call propose_persona_edit {"persona": "Warm and brief.", "reason": "Users asked for warmth."}'
SECTION_CALL = '@call propose_section_edit {"section_key": "method", "body": "Plan, then write.", "reason": "Clearer"}'


def sp_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@pytest.fixture
def writer(workspace: Workspace, ada: User, echo_preset: Preset) -> Agent:
    return make_agent(workspace, "writer", by=ada)


# --- a plain turn ----------------------------------------------------------------------
def test_a_plain_turn_answers_with_the_hash_of_the_system_prompt_it_sent(writer: Agent, alice: User) -> None:
    turn = agent_turn_run(agent=writer, message="Hello there", actor=Actor.for_user(alice))

    log = turn.debug_logs.get()
    assert turn.status == AgentTurn.Status.SUCCEEDED
    assert turn.error == ""
    assert turn.answer == f"[echo echo-1] Hello there #sp={sp_hash(log.system_prompt)}"
    assert sp_hash(log.system_prompt) == echo_sp(writer.live_version)
    assert (turn.version_number, turn.provider_name, turn.model) == (1, "echo", "echo-1")
    assert (turn.actor_source, turn.started_by, turn.dry_run, turn.depth) == ("admin:alice", alice, False, 0)
    assert turn.finished_at is not None


def test_the_first_turn_prompt_carries_onboarding_and_the_day(writer: Agent, alice: User) -> None:
    turn = agent_turn_run(agent=writer, message="Hello", actor=Actor.for_user(alice))

    log = turn.debug_logs.get()
    assert log.system_prompt == (
        "You are Camille.\nRole: Writer\n\n## Persona\nCurious and precise.\n\n## Method\nPlan first.\n\n"
        f"## First conversation\nIntroduce yourself once.\n\nToday is {timezone.localdate().isoformat()}."
    )
    assert log.messages == [{"role": "user", "content": "Hello"}]
    assert log.parameters == {"model": "echo-1"}  # what the echo adapter uses of the preset: its model
    assert (log.sequence, log.provider_name, log.model, log.finish_reason) == (1, "echo", "echo-1", "stop")
    assert log.tools_offered == []
    assert log.tool_calls == []


def test_the_prefix_hash_is_recorded_on_the_turn_and_its_log(writer: Agent, alice: User) -> None:
    turn = agent_turn_run(agent=writer, message="Hello", actor=Actor.for_user(alice))

    prefix = render_prefix(writer.live_version.snapshot, first_turn=True)
    assert turn.prefix_hash == hashlib.sha256(prefix.encode()).hexdigest()
    assert turn.debug_logs.get().prefix_hash == turn.prefix_hash


def test_running_an_older_version_answers_with_that_versions_hash(writer: Agent, alice: User, bob: User) -> None:
    v1 = writer.live_version
    v2 = prompt_version_propose(
        agent=writer, changes={"identity": {"persona": "Terse."}}, actor=Actor.for_user(alice), reason="shorter"
    )
    prompt_version_approve(version=v2, actor=Actor.for_user(bob))
    writer.refresh_from_db()

    old = agent_turn_run(agent=writer, message="Hi", actor=Actor.for_user(alice), version=v1)
    live = agent_turn_run(agent=writer, message="Hi", actor=Actor.for_user(alice))

    assert writer.live_version == v2
    assert echo_sp(v1) != echo_sp(v2)
    assert old.answer == f"[echo echo-1] Hi #sp={echo_sp(v1)}"
    assert old.version_number == 1
    assert live.answer == f"[echo echo-1] Hi #sp={echo_sp(v2)}"
    assert live.version_number == 2


def test_the_turn_totals_are_the_sum_of_its_model_calls(
    workspace: Workspace, ada: User, alice: User, paid_echo: Preset
) -> None:
    agent = make_agent(workspace, "writer", by=ada, preset=paid_echo, allowed_tool_names=["propose_persona_edit"])

    turn = agent_turn_run(agent=agent, message=PERSONA_CALL, actor=Actor.for_user(alice))

    logs = list(turn.debug_logs.order_by("sequence"))
    info = catalog.get_model("echo", "echo-paid")
    assert [log.sequence for log in logs] == [1, 2]
    assert turn.model_calls == 2
    assert turn.input_tokens == sum(log.input_tokens for log in logs)
    assert turn.output_tokens == sum(log.output_tokens for log in logs)
    assert turn.cached_input_tokens == sum(log.cached_input_tokens for log in logs) == 0
    assert turn.cost_usd == sum(log.cost_usd for log in logs)
    for log in logs:
        price = (Decimal(log.input_tokens) * 3 + Decimal(log.output_tokens) * 15) / 1_000_000
        assert log.cost_usd == price.quantize(Decimal("0.000001"))
        assert log.cost_usd == catalog.cost_usd(info, input_tokens=log.input_tokens, output_tokens=log.output_tokens)
    assert turn.cost_usd > 0


def test_the_echo_usage_is_four_characters_a_token(writer: Agent, alice: User) -> None:
    turn = agent_turn_run(agent=writer, message="Hello", actor=Actor.for_user(alice))

    log = turn.debug_logs.get()
    assert log.input_tokens == (len(log.system_prompt) + len("Hello")) // 4 + 1
    assert log.output_tokens == len(turn.answer) // 4 + 1


def test_the_context_is_rendered_after_the_prefix_and_changes_the_hash_not_the_prefix(
    writer: Agent, alice: User
) -> None:
    plain = agent_turn_run(agent=writer, message="Hi", actor=Actor.for_user(alice))
    with_context = agent_turn_run(agent=writer, message="Hi", actor=Actor.for_user(alice), context={"city": "Lyon"})

    log = with_context.debug_logs.get()
    assert log.system_prompt.endswith(f"Today is {timezone.localdate().isoformat()}.\n## Context\n- city: Lyon")
    assert with_context.answer == f"[echo echo-1] Hi #sp={sp_hash(log.system_prompt)}"
    assert with_context.answer != plain.answer
    assert with_context.prefix_hash == plain.prefix_hash


# --- refusals before anything runs -----------------------------------------------------
def test_a_viewer_is_refused_before_any_turn_is_recorded(writer: Agent, vic: User) -> None:
    with pytest.raises(PermissionDenied) as refused:
        agent_turn_run(agent=writer, message="Hi", actor=Actor.for_user(vic))

    assert (
        str(refused.value) == "vic is a viewer in workspace 'acme'; running agents and workflows needs the editor role."
    )
    assert AgentTurn.all_objects.count() == 0
    assert DebugLog.all_objects.count() == 0


def test_a_member_of_another_workspace_is_refused_before_any_turn_is_recorded(writer: Agent, charlie: User) -> None:
    with pytest.raises(PermissionDenied) as refused:
        agent_turn_run(agent=writer, message="Hi", actor=Actor.for_user(charlie))

    assert str(refused.value) == "charlie is not a member of workspace 'acme'."
    assert AgentTurn.all_objects.count() == 0


def test_an_empty_message_is_refused_before_any_turn_is_recorded(writer: Agent, alice: User) -> None:
    with pytest.raises(ValidationError) as refused:
        agent_turn_run(agent=writer, message="   ", actor=Actor.for_user(alice))

    assert refused.value.message_dict == {"message": ["Give a message for the agent."]}
    assert AgentTurn.all_objects.count() == 0


def test_a_version_of_another_agent_is_refused(workspace: Workspace, writer: Agent, ada: User, alice: User) -> None:
    other = make_agent(workspace, "critic", by=ada)

    with pytest.raises(ValidationError) as refused:
        agent_turn_run(agent=writer, message="Hi", actor=Actor.for_user(alice), version=other.live_version)

    assert refused.value.message_dict == {
        "version": [f"Version {other.live_version.pk} is not a version of agent 'writer'."]
    }
    assert AgentTurn.all_objects.count() == 0


# --- failed turns: finished, readable, never an exception -------------------------------
def test_the_iteration_limit_stops_a_model_that_never_answers(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    agent = make_agent(
        workspace, "looper", by=ada, allowed_tool_names=["propose_persona_edit"], runtime_policy={"max_iterations": 3}
    )

    turn = agent_turn_run(agent=agent, message=PERSONA_CALL.replace("@call", "@loop"), actor=Actor.for_user(alice))

    assert turn.status == AgentTurn.Status.FAILED
    assert turn.error == "Stopped after 3 model calls without a final answer (runtime_policy.max_iterations = 3)."
    assert turn.answer == ""
    assert turn.model_calls == 3
    assert turn.debug_logs.count() == 3
    # Each call proposes the same persona: the proposer's open proposal comes back, not a new one.
    pending = PromptVersion.objects.filter(agent=agent, status=PromptVersion.Status.PENDING)
    assert [v.number for v in pending] == [2]
    results = [log.tool_calls[0]["result"] for log in turn.debug_logs.order_by("sequence")]
    assert results == [QUEUED.format(number=2)] * 3


@pytest.mark.parametrize(
    ("script", "error"),
    [
        ("@error rate_limit", "Provider error (rate_limit): echo was scripted to fail with rate_limit"),
        ("@error auth", "Provider error (auth): echo was scripted to fail with auth"),
        ("@garbage", "Provider error (invalid_response): echo was scripted to return garbage"),
    ],
)
def test_a_provider_error_fails_the_turn_and_is_recorded_in_the_debug_log(
    writer: Agent, alice: User, script: str, error: str
) -> None:
    turn = agent_turn_run(agent=writer, message=f"Hi\n{script}", actor=Actor.for_user(alice))

    log = turn.debug_logs.get()
    assert turn.status == AgentTurn.Status.FAILED
    assert turn.error == error
    assert (log.error, log.finish_reason, log.response) == (error, "error", {})
    assert (turn.model_calls, turn.input_tokens, turn.output_tokens) == (1, 0, 0)


def test_a_preset_without_its_credential_fails_with_a_debug_log_and_no_model_call(
    workspace: Workspace, ada: User, alice: User
) -> None:
    gemini = preset_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="gem",
        name="Gemini",
        provider_name="gemini",
        model="gemini-2.5-flash",
    )
    agent = make_agent(workspace, "writer", by=ada, preset=gemini)

    turn = agent_turn_run(agent=agent, message="Hi", actor=Actor.for_user(alice))

    assert turn.status == AgentTurn.Status.FAILED
    assert turn.error == "Preset 'gem' has no credential: set its API key in the admin."
    assert turn.model_calls == 0
    log = turn.debug_logs.get()  # like any failed call: one log, saying why
    assert (log.sequence, log.provider_name, log.model, log.finish_reason, log.error) == (
        1,
        "gemini",
        "gemini-2.5-flash",
        "error",
        "Preset 'gem' has no credential: set its API key in the admin.",
    )


def test_an_unknown_provider_has_no_adapter_and_says_so() -> None:
    with pytest.raises(ProviderError) as missing:
        get_provider("mistral")

    assert (missing.value.kind, missing.value.message) == (
        ProviderError.NOT_CONFIGURED,
        "No adapter for provider 'mistral' is installed.",
    )


def test_an_agent_without_a_preset_in_a_workspace_without_a_default_fails(
    workspace: Workspace, ada: User, alice: User
) -> None:
    agent = make_agent(workspace, "writer", by=ada)

    turn = agent_turn_run(agent=agent, message="Hi", actor=Actor.for_user(alice))

    assert turn.status == AgentTurn.Status.FAILED
    assert turn.error == "Agent 'writer' has no preset and workspace 'acme' has no default preset."
    log = turn.debug_logs.get()
    assert (log.provider_name, log.model, log.finish_reason, log.error) == ("", "", "error", turn.error)
    assert turn.finished_at is not None


def test_an_unexpected_error_still_leaves_a_finished_failed_turn(
    writer: Agent, alice: User, settings: Settings, tmp_path: Path
) -> None:
    broken = tmp_path / "catalog-extra.json"
    broken.write_text("{not json")
    settings.AIHUMMER_MODEL_CATALOG_EXTRA = str(broken)

    turn = agent_turn_run(agent=writer, message="Hi", actor=Actor.for_user(alice))

    assert turn.status == AgentTurn.Status.FAILED
    assert turn.error == "Internal error (ImproperlyConfigured); it was logged."
    assert turn.finished_at is not None


def test_a_prompt_bigger_than_the_context_budget_fails_before_any_model_call(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    agent = make_agent(
        workspace, "writer", by=ada, runtime_policy={"context": {"max_tokens": 1000, "reserve_tokens": 200}}
    )
    message = "x" * 4000
    rendered = render_system_prompt(agent.live_version.snapshot, first_turn=True, today=timezone.localdate())
    needed = -(-len(rendered.text) // 4) + 1000

    turn = agent_turn_run(agent=agent, message=message, actor=Actor.for_user(alice))

    assert turn.status == AgentTurn.Status.FAILED
    assert turn.error == (
        f"The system prompt and message need about {needed} tokens, but runtime_policy.context allows "
        "800 (a budget of 1000 tokens minus reserve_tokens 200)."
    )
    assert turn.debug_logs.count() == 0


def test_a_tool_result_over_the_history_budget_still_reaches_the_model(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    # A history budget of 50 tokens: the queued-for-review result alone is about 56.
    agent = make_agent(
        workspace,
        "writer",
        by=ada,
        allowed_tool_names=["propose_persona_edit"],
        runtime_policy={"context": {"max_tokens": 1000, "reserve_tokens": 0, "history_share": 0.05}},
    )

    turn = agent_turn_run(agent=agent, message=PERSONA_CALL, actor=Actor.for_user(alice))

    assert (turn.status, turn.error, turn.model_calls) == (AgentTurn.Status.SUCCEEDED, "", 2)


# --- try-it: dry runs ------------------------------------------------------------------
def test_a_try_it_turn_records_a_self_edit_without_proposing_it(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    agent = make_agent(workspace, "writer", by=ada, allowed_tool_names=["propose_section_edit"])

    turn = agent_run_test(agent=agent, message=SECTION_CALL, actor=Actor.for_user(alice))

    first, second = turn.debug_logs.order_by("sequence")
    assert turn.dry_run is True
    assert turn.status == AgentTurn.Status.SUCCEEDED
    assert first.tool_calls == [
        {
            "id": "echo-call-0",
            "name": "propose_section_edit",
            "arguments": SECTION_CALL.split(" ", 2)[2],
            "outcome": "dry_run",
            "result": "[dry run] 'propose_section_edit' was recorded, not executed.",
        }
    ]
    assert second.messages[-1]["content"] == "[dry run] 'propose_section_edit' was recorded, not executed."
    assert PromptVersion.all_objects.filter(agent=agent).count() == 1


def test_a_try_it_turn_still_checks_the_arguments(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    agent = make_agent(workspace, "writer", by=ada, allowed_tool_names=["propose_section_edit"])

    turn = agent_run_test(
        agent=agent, message='@call propose_section_edit {"section_key": "method"}', actor=Actor.for_user(alice)
    )

    call = turn.debug_logs.order_by("sequence").first().tool_calls[0]
    assert call["outcome"] == "refused"
    assert call["result"] == "Invalid arguments: $.body: Field required; $.reason: Field required"


def test_a_try_it_turn_runs_a_pending_version_and_shows_its_hash(writer: Agent, alice: User) -> None:
    pending = prompt_version_propose(
        agent=writer, changes={"onboarding": "Say hello first."}, actor=Actor.for_user(alice), reason="friendlier"
    )

    turn = agent_run_test(agent=writer, message="Hi", actor=Actor.for_user(alice), version=pending)

    writer.refresh_from_db()
    assert pending.status == PromptVersion.Status.PENDING
    assert writer.live_version.number == 1
    assert turn.version_number == 2
    assert turn.answer == f"[echo echo-1] Hi #sp={echo_sp(pending)}"
    assert echo_sp(pending) != echo_sp(writer.live_version)


# --- secrets and bounds in debug logs --------------------------------------------------
def test_secret_shaped_strings_never_reach_the_debug_log(
    workspace: Workspace, writer: Agent, ada: User, alice: User
) -> None:
    openai_like = "sk-abcdefghijklmnopqrstuvwxyz123456"
    google_key = "AIza" + "Q" * 35
    credential_create(workspace=workspace, key="google", secret=google_key, actor=Actor.for_user(ada))

    turn = agent_turn_run(
        agent=writer,
        message=f"Use {openai_like} or {google_key}",
        actor=Actor.for_user(alice),
        context={"token": "Bearer abcdefghijklmnopqrstuvwxyz0123"},
    )

    log = turn.debug_logs.get()
    recorded = json.dumps([log.system_prompt, log.messages, log.response, log.error, log.tool_calls])
    assert turn.status == AgentTurn.Status.SUCCEEDED
    for secret in (openai_like, google_key, "abcdefghijklmnopqrstuvwxyz0123"):
        assert secret not in recorded
    assert log.messages == [{"role": "user", "content": f"Use {REDACTED} or {REDACTED}"}]
    assert log.response == {"text": f"[echo echo-1] Use {REDACTED} or {REDACTED} #sp={turn.answer[-8:]}"}
    assert log.system_prompt.endswith(f"## Context\n- token: Bearer {REDACTED}")


def test_the_presets_own_credential_is_redacted_whatever_its_shape(
    workspace: Workspace, ada: User, alice: User, httpserver: HTTPServer
) -> None:
    secret = "correct-horse-battery-staple-42"
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(
        chat_completion(f"You said {secret}", model="gpt-4.1-mini")
    )
    preset = vault_preset(
        workspace,
        httpserver.url_for("/v1"),
        secret=secret,
        name="Local OpenAI-compatible server",
        credential_key="openai",
        model="local-model",
        by=ada,
    )
    agent = make_agent(workspace, "writer", by=ada, preset=preset)

    turn = agent_turn_run(agent=agent, message=f"my key is {secret}", actor=Actor.for_user(alice))

    log = turn.debug_logs.get()
    assert turn.status == AgentTurn.Status.SUCCEEDED
    assert httpserver.log[0][0].headers["Authorization"] == f"Bearer {secret}"  # it did reach the server
    assert secret not in json.dumps([log.system_prompt, log.messages, log.response, log.parameters, log.error])
    assert log.messages == [{"role": "user", "content": f"my key is {REDACTED}"}]


def test_a_long_message_is_bounded_in_the_debug_log(writer: Agent, alice: User, settings: Settings) -> None:
    settings.AIHUMMER_DEBUG_MAX_CHARS = 1000

    turn = agent_turn_run(agent=writer, message="m" * 1500, actor=Actor.for_user(alice))

    log = turn.debug_logs.get()
    assert log.messages == [{"role": "user", "content": "m" * 1000 + "… [500 more characters not kept]"}]
    assert turn.message == "m" * 1500


def test_redaction_happens_before_the_bound_so_no_secret_is_cut_in_half(settings: Settings) -> None:
    settings.AIHUMMER_DEBUG_MAX_CHARS = 1000
    text = "a" * 990 + "sk-" + "z" * 30 + " " + "b" * 499

    assert redact_text(text, []) == "a" * 990 + REDACTED + "… [500 more characters not kept]"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("key sk-ant-api03-abcdefghijklmnop end", "key [redacted] end"),
        ("Authorization: bearer abcdefghijklmnopqrstuvwxyz", "Authorization: bearer [redacted]"),
        ("ahk_12_abcdefghijklmnopqrstuvwxyz", "[redacted]"),
        ("sk-short", "sk-short"),  # too short to be a key
    ],
)
def test_well_known_secret_shapes_are_redacted(text: str, redacted: str) -> None:
    assert redact_text(text, []) == redacted


def test_a_given_secret_is_redacted_whatever_its_shape() -> None:
    assert redact_text("pw=hunter2-and-more; again hunter2-and-more", ["hunter2-and-more", ""]) == (
        "pw=[redacted]; again [redacted]"
    )


def test_a_disabled_agent_does_not_run(writer: Agent, ada: User, alice: User) -> None:
    agent_update(agent=writer, actor=Actor.for_user(ada), is_active=False)

    turn = agent_turn_run(agent=writer, message="Hi", actor=Actor.for_user(alice))

    assert (turn.status, turn.error) == (AgentTurn.Status.FAILED, "Agent 'writer' is disabled: enable it to run it.")
    assert turn.debug_logs.count() == 0


# --- app.direct_completion.mode = always ------------------------------------------------
def direct_agent(workspace: Workspace, ada: User, **direct: object) -> Agent:
    return agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="quick",
        name="Quick",
        snapshot={
            **WRITER_PROFILE,
            "allowed_tool_names": ["propose_persona_edit"],
            "runtime_policy": {"app": {"direct_completion": {"mode": "always", **direct}}},
        },
    )


def test_an_always_direct_agent_answers_in_one_call_without_tools_within_its_bounds(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, openai_server
) -> None:
    agent = direct_agent(workspace, ada, max_tokens=300, timeout_ms=20_000)

    turn = agent_turn_run(agent=agent, message="Hi", actor=Actor.for_user(alice))

    [sent] = openai_server.bodies
    assert (turn.status, turn.answer, turn.model_calls) == ("succeeded", "answer: Hi", 1)
    assert "tools" not in sent
    assert sent["max_tokens"] == 300


def test_an_auto_agent_keeps_its_tools_and_the_presets_bounds(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, openai_server
) -> None:
    agent = direct_agent(workspace, ada)
    prompt_version_propose(
        agent=agent,
        changes={"runtime_policy": {"app": {"direct_completion": {"mode": "auto", "max_tokens": 300}}}},
        actor=Actor.for_user(ada),
        mode="live",
    )

    agent_turn_run(agent=agent, message="Hi", actor=Actor.for_user(alice))

    [sent] = openai_server.bodies
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["propose_persona_edit"]
    assert "max_tokens" not in sent


def test_a_direct_completion_slower_than_its_timeout_fails_saying_so(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, openai_server, settings: Settings
) -> None:
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 0
    openai_server.delay = 1.0
    agent = direct_agent(workspace, ada, timeout_ms=200)

    turn = agent_turn_run(agent=agent, message="Hi", actor=Actor.for_user(alice))

    assert turn.status == "failed"
    assert (
        turn.error == "The direct completion took longer than runtime_policy.app.direct_completion.timeout_ms (200 ms)."
    )
