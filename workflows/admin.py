"""The minimal workflows admin: workflows listed and edited through the services, runs
listed and shown read-only with their steps. Workspace-scoped; sandbox rows hidden (the
default managers do not return them)."""

from __future__ import annotations

import json

from django.contrib import admin
from django.db import models
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from aihummer.actors import Actor, Verb
from aihummer.admin_site import ServiceModelForm, WorkspaceScopedAdmin
from workflows.models import StepRun, Workflow, WorkflowRun
from workflows.services import (
    WORKFLOW_FIELDS,
    workflow_create,
    workflow_delete,
    workflow_dependents,
    workflow_update,
)


def pretty_json(value: object) -> str:
    return format_html("<pre style='white-space:pre-wrap'>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


class WorkflowForm(ServiceModelForm):
    class Meta:
        model = Workflow
        fields = ["workspace", "key", *WORKFLOW_FIELDS]

    def call_service(self) -> Workflow:
        data = self.cleaned_data
        if self.instance.pk is None:
            return workflow_create(
                workspace=data["workspace"],
                key=data["key"],
                name=data["name"],
                description=data["description"],
                definition=data["definition"],
                is_active=data["is_active"],
                actor=self.actor,
            )
        return workflow_update(workflow=self.instance, actor=self.actor, **self.changed_values(WORKFLOW_FIELDS))


@admin.register(Workflow)
class WorkflowAdmin(WorkspaceScopedAdmin):
    form = WorkflowForm
    add_verb = change_verb = delete_verb = Verb.PUBLISH
    list_display = ["key", "name", "workspace", "version", "step_count", "is_active", "updated_at"]
    list_filter = ["workspace", "is_active"]
    list_select_related = ["workspace"]
    search_fields = ["key", "name", "description"]

    def get_readonly_fields(self, request: HttpRequest, obj: Workflow | None = None) -> list[str]:
        return ["workspace", "key", "version", "is_builtin"] if obj else []

    @admin.display(description="steps")
    def step_count(self, obj: Workflow) -> int:
        steps = obj.definition.get("steps") if isinstance(obj.definition, dict) else None
        return len(steps) if isinstance(steps, list) else 0

    def deletion_refusal(self, request: HttpRequest, obj: Workflow) -> str | None:
        if obj.is_builtin:
            return f"Workflow '{obj.key}' is built in and cannot be deleted; disable it instead."
        dependents = workflow_dependents(obj)
        return f"Workflow '{obj.key}' is in use: {'; '.join(dependents)}." if dependents else None

    def delete_model(self, request: HttpRequest, obj: Workflow) -> None:
        workflow_delete(workflow=obj, actor=self.actor(request))


class StepRunInline(admin.TabularInline):
    model = StepRun
    extra = 0
    can_delete = False
    fields = readonly_fields = [
        "position",
        "name",
        "agent_key",
        "agent_version",
        "status",
        "attempts",
        "input",
        "answer",
        "error",
        "started_at",
        "finished_at",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "turn_link",
    ]

    def has_view_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        # Members hold no Django model permissions: the actor's rights decide.
        actor = Actor.for_request(request)
        return actor.workspace_ids(Verb.READ) != [] if obj is None else actor.can(Verb.READ, obj.workspace)

    def has_add_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return False

    @admin.display(description="answer")
    def answer(self, obj: StepRun) -> str:
        return (obj.output or {}).get("answer") or "—"

    @admin.display(description="turn")
    def turn_link(self, obj: StepRun) -> str:
        if obj.turn_id is None:
            return "—"
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:agents_agentturn_change", args=[obj.turn_id]), obj.turn_id
        )


@admin.register(WorkflowRun)
class WorkflowRunAdmin(WorkspaceScopedAdmin):
    list_display = ["id", "workflow_key", "workflow_version", "workspace", "status", "actor_source", "created_at"]
    list_filter = ["workspace", "status"]
    list_select_related = ["workspace"]
    search_fields = ["workflow_key", "answer", "actor_source"]
    inlines = [StepRunInline]
    fields = readonly_fields = [
        "workspace",
        "workflow",
        "workflow_key",
        "workflow_version",
        "status",
        "actor_source",
        "inputs_json",
        "outputs_json",
        "answer",
        "error",
        "created_at",
        "started_at",
        "finished_at",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "definition_json",
    ]

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return super().get_queryset(request).defer("context")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: WorkflowRun | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: WorkflowRun | None = None) -> bool:
        return False

    @admin.display(description="inputs")
    def inputs_json(self, obj: WorkflowRun) -> str:
        return pretty_json(obj.inputs)

    @admin.display(description="outputs")
    def outputs_json(self, obj: WorkflowRun) -> str:
        return pretty_json(obj.outputs)

    @admin.display(description="definition")
    def definition_json(self, obj: WorkflowRun) -> str:
        return pretty_json(obj.definition)
