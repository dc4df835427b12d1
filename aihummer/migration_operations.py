"""Migration operations of our own: Django's, grouped so a migration costs less to run."""

from __future__ import annotations

from django.db.migrations.operations import (
    AddConstraint,
    AddField,
    AlterField,
    AlterModelOptions,
    CreateModel,
    RemoveConstraint,
)
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState


class _AtOnce(Operation):
    """Operations of one app as one: their state changes on the unrendered state, the
    models they touched rendered once at the end, and each one's schema change read
    between the states before and after the whole group. That is the schema change it
    makes on its own only while no other operation of the group touches what it
    touches; each subclass admits only such groups."""

    reversible = True

    def __init__(self, operations: list[Operation]) -> None:
        self.operations = operations

    def deconstruct(self) -> tuple[str, list, dict]:
        return self.__class__.__qualname__, [self.operations], {}

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        rendered = state.__dict__.pop("apps", None)  # unrendered, each operation only edits model states
        try:
            for operation in self.operations:
                operation.state_forwards(app_label, state)
        finally:
            if rendered is not None:
                state.__dict__["apps"] = rendered
        if rendered is not None:
            state.reload_models({(app_label, model) for model in self._models()}, delay=False)

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        for operation in self.operations:
            operation.database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        for operation in reversed(self.operations):
            operation.database_backwards(app_label, schema_editor, from_state, to_state)

    def references_model(self, name: str, app_label: str) -> bool:
        return any(operation.references_model(name, app_label) for operation in self.operations)

    def references_field(self, model_name: str, name: str, app_label: str) -> bool:
        return any(operation.references_field(model_name, name, app_label) for operation in self.operations)

    def _models(self) -> set[str]:
        raise NotImplementedError


class AlterAtOnce(_AtOnce):
    """Many `AlterField` and `AlterModelOptions` of one app as one operation: the same
    state changes and the same schema-editor calls, with the models rendered once.

    Django re-renders a model and the models related to it after each alteration (about
    thirty here: nearly every model points at the workspace), even when only a verbose
    name changed: the 135 field labels of agents 0020 took 29 s on a loaded 2-core
    machine, at every test-database creation, release and migration test. Here each
    alteration changes the unrendered state, and the models they touched are re-rendered
    once at the end. Each field or model appears once, so every alteration's schema
    change is read between the states before and after the whole group, as it would be
    on its own (for labels and help texts, none)."""

    def __init__(self, operations: list[AlterField | AlterModelOptions]) -> None:
        if not all(isinstance(operation, AlterField | AlterModelOptions) for operation in operations):
            raise TypeError("AlterAtOnce groups AlterField and AlterModelOptions only.")
        targets = [_target(operation) for operation in operations]
        if len(set(targets)) != len(targets):
            raise ValueError("AlterAtOnce alters each field and each model's options once.")
        super().__init__(operations)

    def describe(self) -> str:
        return f"{len(self.operations)} alterations at once"

    @property
    def migration_name_fragment(self) -> str:
        return "alter_at_once"

    def _models(self) -> set[str]:
        return {_target(operation)[0] for operation in self.operations}


class CreateAtOnce(_AtOnce):
    """Many `CreateModel` of one app as one operation, the models rendered once: each
    `CreateModel` re-renders the new model and every model related to it (here nearly
    all of them, through the workspace), which was most of a squashed migration's cost.

    Each model is created once, with its final fields, indexes and constraints (nothing
    else in the group touches it), so the model the group leaves is the one its
    `CreateModel` leaves."""

    def __init__(self, operations: list[CreateModel]) -> None:
        if not all(isinstance(operation, CreateModel) for operation in operations):
            raise TypeError("CreateAtOnce groups CreateModel only.")
        names = [operation.name_lower for operation in operations]
        if len(set(names)) != len(names):
            raise ValueError("CreateAtOnce creates each model once.")
        super().__init__(operations)

    def describe(self) -> str:
        return f"{len(self.operations)} models created at once"

    @property
    def migration_name_fragment(self) -> str:
        return "create_at_once"

    def _models(self) -> set[str]:
        return {operation.name_lower for operation in self.operations}


class ChangeAtOnce(_AtOnce):
    """`AddField`, `AddConstraint` and `RemoveConstraint` on models that exist before it,
    one operation per model, as one operation with the models rendered once (each of them
    re-renders its model and every model related to it: here, nearly all).

    One per model, because SQLite makes most of these changes by copying the table into
    one built from a model: the model before the group (a field added) or after it (a
    constraint) is the model just before or after that one change only while it is the
    group's only change on its model."""

    def __init__(self, operations: list[AddField | AddConstraint | RemoveConstraint]) -> None:
        if not all(isinstance(operation, AddField | AddConstraint | RemoveConstraint) for operation in operations):
            raise TypeError("ChangeAtOnce groups AddField, AddConstraint and RemoveConstraint only.")
        models = [operation.model_name_lower for operation in operations]
        if len(set(models)) != len(models):
            raise ValueError("ChangeAtOnce changes each model once.")
        super().__init__(operations)

    def describe(self) -> str:
        return f"{len(self.operations)} models changed at once"

    @property
    def migration_name_fragment(self) -> str:
        return "change_at_once"

    def _models(self) -> set[str]:
        return {operation.model_name_lower for operation in self.operations}


def _target(operation: AlterField | AlterModelOptions) -> tuple[str, str | None]:
    """(model, field) an alteration changes; (model, None) for a model's options."""
    if isinstance(operation, AlterField):
        return operation.model_name_lower, operation.name_lower
    return operation.name_lower, None
