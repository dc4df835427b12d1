"""The REST resources of workflows: definitions, starting runs, inspecting, cancelling
and resuming them. Serializers translate, the workflow services decide."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from aihummer.api import AdminViewSet, InputSerializer, JsonObjectField, outside_transaction
from aihummer.exceptions import NotFound
from workflows.models import RunStatus, StepStatus, Workflow, WorkflowRun
from workflows.selectors import workflow_list, workflow_run_get, workflow_run_summary
from workflows.services import (
    workflow_create,
    workflow_delete,
    workflow_get,
    workflow_run_cancel,
    workflow_run_resume,
    workflow_run_start,
    workflow_update,
)

WORKFLOW_KEY_REGEX = "[a-z0-9_-]{1,100}"
RUN_ID_REGEX = "[0-9a-fA-F-]{32,36}"


class WorkflowSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    definition = JsonObjectField(help_text="Pivot format v1: version, steps, optional outputs.")
    version = serializers.IntegerField(help_text="Bumped when the definition changes.")
    is_active = serializers.BooleanField()
    is_builtin = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class WorkflowUpdateSerializer(InputSerializer):
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(max_length=20_000, required=False, allow_blank=True)
    definition = JsonObjectField(required=False)
    is_active = serializers.BooleanField(required=False)


class WorkflowCreateSerializer(WorkflowUpdateSerializer):
    key = serializers.RegexField(f"^{WORKFLOW_KEY_REGEX}$", max_length=100)
    name = serializers.CharField(max_length=200)
    definition = JsonObjectField()


class RunStartSerializer(InputSerializer):
    message = serializers.CharField(max_length=20_000, required=False, help_text="The run's `$.inputs.message`.")
    inputs = JsonObjectField(required=False, help_text="Further inputs, `$.inputs.<name>`.")


class TokensSerializer(serializers.Serializer):
    input = serializers.IntegerField()
    output = serializers.IntegerField()


class StepSerializer(serializers.Serializer):
    name = serializers.CharField()
    agent = serializers.CharField()
    status = serializers.ChoiceField(choices=StepStatus.choices)
    input = serializers.CharField(allow_blank=True)
    output = serializers.JSONField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    attempts = serializers.IntegerField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    tokens = TokensSerializer()
    cost = serializers.CharField()
    agent_version = serializers.IntegerField(allow_null=True)
    turn_id = serializers.IntegerField(allow_null=True)


class RunSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    workflow = serializers.CharField()
    workflow_version = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    inputs = JsonObjectField()
    outputs = JsonObjectField()
    answer = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_null=True)
    started_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    duration_ms = serializers.IntegerField(allow_null=True)
    tokens = TokensSerializer()
    cost = serializers.CharField()
    steps = StepSerializer(many=True)


class RunListSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    workflow = serializers.CharField(source="workflow_key")
    workflow_version = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    started_by = serializers.CharField(source="actor_source")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


def run_response(run: WorkflowRun, code: int = status.HTTP_200_OK) -> Response:
    return Response(workflow_run_summary(run), status=code)


class WorkflowViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/workflows`: workflow definitions, and their runs."""

    lookup_field = "key"
    lookup_value_regex = WORKFLOW_KEY_REGEX
    serializer_class = WorkflowSerializer

    # Read by the pagination and by the schema, so the runs' list documents its own.
    @property
    def ordering(self) -> str:
        return "-created_at" if self.action == "runs" else "key"

    @property
    def ordering_fields(self) -> tuple[str, ...]:
        return ("created_at",) if self.action == "runs" else ("key", "name", "created_at", "updated_at")

    def get_queryset(self) -> object:
        return workflow_list(actor=self.actor, workspace=self.workspace)

    def get_workflow(self) -> Workflow:
        # A sandbox workflow only for programs with the sandbox right (the selector's rule).
        return workflow_get(workspace=self.workspace, key=self.kwargs["key"], actor=self.actor)

    @extend_schema(request=WorkflowCreateSerializer, responses={201: WorkflowSerializer})
    def create(self, request: Request) -> Response:
        """A new workflow (publish right); its definition is validated, every problem
        reported with its location."""
        serializer = WorkflowCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        workflow = workflow_create(workspace=self.workspace, actor=self.actor, **serializer.validated_data)
        headers = {"Location": reverse("v1:workflow-detail", args=[workflow.key])}
        return Response(WorkflowSerializer(workflow).data, status=status.HTTP_201_CREATED, headers=headers)

    def retrieve(self, request: Request, key: str) -> Response:
        return Response(WorkflowSerializer(self.get_workflow()).data)

    @extend_schema(request=WorkflowUpdateSerializer, responses=WorkflowSerializer)
    def partial_update(self, request: Request, key: str) -> Response:
        """Name, description, definition (validated; bumps `version`), enabled."""
        serializer = WorkflowUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        workflow = workflow_update(workflow=self.get_workflow(), actor=self.actor, **serializer.validated_data)
        return Response(WorkflowSerializer(workflow).data)

    @extend_schema(
        parameters=[OpenApiParameter("force", bool, description="Delete even with runs in progress.")],
        responses={204: None},
    )
    def destroy(self, request: Request, key: str) -> Response:
        """Delete a workflow; refused for built-in ones, and with runs in progress
        unless `force=true`. Finished runs keep their copy of the definition."""
        force = serializers.BooleanField(required=False, default=False).run_validation(
            request.query_params.get("force", False)
        )
        workflow_delete(workflow=self.get_workflow(), actor=self.actor, force=force)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(methods=["GET"], responses=RunListSerializer(many=True))
    @extend_schema(methods=["POST"], request=RunStartSerializer, responses={202: RunSerializer})
    @action(detail=True, methods=["get", "post"])
    @outside_transaction
    def runs(self, request: Request, key: str) -> Response:
        """GET: this workflow's runs, newest first. POST: start a run (202; follow
        `Location` to see it progress); the body is the run as it stands when the
        answer is sent (finished already when runs execute inline)."""
        workflow = self.get_workflow()
        if request.method == "GET":
            # all_objects: the workflow was resolved above, and its runs share its sandbox flag.
            runs = WorkflowRun.all_objects.filter(workflow=workflow).order_by("-created_at")
            page = self.paginate_queryset(runs)
            return self.get_paginated_response(RunListSerializer(page, many=True).data)
        serializer = RunStartSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        # Outside one transaction: the run's first steps are sent when the start
        # commits (and, without a broker, run then), so the run is read again after.
        run = workflow_run_start(workflow=workflow, actor=self.actor, **serializer.validated_data)
        run = workflow_run_get(run_id=run.pk, actor=self.actor)
        response = run_response(run, status.HTTP_202_ACCEPTED)
        response["Location"] = reverse("v1:run-detail", args=[run.pk])
        return response


class RunViewSet(AdminViewSet):
    """`/v1/admin/runs/{id}`: one run with its steps; cancel, resume."""

    lookup_value_regex = RUN_ID_REGEX

    def get_run(self) -> WorkflowRun:
        run = workflow_run_get(run_id=self.kwargs["pk"], actor=self.actor)  # sandbox runs: as workflows
        if run.workspace_id != self.workspace.pk:
            raise NotFound(f"No workflow run '{self.kwargs['pk']}'.")
        return run

    @extend_schema(responses=RunSerializer)
    def retrieve(self, request: Request, pk: str) -> Response:
        """The run, its outputs and answer, and every step with its input, output,
        attempts, tokens and cost."""
        return run_response(self.get_run())

    @extend_schema(request=None, responses=RunSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        """Stop the run: running steps finish and are recorded, no step starts after."""
        return run_response(workflow_run_cancel(run=self.get_run(), actor=self.actor))

    @extend_schema(request=None, responses=RunSerializer)
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        """Run a failed run's failed and unstarted steps again."""
        return run_response(workflow_run_resume(run=self.get_run(), actor=self.actor))
