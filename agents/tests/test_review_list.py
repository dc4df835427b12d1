"""The desk's one review list (issue 30): prompt proposals and action requests in one
queue, a kind filter, each row linked to its own review page, workspace isolation,
no sandbox row, and a constant number of queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from agents.models import ApprovalRequest, PromptVersion
from agents.services import prompt_version_propose
from aihummer.actors import Actor
from aihummer.tests.factories import make_agent, make_echo_preset

URL = reverse("admin:agents_review_list")


def action(agent, *, tool: str = "mail_send", status: str = "pending", age: timedelta = timedelta(0)):
    """A recorded guarded call (as the runtime records one), `age` old."""
    request = ApprovalRequest.all_objects.create(
        workspace=agent.workspace,
        agent=agent,
        agent_key=agent.key,
        tool_name=tool,
        call_id=f"call-{tool}",
        arguments={"to": ["x@example.com"], "subject": "Hi", "body": "Hello"},
        arguments_hash="0" * 64,
        status=status,
        proposer_identity="user:0",
        actor_source="admin:alice",
        expires_at=timezone.now() + timedelta(hours=72),
        is_sandbox=agent.is_sandbox,
    )
    ApprovalRequest.all_objects.filter(pk=request.pk).update(created_at=timezone.now() - age)
    return request


def proposal(agent, alice, body: str, age: timedelta = timedelta(0)) -> PromptVersion:
    version = prompt_version_propose(
        agent=agent, changes={"system_prompt": body}, actor=Actor.for_user(alice), reason=body
    )
    PromptVersion.all_objects.filter(pk=version.pk).update(created_at=timezone.now() - age)
    return version


@pytest.fixture
def desk(workspace, other_workspace, ada, alice, root):
    """acme: two proposals, two pending actions and one decided; globex: one of each;
    a sandbox agent's action in acme."""
    make_echo_preset(workspace, by=ada)
    make_echo_preset(other_workspace, by=root)
    redacteur = make_agent(workspace, "redacteur", "v1", by=ada)
    rows = {
        "old_proposal": proposal(redacteur, alice, "v2", age=timedelta(hours=5)),
        "mail": action(redacteur, age=timedelta(hours=3)),
        "new_proposal": proposal(redacteur, alice, "v3", age=timedelta(hours=1)),
        "http": action(redacteur, tool="http_request", age=timedelta(minutes=10)),
        "decided": action(redacteur, status="approved", age=timedelta(days=1)),
    }
    foreign = make_agent(other_workspace, "etranger", "v1", by=root)
    rows["foreign_action"] = action(foreign)
    rows["sandbox_action"] = action(make_agent(workspace, "sb_bac", "v1", by=ada, is_sandbox=True))
    return rows


def proposal_url(version) -> str:
    return reverse("admin:agents_promptversion_review", args=[version.pk])


def action_url(request) -> str:
    return reverse("admin:agents_approvalrequest_review", args=[request.pk])


def test_the_list_holds_both_kinds_oldest_first_each_linked_to_its_review_page(client, bob, desk) -> None:
    client.force_login(bob)

    page = client.get(URL).content.decode()

    links = [
        f'href="{proposal_url(desk["old_proposal"])}">redacteur v2</a>',
        f'href="{action_url(desk["mail"])}">mail_send #{desk["mail"].pk} (redacteur)</a>',
        f'href="{proposal_url(desk["new_proposal"])}">redacteur v3</a>',
        f'href="{action_url(desk["http"])}">http_request #{desk["http"].pk} (redacteur)</a>',
    ]
    positions = [page.index(link) for link in links]
    assert positions == sorted(positions)  # what waited longest comes first
    assert page.count('class="aih-review-item"') == 4
    assert '<p id="aih-review-total">4 requests</p>' in page
    assert ">5\xa0hours</td>" in page and ">10\xa0minutes</td>" in page  # the age
    assert page.count('data-status="pending"') == 4
    assert "admin:alice" in page
    assert "etranger" not in page  # another workspace's rows are not there
    assert "sb_bac" not in page  # nor a sandbox agent's


def test_the_kind_filter_tells_proposals_from_actions_with_its_counts(client, bob, desk) -> None:
    client.force_login(bob)

    actions = client.get(URL, {"kind": "action"}).content.decode()
    proposals = client.get(URL, {"kind": "proposal"}).content.decode()

    assert actions.count('data-kind="action"') == 2 and 'data-kind="proposal"' not in actions
    assert proposals.count('data-kind="proposal"') == 2 and 'data-kind="action"' not in proposals
    assert '<p id="aih-review-total">2 requests</p>' in actions
    assert 'All (<span class="aih-count">4</span>)' in actions
    assert 'proposal (<span class="aih-count">2</span>)' in actions
    assert 'action (<span class="aih-count">2</span>)' in actions


