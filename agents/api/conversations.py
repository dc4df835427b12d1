"""Conversations with an agent: `POST /v1/admin/agents/{key}/conversations/messages`
sends a message and answers with the agent's reply, whole; `GET /v1/admin/conversations`
lists them, `GET /v1/admin/conversations/{id}` shows one with a cursor page of its
messages; `POST /v1/admin/conversations/{id}/handoff` hands it to another agent. Which
conversation a message lands in, and what history the agent is sent, is
`agents.runtime.conversations`' rule."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.core.validators import RegexValidator
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers
from rest_framework.decorators import action
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.base import ID_REGEX, AgentChildViewSet
from agents.api.turns import TurnSerializer
from agents.models import ConversationMessage, ConversationNote
from agents.runtime import ConversationReply, conversation_send
from agents.runtime.conversations import MAX_MESSAGE_CHARS, conversation_handoff
from agents.runtime.streams import STREAM_ID_PATTERN, conversation_stream_events, conversation_stream_start, sse
from agents.selectors import conversation_get, conversation_list, conversation_messages, conversation_notes
from aihummer.api import AdminViewSet, ApiCursorPagination, InputSerializer, outside_transaction


class ConversationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent = serializers.CharField(source="agent.key")
    peer = serializers.CharField(
        help_text="The verified peer: `user:<id>`, `api_key:<id>` or `api_key:<id>/<id>` (vouched for by that key)."
    )
    channel = serializers.CharField(
        allow_blank=True, help_text="Blank for a per-peer conversation (every channel of the peer)."
    )
    message_count = serializers.IntegerField()
    context_start = serializers.IntegerField(
        help_text="Sequence of the first message the agent is sent now (a pause of "
        "runtime_policy.session.idle_reset_minutes opens a new context; older messages are kept)."
    )
    compacted_through = serializers.IntegerField(
        help_text="Sequence of the last message compacted into the summary (an explicit runtime_policy.context); "
        "requests carry the summary instead of the messages up to it, which stay stored."
    )
    answering_agent = serializers.CharField(
        source="answering_agent.key",
        allow_null=True,
        help_text="The agent the conversation was handed to, which answers it now (under the inherited runtime "
        "policy of the agent that handed it off); null: `agent` answers.",
    )
    last_message_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()


class MessageSerializer(serializers.Serializer):
    sequence = serializers.IntegerField()
    role = serializers.ChoiceField(choices=ConversationMessage.Role.choices)
    channel = serializers.CharField()
    text = serializers.CharField(allow_blank=True)
    turn = serializers.IntegerField(source="turn_id", allow_null=True)
    version = serializers.IntegerField(
        source="version_number", allow_null=True, help_text="The prompt version that produced an answer."
    )
    agent = serializers.CharField(
        source="agent_key",
        allow_blank=True,
        help_text="The agent that gave an answer (the conversation's, or the one it was handed to); blank on "
        "the user's messages.",
    )
    created_at = serializers.DateTimeField()


class SendInSerializer(InputSerializer):
    message = serializers.CharField(
        max_length=MAX_MESSAGE_CHARS,
        trim_whitespace=False,
        validators=[RegexValidator(r"\S", "Give a message for the agent.")],
    )
    channel = serializers.RegexField(
        r"^[a-z0-9_-]{1,50}$",
        required=False,
        default="api",
        help_text="api (default), mcp, admin or a name of yours; with runtime_policy.session.scope "
        "per-channel-peer each channel has its own conversation.",
    )
    peer = serializers.CharField(
        max_length=100,
        required=False,
        help_text="The peer a key with the `vouch` scope vouches for (its own verified user): the "
        "conversation's peer is then `api_key:<the key's id>/<this id>`. Anyone else may only give "
        "their own verified peer (403).",
    )
    stream = serializers.BooleanField(
        default=False,
        help_text="Answer as Server-Sent Events (text/event-stream): start {stream}, delta {text}, tool_call, "
        "tool_result, then message (this endpoint's JSON answer); each event has an id, and "
        "GET /v1/admin/conversations/streams/{stream} with Last-Event-ID resumes after it.",
    )


class HandoffInSerializer(InputSerializer):
    agent = serializers.RegexField(
        r"^[a-z0-9_-]{1,50}$", help_text="Key of the agent of this workspace that answers from the next message on."
    )


class SendOutSerializer(serializers.Serializer):
    conversation = ConversationSerializer()
    message = MessageSerializer()
    answer = MessageSerializer(
        allow_null=True,
        help_text="null when the turn failed (`turn.error` says why) or waits for a person (`turn.waiting_for`: "
        "the answer joins the conversation once the call is decided).",
    )
    turn = TurnSerializer()


class NoteSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=ConversationNote.Kind.choices,
        help_text="summary: what compaction folded (each summary folds the one before); memory: a note written "
        "before a compaction (runtime_policy.memory_flush).",
    )
    first_sequence = serializers.IntegerField()
    last_sequence = serializers.IntegerField()
    text = serializers.CharField()
    model = serializers.CharField(allow_blank=True)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=12, decimal_places=6)
    created_at = serializers.DateTimeField()


class ConversationDetailSerializer(ConversationSerializer):
    notes = NoteSerializer(many=True, help_text="The newest 50 summaries and memory notes, oldest first.")
    messages = inline_serializer(
        "ConversationMessagePage",
        {
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": MessageSerializer(many=True),
        },
    )


class ConversationListQuerySerializer(serializers.Serializer):
    agent = serializers.RegexField(r"^[a-z0-9_-]{1,50}$", required=False, help_text="Only this agent's.")
    include_archived = serializers.BooleanField(
        default=False,
        help_text="Also list the conversations the agent's runtime_policy.session takes out of the default "
        "list (index_prune_after_days, index_max_entries); they are never deleted.",
    )


class MessagePagination(ApiCursorPagination):
    """A conversation's messages in order, `limit` at a time."""

    ordering = "sequence"

    def get_ordering(self, request: Request, queryset: object, view: object) -> tuple[str, ...]:
        self._model = queryset.model
        return (self.ordering,)


