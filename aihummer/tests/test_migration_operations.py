"""AlterAtOnce, CreateAtOnce, ChangeAtOnce: the state a group leaves is the one its
operations leave one by one."""

from __future__ import annotations

import pytest
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.operations import AddField, AlterField, AlterModelOptions, CreateModel

from aihummer.migration_operations import AlterAtOnce, ChangeAtOnce, CreateAtOnce

GROUPED = ("agents", "0023_desk_french_action_requests")  # field labels (one a foreign key) and model options
SQUASHED = ("agents", "0011_squashed_0028")  # models created, fields and constraints added, labels altered


def rendered(state) -> dict[str, object]:
    """Every model's names and fields, and the relations that point at a class no longer
    registered (a model re-rendered, the relation not)."""
    apps = state.apps
    seen: dict[str, object] = {"stale": []}
    for model in apps.get_models(include_auto_created=True):
        fields = {}
        for field in model._meta.get_fields(include_hidden=True):
            if field.concrete:
                fields[field.name] = field.deconstruct()[1:]
            related = field.related_model if field.is_relation else None
            if related is not None and apps.get_model(related._meta.label) is not related:
                seen["stale"].append((model._meta.label, field.name))
        seen[model._meta.label] = (str(model._meta.verbose_name), str(model._meta.verbose_name_plural), fields)
    return seen


def test_a_group_leaves_the_state_its_alterations_leave_one_by_one() -> None:
    # From the files alone, no database: the originals, not the squashes replacing them.
    loader = MigrationLoader(None, ignore_no_migrations=True, replace_migrations=False)
    migration = loader.graph.nodes[GROUPED]
    [group] = migration.operations
    before = loader.project_state(GROUPED, at_end=False)
    assert before.apps.get_models()  # rendered, as the executor holds it
    one_by_one, at_once = before.clone(), before.clone()
    for operation in group.operations:
        operation.state_forwards("agents", one_by_one)
    group.state_forwards("agents", at_once)
    assert rendered(at_once) == rendered(one_by_one)
    assert rendered(at_once)["stale"] == []
    assert rendered(at_once) != rendered(before)


def test_a_group_alters_each_field_once() -> None:
    label = AlterField("workflow", "name", field=None)
    with pytest.raises(ValueError, match="each field and each model's options once"):
        AlterAtOnce([label, AlterField("workflow", "name", field=None)])
    with pytest.raises(TypeError, match="AlterField and AlterModelOptions only"):
        AlterAtOnce([label, AlterModelOptions("workflow", {}), object()])


def test_each_group_of_a_squash_leaves_the_state_its_operations_leave_one_by_one() -> None:
    loader = MigrationLoader(None, ignore_no_migrations=True, replace_migrations=False)
    migration = loader.graph.nodes[SQUASHED]
    # The same state twice: rendered, as the executor holds it (each group is applied to
    # it), and never rendered, where each operation on its own only edits model states
    # (one by one on rendered models, each re-renders dozens: 13 s of CPU, not 2).
    rendered_state = loader.project_state(SQUASHED, at_end=False)
    plain = rendered_state.clone()
    assert rendered_state.apps.get_models()
    kinds = set()
    for operation in migration.operations:
        if isinstance(operation, AlterAtOnce | CreateAtOnce | ChangeAtOnce):
            kinds.add(type(operation))
            one_by_one = plain.clone()
            for each in operation.operations:
                each.state_forwards("agents", one_by_one)
            operation.state_forwards("agents", rendered_state)
            assert rendered_state.models == one_by_one.models, operation.describe()
            # The group's models re-rendered, all it touched (none left pointing at a stale
            # class): as the same states rendered from nothing.
            grouped = rendered(rendered_state)
            assert grouped["stale"] == [], operation.describe()
            assert grouped == rendered(one_by_one.clone()), operation.describe()  # it stays unrendered
            plain = one_by_one
        else:
            operation.state_forwards("agents", rendered_state)
            operation.state_forwards("agents", plain)
    assert kinds == {AlterAtOnce, CreateAtOnce, ChangeAtOnce}


def test_a_group_creates_or_changes_each_model_once() -> None:
    created = CreateModel("note", fields=[])
    with pytest.raises(ValueError, match="creates each model once"):
        CreateAtOnce([created, CreateModel("Note", fields=[])])
    with pytest.raises(TypeError, match="CreateModel only"):
        CreateAtOnce([created, AlterModelOptions("note", {})])
    added = AddField("note", "body", field=None)
    with pytest.raises(ValueError, match="changes each model once"):
        ChangeAtOnce([added, AddField("note", "title", field=None)])
    with pytest.raises(TypeError, match="AddField, AddConstraint and RemoveConstraint only"):
        ChangeAtOnce([added, created])
