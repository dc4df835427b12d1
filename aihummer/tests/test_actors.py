import pytest
from django.core.exceptions import PermissionDenied

from aihummer.actors import Actor, Verb
from aihummer.models import Membership
from aihummer.services import api_key_create
from conftest import make_member

ALL_VERBS = set(Verb)
RUNNER = {Verb.READ, Verb.PROPOSE, Verb.WITHDRAW, Verb.RUN, Verb.SANDBOX}
EXPECTED_BY_ROLE = {
    Membership.Role.VIEWER: {Verb.READ},
    Membership.Role.EDITOR: RUNNER,
    Membership.Role.REVIEWER: RUNNER | {Verb.DECIDE},
    Membership.Role.ADMIN: ALL_VERBS,
}
EXPECTED_BY_SCOPES = {
    "read": {Verb.READ},
    "write": RUNNER - {Verb.READ},
    "read,write": RUNNER,
    "publish": {Verb.PUBLISH},
    "read,write,publish": RUNNER | {Verb.PUBLISH},
}


@pytest.mark.parametrize("role", list(EXPECTED_BY_ROLE))
@pytest.mark.parametrize("verb", list(Verb))
def test_people_get_exactly_the_verbs_of_their_role(workspace, role, verb):
    user = make_member(workspace, f"user-{role}", role)

    allowed = Actor.for_user(user).can(verb, workspace)

    assert allowed == (verb in EXPECTED_BY_ROLE[role])


@pytest.mark.parametrize("scopes", list(EXPECTED_BY_SCOPES))
@pytest.mark.parametrize("verb", list(Verb))
def test_api_keys_get_exactly_the_verbs_of_their_scopes(workspace, ada, scopes, verb):
    api_key, _ = api_key_create(workspace=workspace, name="k", scopes=scopes, actor=Actor.for_user(ada))

    allowed = Actor.for_api_key(api_key).can(verb, workspace)

    assert allowed == (verb in EXPECTED_BY_SCOPES[scopes])


def test_refusal_names_the_missing_role(workspace, alice):
    with pytest.raises(PermissionDenied) as refused:
        Actor.for_user(alice).require(Verb.DECIDE, workspace)

    assert str(refused.value) == (
        "alice is an editor in workspace 'acme'; approving or rejecting needs the reviewer role."
    )


def test_refusal_names_the_missing_scope(workspace, ada):
    api_key, _ = api_key_create(workspace=workspace, name="ci", scopes="read,write", actor=Actor.for_user(ada))

    with pytest.raises(PermissionDenied) as refused:
        Actor.for_api_key(api_key).require(Verb.PUBLISH, workspace)

    assert str(refused.value) == "API key 'ci' lacks the 'publish' scope needed for publishing changes directly."


def test_keys_never_decide_whatever_their_scopes(workspace, ada):
    api_key, _ = api_key_create(workspace=workspace, name="all", scopes="read,write,publish", actor=Actor.for_user(ada))

    with pytest.raises(PermissionDenied, match="only people decide"):
        Actor.for_api_key(api_key).require(Verb.DECIDE, workspace)


def test_non_member_is_refused_everything(workspace, charlie):
    actor = Actor.for_user(charlie)

    assert [verb for verb in Verb if actor.can(verb, workspace)] == []
    with pytest.raises(PermissionDenied, match="charlie is not a member of workspace 'acme'"):
        actor.require(Verb.READ, workspace)


def test_key_of_another_workspace_is_refused(workspace, other_workspace, ada, root):
    api_key, _ = api_key_create(workspace=other_workspace, name="globex-ci", scopes="read", actor=Actor.for_user(root))

    with pytest.raises(PermissionDenied, match="does not belong to workspace 'acme'"):
        Actor.for_api_key(api_key).require(Verb.READ, workspace)


def test_superuser_is_admin_everywhere_and_inactive_users_nowhere(workspace, root, bob):
    bob.is_active = False

    assert all(Actor.for_user(root).can(verb, workspace) for verb in Verb)
    assert not Actor.for_user(bob).can(Verb.READ, workspace)


def test_operator_may_do_all_but_decide(workspace):
    operator = Actor.for_operator(name="ops")

    assert {verb for verb in Verb if operator.can(verb, workspace)} == ALL_VERBS - {Verb.DECIDE}
    assert operator.source == "cli:ops"


def test_identity_of_a_key_is_its_owner_or_itself(workspace, ada, alice):
    owned, _ = api_key_create(workspace=workspace, name="owned", scopes="write", owner=alice, actor=Actor.for_user(ada))
    ownerless, _ = api_key_create(workspace=workspace, name="bot", scopes="write", actor=Actor.for_user(ada))

    assert Actor.for_api_key(owned).is_same_person(Actor.for_user(alice))
    assert Actor.for_api_key(ownerless).identity == ("api_key", ownerless.pk)
    assert Actor.for_api_key(owned, surface="mcp", client_name="claude").source == "mcp:owned/claude"
    assert Actor.for_api_key(ownerless).source == "api:bot"


def test_workspace_ids_follow_the_matrix(workspace, other_workspace, alice):
    Membership.objects.create(user=alice, workspace=other_workspace, role=Membership.Role.VIEWER)
    actor = Actor.for_user(alice)

    assert sorted(actor.workspace_ids(Verb.READ)) == sorted([workspace.pk, other_workspace.pk])
    assert actor.workspace_ids(Verb.PROPOSE) == [workspace.pk]
    assert actor.workspace_ids(Verb.DECIDE) == []


def test_roles_are_loaded_once_per_actor(workspace, other_workspace, alice, django_assert_num_queries):
    actor = Actor.for_user(alice)

    with django_assert_num_queries(1):
        for verb in Verb:
            actor.can(verb, workspace)
            actor.can(verb, other_workspace)
