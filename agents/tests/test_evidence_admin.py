"""Evidence in the admin: test cases edited inline on the agent page (through the
services), the review page's evidence panel and judge badge, the regression
confirmation, and the queue's column and filter."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from agents.models import AgentTestCase, CaseResult, EvidenceRun
from agents.runtime.evidence import evidence_run_execute
from agents.services import agent_create, prompt_version_propose
from agents.tests.helpers import CAMILLE, make_camille, make_cases, propose_long
from aihummer.actors import Actor


@pytest.fixture(autouse=True)
def one_at_a_time(settings) -> None:
    settings.AIHUMMER_EVIDENCE_CONCURRENCY = 1  # threads cannot see the test's transaction


@pytest.fixture
def agent(workspace, ada, echo_preset):
    return make_camille(workspace, ada)


@pytest.fixture
def proposal(agent, alice):
    make_cases(agent, alice)
    version = propose_long(agent, alice, reason="détails")
    evidence_run_execute(run_id=EvidenceRun.objects.get(version=version).pk)
    return version


def change_form(agent, **extra: str) -> dict:
    return {
        "name": agent.name,
        "description": "",
        "preset": "",
        "is_active": "on",
        "sections-TOTAL_FORMS": "0",
        "sections-INITIAL_FORMS": "0",
        "skills-TOTAL_FORMS": "0",
        "skills-INITIAL_FORMS": "0",
        "test_cases-TOTAL_FORMS": "1",
        "test_cases-INITIAL_FORMS": "0",
        **extra,
    }


def test_an_admin_adds_a_case_inline_through_the_service(client, ada, agent):
    client.force_login(ada)
    url = reverse("admin:agents_agent_change", args=[agent.pk])
    assert 'id="test_cases-group"' in client.get(url).content.decode()

    response = client.post(
        url,
        change_form(
            agent,
            **{
                "test_cases-0-name": "salue",
                "test_cases-0-is_active": "on",
                "test_cases-0-message": "Bonjour",
                "test_cases-0-contains": "Bonjour\n\n  Camille ",
                "test_cases-0-regex": r"#sp=\w{8}",
            },
        ),
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    case = AgentTestCase.objects.get(agent=agent)
    assert (case.name, case.contains, case.regex, case.is_active) == (
        "salue",
        ["Bonjour", "Camille"],
        r"#sp=\w{8}",
        True,
    )
    assert case.history.get().history_change_reason == "admin:ada: created"


def test_a_bad_regex_inline_is_a_field_error_and_saves_nothing(client, ada, agent):
    client.force_login(ada)

    response = client.post(
        reverse("admin:agents_agent_change", args=[agent.pk]),
        change_form(agent, **{"test_cases-0-name": "x", "test_cases-0-message": "Bonjour", "test_cases-0-regex": "(a"}),
    )

    assert response.status_code == 200
    assert "Not a valid regular expression: missing ): (a (RE2 syntax" in response.content.decode()
    assert not AgentTestCase.objects.exists()


@pytest.mark.parametrize(
    ("bad_row", "said"),
    [
        ({"test_cases-1-name": "vide", "test_cases-1-message": ""}, "Give either a message or a structured input"),
        (  # refused by the service, after the rename and the first row were written
            {"test_cases-1-name": "regex", "test_cases-1-message": "Bonjour", "test_cases-1-regex": "(a"},
            "Not a valid regular expression: missing ): (a (RE2 syntax",
        ),
    ],
)
def test_a_page_with_an_invalid_inline_row_saves_nothing(client, ada, agent, bad_row, said):
    client.force_login(ada)
    history = (agent.history.count(), AgentTestCase.history.count())
    good_row = {"test_cases-0-name": "salue", "test_cases-0-message": "Bonjour", "test_cases-0-is_active": "on"}

    response = client.post(
        reverse("admin:agents_agent_change", args=[agent.pk]),
        change_form(agent, name="Renamed", **{"test_cases-TOTAL_FORMS": "2"}, **good_row, **bad_row),
    )

    assert response.status_code == 200
    assert said in response.content.decode()
    agent.refresh_from_db()
    assert agent.name == "Camille"
    assert not AgentTestCase.objects.exists()
    assert (agent.history.count(), AgentTestCase.history.count()) == history


def test_the_review_page_shows_the_evidence_without_a_click(client, bob, proposal):
    client.force_login(bob)

    page = client.get(reverse("admin:agents_promptversion_review", args=[proposal.pk])).content.decode()

    assert "1/2 pass on candidate, 2/2 on live: 1 regression" in page
    assert page.count('class="aih-case aih-regression" data-case="budget"') == 1
    assert 'class="aih-case" data-case="salue"' in page
    assert 'id="aih-judge"' not in page  # no judge preset in this workspace


def test_approve_has_the_regression_beside_it(client, bob, proposal):
    client.force_login(bob)

    page = client.get(reverse("admin:agents_promptversion_review", args=[proposal.pk])).content.decode()

    actions = page[page.index('name="_approve"') : page.index('name="_reject"')]
    warning = re.search(r'id="aih-approve-warning"[^>]*>(.*?)</span>', actions, re.S)
    assert " ".join(warning.group(1).split()) == "1 regression: budget passes on live and fails on v2."


def test_evidence_turns_are_filtered_by_origin_and_link_to_the_review(client, bob, proposal):
    client.force_login(bob)
    turns = set(CaseResult.objects.filter(run__version=proposal).values_list("turn_id", flat=True))

    listed = client.get(reverse("admin:agents_agentturn_changelist"), {"origin": "evidence"}).context["cl"]
    tried = client.get(reverse("admin:agents_agentturn_changelist"), {"origin": "try_it"}).context["cl"]

    assert {turn.pk for turn in listed.result_list} == turns and len(turns) == 4  # 2 cases, live and candidate
    assert not set(tried.result_list)  # evidence runs dry, but is not try-it
    page = client.get(reverse("admin:agents_agentturn_change", args=[min(turns)])).content.decode()
    review = reverse("admin:agents_promptversion_review", args=[proposal.pk])
    assert f'<a href="{review}#aih-evidence" id="aih-turn-evidence">evidence run</a>' in page


def test_approve_has_no_warning_without_a_regression(client, bob, agent, alice):
    version = prompt_version_propose(
        agent=agent, changes={"sections": [{"key": "ton", "body": "Sois claire."}]}, actor=Actor.for_user(alice)
    )
    client.force_login(bob)

    page = client.get(reverse("admin:agents_promptversion_review", args=[version.pk])).content.decode()

    assert 'name="_approve"' in page and 'id="aih-approve-warning"' not in page


def test_the_agent_page_counts_its_test_cases_and_says_proposals_wait(client, ada, agent, proposal, alice):
    other = agent_create(
        workspace=agent.workspace, actor=Actor.for_user(ada), key="autre", name="Autre", snapshot=CAMILLE
    )
    prompt_version_propose(agent=other, changes={"sections": []}, actor=Actor.for_user(alice))  # another agent's
    client.force_login(ada)

    page = client.get(reverse("admin:agents_agent_change", args=[agent.pk])).content.decode()

    assert re.search(r'class="inline-heading">\s*Test cases \(2\)\s*</h2>', page)
    assert re.search(r'<td class="field-order">\s*<p>1</p>', page)  # 1-based, as the propose form numbers them
    banner = re.search(r'id="aih-pending-banner">(.*?)</p>', page, re.S).group(1)
    queue = reverse("admin:agents_promptversion_changelist")
    assert "1 proposal waits for review." in banner
    assert f'href="{queue}?agent__id__exact={agent.pk}"' in banner
    listed = client.get(f"{queue}?agent__id__exact={agent.pk}").content.decode()
    assert f"camille v{proposal.number}" in listed and "autre v" not in listed


def test_the_agent_page_shows_the_runtime_policy_as_sections_with_the_json_a_click_away(client, ada, workspace):
    policy = {"children": {"max_concurrent": 4}}
    agent = agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="policee",
        name="Policée",
        snapshot={**CAMILLE, "runtime_policy": policy},
    )
    client.force_login(ada)

    page = client.get(reverse("admin:agents_agent_change", args=[agent.pk])).content.decode()

    form = page[page.index('id="aih-policy"') :]
    assert form.count('class="aih-policy-section"') == 8  # general and the seven blocks
    assert '<tr class="aih-policy-changed" data-setting="children.max_concurrent">' in form
    assert '<tr class="aih-policy-default" data-setting="children.max_per_parent">' in form
    changed = re.search(r'data-setting="children.max_concurrent">(.*?)</tr>', form, re.S).group(1)
    assert "<strong><code>4</code></strong>" in changed and "<td><code>2</code></td>" in changed
    json_block = re.search(r'<details id="aih-policy-json"><summary>As JSON</summary><pre[^>]*>(.*?)</pre>', form, re.S)
    assert "&quot;max_concurrent&quot;: 4" in json_block.group(1)


def test_an_agent_page_without_pending_proposals_has_no_banner(client, ada, agent):
    client.force_login(ada)

    page = client.get(reverse("admin:agents_agent_change", args=[agent.pk])).content.decode()

    assert "aih-pending-banner" not in page
    assert re.search(r'class="inline-heading">\s*Test cases \(0\)\s*</h2>', page)


def test_a_failing_judge_shows_judge_unavailable_and_no_score(client, bob, proposal):
    EvidenceRun.objects.filter(version=proposal).update(
        judge_status="unavailable", judge_error="The judge answered HTTP 503: busy"
    )
    client.force_login(bob)

    page = client.get(reverse("admin:agents_promptversion_review", args=[proposal.pk])).content.decode()

    assert 'id="aih-judge-badge">judge unavailable</span>' in page
    assert "The judge answered HTTP 503: busy" in page
    # No score badge: "N/10 band" (a bare "/10" could be any URL id starting with 10).
    assert not re.search(r">\d+/10 ", page)


def test_a_judgement_shows_its_score_and_band(client, bob, proposal):
    judgement = {
        "overall": 6,
        "clarity": 7,
        "specificity": 5,
        "safety": 9,
        "consistency": 6,
        "rationale": "Plus long.",
        "strengths": ["Détaillé"],
        "weaknesses": ["Trop long"],
    }
    EvidenceRun.objects.filter(version=proposal).update(
        judge_status="done", judge_preset_key="judge", judgement=judgement
    )
    client.force_login(bob)

    page = client.get(reverse("admin:agents_promptversion_review", args=[proposal.pk])).content.decode()

    assert "6/10 improvable" in page and "aih-judge-improvable" in page
    assert "<li>Trop long</li>" in page


def test_blocked_approval_asks_to_confirm_the_failing_cases_by_name(client, bob, workspace, proposal):
    workspace.block_approval_on_regressions = True
    workspace.save()
    client.force_login(bob)
    url = reverse("admin:agents_promptversion_review", args=[proposal.pk])

    page = client.get(url).content.decode()
    refused = client.post(url, {"_approve": "1", "note": ""}, follow=True).content.decode()
    approved = client.post(url, {"_approve": "1", "note": "", "confirm_regressions": "budget"})

    assert '<input type="checkbox" name="confirm_regressions" value="budget">' in page
    assert "Version 2 fails test cases that pass on live: budget." in refused
    assert approved.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "approved"


def test_the_queue_shows_the_evidence_column_and_filters_regressions(client, bob, agent, alice, proposal):
    other = prompt_version_propose(agent=agent, changes={"onboarding": "Bonjour !"}, actor=Actor.for_user(alice))
    client.force_login(bob)
    url = reverse("admin:agents_promptversion_changelist")

    page = client.get(url).content.decode()
    filtered = client.get(url, {"evidence": "regressions"}).content.decode()

    assert ">1 regression</span>" in page and ">running</span>" in page  # `other`'s run is queued
    assert "camille v2" in filtered and "camille v3" not in filtered
    assert EvidenceRun.objects.filter(version=other).get().status == "queued"


def test_the_workspace_page_sets_the_judge_and_refuses_a_preset_without_structured_output(
    client, ada, workspace, echo_preset
):
    client.force_login(ada)
    url = reverse("admin:aihummer_workspace_change", args=[workspace.pk])
    data = {
        "name": workspace.name,
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "invitations-TOTAL_FORMS": "0",  # the invitations inline (issue 10)
        "invitations-INITIAL_FORMS": "0",
    }

    page = client.get(url).content.decode()
    refused = client.post(url, {**data, "judge_preset": echo_preset.pk}).content.decode()
    saved = client.post(url, {**data, "block_approval_on_regressions": "on"})

    assert 'name="judge_preset"' in page and 'name="block_approval_on_regressions"' in page
    assert "The judge needs structured output: choose an OpenAI or compatible preset." in refused
    assert saved.status_code == 302
    workspace.refresh_from_db()
    assert (workspace.judge_preset, workspace.block_approval_on_regressions) == (None, True)
