"""Migration operations of our own: Django's, grouped so a migration costs less to run."""

from __future__ import annotations

from django.db.migrations.operations import AlterField, AlterModelOptions
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState


class AlterAtOnce(Operation):
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

    reversible = True

    def __init__(self, operations: list[AlterField | AlterModelOptions]) -> None:
        if not all(isinstance(operation, AlterField | AlterModelOptions) for operation in operations):
            raise TypeError("AlterAtOnce groups AlterField and AlterModelOptions only.")
        targets = [_target(operation) for operation in operations]
        if len(set(targets)) != len(targets):
            raise ValueError("AlterAtOnce alters each field and each model's options once.")
        self.operations = operations

    def deconstruct(self) -> tuple[str, list, dict]:
        return self.__class__.__qualname__, [self.operations], {}

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        rendered = state.__dict__.pop("apps", None)  # unrendered, each alteration only edits model states
        try:
            for operation in self.operations:
                operation.state_forwards(app_label, state)
        finally:
            if rendered is not None:
                state.__dict__["apps"] = rendered
        if rendered is not None:
            touched = {(app_label, _target(operation)[0]) for operation in self.operations}
            state.reload_models(touched, delay=False)

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

    def describe(self) -> str:
        return f"{len(self.operations)} alterations at once"

    @property
    def migration_name_fragment(self) -> str:
        return "alter_at_once"


def _target(operation: AlterField | AlterModelOptions) -> tuple[str, str | None]:
    """(model, field) an alteration changes; (model, None) for a model's options."""
    if isinstance(operation, AlterField):
        return operation.model_name_lower, operation.name_lower
    return operation.name_lower, None