def _reply_data(reply: ConversationReply) -> dict:
    return {
        "conversation": ConversationSerializer(reply.conversation).data,
        "message": MessageSerializer(reply.message).data,
        "answer": MessageSerializer(reply.answer).data if reply.answer else None,
        "turn": TurnSerializer(reply.turn).data,
    }


class EventStreamRenderer(BaseRenderer):
    """Lets a client ask for text/event-stream; the events are written by `event_stream`."""

    media_type = "text/event-stream"
    format = "sse"

    def render(
        self, data: object, accepted_media_type: str | None = None, renderer_context: dict | None = None
    ) -> bytes:
        return json.dumps(data).encode()  # an error before the stream started: its JSON envelope


def event_stream(events: Iterator[tuple[int, str, dict]], *, stream_id: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse((sse(event) for event in events), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy must pass each event on as it comes
    response["X-Stream-Id"] = stream_id
    return response


class AgentConversationViewSet(AgentChildViewSet):
    """`/v1/admin/agents/{key}/conversations/...`: talking to one agent."""

    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        request=SendInSerializer,
        responses={(200, "application/json"): SendOutSerializer, (200, "text/event-stream"): OpenApiTypes.STR},
    )
    @action(detail=False, methods=["post"])
    @outside_transaction
    def messages(self, request: Request, agent_key: str) -> Response:
        """Send a message; the answer comes back whole, with the conversation it went to
        and the turn (its prompt version, usage, debug logs). A failed turn is a 200 too:
        `answer` is null and `turn.error` says why."""
        agent = self.get_agent()
        data = SendInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        options = dict(data.validated_data)
        if options.pop("stream"):
            stream = conversation_stream_start(agent=agent, actor=self.actor, final=_reply_data, **options)
            return event_stream(stream.follow(), stream_id=stream.id)
        return Response(_reply_data(conversation_send(agent=agent, actor=self.actor, **options)))


class ConversationViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/conversations`: the workspace's conversations, newest first."""

    renderer_classes = [JSONRenderer, EventStreamRenderer]

    lookup_value_regex = ID_REGEX
    ordering = "-pk"
    ordering_fields = ("created_at",)
    serializer_class = ConversationSerializer

    def get_queryset(self) -> object:
        query = ConversationListQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return conversation_list(
            actor=self.actor,
            workspace=self.workspace,
            include_archived=query.validated_data["include_archived"],
            agent_key=query.validated_data.get("agent"),
        )

    @extend_schema(
        responses={(200, "text/event-stream"): OpenApiTypes.STR},
        parameters=[
            OpenApiParameter(
                "Last-Event-ID", OpenApiTypes.INT, OpenApiParameter.HEADER, description="Resume after this event."
            )
        ],
    )
    @action(detail=False, methods=["get"], url_path=rf"streams/(?P<stream_id>{STREAM_ID_PATTERN})")
    def stream(self, request: Request, stream_id: str) -> StreamingHttpResponse:
        """A streamed answer's events after `Last-Event-ID` (or `?after=`), then the live ones until
        `message`; kept 10 minutes, only for the peer that started it."""
        after = request.headers.get("Last-Event-ID", request.query_params.get("after", "0"))
        if not (after.isdigit() and len(after) <= 9):
            raise serializers.ValidationError({"Last-Event-ID": "Give the number of the last event received."})
        events = conversation_stream_events(
            actor=self.actor, workspace_id=self.workspace.pk, stream_id=stream_id, after=int(after)
        )
        return event_stream(events, stream_id=stream_id)

    @extend_schema(request=HandoffInSerializer, responses=ConversationSerializer)
    @action(detail=True, methods=["post"])
    def handoff(self, request: Request, pk: str) -> Response:
        """Hand the conversation to another agent: it answers the next messages, under the runtime policy of
        the agent answering now (inherited). An agent hands off through its `handoff` tool."""
        conversation = conversation_get(actor=self.actor, workspace=self.workspace, pk=pk)
        data = HandoffInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        handed = conversation_handoff(
            conversation=conversation, agent_key=data.validated_data["agent"], actor=self.actor
        )
        return Response(ConversationSerializer(handed).data)

    @extend_schema(parameters=[ConversationListQuerySerializer])
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        """The workspace's conversations; those the policy takes out of the list only when asked for."""
        return super().list(request, *args, **kwargs)

    @extend_schema(
        responses=ConversationDetailSerializer,
        parameters=MessagePagination().get_schema_operation_parameters(None),
    )
    def retrieve(self, request: Request, pk: str) -> Response:
        """One conversation and a cursor page of its messages, oldest first (`limit`, `cursor`)."""
        conversation = conversation_get(actor=self.actor, workspace=self.workspace, pk=pk)
        pages = MessagePagination()
        rows = pages.paginate_queryset(conversation_messages(conversation=conversation), request, view=self)
        data = ConversationSerializer(conversation).data
        data["notes"] = NoteSerializer(conversation_notes(conversation=conversation), many=True).data
        data["messages"] = {
            "next": pages.get_next_link(),
            "previous": pages.get_previous_link(),
            "results": MessageSerializer(rows, many=True).data,
        }
        return Response(data)
