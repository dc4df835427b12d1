"""`manage.py run_agent <workspace> <agent> <message>`: one turn as the operator, the
answer and its usage printed (or one JSON object with --json), a failed turn an error."""

from __future__ import annotations

import getpass
import json

import pytest
from django.core.management import CommandError, call_command

from agents.models import Agent, AgentTurn, DebugLog, Preset
from agents.services import agent_create, prompt_version_approve, prompt_version_propose
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import echo_sp

PROFILE = {"identity": {"name": "Camille", "role": "Writer"}, "onboarding": "Introduce yourself once."}


@pytest.fixture
def writer(workspace: Workspace, ada: User, echo_preset: Preset) -> Agent:
    return agent_create(workspace=workspace, actor=Actor.for_user(ada), key="writer", name="Writer", snapshot=PROFILE)


def test_it_prints_the_answer_then_usage_turn_and_debug_log(writer: Agent, capsys: pytest.CaptureFixture) -> None:
    call_command("run_agent", "acme", "writer", "Hello")

    turn = AgentTurn.objects.get()
    log = DebugLog.objects.get()
    assert turn.answer == f"[echo echo-1] Hello #sp={echo_sp(writer.live_version.snapshot)}"
    assert capsys.readouterr().out == (
        f"{turn.answer}\n"
        f"-- echo:echo-1 v1: {turn.input_tokens} in / {turn.output_tokens} out tokens, 1 call(s), $0.000000; "
        f"turn {turn.pk}, debug log {log.pk}\n"
    )


def test_the_turn_is_recorded_as_the_operators(writer: Agent) -> None:
    call_command("run_agent", "acme", "writer", "Hello")

    turn = AgentTurn.objects.get()
    assert (turn.actor_source, turn.started_by, turn.dry_run) == (f"cli:{getpass.getuser()}", None, False)


def test_json_prints_one_object_matching_the_recorded_turn(writer: Agent, capsys: pytest.CaptureFixture) -> None:
    call_command("run_agent", "acme", "writer", "Hello", "--json")

    result = json.loads(capsys.readouterr().out)
    turn = AgentTurn.objects.get()
    assert result == {
        "answer": turn.answer,
        "error": None,
        "status": "succeeded",
        "model": "echo:echo-1",
        "version": 1,
        "usage": {
            "input_tokens": turn.input_tokens,
            "output_tokens": turn.output_tokens,
            "cached_input_tokens": 0,
            "model_calls": 1,
        },
        "cost": "0.000000",
        "turn_id": turn.pk,
        "debug_log_id": DebugLog.objects.get(turn=turn).pk,
    }
    assert turn.input_tokens > 0


def test_json_names_the_last_debug_log_of_a_turn_with_tool_calls(
    workspace: Workspace, ada: User, echo_preset: Preset, capsys: pytest.CaptureFixture
) -> None:
    agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="editor",
        name="Editor",
        snapshot={**PROFILE, "allowed_tool_names": ["propose_persona_edit"]},
    )

    call_command(
        "run_agent",
        "acme",
        "editor",
        '@call propose_persona_edit {"persona": "Warm.", "reason": "Feedback"}',
        json=True,
    )

    result = json.loads(capsys.readouterr().out)
    last = DebugLog.objects.get(sequence=2)
    assert (result["debug_log_id"], result["turn_id"]) == (last.pk, last.turn_id)
    assert result["usage"]["model_calls"] == 2


def test_version_runs_that_version_instead_of_the_live_one(
    writer: Agent, alice: User, bob: User, capsys: pytest.CaptureFixture
) -> None:
    proposal = prompt_version_propose(
        agent=writer, changes={"onboarding": "Say hi."}, actor=Actor.for_user(alice), reason="shorter"
    )
    prompt_version_approve(version=proposal, actor=Actor.for_user(bob))
    v1 = writer.versions.get(number=1)

    call_command("run_agent", "acme", "writer", "Hello", "--version", "1", "--json")

    result = json.loads(capsys.readouterr().out)
    assert result["version"] == 1
    assert result["answer"] == f"[echo echo-1] Hello #sp={echo_sp(v1.snapshot)}"
    assert echo_sp(v1.snapshot) != echo_sp(proposal.snapshot)


