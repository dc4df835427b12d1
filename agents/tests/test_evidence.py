"""Evidence on proposals: saved test cases (services), their runs on the candidate and
on live through the echo provider, re-runs when the cases change, and the judge
against a local OpenAI-protocol server."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from agents.models import AgentTestCase, CaseResult, DebugLog, EvidenceRun
from agents.runtime.evidence import evidence_run_execute
from agents.runtime.providers.echo import system_prompt_hash8
from agents.services import (
    UnconfirmedRegressions,
    agent_create,
    agent_test_case_create,
    agent_test_case_delete,
    agent_test_case_update,
    credential_create,
    evidence_regressions,
    evidence_request,
    preset_create,
    prompt_version_approve,
)
from agents.tests.helpers import LONG_SECTION, make_camille, make_cases, propose_long
from aihummer.actors import Actor
from aihummer.exceptions import NotFound
from aihummer.tests.factories import vault_preset
from workflows.tests.fake_openai import chat_completion, tokens

JUDGEMENT = {
    "overall": 6,
    "clarity": 7,
    "specificity": 5,
    "safety": 9,
    "consistency": 6,
    "rationale": "Longer, and one case regressed.",
    "strengths": ["More detail"],
    "weaknesses": ["Blows the token budget"],
}


@pytest.fixture(autouse=True)
def one_at_a_time(settings) -> None:
    # Threads get their own connections and cannot see a test's transaction; the
    # parallel path is tested through the real worker (test_evidence_worker.py).
    settings.AIHUMMER_EVIDENCE_CONCURRENCY = 1


@pytest.fixture
def agent(workspace, ada, echo_preset):
    return make_camille(workspace, ada)


@pytest.fixture
def cases(agent, alice):
    return make_cases(agent, alice)


def run_now(django_capture_on_commit_callbacks, make):
    """Do `make()` and run what it enqueued on commit, here and now (no broker: inline)."""
    with django_capture_on_commit_callbacks(execute=True):
        return make()


# --- cases --------------------------------------------------------------------------------
def test_a_case_is_created_with_its_assertions_and_history(agent, alice):
    case = agent_test_case_create(
        agent=agent,
        actor=Actor.for_user(alice),
        name="salue",
        message="Bonjour",
        assertions={"contains": ["Bonjour"], "regex": r"#sp=\w{8}", "max_cost_usd": "0.01"},
    )

    case.refresh_from_db()
    assert (case.contains, case.regex, str(case.max_cost_usd)) == (["Bonjour"], r"#sp=\w{8}", "0.010000")
    assert case.history.get().history_change_reason == "admin:alice: created"


def test_a_bad_regex_is_a_field_error_and_nothing_is_saved(agent, alice):
    with pytest.raises(ValidationError) as caught:
        agent_test_case_create(
            agent=agent, actor=Actor.for_user(alice), name="x", message="Bonjour", assertions={"regex": "(a"}
        )

    assert caught.value.message_dict == {
        "regex": ["Not a valid regular expression: missing ): (a (RE2 syntax: no backreferences or lookarounds)."]
    }
    assert not AgentTestCase.objects.exists()


def test_a_case_takes_a_message_or_a_structured_input_not_both(agent, alice):
    actor = Actor.for_user(alice)
    with pytest.raises(ValidationError) as caught:
        agent_test_case_create(agent=agent, actor=actor, name="x", message="Bonjour", input={"q": 1})
    assert caught.value.message_dict == {
        "message": ["Give either a message or a structured input (a JSON object), not both."]
    }
    with pytest.raises(ValidationError) as caught:
        agent_test_case_create(agent=agent, actor=actor, name="x", input=[1, 2])
    assert caught.value.message_dict == {"input": ["Give a non-empty JSON object."]}

    case = agent_test_case_create(agent=agent, actor=actor, name="x", input={"ville": "Lyon", "jours": 2})
    assert case.prompt == '{"jours": 2, "ville": "Lyon"}'


def test_case_names_are_unique_per_agent_and_unknown_fields_are_refused(agent, alice, cases):
    actor = Actor.for_user(alice)
    with pytest.raises(ValidationError) as caught:
        agent_test_case_create(agent=agent, actor=actor, name="salue", message="Salut")
    assert caught.value.message_dict == {"name": ["Agent 'camille' already has a test case named 'salue'."]}
    with pytest.raises(ValidationError) as caught:
        agent_test_case_update(case=cases[0], actor=actor, assertions={"contain": ["x"]})
    assert list(caught.value.message_dict) == ["contain"]


def test_viewers_may_not_edit_cases_and_strangers_do_not_see_the_agent(agent, vic, charlie):
    with pytest.raises(PermissionDenied):
        agent_test_case_create(agent=agent, actor=Actor.for_user(vic), name="x", message="Bonjour")
    with pytest.raises(NotFound):
        agent_test_case_create(agent=agent, actor=Actor.for_user(charlie), name="x", message="Bonjour")


def test_sandbox_agents_may_have_cases_without_history(workspace, ada, echo_preset):
    actor = Actor.for_user(ada)
    sandbox = agent_create(workspace=workspace, actor=actor, key="sb_a", name="SB", is_sandbox=True)

    case = agent_test_case_create(agent=sandbox, actor=actor, name="salue", message="Bonjour")

    assert case.pk and not case.history.exists()


def test_update_replaces_the_assertions(cases, alice):
    case = agent_test_case_update(case=cases[0], actor=Actor.for_user(alice), assertions={"min_length": 3})

    case.refresh_from_db()
    assert (case.contains, case.case_insensitive, case.min_length) == ([], False, 3)


# --- runs ---------------------------------------------------------------------------------
def test_a_proposal_runs_each_case_on_the_candidate_and_on_live(
    agent, alice, cases, django_capture_on_commit_callbacks
):
    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))

    run = EvidenceRun.objects.get(version=proposal)
    assert (run.status, run.trigger, run.live_version, run.judge_status) == (
        "done",
        "proposed",
        agent.live_version,
        "none",
    )
    results = {(r.case_name, r.side): r for r in run.results.select_related("turn")}
    assert sorted(results) == [("budget", "candidate"), ("budget", "live"), ("salue", "candidate"), ("salue", "live")]
    candidate, live = results[("salue", "candidate")], results[("salue", "live")]
    # The #sp= hash says which version answered: each is the hash of that turn's own system prompt.
    for result, version in ((candidate, proposal), (live, agent.live_version)):
        log = DebugLog.objects.get(turn=result.turn)
        assert result.answer == f"[echo echo-1] Bonjour #sp={system_prompt_hash8(log.system_prompt)}"
        assert (result.version, result.version_number, result.turn.dry_run) == (version, version.number, True)
        assert result.turn.actor_source == "task:evidence"
    assert LONG_SECTION["body"][:40] in DebugLog.objects.get(turn=candidate.turn).system_prompt
    assert LONG_SECTION["body"][:40] not in DebugLog.objects.get(turn=live.turn).system_prompt
    assert candidate.status == live.status == "passed"
    assert candidate.checks == [{"assertion": "contains", "expected": "bonjour", "passed": True, "detail": ""}]
    assert candidate.tokens == candidate.turn.input_tokens + candidate.turn.output_tokens


def test_a_case_that_passes_live_and_fails_on_the_candidate_is_a_regression(
    agent, alice, cases, django_capture_on_commit_callbacks
):
    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))

    run = EvidenceRun.objects.get(version=proposal)
    budget = run.results.get(case_name="budget", side="candidate")
    assert budget.status == "failed"
    assert budget.checks == [
        {"assertion": "max_tokens", "expected": "400", "passed": False, "detail": f"{budget.tokens} tokens"}
    ]
    assert run.results.get(case_name="budget", side="live").status == "passed"
    assert (run.cases_total, run.candidate_passed, run.live_passed, run.regressions) == (2, 1, 2, 1)
    assert run.summary == "1/2 pass on candidate, 2/2 on live: 1 regression"
    assert evidence_regressions(run) == ["budget"]


def test_a_failing_turn_is_an_error_result_not_a_crash(agent, alice, django_capture_on_commit_callbacks):
    agent_test_case_create(agent=agent, actor=Actor.for_user(alice), name="panne", message="@error unavailable")

    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))

    result = CaseResult.objects.get(run__version=proposal, side="candidate")
    assert (result.status, result.error) == (
        "error",
        "Provider error (unavailable): echo was scripted to fail with unavailable",
    )
    assert EvidenceRun.objects.get(version=proposal).summary == "0/1 pass on candidate, 0/1 on live: no regression"


def test_no_case_and_no_judge_means_no_run(agent, alice, django_capture_on_commit_callbacks):
    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))

    assert not EvidenceRun.objects.filter(version=proposal).exists()


def test_changing_the_cases_reruns_the_open_proposals_and_keeps_the_old_results(
    agent, alice, cases, django_capture_on_commit_callbacks
):
    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))
    first = EvidenceRun.objects.get(version=proposal)

    run_now(
        django_capture_on_commit_callbacks,
        lambda: agent_test_case_update(case=cases[1], actor=Actor.for_user(alice), assertions={"max_tokens": 5000}),
    )

    second = EvidenceRun.objects.exclude(pk=first.pk).get(version=proposal)
    assert (second.trigger, second.summary) == ("cases_changed", "2/2 pass on candidate, 2/2 on live: no regression")
    assert first.results.count() == 4 and first.regressions == 1

    run_now(
        django_capture_on_commit_callbacks, lambda: agent_test_case_delete(case=cases[1], actor=Actor.for_user(alice))
    )
    assert EvidenceRun.objects.filter(version=proposal).first().cases_total == 1
    assert first.results.filter(case__isnull=True, case_name="budget").count() == 2


def test_a_queued_run_is_not_queued_twice_and_runs_once(agent, alice, cases):
    proposal = propose_long(agent, alice)  # the on-commit callbacks never run here
    run = EvidenceRun.objects.get(version=proposal)

    assert evidence_request(version=proposal, trigger="requested") is None
    assert evidence_run_execute(run_id=run.pk).status == "done"
    assert evidence_run_execute(run_id=run.pk) is None
    assert run.results.count() == 4


# --- the judge ----------------------------------------------------------------------------
@pytest.fixture
def judge(workspace, ada, httpserver, settings):
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 0
    preset = vault_preset(
        workspace,
        httpserver.url_for("/v1"),
        secret="sk-judge-secret-0123456789",
        key="judge",
        model="gpt-4.1-mini",
        by=ada,
    )
    workspace.judge_preset = preset
    workspace.full_clean()
    workspace.save()
    return preset


def judge_answer(content: str) -> dict:
    return chat_completion(content, model="gpt-4.1-mini", usage=tokens(10, 10))


def test_the_judge_scores_the_proposal(agent, alice, cases, judge, httpserver, django_capture_on_commit_callbacks):
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(
        judge_answer(json.dumps(JUDGEMENT))
    )

    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))

    run = EvidenceRun.objects.get(version=proposal)
    assert (run.judge_status, run.judge_preset_key, run.judgement, run.judge_error) == ("done", "judge", JUDGEMENT, "")
    sent = json.loads(httpserver.log[0][0].get_data())["messages"][1]["content"]
    assert "- budget: pass → fail; proposal answered: [echo echo-1] Résume" in sent
    assert LONG_SECTION["body"][:40] in sent.split("## Proposed prompt")[1]


def test_a_failing_judge_is_unavailable_and_the_cases_still_count(
    agent, alice, cases, judge, httpserver, django_capture_on_commit_callbacks
):
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(
        {"error": {"message": "The server is overloaded."}}, status=503
    )

    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))

    run = EvidenceRun.objects.get(version=proposal)
    assert (run.status, run.regressions) == ("done", 1)
    assert (run.judge_status, run.judgement) == ("unavailable", {})
    assert run.judge_error == "The judge answered HTTP 503: The server is overloaded."


def test_a_judge_alone_runs_without_cases(agent, alice, judge, httpserver, django_capture_on_commit_callbacks):
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(
        judge_answer(json.dumps(JUDGEMENT))
    )

    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))

    run = EvidenceRun.objects.get(version=proposal)
    assert (run.cases_total, run.summary, run.judgement["overall"]) == (0, "No test cases.", 6)


def test_the_judge_preset_must_be_an_openai_preset_of_the_workspace(workspace, other_workspace, echo_preset, ada, root):
    workspace.judge_preset = echo_preset
    with pytest.raises(ValidationError) as caught:
        workspace.full_clean()
    assert caught.value.message_dict == {
        "judge_preset": ["The judge needs structured output: choose an OpenAI or compatible preset."]
    }
    foreign = preset_create(
        workspace=other_workspace,
        actor=Actor.for_user(root),
        key="j",
        name="J",
        provider_name="openai",
        model="gpt-4.1",
    )
    workspace.judge_preset = foreign
    with pytest.raises(ValidationError) as caught:
        workspace.full_clean()
    assert caught.value.message_dict == {"judge_preset": ["Unknown preset."]}


# --- the approval policy ------------------------------------------------------------------
def test_a_workspace_that_blocks_on_regressions_needs_the_failing_cases_named(
    workspace, agent, alice, bob, cases, django_capture_on_commit_callbacks
):
    workspace.block_approval_on_regressions = True
    workspace.save()
    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))
    reviewer = Actor.for_user(bob)

    with pytest.raises(UnconfirmedRegressions) as caught:
        prompt_version_approve(version=proposal, actor=reviewer)
    assert str(caught.value) == (
        "Version 2 fails test cases that pass on live: budget. Workspace 'acme' blocks approval on regressions: "
        "confirm these cases to approve."
    )
    assert caught.value.extra == {"regressions": ["budget"]}
    with pytest.raises(UnconfirmedRegressions):
        prompt_version_approve(version=proposal, actor=reviewer, confirm_regressions=["salue"])
    proposal.refresh_from_db()
    assert proposal.status == "pending"

    approved = prompt_version_approve(version=proposal, actor=reviewer, confirm_regressions=["budget"])

    assert approved.status == "approved"


def test_rest_approve_confirms_the_regressions_a_blocking_workspace_names(
    workspace, agent, alice, bob, cases, api_as, django_capture_on_commit_callbacks
):
    workspace.block_approval_on_regressions = True
    workspace.save()
    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))
    url = f"/v1/admin/prompt-versions/{proposal.pk}/approve"
    reviewer = api_as(bob)

    blocked = reviewer.post(url, {})
    approved = reviewer.post(url, {"confirm_regressions": ["budget"]})

    assert blocked.status_code == 409
    assert (blocked.json()["error"]["code"], blocked.json()["error"]["regressions"]) == (
        "unconfirmed_regressions",
        ["budget"],
    )
    assert (approved.status_code, approved.json()["status"]) == (200, "approved")


def test_without_the_policy_a_regression_never_blocks(agent, alice, bob, cases, django_capture_on_commit_callbacks):
    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))

    assert prompt_version_approve(version=proposal, actor=Actor.for_user(bob)).status == "approved"


def test_a_judge_echoing_secrets_is_stored_and_shown_redacted(
    agent, alice, vic, ada, workspace, judge, httpserver, client, django_capture_on_commit_callbacks
):
    """Issue 24, item 3: the judge's own key, another secret of the vault (of no known
    shape) and a key's shape are all redacted before the judgement is stored."""
    credential_create(workspace=workspace, key="other", secret="other-secret-without-shape", actor=Actor.for_user(ada))
    echoed = {
        **JUDGEMENT,
        "rationale": "My key is sk-judge-secret-0123456789 and theirs other-secret-without-shape.",
        "strengths": ["Bearer sk-judge-secret-0123456789", "sk-proj-of-no-credential-0000"],  # a key's shape
    }
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(judge_answer(json.dumps(echoed)))

    proposal = run_now(django_capture_on_commit_callbacks, lambda: propose_long(agent, alice))
    client.force_login(vic)
    page = client.get(f"/admin/agents/promptversion/{proposal.pk}/review/").content.decode()

    run = EvidenceRun.objects.get(version=proposal)
    assert run.judgement["rationale"] == "My key is [redacted] and theirs [redacted]."
    assert run.judgement["strengths"] == ["Bearer [redacted]", "[redacted]"]
    assert "sk-judge-secret" not in page and "other-secret-without-shape" not in page
    assert "My key is [redacted] and theirs [redacted]." in page
