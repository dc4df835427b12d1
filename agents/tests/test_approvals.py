"""Tool calls that wait for a person (issue 30), through the services, on PostgreSQL,
with no broker (the carrying out runs inline after the decision's commit) and a local
HTTP server (pytest-httpserver) as the outside world."""

from __future__ import annotations

import json
import socket
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from agents.models import AgentTurn, ApprovalRequest, DebugLog
from agents.runtime import agent_turn_run
from agents.services.tool_approvals import (
    FOUR_EYES,
    approval_request_approve,
    approval_request_carry_out,
    approval_request_get,
    approval_request_list,
    approval_request_reject,
    approval_requests_expire,
    approval_requests_sweep,
)
from agents.services.tool_settings import agent_tool_settings_update, workspace_tool_policy_update
from agents.tests.helpers import call_line
from aihummer.actors import Actor
from aihummer.exceptions import AlreadyDecided, NotFound
from aihummer.tests.factories import make_agent, make_key

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_guarded_call_pauses_the_turn_and_records_the_exact_call(caller, alice, httpserver) -> None:
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(alice))

    assert turn.status == AgentTurn.Status.WAITING
    assert turn.finished_at is None
    request = ApprovalRequest.objects.get(turn=turn)
    assert request.status == "pending"
    assert request.tool_name == "http_request"
    assert request.arguments == {
        "method": "POST",
        "url": httpserver.url_for("/hook"),
        "headers": {},
        "body": '{"n": 1}',
    }
    assert request.proposer_identity == f"user:{alice.pk}"
    assert request.expires_at - request.created_at == pytest.approx(timedelta(hours=72), abs=timedelta(seconds=5))
    assert httpserver.log == []  # nothing left the building


def test_approve_runs_exactly_the_reviewed_call_once_and_the_turn_finishes(caller, alice, bob, httpserver) -> None:
    httpserver.expect_request("/hook", method="POST").respond_with_data("accepted", status=202)
    turn = agent_turn_run(agent=caller, message=call_line(httpserver, {"n": 7}), actor=Actor.for_user(alice))
    request = ApprovalRequest.objects.get(turn=turn)

    approval_request_approve(request=request, actor=Actor.for_user(bob), arguments_hash=request.arguments_hash)

    assert len(httpserver.log) == 1
    sent, _ = httpserver.log[0]
    assert sent.get_data(as_text=True) == '{"n": 7}'
    assert sent.headers["Idempotency-Key"] == str(request.ledger_key)
    request.refresh_from_db()
    assert (request.status, request.progress, request.effect_ok) == ("approved", "resumed", True)
    assert request.result.startswith("HTTP 202 ACCEPTED")
    turn.refresh_from_db()
    assert turn.status == "succeeded"
    assert turn.finished_at is not None
    assert turn.model_calls == 2
    # The model was given the recorded result as the held call's.
    last = DebugLog.objects.filter(turn=turn).order_by("sequence").last()
    assert last.sequence == 2
    assert [m["role"] for m in last.messages] == ["assistant", "tool"]  # as a turn that never paused logs them
    assert last.messages[1]["content"].startswith("HTTP 202 ACCEPTED")
    # Delivered again (a second task, the sweep): nothing fires twice.
    assert approval_request_carry_out(request_id=request.pk) == "resumed"
    assert len(httpserver.log) == 1


def test_reject_tells_the_model_it_was_refused_and_nothing_is_sent(caller, alice, bob, httpserver) -> None:
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(alice))
    request = ApprovalRequest.objects.get(turn=turn)

    approval_request_reject(request=request, actor=Actor.for_user(bob), note="Not this hook.")

    assert httpserver.log == []
    turn.refresh_from_db()
    assert turn.status == "succeeded"
    last = DebugLog.objects.filter(turn=turn).order_by("sequence").last()
    refusal = last.messages[1]
    assert refusal["role"] == "tool"
    assert (
        refusal["content"]
        == "Refused: bob rejected this call: Not this hook. It was not executed; do not retry it as is."
    )