def test_an_unknown_version_is_an_error(writer: Agent) -> None:
    with pytest.raises(CommandError) as error:
        call_command("run_agent", "acme", "writer", "Hello", version=9)

    assert str(error.value) == "Agent 'writer' has no version 9."
    assert AgentTurn.all_objects.count() == 0


def test_an_unknown_agent_is_an_error(writer: Agent) -> None:
    with pytest.raises(CommandError) as error:
        call_command("run_agent", "acme", "x", "Hello")

    assert str(error.value) == "No agent 'x' in workspace 'acme'."


def test_an_agent_of_another_workspace_is_unknown_here(writer: Agent, other_workspace: Workspace) -> None:
    with pytest.raises(CommandError) as error:
        call_command("run_agent", "globex", "writer", "Hello")

    assert str(error.value) == "No agent 'writer' in workspace 'globex'."


def test_a_sandbox_agent_runs_for_the_operator_as_for_run_test_cases(
    workspace: Workspace, alice: User, echo_preset: Preset, capsys: pytest.CaptureFixture
) -> None:
    # Sandbox rows are for programs and the operator (Actor.sees_sandbox_rows); every
    # command resolves agents as the program surfaces do.
    agent_create(
        workspace=workspace, actor=Actor.for_user(alice), key="sb_reader", name="SB", snapshot=PROFILE, is_sandbox=True
    )

    call_command("run_agent", "acme", "sb_reader", "Hello", "--json")

    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "succeeded"
    assert AgentTurn.all_objects.get().agent.key == "sb_reader"


def test_an_unknown_workspace_is_an_error(db: None) -> None:
    with pytest.raises(CommandError) as error:
        call_command("run_agent", "nope", "writer", "Hello")

    assert str(error.value) == "No workspace 'nope'."


def test_an_empty_message_is_an_error(writer: Agent) -> None:
    with pytest.raises(CommandError) as error:
        call_command("run_agent", "acme", "writer", "  ")

    assert str(error.value) == "Give a message for the agent."
    assert AgentTurn.all_objects.count() == 0


def test_a_failed_turn_prints_why_and_is_an_error(writer: Agent, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(CommandError) as error:
        call_command("run_agent", "acme", "writer", "Hello\n@error auth")

    turn = AgentTurn.objects.get()
    assert str(error.value) == "Provider error (auth): echo was scripted to fail with auth"
    assert turn.status == AgentTurn.Status.FAILED
    assert capsys.readouterr().out == (
        "FAILED: Provider error (auth): echo was scripted to fail with auth\n"
        f"-- echo:echo-1 v1: 0 in / 0 out tokens, 1 call(s), $0.000000; "
        f"turn {turn.pk}, debug log {DebugLog.objects.get().pk}\n"
    )


def test_a_failed_turn_with_json_prints_the_error_too(writer: Agent, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(CommandError):
        call_command("run_agent", "acme", "writer", "Hello\n@error rate_limit", json=True)

    result = json.loads(capsys.readouterr().out)
    assert (result["status"], result["answer"]) == ("failed", "")
    assert result["error"] == "Provider error (rate_limit): echo was scripted to fail with rate_limit"


def test_a_turn_that_fails_before_any_model_call_points_at_the_debug_log_saying_why(
    workspace: Workspace, ada: User, capsys: pytest.CaptureFixture
) -> None:
    agent_create(workspace=workspace, actor=Actor.for_user(ada), key="writer", name="Writer", snapshot=PROFILE)

    with pytest.raises(CommandError) as error:
        call_command("run_agent", "acme", "writer", "Hello", json=True)

    result = json.loads(capsys.readouterr().out)
    assert str(error.value) == "Agent 'writer' has no preset and workspace 'acme' has no default preset."
    log = DebugLog.objects.get(turn_id=result["turn_id"])
    assert (result["status"], result["debug_log_id"], result["usage"]["model_calls"]) == ("failed", log.pk, 0)
    assert (log.finish_reason, log.error) == ("error", str(error.value))
