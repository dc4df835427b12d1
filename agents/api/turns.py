"""Agent turns and their debug logs (one per model call), redacted as stored."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.approvals import review_url
from agents.api.base import ID_REGEX
from agents.models import AgentTurn, DebugLog
from agents.selectors import approval_requests_waited_for, debug_log_ids, workspace_row_get, workspace_rows
from aihummer.api import AdminViewSet, JsonObjectField


class TurnSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent = serializers.CharField(source="agent_key")
    version = serializers.IntegerField(source="version_number", allow_null=True)
    status = serializers.ChoiceField(choices=AgentTurn.Status.choices)
    dry_run = serializers.BooleanField()
    actor_source = serializers.CharField()
    provider_name = serializers.CharField(allow_blank=True)
    model = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    answer = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    model_calls = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cached_input_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=12, decimal_places=6)
    prefix_hash = serializers.CharField(allow_blank=True)
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    latency_ms = serializers.IntegerField(allow_null=True)
    debug_logs = serializers.SerializerMethodField()
    waiting_for = serializers.SerializerMethodField(
        help_text="For a `waiting` turn: the approval request its tool call waits for, and where a person reviews it."
    )

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {
                "approval_id": {"type": "integer"},
                "tool": {"type": "string"},
                "review_url": {"type": "string"},
            },
        }
    )
    def get_waiting_for(self, turn: AgentTurn) -> dict | None:
        if turn.status != AgentTurn.Status.WAITING:
            return None  # no query for the others
        waited_for = approval_requests_waited_for(turn_id=turn.pk)
        if not waited_for:
            return None
        request = waited_for[0]
        return {"approval_id": request.pk, "tool": request.tool_name, "review_url": review_url(request)}

    @extend_schema_field({"type": "array", "items": {"type": "integer"}})
    def get_debug_logs(self, turn: AgentTurn) -> list[int]:
        prefetched = getattr(turn, "_prefetched_objects_cache", {}).get("debug_logs")
        if prefetched is not None:  # a page of turns: one query for all their logs
            return [log.pk for log in prefetched]
        return debug_log_ids(turn=turn)  # one turn, a sandbox one's logs included


class DebugLogSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    turn = serializers.IntegerField(source="turn_id")
    agent = serializers.CharField(source="agent_key")
    sequence = serializers.IntegerField()
    provider_name = serializers.CharField()
    model = serializers.CharField()
    system_prompt = serializers.CharField(allow_blank=True)
    messages = serializers.ListField(child=JsonObjectField())
    tools_offered = serializers.ListField(child=serializers.JSONField())
    parameters = JsonObjectField()
    response = JsonObjectField()
    tool_calls = serializers.ListField(child=JsonObjectField())
    finish_reason = serializers.CharField(allow_blank=True)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cached_input_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=12, decimal_places=6)
    latency_ms = serializers.IntegerField()
    prefix_hash = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class TurnListQuerySerializer(serializers.Serializer):
    include_archived = serializers.BooleanField(
        default=False,
        help_text="Also list finished child turns past their parent agent's "
        "runtime_policy.children.archive_after_minutes (left out by default, never deleted).",
    )


class AgentTurnViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/turns`: agent turns, newest first (redacted as stored)."""

    lookup_value_regex = ID_REGEX
    ordering = "-pk"
    serializer_class = TurnSerializer

    def get_queryset(self) -> object:
        rows = workspace_rows(AgentTurn, actor=self.actor, workspace=self.workspace).prefetch_related("debug_logs")
        if self.action != "list":
            return rows
        query = TurnListQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return rows if query.validated_data["include_archived"] else rows.listed()

    @extend_schema(parameters=[TurnListQuerySerializer])
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        """The workspace's turns, newest first; archived child turns only when asked for."""
        return super().list(request, *args, **kwargs)

    def retrieve(self, request: Request, pk: str) -> Response:
        turn = workspace_row_get(AgentTurn, actor=self.actor, workspace=self.workspace, noun="turn", pk=pk)
        return Response(TurnSerializer(turn).data)


class DebugLogViewSet(AdminViewSet):
    """`/v1/admin/debug-logs/{id}`: one model call as sent and answered, secrets redacted."""

    lookup_value_regex = ID_REGEX
    serializer_class = DebugLogSerializer

    def retrieve(self, request: Request, pk: str) -> Response:
        log = workspace_row_get(DebugLog, actor=self.actor, workspace=self.workspace, noun="debug log", pk=pk)
        return Response(DebugLogSerializer(log).data)
