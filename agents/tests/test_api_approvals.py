"""`/v1/admin/approvals` (issue 30): list, read, approve, reject; people only, four eyes,
another workspace's request a 404. No broker: the approved call runs after the commit."""

from __future__ import annotations

import http.server
import threading

import pytest
from django.urls import reverse

from agents.models import ApprovalRequest
from agents.runtime import agent_turn_run
from agents.services.tool_approvals import approval_request_approve
from agents.tests.helpers import call_line
from aihummer.actors import Actor

pytestmark = pytest.mark.django_db(transaction=True)

FRENCH = {"accept-language": "fr-FR,fr;q=0.9,en;q=0.5"}
ENGLISH = {"accept-language": "en-US,en;q=0.9"}


def error(response) -> dict:
    return response.json()["error"]


@pytest.fixture
def pending(caller, alice, httpserver) -> ApprovalRequest:
    """alice's turn of `caller`, paused on an http_request to the local server."""
    httpserver.expect_request("/hook", method="POST").respond_with_data("done")
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(alice))
    return ApprovalRequest.objects.get(turn=turn)


def test_a_reviewer_lists_and_reads_the_exact_call(api_as, bob, pending, httpserver) -> None:
    listed = api_as(bob).get("/v1/admin/approvals?status=pending")

    assert listed.status_code == 200
    [row] = listed.json()["results"]
    assert row["id"] == pending.pk
    assert (row["tool"], row["agent"], row["status"], row["requested_by"]) == (
        "http_request",
        "caller",
        "pending",
        "admin:alice",
    )
    assert row["arguments"] == {"method": "POST", "url": httpserver.url_for("/hook"), "headers": {}, "body": '{"n": 1}'}
    assert row["arguments_hash"] == pending.arguments_hash
    assert row["review_url"] == f"/admin/agents/approvalrequest/{pending.pk}/review/"
    assert api_as(bob).get(f"/v1/admin/approvals/{pending.pk}").json() == row


def test_a_reviewer_approves_and_the_call_runs_once(api_as, bob, pending, httpserver) -> None:
    response = api_as(bob).post(
        f"/v1/admin/approvals/{pending.pk}/approve", {"note": "Fine.", "arguments_hash": pending.arguments_hash}
    )

    assert response.status_code == 200, response.json()
    assert (response.json()["status"], response.json()["reviewed_by"]) == ("approved", "bob")
    assert len(httpserver.log) == 1
    again = api_as(bob).get(f"/v1/admin/approvals/{pending.pk}").json()
    assert (again["progress"], again["result"][:11]) == ("resumed", "HTTP 200 OK")
    second = api_as(bob).post(f"/v1/admin/approvals/{pending.pk}/approve", {})
    assert second.status_code == 409
    assert error(second)["code"] == "already_decided"
    assert len(httpserver.log) == 1


def test_other_arguments_than_the_reviewed_ones_are_a_conflict(api_as, bob, pending, httpserver) -> None:
    response = api_as(bob).post(f"/v1/admin/approvals/{pending.pk}/approve", {"arguments_hash": "a" * 64})

    assert response.status_code == 409
    assert error(response)["code"] == "arguments_changed"
    bad = api_as(bob).post(f"/v1/admin/approvals/{pending.pk}/approve", {"arguments_hash": "not a hash"})
    assert bad.status_code == 400
    assert list(error(bad)["fields"]) == ["arguments_hash"]
    assert httpserver.log == []


def test_reject_tells_the_model_and_runs_nothing(api_as, bob, pending, httpserver) -> None:
    response = api_as(bob).post(f"/v1/admin/approvals/{pending.pk}/reject", {"note": "No."})

    assert response.status_code == 200
    assert api_as(bob).get(f"/v1/admin/approvals/{pending.pk}").json()["result"] == (
        "Refused: bob rejected this call: No. It was not executed; do not retry it as is."
    )
    assert httpserver.log == []


def test_api_keys_read_but_never_decide(api_as, make_key, ada, pending, httpserver) -> None:
    key = api_as(make_key("read,write,publish", owner=ada))

    assert key.get("/v1/admin/approvals").status_code == 200
    response = key.post(f"/v1/admin/approvals/{pending.pk}/approve", {})
    assert response.status_code == 403
    assert error(response)["message"] == "API keys may not do approving or rejecting: only people decide and manage."
    assert httpserver.log == []


def test_whoever_started_the_turn_may_not_approve(api_as, caller, bob, httpserver) -> None:
    turn = agent_turn_run(agent=caller, message=call_line(httpserver), actor=Actor.for_user(bob))
    request = ApprovalRequest.objects.get(turn=turn)

    response = api_as(bob).post(f"/v1/admin/approvals/{request.pk}/approve", {})

    assert response.status_code == 403
    assert error(response)["message"] == (
        "You started the turn or run this call comes from: another person must decide it (four eyes)."
    )


def test_another_workspace_gets_404s(api_as, charlie, pending) -> None:
    client = api_as(charlie)

    assert client.get("/v1/admin/approvals").json()["results"] == []
    assert client.get(f"/v1/admin/approvals/{pending.pk}").status_code == 404
    assert client.post(f"/v1/admin/approvals/{pending.pk}/approve", {}).status_code == 404
    assert client.get("/v1/admin/approvals/999999999").status_code == 404


def test_a_waiting_turn_says_which_request_it_waits_for(api_as, bob, pending) -> None:
    turn = api_as(bob).get(f"/v1/admin/turns/{pending.turn_id}").json()

    assert turn["status"] == "waiting"
    assert turn["waiting_for"] == {
        "approval_id": pending.pk,
        "tool": "http_request",
        "review_url": f"/admin/agents/approvalrequest/{pending.pk}/review/",
    }


