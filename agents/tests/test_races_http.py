"""Issue 10: writers racing on one agent, over HTTP with real threads, end in a clear
refusal for the losers — never a 500. Each writer re-reads what it needs after taking
the agent's row lock."""

from __future__ import annotations

import html
import re
import threading

import pytest
import requests
from django.db import connection
from django.test import Client
from django.urls import reverse

from agents.models import PromptVersion
from agents.services import agent_create, prompt_version_propose
from agents.tests.helpers import form_data
from aihummer.actors import Actor

pytestmark = pytest.mark.django_db(transaction=True)
CSRF = "a" * 32  # any 32 letters: Django compares the form's token with the cookie


class Browser(requests.Session):
    """A browser-like session of one user against the live server."""

    def __init__(self, base_url: str) -> None:
        super().__init__()
        self.base_url = base_url

    def request(self, method: str, url: str, *args: object, **kwargs: object) -> requests.Response:
        kwargs.setdefault("timeout", 60)
        return super().request(method, self.base_url + url, *args, **kwargs)


def http_as(live_server, user) -> Browser:
    django_client = Client()
    django_client.force_login(user)
    browser = Browser(live_server.url)
    browser.cookies.update({"sessionid": django_client.cookies["sessionid"].value, "csrftoken": CSRF})
    browser.headers["X-CSRFToken"] = CSRF
    return browser


def run_at_once(calls: list) -> list[requests.Response | Exception]:
    """Each call in its own thread, all released together by a barrier."""
    barrier = threading.Barrier(len(calls))
    results: list[requests.Response | Exception] = [None] * len(calls)

    def run(index: int, call) -> None:
        try:
            barrier.wait()
            results[index] = call()
        except Exception as exc:
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def messages_of(response: requests.Response) -> str:
    return " ".join(
        html.unescape(m) for m in re.findall(r'<li class="(?:success|error|warning|info)">(.*?)</li>', response.text)
    )


@pytest.fixture
def agent(workspace, ada, echo_preset):
    agent = agent_create(
        workspace=workspace, actor=Actor.for_user(ada), key="race", name="Race", snapshot={"identity": {"name": "R"}}
    )
    prompt_version_propose(agent=agent, changes={"identity": {"role": "v2"}}, actor=Actor.for_user(ada), mode="live")
    return agent


def test_twenty_restores_applied_at_once_end_in_one_winner_and_clear_refusals(live_server, agent, ada):
    url = reverse("admin:agents_agent_restore", args=[agent.pk, 1])
    sessions = [http_as(live_server, ada) for _ in range(20)]

    results = run_at_once(
        [lambda s=s, i=i: s.post(url, data={"apply_now": "on", "reason": f"r{i}"}) for i, s in enumerate(sessions)]
    )

    assert all(isinstance(r, requests.Response) and r.status_code == 200 for r in results), results
    said = [messages_of(r) for r in results]
    assert sum("V1 restored as v3 (approved)." in m for m in said) == 1, sorted(set(said))
    assert sum("Identical to live version 3; nothing recorded." in m for m in said) == 19, said
    assert list(PromptVersion.objects.filter(agent=agent).values_list("number", "status")) == [
        (3, "approved"),
        (2, "approved"),
        (1, "approved"),
    ]


def test_eight_proposals_racing_eight_approvals_never_answer_500(live_server, agent, alice, bob):
    pending = [
        prompt_version_propose(agent=agent, changes={"identity": {"role": f"p{i}"}}, actor=Actor.for_user(alice))
        for i in range(8)
    ]
    propose_url = reverse("admin:agents_agent_propose", args=[agent.pk])
    proposers = [http_as(live_server, alice) for _ in range(8)]
    reviewers = [http_as(live_server, bob) for _ in range(8)]
    blank = form_data(proposers[0].get(propose_url).text)

    calls = [
        lambda s=s, i=i: s.post(propose_url, data=blank | {"role": f"raced {i}", "reason": f"race {i}"})
        for i, s in enumerate(proposers)
    ] + [
        lambda s=s, v=v: s.post(
            reverse("admin:agents_promptversion_review", args=[v.pk]),
            data={"_approve": "1", "note": "", "confirm_stale": "on"},
        )
        for s, v in zip(reviewers, pending, strict=True)
    ]
    results = run_at_once(calls)

    statuses = [r.status_code if isinstance(r, requests.Response) else repr(r) for r in results]
    assert statuses == [200] * 16, [(s, messages_of(r)[:300]) for s, r in zip(statuses, results, strict=True)]
    for response in results[:8]:
        # The form was opened at v2: it proposes, or it is refused because a reviewer
        # put another version live first (no lost update) — never a 500.
        said = messages_of(response) + " ".join(re.findall(r'class="errornote">(.*?)<', response.text, re.S))
        assert re.search(r"it waits for a reviewer\.|is at live version \d+, not 2: re-read it", html.unescape(said)), (
            said,
            re.findall(r"errorlist.{0,300}", response.text, re.S),
        )
    for response in results[8:]:
        said = messages_of(response)
        assert re.search(r"Race v\d+ approved\.|was proposed against", said), said
    proposed = sum("it waits for a reviewer." in messages_of(r) for r in results[:8])
    still_pending = PromptVersion.objects.filter(pk__in=[v.pk for v in pending], status="pending").count()
    assert PromptVersion.objects.filter(agent=agent, status="pending").count() == proposed + still_pending


def test_twenty_races_of_two_approvals_and_two_rejections_over_rest_end_in_one_decision_and_409s(
    live_server, agent, alice, bob
):
    reviewers = [http_as(live_server, bob) for _ in range(4)]
    outcomes = []
    for attempt in range(20):
        version = prompt_version_propose(
            agent=agent, changes={"identity": {"role": f"try {attempt}"}}, actor=Actor.for_user(alice)
        )
        url = f"/v1/admin/prompt-versions/{version.pk}"
        calls = [("approve", {}), ("approve", {}), ("reject", {"note": "Non."}), ("reject", {"note": "Non."})]
        results = run_at_once(
            [
                lambda s=s, verb=verb, body=body, url=url: s.post(f"{url}/{verb}", json=body)
                for s, (verb, body) in zip(reviewers, calls, strict=True)
            ]
        )
        statuses = [r.status_code if isinstance(r, requests.Response) else repr(r) for r in results]
        assert sorted(statuses) == [200, 409, 409, 409], (attempt, statuses, [r.text[:300] for r in results])
        version.refresh_from_db()
        live = PromptVersion.objects.get(live_for__pk=agent.pk).number
        for response in results:
            if response.status_code == 409:
                body = response.json()["error"]
                assert (body["code"], body["status"], body["live_version"]) == ("already_decided", version.status, live)
        outcomes.append(version.status)
    assert set(outcomes) <= {"approved", "rejected"}