def test_on_reject_end_ends_the_turn(caller, alice, bob, ada, httpserver) -> None:
    agent_tool_settings_update(agent=caller, actor=Actor.for_user(ada), on_reject="end")
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(alice))

    approval_request_reject(request=ApprovalRequest.objects.get(turn=turn), actor=Actor.for_user(bob))

    turn.refresh_from_db()
    assert (turn.status, turn.error_kind, turn.model_calls) == ("failed", "refused", 1)
    assert turn.error.startswith("The turn ended: Refused: bob rejected this call.")


def test_whoever_started_the_turn_may_not_approve_its_call(caller, bob, httpserver) -> None:
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(bob))
    request = ApprovalRequest.objects.get(turn=turn)

    with pytest.raises(PermissionDenied, match=r"^You started the turn or run this call comes from"):
        approval_request_approve(request=request, actor=Actor.for_user(bob))

    assert str(FOUR_EYES).endswith("(four eyes).")
    request.refresh_from_db()
    assert request.status == "pending"
    assert httpserver.log == []


def test_api_keys_agents_and_editors_never_decide(caller, alice, ada, httpserver) -> None:
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(ada))
    request = ApprovalRequest.objects.get(turn=turn)
    key, _ = make_key(caller.workspace, "bot", "read,write,publish", by=ada)

    with pytest.raises(PermissionDenied, match="API keys may not do approving or rejecting"):
        approval_request_approve(request=request, actor=Actor.for_api_key(key))
    with pytest.raises(PermissionDenied, match="alice is an editor"):
        approval_request_approve(request=request, actor=Actor.for_user(alice))
    with pytest.raises(PermissionDenied):
        approval_request_approve(request=request, actor=Actor.for_operator(name="ops"))


def test_another_workspace_neither_sees_nor_decides_the_request(caller, alice, charlie, httpserver) -> None:
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(alice))
    request = ApprovalRequest.objects.get(turn=turn)

    assert list(approval_request_list(actor=Actor.for_user(charlie))) == []
    with pytest.raises(NotFound, match=f"^No approval request '{request.pk}'.$"):
        approval_request_get(actor=Actor.for_user(charlie), pk=request.pk)
    with pytest.raises(NotFound):
        approval_request_reject(request=request, actor=Actor.for_user(charlie))
    assert [r.pk for r in approval_request_list(actor=Actor.for_user(alice))] == [request.pk]


def test_a_second_decision_is_told_the_first_won(caller, alice, bob, root, httpserver) -> None:
    httpserver.expect_request("/hook").respond_with_data("ok")
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(alice))
    request = ApprovalRequest.objects.get(turn=turn)
    approval_request_approve(request=request, actor=Actor.for_user(bob))

    with pytest.raises(AlreadyDecided, match=f"^Approval request {request.pk} was already approved.$"):
        approval_request_reject(request=request, actor=Actor.for_user(root))
    assert len(httpserver.log) == 1


def test_an_expired_request_is_a_refusal(caller, alice, bob, httpserver) -> None:
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(alice))
    request = ApprovalRequest.objects.get(turn=turn)

    assert approval_requests_expire(now=timezone.now() + timedelta(hours=73)) == 1

    request.refresh_from_db()
    assert (request.status, request.progress, request.effect_ok) == ("expired", "resumed", None)
    assert request.result.startswith("Refused: nobody approved this call before it expired at ")
    turn.refresh_from_db()
    assert turn.status == "succeeded"
    with pytest.raises(AlreadyDecided, match="was already expired"):
        approval_request_approve(request=request, actor=Actor.for_user(bob))
    assert httpserver.log == []


def test_arguments_other_than_the_reviewed_ones_are_refused(caller, alice, bob, httpserver) -> None:
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(alice))
    request = ApprovalRequest.objects.get(turn=turn)

    with pytest.raises(Exception, match="holds other arguments than the ones reviewed"):
        approval_request_approve(request=request, actor=Actor.for_user(bob), arguments_hash="0" * 64)
    request.refresh_from_db()
    assert request.status == "pending"


