"""`/v1/admin/approvals` (issue 30): the tool calls waiting for a person, listed and
decided. Deciding is people's (a session or an OIDC token with the reviewer role, not
the one who started the turn or run): API keys read the list, never decide. An approved
call whose outcome is unknown (`progress: unknown`: handed to the receiver, its answer
never recorded) waits for a person again: `resend` or `confirm`."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.base import ID_REGEX, username
from agents.models import ApprovalRequest
from agents.services.tool_approvals import (
    approval_request_approve,
    approval_request_confirm,
    approval_request_get,
    approval_request_list,
    approval_request_reject,
    approval_request_resend,
)
from aihummer.api import AdminViewSet, InputSerializer
from aihummer.exceptions import NotFound
from aihummer.links import public_link


def review_url(request: ApprovalRequest) -> str:
    """Where a person reviews the request (the admin's page): absolute under
    AIHUMMER_PUBLIC_URL, else a path."""
    return public_link(reverse("admin:agents_approvalrequest_review", args=[request.pk]))


class ActionApprovalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    workspace = serializers.CharField(source="workspace.slug")
    agent = serializers.CharField(source="agent_key")
    tool = serializers.CharField(source="tool_name")
    arguments = serializers.JSONField()
    arguments_hash = serializers.CharField(help_text="SHA-256 of the tool and its canonical arguments.")
    status = serializers.ChoiceField(choices=ApprovalRequest.Status.choices)
    progress = serializers.ChoiceField(choices=ApprovalRequest.Progress.choices)
    origin = serializers.ChoiceField(choices=ApprovalRequest.Origin.choices)
    run_id = serializers.UUIDField(allow_null=True)
    step = serializers.CharField(source="step_name")
    turn_id = serializers.IntegerField(allow_null=True)
    requested_by = serializers.CharField(source="actor_source")
    reviewed_by = serializers.SerializerMethodField()
    reviewed_at = serializers.DateTimeField(allow_null=True)
    review_note = serializers.CharField()
    result = serializers.CharField(
        help_text="What the model was told: the effect's result or the refusal; while the outcome is unknown, why."
    )
    outcome_unknown = serializers.BooleanField(
        source="is_in_doubt",
        help_text="The call was handed to the receiver and its answer never recorded: it may have happened. "
        "Never sent again by itself: `resend` or `confirm` it.",
    )
    ledger_key = serializers.UUIDField(help_text="The call's identity: the e-mail's Message-ID, the Idempotency-Key.")
    effect_attempts = serializers.IntegerField()
    resolution = serializers.ChoiceField(
        choices=ApprovalRequest.Resolution.choices, help_text="What a person decided about an unknown outcome."
    )
    resolved_by = serializers.SerializerMethodField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()
    review_url = serializers.SerializerMethodField()

    def get_reviewed_by(self, request: ApprovalRequest) -> str | None:
        return username(request.reviewed_by)

    def get_resolved_by(self, request: ApprovalRequest) -> str | None:
        return username(request.resolved_by)

    def get_review_url(self, request: ApprovalRequest) -> str:
        return review_url(request)


class ApprovalFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=ApprovalRequest.Status.choices, required=False)
    tool = serializers.CharField(max_length=50, required=False)
    progress = serializers.ChoiceField(choices=ApprovalRequest.Progress.choices, required=False)


class ApproveActionSerializer(InputSerializer):
    note = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)
    arguments_hash = serializers.RegexField(
        r"^[0-9a-f]{64}$",
        required=False,
        allow_null=True,
        default=None,
        help_text="The `arguments_hash` you reviewed: refused (409) if the request holds other arguments.",
    )


class RejectActionSerializer(InputSerializer):
    note = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)


class OutcomeDecisionSerializer(InputSerializer):
    note = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)


class ApprovalRequestViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/approvals`: tool calls waiting for (or decided by) a person."""

    lookup_value_regex = ID_REGEX
    ordering = "-created_at"
    ordering_fields = ("created_at",)
    serializer_class = ActionApprovalSerializer

    @extend_schema(parameters=[ApprovalFilterSerializer])
    def list(self, request: Request) -> Response:
        """The workspace's requests, newest first; filter by status and tool."""
        return super().list(request)

    def get_queryset(self) -> object:
        filters = ApprovalFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        queryset = approval_request_list(actor=self.actor, workspace=self.workspace, status=data.get("status", ""))
        if "tool" in data:
            queryset = queryset.filter(tool_name=data["tool"])
        if "progress" in data:
            queryset = queryset.filter(progress=data["progress"])
        return queryset

    def get_request(self) -> ApprovalRequest:
        approval = approval_request_get(actor=self.actor, pk=self.kwargs["pk"])
        if approval.workspace_id != self.workspace.pk:
            raise NotFound(f"No approval request '{self.kwargs['pk']}'.")
        return approval

    def retrieve(self, request: Request, pk: str) -> Response:
        """One request, with its exact arguments and, once decided, its outcome."""
        return Response(ActionApprovalSerializer(self.get_request()).data)

    @extend_schema(request=ApproveActionSerializer, responses=ActionApprovalSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        """Approve: the call runs once, with exactly these arguments (a person with the
        reviewer role who did not start the turn or run)."""
        serializer = ApproveActionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        decided = approval_request_approve(
            request=self.get_request(), actor=self.actor, note=data["note"], arguments_hash=data["arguments_hash"]
        )
        return Response(ActionApprovalSerializer(decided).data)

    @extend_schema(request=RejectActionSerializer, responses=ActionApprovalSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        """Reject: nothing runs; the model is told it was refused (with the note)."""
        serializer = RejectActionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        decided = approval_request_reject(
            request=self.get_request(), actor=self.actor, note=serializer.validated_data["note"]
        )
        return Response(ActionApprovalSerializer(decided).data)

    @extend_schema(request=OutcomeDecisionSerializer, responses=ActionApprovalSerializer)
    @action(detail=True, methods=["post"])
    def resend(self, request: Request, pk: str) -> Response:
        """An approved call whose outcome is unknown: make it again, with the same ledger
        key (409 unless `outcome_unknown`)."""
        return self._resolve(request, approval_request_resend)

    @extend_schema(request=OutcomeDecisionSerializer, responses=ActionApprovalSerializer)
    @action(detail=True, methods=["post"])
    def confirm(self, request: Request, pk: str) -> Response:
        """An approved call whose outcome is unknown: record it as carried out (you checked
        with the receiver); its turn goes on, nothing is sent again (409 unless
        `outcome_unknown`)."""
        return self._resolve(request, approval_request_confirm)

    def _resolve(self, request: Request, resolve: object) -> Response:
        serializer = OutcomeDecisionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        resolved = resolve(request=self.get_request(), actor=self.actor, note=serializer.validated_data["note"])
        return Response(ActionApprovalSerializer(resolved).data)