def test_every_status_shows_decided_rows_with_their_status(client, bob, desk) -> None:
    client.force_login(bob)

    page = client.get(URL, {"status": "all", "kind": "action"}).content.decode()

    assert f'href="{action_url(desk["decided"])}"' in page
    assert 'data-status="approved"' in page
    assert '<p id="aih-review-total">3 requests</p>' in page
    approved = client.get(URL, {"status": "approved"}).content.decode()
    assert approved.count('class="aih-review-item"') == 2  # the decided call, and redacteur's live v1
    assert f'href="{proposal_url(desk["mail"].agent.live_version)}">redacteur v1</a>' in approved


def test_another_workspace_sees_only_its_own_rows(client, charlie, desk) -> None:
    client.force_login(charlie)

    page = client.get(URL).content.decode()

    assert f'href="{action_url(desk["foreign_action"])}"' in page
    assert page.count('class="aih-review-item"') == 1
    assert "redacteur" not in page


def test_a_person_outside_every_workspace_is_refused(client, django_user_model) -> None:
    outsider = django_user_model.objects.create_user(username="olga", password="pw")
    client.force_login(outsider)

    assert client.get(URL).status_code in (302, 403)


def test_the_list_speaks_french(client, bob, desk) -> None:
    client.force_login(bob)

    page = client.get(URL, headers={"accept-language": "fr"}).content.decode()

    assert "Liste de relecture" in page
    assert '<p id="aih-review-total">4 demandes</p>' in page
    assert ">proposition</td>" in page and ">action</td>" in page
    assert "en attente" in page


def test_an_action_request_reads_in_french_from_the_list_to_the_decision(client, bob, desk) -> None:
    client.force_login(bob)
    french = {"accept-language": "fr"}
    mail = desk["mail"]

    listing = client.get(reverse("admin:agents_approvalrequest_changelist"), headers=french).content.decode()
    page = client.get(action_url(mail), headers=french).content.decode()
    decided = client.get(action_url(desk["decided"]), headers=french).content.decode()

    assert "<title>Demandes d\u2019action | AiHummer</title>" in listing
    assert " Par statut " in listing and " Par outil " in listing and "Expirée</a>" in listing
    assert "Pour le compte de" in listing and "Ancienneté" in listing
    assert 'data-status="pending" style="background:#b7791f">en attente</span>' in listing
    assert f"Relecture de mail_send n\u00b0\u00a0{mail.pk}" in page
    assert "Appel de l\u2019agent <strong>redacteur</strong> pour" in page and "Refusée d\u2019office" in page
    assert "L\u2019e-mail, exactement tel qu\u2019il sera envoyé" in page and "<th>Objet</th>" in page
    assert 'value="Approuver"' in page and 'value="Refuser"' in page and "Transmise au modèle." in page
    for english in ("Called by", "Refused by itself", "exactly as", "Decide", "Approving runs", "Told to"):
        assert english not in page
    assert "<strong>Approuvée</strong>" in decided

    refused = client.post(
        action_url(mail),
        {"note": "pas maintenant", "arguments_hash": mail.arguments_hash, "_reject": "1"},
        headers=french,
    )
    assert refused.status_code == 302
    messages = client.get(refused.url, headers=french).content.decode()
    assert f"Demande mail_send n\u00b0\u00a0{mail.pk} refusée." in messages


def test_an_action_request_reads_in_english_by_default(client, bob, desk) -> None:
    client.force_login(bob)

    page = client.get(action_url(desk["mail"])).content.decode()

    assert f"Review mail_send #{desk['mail'].pk}" in page and "Called by agent <strong>redacteur</strong>" in page
    assert "<th>Subject</th>" in page and 'value="Approve"' in page and "Refused by itself" in page


# session, user, the memberships (rights, and who may use the admin), a COUNT per kind (the page's
# total is their sum: the union is not counted again), the header's pending badge, the
# page's rows (one UNION): the same for 4 rows and for 60.
LIST_QUERIES = 7


@pytest.mark.parametrize("extra", [0, 56])
def test_the_list_costs_the_same_queries_for_few_and_many_rows(
    client, bob, desk, extra, django_assert_num_queries
) -> None:
    agent = desk["mail"].agent
    for _ in range(extra):
        action(agent)
    client.force_login(bob)

    with django_assert_num_queries(LIST_QUERIES):
        page = client.get(URL).content.decode()

    assert page.count('class="aih-review-item"') == min(4 + extra, 50)


def test_the_index_links_to_the_list(client, bob, desk) -> None:
    client.force_login(bob)

    page = client.get(reverse("admin:index")).content.decode()

    assert f'<a href="{URL}" id="aih-index-review-list">' in page