@pytest.fixture
def no_connections(monkeypatch):
    """Every attempt to open a TCP connection, recorded and refused."""
    attempts: list[object] = []

    def refuse(address, *args, **kwargs):
        attempts.append(address)
        raise AssertionError(f"connection attempted to {address}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.org/x", "Refused: example.org is not among the hosts this agent may call"),
        ("http://169.254.169.254/latest/meta-data/", "Refused: 169.254.169.254 is a private, loopback or link-local"),
        ("http://10.0.0.1/admin", "Refused: 10.0.0.1 is a private, loopback or link-local"),
    ],
)
def test_http_request_refuses_off_list_and_private_hosts_without_connecting(
    workspace, ada, alice, echo_preset, no_connections, url, reason
) -> None:
    agent = make_agent(workspace, "prober", "You probe.", by=ada, allowed_tool_names=["http_request"])
    agent_tool_settings_update(
        agent=agent, actor=Actor.for_user(ada), http_allowed_hosts=["127.0.0.1", "169.254.169.254", "10.0.0.1"]
    )
    arguments = json.dumps({"url": url})

    turn = agent_turn_run(agent=agent, message=f"Go.\n@call http_request {arguments}", actor=Actor.for_user(alice))

    assert turn.status == "succeeded"  # the refusal went back to the model as the tool's result
    assert not ApprovalRequest.objects.filter(turn=turn).exists()
    outcome = DebugLog.objects.filter(turn=turn, sequence=1).get().tool_calls[0]
    assert outcome["outcome"] == "refused"
    assert outcome["result"].startswith(reason)
    assert no_connections == []


def test_a_sandbox_agent_calls_nothing_that_needs_a_person(workspace, ada, echo_preset, httpserver) -> None:
    key, _ = make_key(workspace, "bot", "read,write", by=ada)
    agent = make_agent(
        workspace,
        "sb_caller",
        "You call.",
        by=Actor.for_api_key(key),
        allowed_tool_names=["http_request"],
        is_sandbox=True,
    )
    agent_tool_settings_update(agent=agent, actor=Actor.for_api_key(key), http_allowed_hosts=[httpserver.host])
    workspace_tool_policy_update(workspace=workspace, actor=Actor.for_user(ada), allow_private_addresses=True)

    turn = agent_turn_run(agent=agent, message=call_line(httpserver), actor=Actor.for_api_key(key))

    assert turn.status == "succeeded"
    assert not ApprovalRequest.all_objects.exists()
    outcome = DebugLog.all_objects.filter(turn=turn, sequence=1).get().tool_calls[0]
    assert outcome["result"].startswith("Not executed: 'http_request' needs a person's approval")
    assert httpserver.log == []


def test_a_turn_whose_resume_keeps_failing_ends_once_its_attempts_are_spent(
    caller, alice, bob, httpserver, settings
) -> None:
    settings.AIHUMMER_STEP_RECOVERIES = 1  # 2 resumes in all
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(alice))
    request = ApprovalRequest.objects.get(turn=turn)
    # A resume that can never succeed (its saved state cannot be read), as a worker
    # killed at every resume would leave it.
    ApprovalRequest.objects.filter(pk=request.pk).update(resume_state={"messages": [{"role": "user"}]})
    approval_request_approve(request=request, actor=Actor.for_user(bob), arguments_hash=request.arguments_hash)
    resent = []
    for _ in range(4):  # more sweeps than attempts
        ApprovalRequest.objects.filter(pk=request.pk, progress="resuming").update(
            progress_until=timezone.now() - timedelta(seconds=1)
        )
        resent.append(approval_requests_sweep()["resent"])

    assert resent == [1, 1, 0, 0]
    assert len(httpserver.log) == 1
    request.refresh_from_db()
    assert (request.progress, request.resume_attempts) == ("resumed", 3)
    turn.refresh_from_db()
    assert turn.status == "failed"
    assert turn.error == (
        f"The turn never finished after its approved call (request {request.pk}): its 2 resumes died (the worker "
        "stopped, or the resume failed). No attempts left."
    )
