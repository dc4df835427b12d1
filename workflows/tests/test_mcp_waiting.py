"""What an MCP client hears of a call that waits for a person (issue 30): run_workflow,
inspect_workflow_run and send_message answer with `waitingFor` (the approval request,
its tool and the review page to hand to a person), through the official client, on a
run executed inline and a local SMTP server that receives nothing meanwhile."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from agents.models import AgentTurn, ApprovalRequest
from aihummer.mcp import build_server
from aihummer.tests.factories import make_key, make_mailer, make_mailing
from aihummer.tests.mcp_helpers import call_tools, ok, with_client
from aihummer.tests.smtp import SmtpServer

pytestmark = pytest.mark.django_db(transaction=True)

MAIL = {"to": ["client@example.com"], "cc": [], "subject": "Your order", "body": "It ships today."}
MESSAGE = f"Tell the client.\n@call mail_send {json.dumps(MAIL)}"


def review_path(request: ApprovalRequest) -> str:
    return f"/admin/agents/approvalrequest/{request.pk}/review/"


def test_a_waiting_run_answers_with_the_call_it_waits_for(workspace, ada, alice, echo_preset) -> None:
    with SmtpServer() as smtp:
        make_mailing(workspace, by=ada, smtp_port=smtp.port, password="pw-never-shown")
        raw_key = make_key(workspace, "ci-bot", "read,write", owner=alice)[1]

        # A run waiting for a person does not finish by itself: the call would sit out its
        # whole wait (30 s by default) before answering. The run is executed inline, so it
        # is already waiting when the wait begins: one second proves the same answer.
        started_call = {"workflowKey": "mailing", "message": MESSAGE, "waitSeconds": 1}
        [started] = call_tools(raw_key, ("run_workflow", started_call))
        body = ok(started)
        [inspected] = call_tools(raw_key, ("inspect_workflow_run", {"workflowRunId": body["workflowRunId"]}))

    request = ApprovalRequest.objects.get()
    waiting = {"approvalId": request.pk, "tool": "mail_send", "reviewUrl": review_path(request)}
    assert (body["runStatus"], body["waitingFor"]) == ("waiting", waiting)
    assert body["message"].startswith("Waiting for a person to decide a tool call (waitingFor.reviewUrl)")
    read = ok(inspected)
    assert (read["runStatus"], read["waitingFor"]) == ("waiting", waiting)
    assert [(step["status"], step["waitingFor"]) for step in read["steps"]] == [("waiting", waiting)]
    assert smtp.messages == []


def test_send_message_answers_waiting_with_the_review_link(workspace, ada, alice, echo_preset) -> None:
    with SmtpServer() as smtp:
        make_mailer(workspace, by=ada, smtp_port=smtp.port, password="pw-never-shown")
        raw_key = make_key(workspace, "ci-bot", "read,write", owner=alice)[1]

        [sent] = call_tools(raw_key, ("send_message", {"agentKey": "mailer", "message": MESSAGE}))

    body = ok(sent)
    request = ApprovalRequest.objects.get()
    assert (body["turnStatus"], body["answer"]) == ("waiting", None)
    assert body["waitingFor"] == {"approvalId": request.pk, "tool": "mail_send", "reviewUrl": review_path(request)}
    assert AgentTurn.objects.get(pk=body["turnId"]).status == "waiting"
    assert smtp.messages == []


def test_finished_answers_carry_no_waiting_for(workspace, ada, alice, echo_preset) -> None:
    make_mailer(workspace, by=ada, smtp_port=1, password="pw-never-shown")
    raw_key = make_key(workspace, "ci-bot", "read,write", owner=alice)[1]

    tested, sent = call_tools(
        raw_key,
        ("run_agent_test", {"agentKey": "mailer", "input": "Bonjour"}),
        ("send_message", {"agentKey": "mailer", "message": "Bonjour"}),
    )

    assert ok(tested)["waitingFor"] is None
    assert (ok(sent)["turnStatus"], ok(sent)["waitingFor"]) == ("succeeded", None)


def test_the_tools_publish_waiting_for_in_their_output_schemas(workspace, alice) -> None:
    raw_key = make_key(workspace, "ci-bot", "read", owner=alice)[1]

    async def work(client: Client) -> list:
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in with_client(Client(build_server(api_key=raw_key)), work)}
    for name in ("run_workflow", "inspect_workflow_run", "run_agent_test", "send_message"):
        schema = tools[name].output_schema
        assert "waitingFor" in schema["properties"], name
        assert set(schema["$defs"]["WaitingFor"]["properties"]) == {"approvalId", "tool", "reviewUrl"}
