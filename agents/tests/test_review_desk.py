"""The review desk in the admin: the queue, the review page, decisions, proposals,
versions, restore and clone — rights on every view, and constant query counts."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents.models import Agent, CaseResult, EvidenceRun, PromptVersion
from agents.services import agent_create, prompt_version_approve, prompt_version_propose
from aihummer.actors import Actor
from aihummer.models import Membership
from aihummer.tests.factories import make_echo_preset

SNAPSHOT = {
    "identity": {"name": "Camille", "role": "Rédactrice"},
    "sections": [
        {"key": "methode", "title": "Méthode", "body": "Un plan en trois points."},
        {"key": "sources", "title": "Sources", "body": "Aucun chiffre inventé."},
    ],
}


def as_actor(user):
    return Actor.for_user(user)


def edit(body: str) -> dict:
    return {"sections": [{**SNAPSHOT["sections"][0], "body": body}, SNAPSHOT["sections"][1]]}


@pytest.fixture
def agent(workspace, ada):
    make_echo_preset(workspace, by=as_actor(ada))
    return agent_create(workspace=workspace, actor=as_actor(ada), key="redacteur", name="Rédacteur", snapshot=SNAPSHOT)


@pytest.fixture
def proposal(agent, alice):
    return prompt_version_propose(
        agent=agent, changes=edit("Un plan en deux points."), actor=as_actor(alice), reason="court"
    )


def review_url(version) -> str:
    return reverse("admin:agents_promptversion_review", args=[version.pk])


# --- the queue ------------------------------------------------------------------------
def test_the_queue_shows_pending_proposals_by_default_with_their_columns(client, bob, proposal, ada, agent):
    prompt_version_propose(agent=agent, changes=edit("Live now."), actor=as_actor(ada), mode="live")
    client.force_login(bob)

    page = client.get(reverse("admin:agents_promptversion_changelist")).content.decode()

    assert f'href="{review_url(proposal)}">redacteur v2</a>' in page
    assert "admin:alice" in page and "court" in page
    assert "1 change, +" in page
    assert "aih-stale-flag" in page  # stale: the live version moved since it was proposed (beside its name)
    assert "column-workspace" not in page  # bob reads one workspace: no column to say its name
    assert '<div class="nav-sidebar' not in page and 'id="nav-sidebar"' not in page  # the queue gets the width
    assert ">wording · 0/1</span>" in page  # its tier, and its approvals of those it needs
    assert "redacteur v3" not in page  # approved: not in the default (pending) view
    everything = client.get(reverse("admin:agents_promptversion_changelist") + "?status=all").content.decode()
    assert "redacteur v3" in everything


def test_the_pending_count_is_in_the_header_and_on_the_index(client, bob, proposal):
    client.force_login(bob)

    page = client.get(reverse("admin:index")).content.decode()

    assert 'data-pending="1"' in page
    assert "<strong>1</strong> proposal waits for your decision." in page


def test_charlie_sees_nothing_of_another_workspace(client, charlie, proposal, agent):
    client.force_login(charlie)

    listing = client.get(reverse("admin:agents_promptversion_changelist") + "?status=all").content.decode()

    assert "redacteur" not in listing
    assert 'data-pending="0"' in listing
    for url in (
        review_url(proposal),
        reverse("admin:agents_agent_propose", args=[agent.pk]),
        reverse("admin:agents_agent_versions", args=[agent.pk]),
        reverse("admin:agents_agent_clone", args=[agent.pk, 1]),
    ):
        assert client.get(url).status_code == 404, url
    assert client.post(reverse("admin:agents_agent_restore", args=[agent.pk, 1])).status_code == 404


# --- deciding on the review page ------------------------------------------------------
def test_the_review_page_shows_the_diff_and_the_rendered_prompts(client, bob, proposal):
    client.force_login(bob)

    page = client.get(review_url(proposal)).content.decode()

    assert "What approval would change (live v1 → v2)" in page
    assert "<del>trois</del>" in page and "<ins>deux</ins>" in page
    assert 'id="aih-prompt-before"' in page and 'id="aih-prompt-after"' in page
    assert 'name="_approve"' in page


def test_bob_approves_from_the_review_page(client, bob, proposal):
    client.force_login(bob)

    response = client.post(review_url(proposal), {"note": "Bien", "_approve": "1"}, follow=True)

    proposal.refresh_from_db()
    assert (proposal.status, proposal.reviewed_by, proposal.review_note) == ("approved", bob, "Bien")
    assert Agent.objects.get(pk=proposal.agent_id).live_version == proposal
    assert "redacteur v2 approved." in [str(m) for m in response.context["messages"]]


def test_rejecting_needs_a_note(client, bob, proposal):
    client.force_login(bob)

    refused = client.post(review_url(proposal), {"note": "", "_reject": "1"})
    rejected = client.post(review_url(proposal), {"note": "Trop court", "_reject": "1"})

    assert "Say why you reject it: the proposer reads this note." in refused.content.decode()
    assert rejected.status_code == 302
    proposal.refresh_from_db()
    assert (proposal.status, proposal.review_note) == ("rejected", "Trop court")


def test_alice_may_propose_but_not_decide(client, alice, proposal):
    client.force_login(alice)

    page = client.get(review_url(proposal)).content.decode()
    response = client.post(review_url(proposal), {"_approve": "1"})

    assert "approving or rejecting needs the reviewer role" in page
    assert 'name="_approve"' not in page
    assert "approving or rejecting needs the reviewer role" in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == "pending"


def test_bob_cannot_decide_his_own_proposal(client, bob, agent):
    own = prompt_version_propose(agent=agent, changes=edit("Mien."), actor=as_actor(bob))
    client.force_login(bob)

    page = client.get(review_url(own)).content.decode()
    client.post(review_url(own), {"_approve": "1"})

    assert "You proposed this version: another person must decide it (four eyes)." in page
    own.refresh_from_db()
    assert own.status == "pending"


def test_a_stale_proposal_needs_the_confirmation(client, bob, ada, agent, proposal):
    prompt_version_propose(agent=agent, changes=edit("Autre chose."), actor=as_actor(ada), mode="live")
    client.force_login(bob)

    page = client.get(review_url(proposal)).content.decode()
    refused = client.post(review_url(proposal), {"_approve": "1"}, follow=True)
    approved = client.post(review_url(proposal), {"_approve": "1", "confirm_stale": "on"})

    assert "Stale proposal" in page and "reverts 1 version:\n       v3" in page

    assert "approving would revert v3" in " ".join(str(m) for m in refused.context["messages"])
    assert approved.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "approved"


def test_try_it_runs_the_live_version_and_the_proposal_side_by_side(client, bob, proposal, agent):
    client.force_login(bob)

    page = client.post(review_url(proposal), {"_try": "1", "message": "Bonjour"}).content.decode()

    assert page.count("[echo echo-1] Bonjour #sp=") == 2
    turns = list(proposal.agent.turns.order_by("pk"))
    assert [(t.version_number, t.dry_run, t.status) for t in turns] == [(1, True, "succeeded"), (2, True, "succeeded")]
    assert turns[0].answer != turns[1].answer
    # Live | Candidate, in the try-it pane as in the prompt panes above it.
    trials = page[page.index('id="aih-trials"') :]
    assert trials.index("<h3>Live v1</h3>") < trials.index("<h3>Candidate v2</h3>")
    prompts = page[page.index('id="aih-prompts"') :]
    assert prompts.index("<h3>Live v1</h3>") < prompts.index("<h3>Candidate v2</h3>")


# --- bulk actions ---------------------------------------------------------------------
def test_bulk_approve_reports_each_row(client, bob, alice, agent, workspace):
    other = agent_create(
        workspace=workspace, actor=Actor.for_operator(), key="critique", name="Critique", snapshot=SNAPSHOT
    )
    by_alice = prompt_version_propose(agent=agent, changes=edit("A"), actor=as_actor(alice))
    by_bob = prompt_version_propose(agent=other, changes=edit("B"), actor=as_actor(bob))
    client.force_login(bob)
    changelist = reverse("admin:agents_promptversion_changelist")
    selected = {"action": "approve_selected", "_selected_action": [by_alice.pk, by_bob.pk]}

    confirmation = client.post(changelist, selected)
    response = client.post(changelist, {**selected, "apply": "1", "note": "ok"}, follow=True)

    assert "Approve proposals: 2 selected" in confirmation.content.decode()
    reported = [str(m) for m in response.context["messages"]]
    assert "redacteur v2: approved." in reported
    assert "critique v2: refused. You proposed this version: another person must decide it (four eyes)." in reported
    assert PromptVersion.objects.get(pk=by_alice.pk).status == "approved"
    assert PromptVersion.objects.get(pk=by_bob.pk).status == "pending"


def test_bulk_reject_needs_one_note_for_all(client, bob, proposal):
    client.force_login(bob)
    changelist = reverse("admin:agents_promptversion_changelist")
    selected = {"action": "reject_selected", "_selected_action": [proposal.pk], "apply": "1"}

    without_note = client.post(changelist, {**selected, "note": ""})
    with_note = client.post(changelist, {**selected, "note": "Pas clair"})

    assert "Say why you reject them" in without_note.content.decode()
    assert with_note.status_code == 302
    proposal.refresh_from_db()
    assert (proposal.status, proposal.review_note) == ("rejected", "Pas clair")


def test_editors_have_no_bulk_decisions(client, alice, proposal):
    client.force_login(alice)
    changelist = reverse("admin:agents_promptversion_changelist")

    page = client.get(changelist).content.decode()
    client.post(changelist, {"action": "approve_selected", "_selected_action": [proposal.pk], "apply": "1"})

    assert "approve_selected" not in page
    proposal.refresh_from_db()
    assert proposal.status == "pending"


# --- propose, versions, restore, clone ------------------------------------------------
def propose_form_data(snapshot: dict, **overrides: object) -> dict:
    identity = snapshot["identity"]
    data = {
        "identity_name": identity["name"],
        "role": identity["role"],
        "language": identity["language"],
        "goals": "\n".join(identity["goals"]),
        "persona": identity["persona"],
        "system_prompt": snapshot["system_prompt"] or "",
        "onboarding": snapshot["onboarding"],
        "allowed_tool_names": snapshot["allowed_tool_names"],
        "runtime_policy": json.dumps(snapshot["runtime_policy"]),
        "reason": "because",
        "sections-TOTAL_FORMS": str(len(snapshot["sections"])),
        "sections-INITIAL_FORMS": str(len(snapshot["sections"])),
        "skills-TOTAL_FORMS": str(len(snapshot["skills"])),
        "skills-INITIAL_FORMS": str(len(snapshot["skills"])),
    }
    for index, section in enumerate(snapshot["sections"]):
        data |= {
            f"sections-{index}-key": section["key"],
            f"sections-{index}-title": section["title"],
            f"sections-{index}-body": section["body"],
            f"sections-{index}-ORDER": str(index + 1),
        }
        if section["enabled"]:
            data[f"sections-{index}-enabled"] = "on"
    return data | overrides


def test_alice_proposes_a_section_edit_through_the_form(client, alice, agent):
    client.force_login(alice)
    url = reverse("admin:agents_agent_propose", args=[agent.pk])
    snapshot = agent.live_version.snapshot

    page = client.get(url).content.decode()
    response = client.post(url, propose_form_data(snapshot, **{"sections-0-body": "Un plan clair."}))

    assert "Un plan en trois points." in page and "apply_now" not in page
    version = PromptVersion.objects.get(agent=agent, number=2)
    assert response.status_code == 302 and response.url == review_url(version)
    assert (version.status, version.source, version.reason) == ("pending", "admin:alice", "because")
    assert version.snapshot["sections"][0]["body"] == "Un plan clair."
    assert Agent.objects.get(pk=agent.pk).live_version.number == 1


def test_the_form_reorders_removes_and_adds_sections(client, alice, agent):
    client.force_login(alice)
    data = propose_form_data(agent.live_version.snapshot)
    data |= {
        "sections-0-ORDER": "3",
        "sections-1-DELETE": "on",
        "sections-TOTAL_FORMS": "3",
        "sections-2-key": "format",
        "sections-2-title": "Format",
        "sections-2-body": "Titre puis chapeau.",
        "sections-2-ORDER": "1",
        "sections-2-enabled": "on",
    }

    client.post(reverse("admin:agents_agent_propose", args=[agent.pk]), data)

    version = PromptVersion.objects.get(agent=agent, number=2)
    assert [(s["key"], s["position"]) for s in version.snapshot["sections"]] == [("format", 0), ("methode", 1)]


def test_a_bad_policy_in_the_form_is_a_field_error(client, alice, agent):
    client.force_login(alice)
    data = propose_form_data(agent.live_version.snapshot, runtime_policy='{"max_iterations": 999}')

    page = client.post(reverse("admin:agents_agent_propose", args=[agent.pk]), data).content.decode()

    assert "$.max_iterations: must be at most 256 (got 999)" in page
    assert PromptVersion.objects.filter(agent=agent).count() == 1


def test_an_unchanged_form_says_it_is_identical_to_live(client, alice, agent):
    client.force_login(alice)

    page = client.post(
        reverse("admin:agents_agent_propose", args=[agent.pk]), propose_form_data(agent.live_version.snapshot)
    )

    assert "Identical to live version 1; nothing recorded." in page.content.decode()


def test_a_publisher_may_apply_at_once(client, ada, agent):
    client.force_login(ada)
    data = propose_form_data(agent.live_version.snapshot, apply_now="on", **{"sections-0-body": "Direct."})

    client.post(reverse("admin:agents_agent_propose", args=[agent.pk]), data)

    assert Agent.objects.get(pk=agent.pk).sections.get(key="methode").body == "Direct."


def test_viewers_cannot_open_the_propose_form(client, vic, agent):
    client.force_login(vic)

    assert client.get(reverse("admin:agents_agent_propose", args=[agent.pk])).status_code == 403


def test_versions_restore_and_clone(client, alice, ada, bob, agent, proposal):
    prompt_version_approve(version=proposal, actor=as_actor(bob))
    client.force_login(alice)

    page = client.get(reverse("admin:agents_agent_versions", args=[agent.pk])).content.decode()
    client.post(reverse("admin:agents_agent_restore", args=[agent.pk, 1]))

    assert "(live)" in page and ">approved<" in page
    restored = PromptVersion.objects.get(agent=agent, number=3)
    assert (restored.status, restored.reason, restored.content_hash) == (
        "pending",
        "restore of v1",
        PromptVersion.objects.get(agent=agent, number=1).content_hash,
    )
    client.force_login(ada)
    response = client.post(reverse("admin:agents_agent_clone", args=[agent.pk, 2]), {"key": "copie", "name": "Copie"})
    clone = Agent.objects.get(key="copie")
    assert response.url == reverse("admin:agents_agent_change", args=[clone.pk])
    assert clone.live_version.snapshot == proposal.snapshot


# --- query counts ---------------------------------------------------------------------
@pytest.fixture
def busy_queue(workspace, other_workspace, bob, alice, ada, root):
    """Builds `count` pending proposals over three agents in two of bob's workspaces,
    all stale (three more were approved after them); returns the builder."""
    Membership.objects.create(user=bob, workspace=other_workspace, role=Membership.Role.REVIEWER)
    Membership.objects.create(user=alice, workspace=other_workspace, role=Membership.Role.EDITOR)
    operator = Actor.for_operator()
    agents = [
        agent_create(workspace=ws, actor=operator, key=key, name=key, snapshot=SNAPSHOT)
        for ws, key in ((workspace, "a"), (workspace, "b"), (other_workspace, "c"))
    ]

    def build(count: int) -> list:
        versions = [
            prompt_version_propose(
                agent=agents[i % 3], changes=edit(f"Proposal {i}"), actor=as_actor(alice), reason=f"r{i}"
            )
            for i in range(count + 3)
        ]
        # Approving the first proposal of each agent makes that agent's others stale.
        for version in versions[:3]:
            prompt_version_approve(version=version, actor=as_actor(bob), confirm_stale=True)
        give_evidence(versions[3:])
        return versions

    return build


def give_evidence(versions: list) -> None:
    """A finished evidence run with two cases per proposal, every other one with a
    regression, as the worker would have left them (the queue and page read rows)."""
    for index, version in enumerate(versions):
        regressed = index % 2 == 0
        run = EvidenceRun.objects.create(
            workspace_id=version.workspace_id,
            version=version,
            trigger="proposed",
            status="done",
            live_version=version.agent.live_version,
            cases_total=2,
            candidate_passed=1 if regressed else 2,
            live_passed=2,
            regressions=1 if regressed else 0,
        )
        CaseResult.objects.bulk_create(
            CaseResult(
                run=run,
                case_name=name,
                side=side,
                version=version if side == "candidate" else version.agent.live_version,
                version_number=version.number,
                status="failed" if regressed and name == "budget" and side == "candidate" else "passed",
                answer=f"[echo echo-1] {name}",
            )
            for name in ("budget", "salue")
            for side in ("live", "candidate")
        )


def count_queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries)


# One COUNT: the page's, which the header badge reuses (no "N total" link). The
# evidence column comes with the rows (one subquery): no extra query. No model
# permissions: every registered admin answers them from the roles (Groups are gone).
QUEUE_QUERIES = 7
# 9, the newest evidence run and its results, the runs that ran the version (lineage), its decisions so far
REVIEW_QUERIES = 10


@pytest.mark.parametrize("count", [5, 50])
def test_the_queue_costs_the_same_queries_for_5_and_50_proposals(
    client, bob, busy_queue, count, django_assert_num_queries
):
    busy_queue(count)
    client.force_login(bob)
    url = reverse("admin:agents_promptversion_changelist")

    with django_assert_num_queries(QUEUE_QUERIES):
        page = client.get(url).content.decode()

    assert page.count('<input type="checkbox" name="_selected_action"') == count
    # Rows of both of bob's workspaces (agents a and b in acme, c in globex), stale ones included.
    assert all(f">{key} v" in page for key in "abc")
    assert page.count("aih-stale-flag") == count  # every pending one is stale
    assert page.count("aih-evidence-regressions") == (count + 1) // 2
    assert page.count("aih-evidence-passed") == count // 2


@pytest.mark.parametrize("count", [5, 50])
def test_the_review_page_costs_the_same_queries_for_5_and_50_proposals(
    client, bob, busy_queue, count, django_assert_num_queries
):
    versions = busy_queue(count)
    stale = versions[-1]
    client.force_login(bob)

    with django_assert_num_queries(REVIEW_QUERIES):
        page = client.get(review_url(stale)).content.decode()

    assert "Stale proposal" in page
    assert page.count('class="aih-case') == 2


def test_a_shared_skill_edit_the_agents_refuse_is_a_form_error_and_writes_nothing(client, workspace, ada, settings):
    from agents.models import Skill
    from agents.services import skill_as_snapshot_entry, skill_create

    skill = skill_create(workspace=workspace, key="ton", title="Ton", body="Sois bref.", actor=as_actor(ada))
    agent_create(
        workspace=workspace,
        actor=as_actor(ada),
        key="porteur",
        name="Porteur",
        snapshot={**SNAPSHOT, "skills": [skill_as_snapshot_entry(skill)]},
    )
    settings.AIHUMMER_MAX_TEXT_CHARS = 100
    client.force_login(ada)

    response = client.post(reverse("admin:agents_skill_change", args=[skill.pk]), {"title": "Ton", "body": "x" * 101})

    assert response.status_code == 200
    assert "skills: $.skills[0].body: at most 100 characters (got 101)" in response.content.decode()
    assert Skill.objects.get(pk=skill.pk).body == "Sois bref."
    assert not PromptVersion.objects.filter(agent__key="porteur", number=2).exists()


def test_the_review_page_says_when_a_passage_is_shown_whole(client, bob, agent, alice, ada):
    prompt_version_propose(
        agent=agent, changes=edit(" ".join(f"a{i}" for i in range(600))), actor=as_actor(ada), mode="live"
    )
    version = prompt_version_propose(
        agent=agent, changes=edit(" ".join(f"b{i}" for i in range(600))), actor=as_actor(alice)
    )
    client.force_login(bob)

    page = client.get(review_url(version)).content.decode()

    note = "Some changed passages are too long to compare word by word: they are shown whole, removed then added."
    assert page.count(note) == 2  # the structured diff and the rendered prompts
    assert "<del>a0 a1 a2" in page and "<ins>b0 b1 b2" in page


def test_the_versions_page_is_paged(client, alice, ada, agent):
    for number in range(2, 53):
        prompt_version_propose(agent=agent, changes=edit(f"Version {number}."), actor=as_actor(ada), mode="live")
    client.force_login(alice)
    url = reverse("admin:agents_agent_versions", args=[agent.pk])

    newest, oldest = client.get(url).content.decode(), client.get(url + "?page=2").content.decode()

    assert "52 versions:" in newest and "page 1 of 2" in newest and '?page=2">older</a>' in newest
    assert ">v52</a> <strong>(live)</strong>" in newest and ">v3</a>" in newest and ">v2</a>" not in newest
    assert ">v2</a>" in oldest and ">v1</a>" in oldest and ">v3</a>" not in oldest
