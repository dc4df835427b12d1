"""Issue 10: a key answers for its owner AND its creator; superuser rights live in actors.py."""

import pytest
from django.core.exceptions import PermissionDenied

from aihummer.actors import Actor, may_use_admin
from aihummer.services import api_key_create, workspace_create

FOUR_EYES = "You proposed this version: another person must decide it (four eyes)."


def test_keys_record_who_created_them(workspace, ada, alice):
    api_key, _ = api_key_create(workspace=workspace, name="bot", scopes="write", owner=alice, actor=Actor.for_user(ada))

    assert api_key.created_by == ada
    assert api_key.history.get().created_by_id == ada.pk


def test_an_ownerless_key_answers_for_itself_and_its_creator(workspace, ada, bob):
    ownerless, _ = api_key_create(workspace=workspace, name="bot", scopes="write", actor=Actor.for_user(ada))
    key_actor = Actor.for_api_key(ownerless)

    assert key_actor.identity_label == f"api_key:{ownerless.pk},user:{ada.pk}"
    assert Actor.for_user(ada).decision_refusal(key_actor.identity_label) == FOUR_EYES
    assert Actor.for_user(bob).decision_refusal(key_actor.identity_label) is None
    assert key_actor.is_same_person(Actor.for_user(ada))


def test_an_owned_key_answers_for_its_owner_and_its_creator(workspace, ada, alice, bob):
    owned, _ = api_key_create(workspace=workspace, name="bot", scopes="write", owner=alice, actor=Actor.for_user(ada))
    label = Actor.for_api_key(owned).identity_label

    assert label == f"user:{alice.pk},user:{ada.pk}"
    assert Actor.for_user(alice).decision_refusal(label) == FOUR_EYES
    assert Actor.for_user(ada).decision_refusal(label) == FOUR_EYES
    assert Actor.for_user(bob).decision_refusal(label) is None
    # Labels recorded before keys had creators still compare.
    assert Actor.for_user(alice).answers_for(f"user:{alice.pk}")
    with pytest.raises(PermissionDenied, match="four eyes"):
        Actor.for_user(ada).require_may_decide(label)


def test_a_key_its_owner_created_answers_once(workspace, ada):
    own, _ = api_key_create(workspace=workspace, name="mine", scopes="write", owner=ada, actor=Actor.for_user(ada))

    assert Actor.for_api_key(own).identity_label == f"user:{ada.pk}"


def test_site_rights_are_decided_by_actors(workspace, ada, root):
    assert Actor.for_user(root).is_site_admin and Actor.for_operator(name="ops").is_site_admin
    assert not Actor.for_user(ada).is_site_admin
    with pytest.raises(PermissionDenied, match="Only a superuser or an operator may create workspaces"):
        workspace_create(slug="new", name="New", actor=Actor.for_user(ada))
    root.is_active = False
    assert not Actor.for_user(root).is_site_admin
    assert not may_use_admin(root)
