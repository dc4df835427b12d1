"""Presets (model configurations; the active one is the default) and the model catalog."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from agents import catalog
from agents.api.base import KEY_REGEX, FiniteFloatField, ForceSerializer, KeyField
from agents.models import Credential, Preset
from agents.selectors import workspace_row_get, workspace_rows
from agents.services import preset_activate, preset_create, preset_delete, preset_update
from aihummer.api import AdminViewSet, InputSerializer


class PresetSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    provider_name = serializers.CharField()
    base_url = serializers.CharField(allow_blank=True)
    model = serializers.CharField()
    temperature = serializers.FloatField()
    top_p = serializers.FloatField()
    max_output_tokens = serializers.IntegerField(allow_null=True)
    timeout_seconds = serializers.IntegerField()
    streaming_enabled = serializers.BooleanField()
    credential = serializers.CharField(source="credential.key", allow_null=True, default=None)
    is_active = serializers.BooleanField(help_text="The workspace's default preset.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


# The shape the schema states, as a `pattern`: `format: uri` admits hosts Django's
# URLValidator refuses (a one-letter top-level domain), and the model's own validator
# runs in the service after (a 422 naming base_url).
BASE_URL_PATTERN = r"^https?://[^\s/?#@]+(?:[/?#]\S*)?$"


class PresetWriteSerializer(InputSerializer):
    name = serializers.CharField(max_length=200)
    provider_name = serializers.ChoiceField(choices=Preset.Provider.choices)
    base_url = serializers.RegexField(BASE_URL_PATTERN, max_length=200, required=False, allow_blank=True)
    model = serializers.CharField(max_length=100)
    temperature = FiniteFloatField(min_value=0.0, max_value=2.0, required=False)
    top_p = FiniteFloatField(min_value=0.0, max_value=1.0, required=False)
    max_output_tokens = serializers.IntegerField(min_value=1, max_value=10_000_000, required=False, allow_null=True)
    timeout_seconds = serializers.IntegerField(min_value=1, max_value=600, required=False)
    streaming_enabled = serializers.BooleanField(required=False)
    credential = KeyField(required=False, allow_null=True)


class PresetCreateSerializer(PresetWriteSerializer):
    key = KeyField()
    is_active = serializers.BooleanField(required=False, default=False)


class PresetViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/presets`: model configurations; the active one is the default."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    ordering = "key"
    ordering_fields = ("key", "name", "created_at")
    serializer_class = PresetSerializer

    def get_queryset(self) -> object:
        return workspace_rows(Preset, actor=self.actor, workspace=self.workspace).select_related("credential")

    def get_preset(self) -> Preset:
        return workspace_row_get(
            Preset, actor=self.actor, workspace=self.workspace, noun="preset", key=self.kwargs["key"]
        )

    def _fields(self, data: dict) -> dict:
        fields = dict(data)
        if "credential" in fields and fields["credential"] is not None:
            credential = workspace_rows(Credential, actor=self.actor, workspace=self.workspace).filter(
                key=fields["credential"]
            )
            if not credential.exists():
                raise ValidationError({"credential": [f"Unknown credential '{fields['credential']}'."]})
            fields["credential"] = credential.get()
        return fields

    @extend_schema(request=PresetCreateSerializer, responses={201: PresetSerializer})
    def create(self, request: Request) -> Response:
        """A new preset (publish right); `is_active` also makes it the default."""
        serializer = PresetCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        preset = preset_create(workspace=self.workspace, actor=self.actor, **self._fields(serializer.validated_data))
        headers = {"Location": reverse("v1:preset-detail", args=[preset.key])}
        return Response(PresetSerializer(preset).data, status=status.HTTP_201_CREATED, headers=headers)

    def retrieve(self, request: Request, key: str) -> Response:
        return Response(PresetSerializer(self.get_preset()).data)

    @extend_schema(request=PresetWriteSerializer(partial=True), responses=PresetSerializer)
    def partial_update(self, request: Request, key: str) -> Response:
        """Change a preset's model settings (publish right)."""
        serializer = PresetWriteSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        preset = preset_update(preset=self.get_preset(), actor=self.actor, **self._fields(serializer.validated_data))
        return Response(PresetSerializer(preset).data)

    @extend_schema(
        parameters=[OpenApiParameter("force", bool, description="Delete even when agents use it.")],
        responses={204: None},
    )
    def destroy(self, request: Request, key: str) -> Response:
        """Delete a preset; refused while agents use it unless `force=true` (they then
        fall back to the default)."""
        force = ForceSerializer(data=request.query_params)
        force.is_valid(raise_exception=True)
        preset_delete(preset=self.get_preset(), actor=self.actor, force=force.validated_data["force"])
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=PresetSerializer)
    @action(detail=True, methods=["post"])
    def activate(self, request: Request, key: str) -> Response:
        """Make this preset the workspace's default."""
        return Response(PresetSerializer(preset_activate(preset=self.get_preset(), actor=self.actor)).data)


class ModelSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    context_window = serializers.IntegerField()
    max_output_tokens = serializers.IntegerField()
    streaming = serializers.BooleanField()
    tools = serializers.BooleanField()
    vision = serializers.BooleanField()
    input_per_mtok = serializers.DecimalField(max_digits=12, decimal_places=6)
    output_per_mtok = serializers.DecimalField(max_digits=12, decimal_places=6)
    cached_input_per_mtok = serializers.DecimalField(max_digits=12, decimal_places=6)


class ProviderSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    accepts_base_url = serializers.BooleanField()
    models = ModelSerializer(many=True)


class ModelCatalogViewSet(AdminViewSet):
    """`/v1/admin/models`: the model catalog, read-only."""

    pagination_class = None

    @extend_schema(responses=ProviderSerializer(many=True))
    def list(self, request: Request) -> Response:
        """Every provider and its models, with limits and list prices (USD per million tokens)."""
        self.workspace  # noqa: B018 -- a caller of no workspace is refused like anywhere else
        return Response(ProviderSerializer(catalog.providers(), many=True).data)