def test_review_links_are_absolute_under_the_public_url(api_as, bob, pending, settings) -> None:
    settings.AIHUMMER_PUBLIC_URL = "https://aihummer.example.com"
    review = f"https://aihummer.example.com/admin/agents/approvalrequest/{pending.pk}/review/"

    assert api_as(bob).get(f"/v1/admin/approvals/{pending.pk}").json()["review_url"] == review
    assert api_as(bob).get(f"/v1/admin/turns/{pending.turn_id}").json()["waiting_for"]["review_url"] == review


class HangsUpOnce:
    """A loopback HTTP endpoint that reads its first request whole and closes the
    connection without an answer (a server that died after acting, or a cut network),
    then answers `200 done`. `keys` are the Idempotency-Keys it received, in order."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                endpoint.keys.append(self.headers.get("Idempotency-Key", ""))
                if len(endpoint.keys) == 1:
                    return  # no answer: the connection closes
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", "4")
                self.end_headers()
                self.wfile.write(b"done")

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url_for(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hangs_up_once():
    endpoint = HangsUpOnce()
    yield endpoint
    endpoint.close()


@pytest.mark.timeout(90)
def test_a_call_whose_answer_never_came_waits_for_a_person_who_sends_it_again(
    api_as, make_key, caller, alice, ada, bob, hangs_up_once
) -> None:
    turn = agent_turn_run(agent=caller, message=call_line(hangs_up_once), actor=Actor.for_user(alice))
    request = ApprovalRequest.objects.get(turn=turn)
    approved = api_as(bob).post(f"/v1/admin/approvals/{request.pk}/approve", {"arguments_hash": request.arguments_hash})
    assert approved.status_code == 200

    row = api_as(bob).get(f"/v1/admin/approvals/{request.pk}").json()
    assert (row["status"], row["progress"], row["outcome_unknown"], row["effect_attempts"]) == (
        "approved",
        "unknown",
        True,
        1,
    )
    assert row["result"].startswith(
        "Outcome unknown: The request was sent to 127.0.0.1 and its answer never came (RemoteDisconnected"
    )
    assert row["result"].endswith(
        "It may have been carried out. Check with the receiver, then send it again (with the same ledger key) or "
        "confirm it was done."
    )
    assert hangs_up_once.keys == [str(request.ledger_key)]  # sent once; not again by itself
    assert api_as(bob).get(f"/v1/admin/turns/{turn.pk}").json()["waiting_for"]["approval_id"] == request.pk
    assert [r["id"] for r in api_as(bob).get("/v1/admin/approvals?progress=unknown").json()["results"]] == [request.pk]
    # People decide, and not the one who started the turn.
    assert (
        api_as(make_key("read,write,publish", owner=ada)).post(f"/v1/admin/approvals/{request.pk}/resend").status_code
        == 403
    )
    assert api_as(alice).post(f"/v1/admin/approvals/{request.pk}/resend").status_code == 403
    assert hangs_up_once.keys == [str(request.ledger_key)]

    resent = api_as(bob).post(f"/v1/admin/approvals/{request.pk}/resend", {"note": "Not in their logs."})

    assert resent.status_code == 200, resent.json()
    assert hangs_up_once.keys == [str(request.ledger_key)] * 2  # again, with the same ledger key
    row = api_as(bob).get(f"/v1/admin/approvals/{request.pk}").json()
    assert (row["progress"], row["outcome_unknown"], row["resolution"], row["resolved_by"]) == (
        "resumed",
        False,
        "resent",
        "bob",
    )
    assert (row["effect_attempts"], row["result"][:11]) == (2, "HTTP 200 OK")
    turn.refresh_from_db()
    assert turn.status == "succeeded"
    again = api_as(bob).post(f"/v1/admin/approvals/{request.pk}/confirm")
    assert again.status_code == 409
    assert error(again)["code"] == "already_decided"


@pytest.mark.timeout(90)
def test_the_desk_asks_about_an_unknown_outcome_in_the_readers_language(
    client, caller, alice, bob, hangs_up_once
) -> None:
    turn = agent_turn_run(agent=caller, message=call_line(hangs_up_once), actor=Actor.for_user(alice))
    request = ApprovalRequest.objects.get(turn=turn)
    approval_request_approve(request=request, actor=Actor.for_user(bob), arguments_hash=request.arguments_hash)
    client.force_login(bob)
    review = reverse("admin:agents_approvalrequest_review", args=[request.pk])

    french = client.get(review, headers=FRENCH).content.decode()
    english = client.get(review, headers=ENGLISH).content.decode()
    desk = client.get(reverse("admin:agents_review_list"), headers=FRENCH).content.decode()

    assert "Résultat inconnu\u00a0: est-ce arrivé\u00a0?" in french
    assert "C\u2019est fait\u00a0: l\u2019enregistrer et continuer" in french
    assert "Ce n\u2019est pas fait\u00a0: le renvoyer" in french
    assert 'data-status="unknown" style="background:#9c4221">résultat inconnu</span>' in french
    assert "Outcome unknown: did it happen?" in english
    assert review in desk and "résultat inconnu" in desk  # in the queue, with the pending requests
    answer = client.post(review, {"_resend": "1", "arguments_hash": request.arguments_hash}, headers=FRENCH)
    assert answer.status_code == 302
    shown = client.get(answer.url, headers=FRENCH).content.decode()
    assert f"_request n°\u00a0{request.pk} est renvoyé, avec la même clé de registre.</li>" in shown
    assert hangs_up_once.keys == [str(request.ledger_key)] * 2
    turn.refresh_from_db()
    assert turn.status == "succeeded"
